-- One row per attempt with hints: its Layer 1 hints (issue #14, seed 004) beside what the run record
-- and the scoring rules say of it (end_reason, validity, outcome), never its score. Hints inform a
-- reviewer; no model that feeds a score, a verdict or the board reads this mart (a guard test).
-- An attempt with hints under several task revisions shows the latest loaded (task_revisions says
-- how many there are).
with hints as (

    select
        *,
        count(*) over (partition by attempt_id) as task_revisions,
        row_number() over (
            partition by attempt_id order by loaded_at desc, task_revision desc
        ) as newest_first
    from {{ ref('stg_attempt_hints') }}

),

records as (

    select attempt_id, end_reason, recorded_invalid_reason
    from {{ ref('stg_run_records') }}

),

scored as (

    select attempt_id, is_valid, invalid_reason, outcome
    from {{ ref('int_attempt_scores') }}

)

select
    hints.attempt_id,
    hints.cycle_id,
    hints.purpose,
    hints.agent_id,
    hints.project_id,
    hints.task_id,
    hints.task_version,
    hints.task_revision,
    hints.task_revisions,
    hints.needles_score,
    hints.needles_status,
    hints.needles_found,
    hints.needles_missing,
    hints.rendering_score,
    hints.rendering_status,
    hints.rendering_page_count,
    hints.rendering_pages,
    hints.agent_logic_score,
    hints.agent_logic_status,
    hints.agent_logic_succeeded,
    hints.agent_logic_in_order,
    hints.agent_logic_steps,
    records.attempt_id is not null as has_run_record,
    records.end_reason,
    -- board and verdict attempts: the scoring rules' validity and outcome; repair attempts are
    -- graded apart (marts.repair_runs), so theirs are null here
    scored.is_valid,
    coalesce(scored.invalid_reason, records.recorded_invalid_reason) as invalid_reason,
    scored.outcome,
    hints.loaded_at
from hints
left join records on records.attempt_id = hints.attempt_id
left join scored on scored.attempt_id = hints.attempt_id
where hints.newest_first = 1
