-- One row per graded patch (grade_id), renamed and typed. An attempt's grade names its attempt; a
-- predictions file's grade carries its model label (never a model name) and the file's sha256.
with source as (

    select * from {{ source('raw', 'repair_grades') }}

)

select
    grade_id,
    item_id,
    revision,
    source_kind,
    attempt_id,
    predictions_sha256,
    predictions_label,
    verdict,
    len(failing_tests) as failing_test_count,
    len(excluded_paths) as excluded_path_count,
    patch_sha256,
    patch_bytes,
    empty_patch as is_empty_patch,
    changed_lines,
    gold_changed_lines,
    lint_new_errors,
    suppressions_added,
    detail,
    graded_at,
    grader_image_reference,
    grader_image_digest
from source
