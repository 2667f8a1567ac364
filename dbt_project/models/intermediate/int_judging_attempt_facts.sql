{{ config(materialized='incremental', incremental_strategy='append', pre_hook="{{ delete_changed_cycles() }}") }}
-- One row per attempt with a run record: what the judging review (issue #14, Layer 3) shows of it
-- beside the hints and the judges: its provisional result (the rules' outcome for board and verdict
-- attempts, its newest grade for repair attempts), duration, tokens and cost, and
-- whether it left an artifact or a patch. Read by marts.review_queue and
-- marts.judging_review_divergence only; it feeds no score, verdict or board.
-- A table: its two marts and its key's tests read it once built (as a view, each of the four
-- recomputed five left joins over every attempt; its unique test alone took 12 s at a million).
-- Narrow: the served copies' URIs and the agent's final state (long text, read for the few queued
-- rows only) are joined in by marts.review_queue after it selects its rows (at a million attempts
-- this table cost 6.9 CPU-s and 1,117 MB with them, 3.2 CPU-s and 599 MB without).
with records as (

    select * from {{ ref('stg_run_records') }}
    where {{ in_changed_cycles() }}

),

scored as (

    select attempt_id, is_valid, outcome, score, duration_seconds
    from {{ ref('int_attempt_scores') }}
    where {{ in_changed_cycles() }}

),

-- a repair attempt's newest grade (a re-grade under a new item revision replaces the old reading)
grades as (

    select attempt_id, verdict, is_empty_patch
    from {{ ref('stg_repair_grades') }}
    where source_kind = 'attempt'
    qualify row_number() over (partition by attempt_id order by graded_at desc, grade_id desc) = 1

),

costs as (

    select attempt_id, input_tokens, output_tokens, cost_usd_from_tokens
    from {{ ref('int_attempt_costs') }}
    where {{ in_changed_cycles() }}

),

hints as (

    select attempt_id, task_id, task_revision, rendering_status
    from {{ ref('attempt_hints') }}

)

select
    records.attempt_id,
    records.cycle_id,
    records.purpose,
    records.agent_id,
    records.project_id,
    records.attempt_no,
    hints.task_id,
    hints.task_revision,
    records.end_reason,
    scored.is_valid,
    scored.outcome,
    scored.score,
    grades.verdict as repair_verdict,
    -- board and verdict: a pass is pass_full or pass_mock; repair: resolved, or resolved only when
    -- its failing files were re-run; null while the attempt has no outcome or grade
    case
        when records.purpose = 'repair' then
            case
                when grades.verdict in ('resolved', 'resolved_after_rerun') then 'pass'
                when grades.verdict is not null then 'fail'
            end
        when scored.outcome in ('pass_full', 'pass_mock') then 'pass'
        when scored.outcome is not null then 'fail'
    end as provisional_result,
    coalesce(scored.duration_seconds, epoch(records.ended_at) - epoch(records.started_at))
        as duration_seconds,
    costs.input_tokens,
    costs.output_tokens,
    costs.cost_usd_from_tokens as cost_usd,
    -- an artifact the renderer could open (the warehouse knows landed artifacts through the
    -- rendering hint only), or a repair patch that changes something
    coalesce(hints.rendering_status = 'measured', false)
        or coalesce(not grades.is_empty_patch, false) as has_artifact_or_patch
from records
left join scored on scored.attempt_id = records.attempt_id
left join grades on grades.attempt_id = records.attempt_id
left join costs on costs.attempt_id = records.attempt_id
left join hints on hints.attempt_id = records.attempt_id
