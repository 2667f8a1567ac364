-- One row per graded patch (grade_id) with whom it measures, blinded (issue #31): an attempt's grade
-- joins its run record (purpose repair only) for the cycle and the agent, whose id becomes its label
-- (seed repair_labels, generated from repair/labels.toml; unlisted: model-<keyed sha256[:8]>); a predictions
-- file's grade carries its label and is its own set (the file's sha256). The raw grade_id and
-- attempt_id stay here as join keys only; blind_grade_id and blind_attempt_id (the agent part
-- replaced by the label) are what the marts show. An attempt counts only while it stands: not cut by
-- our tooling (harness_error, cancelled, emergency_stop) and not replaced by a loaded rerun.
with grades as (

    select * from {{ ref('stg_repair_grades') }}

),

labels as (

    select name, label from {{ ref('repair_labels') }}

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

),

joined as (

    select
        grades.*,
        records.attempt_id is not null as has_attempt_record,
        records.cycle_id,
        records.end_reason,
        reruns.rerun_attempt_id,
        -- the agent named by the attempt id (<cycle>.<purpose>.<agent>.<project>.a<n>), as labelled
        case
            when grades.source_kind = 'attempt' then
                {{ repair_label("split_part(grades.attempt_id, '.', 3)", 'id_labels.label') }}
        end as id_label,
        case grades.source_kind
            when 'attempt' then
                case when records.agent_id is not null then
                    {{ repair_label('records.agent_id', 'agent_labels.label') }}
                end
            else grades.predictions_label
        end as agent_label,
        case grades.source_kind
            when 'attempt' then records.cycle_id
            else grades.predictions_sha256
        end as source_set,
        records.agent_id as record_agent_id
    from grades
    left join repair_records as records
        on grades.source_kind = 'attempt'
        and records.attempt_id = grades.attempt_id
    left join reruns
        on reruns.attempt_id = records.attempt_id
    left join labels as id_labels
        on id_labels.name = split_part(grades.attempt_id, '.', 3)
    left join labels as agent_labels
        on agent_labels.name = records.agent_id

)

select
    * exclude (id_label, record_agent_id, detail, rerun_attempt_id),
    {{ blind_attempt_id('attempt_id', 'id_label') }} as blind_attempt_id,
    case source_kind
        when 'attempt' then {{ blind_attempt_id('attempt_id', 'id_label') }} || '.' || item_id
        else grade_id
    end as blind_grade_id,
    {{ blind_attempt_id('rerun_attempt_id', 'id_label') }} as blind_rerun_attempt_id,
    -- the grader's note with the attempt id, then the agent id, replaced (a path may name them; an
    -- agent id under 3 characters is left: replacing it would garble the note, not hide a name)
    case
        when source_kind = 'attempt' and detail is not null then
            replace(
                replace(detail, attempt_id, {{ blind_attempt_id('attempt_id', 'id_label') }}),
                split_part(attempt_id, '.', 3),
                case when length(split_part(attempt_id, '.', 3)) >= 3 then id_label
                    else split_part(attempt_id, '.', 3) end
            )
        else detail
    end as detail,
    nullif(concat_ws('; ',
        case
            when source_kind = 'attempt' and not has_attempt_record
                then 'attempt record not loaded (a run record of purpose repair)'
        end,
        case
            when end_reason in ('harness_error', 'cancelled', 'emergency_stop')
                then 'attempt cut by our tooling (' || end_reason || ')'
        end,
        case
            when rerun_attempt_id is not null
                then 'attempt rerun: ' || {{ blind_attempt_id('rerun_attempt_id', 'id_label') }}
                    || ' counts in its place'
        end
    ), '') as attempt_problem
from joined
