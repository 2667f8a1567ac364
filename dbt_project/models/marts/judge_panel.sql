-- STAND-IN (helper B; helper A's model replaces it): one row per judged attempt, the verdicts on its
-- newest evidence folder (the evidence_sha256 loaded last). Medians over the valid verdicts only
-- (never the mean); a refused or empty verdict is counted, never scored. Advisory: no model that
-- feeds a score, a verdict or the board reads this mart.
with verdicts as (

    select * from {{ ref('stg_judge_verdicts') }}

),

newest_evidence as (

    select attempt_id, evidence_sha256
    from verdicts
    group by attempt_id, evidence_sha256
    qualify row_number() over (
        partition by attempt_id order by max(loaded_at) desc, evidence_sha256 desc
    ) = 1

),

panel as (

    select
        verdicts.attempt_id,
        any_value(verdicts.cycle_id) as cycle_id,
        any_value(verdicts.task_id) as task_id,
        count(*) as judges,
        count(*) filter (where verdicts.status = 'valid') as valid_judges,
        count(*) filter (where verdicts.status = 'refused') as refused_judges,
        median(verdicts.code_structure) filter (where verdicts.status = 'valid')::double
            as code_structure_median,
        median(verdicts.logic_correctness) filter (where verdicts.status = 'valid')::double
            as logic_correctness_median,
        (max(verdicts.code_structure) filter (where verdicts.status = 'valid')
            - min(verdicts.code_structure) filter (where verdicts.status = 'valid'))
            as code_structure_spread,
        (max(verdicts.logic_correctness) filter (where verdicts.status = 'valid')
            - min(verdicts.logic_correctness) filter (where verdicts.status = 'valid'))
            as logic_correctness_spread
    from verdicts
    inner join newest_evidence
        on newest_evidence.attempt_id = verdicts.attempt_id
        and newest_evidence.evidence_sha256 = verdicts.evidence_sha256
    group by verdicts.attempt_id

)

select
    attempt_id,
    cycle_id,
    task_id,
    judges,
    valid_judges,
    case when valid_judges >= 2 then 'judged' else 'insufficient_judges' end as status,
    code_structure_median,
    logic_correctness_median,
    code_structure_median + logic_correctness_median as judges_total,
    4 as judges_total_max,
    code_structure_spread,
    logic_correctness_spread,
    coalesce(code_structure_spread >= 2 or logic_correctness_spread >= 2, false) as judges_disagree,
    refused_judges
from panel
