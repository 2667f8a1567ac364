-- One row per validation run of an item revision (item_id, revision, patch, run_no), and whether
-- the run gave what a sound grader must: the gold (and a split item's partial gold) patch resolved,
-- the empty patch unresolved.
with source as (

    select * from {{ source('raw', 'repair_validations') }}

)

select
    item_id,
    revision,
    patch,
    run_no,
    verdict,
    len(failing_tests) as failing_test_count,
    case patch
        when 'gold' then verdict = 'resolved'
        when 'partial_gold' then verdict = 'resolved'
        when 'empty' then verdict = 'unresolved'
    end as gave_expected_verdict,
    usable as recorded_usable,
    array_to_string(problems, '; ') as recorded_problems,
    validated_at,
    grader_image_reference,
    grader_image_digest
from source
