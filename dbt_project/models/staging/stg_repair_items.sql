-- One row per repair item revision (item_id, revision), renamed and typed; the current revision of
-- each item (the latest built, ties by revision) flagged. The PR an item comes from is named by its
-- project and source ref: split items share it with their original (not independent samples).
with source as (

    select * from {{ source('raw', 'repair_items') }}

)

select
    item_id,
    revision,
    project_id,
    repository,
    base_commit,
    source_kind,
    source_ref,
    project_id || ':' || source_ref as pr_key,
    track,
    has_interface_spec,
    len(fail_to_pass) as f2p_count,
    len(pass_to_pass) as p2p_count,
    len(test_files) as test_file_count,
    test_patch_bytes,
    gold_patch_bytes,
    split_original is not null as is_split,
    split_original,
    split_topic,
    split_match,
    superseded_by_split,
    built_at,
    grader_image_reference,
    grader_image_digest,
    row_number() over (partition by item_id order by built_at desc, revision desc) = 1 as is_current_revision
from source
