-- One row per graded patch (grade_id) with whom it measures: an attempt's grade joins its run record
-- (purpose repair only) for the agent and the cycle; a predictions file's grade carries its label
-- and is its own set (the file's sha256). An attempt counts only while it stands: not cut by our
-- tooling (harness_error, cancelled, emergency_stop) and not replaced by a loaded rerun.
with grades as (

    select * from {{ ref('stg_repair_grades') }}

),

repair_records as (

    select attempt_id, cycle_id, agent_id, end_reason, rerun_of
    from {{ ref('stg_run_records') }}
    where purpose = 'repair'

),

reruns as (

    select rerun_of as attempt_id, max(attempt_id) as rerun_attempt_id
    from repair_records
    where rerun_of is not null
    group by rerun_of

)

select
    grades.*,
    records.attempt_id is not null as has_attempt_record,
    records.cycle_id,
    records.agent_id,
    records.end_reason,
    reruns.rerun_attempt_id,
    case grades.source_kind
        when 'attempt' then records.agent_id
        else grades.predictions_label
    end as agent_label,
    case grades.source_kind
        when 'attempt' then records.cycle_id
        else grades.predictions_sha256
    end as source_set,
    nullif(concat_ws('; ',
        case
            when grades.source_kind = 'attempt' and records.attempt_id is null
                then 'attempt record not loaded (a run record of purpose repair)'
        end,
        case
            when records.end_reason in ('harness_error', 'cancelled', 'emergency_stop')
                then 'attempt cut by our tooling (' || records.end_reason || ')'
        end,
        case
            when reruns.rerun_attempt_id is not null
                then 'attempt rerun: ' || reruns.rerun_attempt_id || ' counts in its place'
        end
    ), '') as attempt_problem
from grades
left join repair_records as records
    on grades.source_kind = 'attempt'
    and records.attempt_id = grades.attempt_id
left join reruns
    on reruns.attempt_id = records.attempt_id
