-- One row per (attempt_id, task_revision, check_id): seed 002's deterministic checks
-- (output_exact_match, tool_calls; issue #31) of a hints document as loaded, each under the condition
-- the attempt ran under (pass | fail | not_applicable | unavailable). Read from the document itself
-- (raw.attempt_hints.hints_json, checked strictly at ingest: argusic.warehouse.load_judging); a
-- document of a task without checks has no rows here. No rule is applied here; hints never feed a
-- score, a verdict or the board.
with hints as (

    select
        attempt_id,
        task_revision,
        cycle_id,
        purpose,
        agent_id,
        project_id,
        task_id,
        -- every check of the document as one JSON value each (an empty list without checks)
        unnest(json_extract(hints_json, '$.checks[*]')) as check_json
    from {{ source('raw', 'attempt_hints') }}

)

select
    attempt_id,
    task_revision,
    cycle_id,
    purpose,
    agent_id,
    project_id,
    task_id,
    check_json ->> '$.id' as check_id,
    check_json ->> '$.type' as check_type,
    check_json ->> '$.condition' as condition,
    check_json ->> '$.status' as check_status,
    check_json ->> '$.detail' as check_detail,
    -- tool_calls: the calls of the check's category the record shows (null otherwise)
    try_cast(check_json ->> '$.observed' as integer) as observed_calls
from hints
