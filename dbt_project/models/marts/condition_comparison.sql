{{ config(materialized='table') }}
-- One row per (cycle_id, project_id, task_id, condition, check_id): seed 002's comparison of the
-- conditions (baseline | variant | external-<name>) a task ran under in one cycle (issue #31). Per
-- task and condition: the runs, the layers' provisional passes and the results after the person's
-- promote/reject (marts.judging_results); per check of the task (seed 002's output_exact_match and
-- tool_calls, from the newest hints of each run), its outcomes under that condition and whether it
-- applies there (not_applicable: the task's check lists the condition). A task and condition whose
-- runs carry no check has one row with a null check_id. Advice beside the rules: no model that feeds
-- a score, a verdict or the board reads it (a guard test).
with results as (

    select * from {{ ref('judging_results') }}

),

runs as (

    select
        cycle_id,
        project_id,
        task_id,
        condition,
        count(*) as runs,
        count(distinct agent_id) as agents,
        count(*) filter (where provisional_result = 'pass') as provisional_passes,
        count(*) filter (where counts_as_result) as results,
        count(*) filter (where decided_by_kind = 'person') as decided_by_people
    from results
    group by cycle_id, project_id, task_id, condition

),

-- the checks of each run's newest hints document (the revision marts.attempt_hints shows)
checks as (

    select c.attempt_id, c.check_id, c.check_type, c.check_status
    from {{ ref('stg_attempt_checks') }} as c
    join {{ ref('attempt_hints') }} as h
        on h.attempt_id = c.attempt_id and h.task_revision = c.task_revision

),

check_outcomes as (

    select
        results.cycle_id,
        results.project_id,
        results.task_id,
        results.condition,
        checks.check_id,
        -- one type per check id in a task definition; any() for the grouping
        any_value(checks.check_type) as check_type,
        count(*) as checked_runs,
        count(*) filter (where checks.check_status = 'pass') as check_passes,
        count(*) filter (where checks.check_status = 'fail') as check_fails,
        count(*) filter (where checks.check_status = 'not_applicable') as check_not_applicable,
        count(*) filter (where checks.check_status = 'unavailable') as check_unavailable
    from checks
    -- judging_results shows a repair attempt's blinded id (issue #31)
    join results on results.attempt_id = {{ shown_attempt_id('checks.attempt_id') }}
    group by results.cycle_id, results.project_id, results.task_id, results.condition, checks.check_id

)

select
    runs.cycle_id,
    runs.project_id,
    runs.task_id,
    runs.condition,
    runs.runs,
    runs.agents,
    runs.provisional_passes,
    runs.results,
    runs.decided_by_people,
    check_outcomes.check_id,
    check_outcomes.check_type,
    -- applies | not_applicable (every checked run of the condition: the check lists it) | mixed
    -- (the task's revisions disagree); null without a check
    case
        when check_outcomes.check_id is null then null
        when check_outcomes.check_not_applicable = check_outcomes.checked_runs then 'not_applicable'
        when check_outcomes.check_not_applicable = 0 then 'applies'
        else 'mixed'
    end as applicability,
    coalesce(check_outcomes.checked_runs, 0) as checked_runs,
    coalesce(check_outcomes.check_passes, 0) as check_passes,
    coalesce(check_outcomes.check_fails, 0) as check_fails,
    coalesce(check_outcomes.check_not_applicable, 0) as check_not_applicable,
    coalesce(check_outcomes.check_unavailable, 0) as check_unavailable
from runs
left join check_outcomes
    on check_outcomes.cycle_id = runs.cycle_id
    and check_outcomes.project_id = runs.project_id
    and check_outcomes.task_id = runs.task_id
    and check_outcomes.condition = runs.condition
