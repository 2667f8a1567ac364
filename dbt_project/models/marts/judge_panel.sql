-- One row per judged attempt: the panel of model judges on its newest evidence folder (issue #14,
-- seed 004, Layer 2). Each judge counts once (its newest judgement of that evidence). The medians
-- are over valid judgements only, never the mean (one judge off the rails does not move a median of
-- three), and only when at least two judges gave a valid verdict. Advisory: no model that feeds a
-- score, a verdict or the board reads this mart (tests/test_judging_warehouse.py guards this).
-- Blinded (issue #31, seed 001): a repair attempt's id shows its agent's label (macro
-- shown_attempt_id; repair/labels.toml), never the agent id.
with verdicts as (

    select * from {{ ref('stg_judge_verdicts') }}

),

newest_evidence as (

    -- the evidence folder judged last (a rebuilt folder, e.g. after a renderer fix, replaces the old)
    select attempt_id, evidence_sha256
    from (
        select
            attempt_id,
            evidence_sha256,
            row_number() over (
                partition by attempt_id order by max(loaded_at) desc, evidence_sha256 desc
            ) as newest_first
        from verdicts
        group by attempt_id, evidence_sha256
    )
    where newest_first = 1

),

panel as (

    select v.*
    from (
        select
            v.*,
            row_number() over (
                partition by v.attempt_id, v.judge_id order by v.loaded_at desc, v.task_revision desc
            ) as newest_first
        from verdicts as v
        inner join newest_evidence as e
            on v.attempt_id = e.attempt_id and v.evidence_sha256 = e.evidence_sha256
    ) as v
    where newest_first = 1

),

summary as (

    select
        attempt_id,
        any_value(cycle_id) as cycle_id,
        any_value(task_id) as task_id,
        count(*) as judges,
        count(*) filter (where status = 'valid') as valid_judges,
        count(*) filter (where status = 'refused') as refused_judges,
        quantile_cont(code_structure::double, 0.5) filter (where status = 'valid') as cs_median,
        quantile_cont(logic_correctness::double, 0.5) filter (where status = 'valid') as lc_median,
        max(code_structure) filter (where status = 'valid')
        - min(code_structure) filter (where status = 'valid') as cs_spread,
        max(logic_correctness) filter (where status = 'valid')
        - min(logic_correctness) filter (where status = 'valid') as lc_spread
    from panel
    group by attempt_id

)

select
    {{ shown_attempt_id('attempt_id') }} as attempt_id,
    cycle_id,
    task_id,
    judges,
    valid_judges,
    case when valid_judges >= 2 then 'judged' else 'insufficient_judges' end as status,
    case when valid_judges >= 2 then cs_median end as code_structure_median,
    case when valid_judges >= 2 then lc_median end as logic_correctness_median,
    case when valid_judges >= 2 then cs_median + lc_median end as judges_total,
    4 as judges_total_max,
    case when valid_judges >= 2 then cs_spread end as code_structure_spread,
    case when valid_judges >= 2 then lc_spread end as logic_correctness_spread,
    coalesce(valid_judges >= 2 and (cs_spread >= 2 or lc_spread >= 2), false) as judges_disagree,
    refused_judges
from summary
