-- One row per (pair_id, criterion): a paired patch review (issue #31, seed 001), P's and Q's medians
-- over the valid judges (never the mean; none below two valid judges), each side's blinding label,
-- and the pair's bugs: reported by the judges, and as a person re-checked them (the same pair-level
-- counts on each of the pair's six rows). Advisory: never part of a grade, a rate or the board.
with scored as (
    select * from {{ ref('stg_paired_judgements') }}
),

per_criterion as (
    select
        pair_id,
        criterion,
        any_value(criterion_order) as criterion_order,
        count(distinct judge_id) as judges,
        count(distinct judge_id) filter (where status = 'valid') as valid_judges,
        median(score) filter (where status = 'valid' and side = 'P') as p_median,
        median(score) filter (where status = 'valid' and side = 'Q') as q_median,
        max(score) filter (where status = 'valid' and side = 'P')
            - min(score) filter (where status = 'valid' and side = 'P') as p_spread,
        max(score) filter (where status = 'valid' and side = 'Q')
            - min(score) filter (where status = 'valid' and side = 'Q') as q_spread
    from scored
    group by pair_id, criterion
),

pairs as (
    select
        pair_id,
        any_value(item_id) as item_id,
        any_value(revision) as revision,
        any_value(project_id) as project_id,
        any_value(label) filter (where side = 'P') as p_label,
        any_value(label) filter (where side = 'Q') as q_label,
        any_value(patch_id) filter (where side = 'P') as p_patch_id,
        any_value(patch_id) filter (where side = 'Q') as q_patch_id,
        any_value(draw_seed) as draw_seed,
        any_value(drawn) as drawn
    from scored
    group by pair_id
),

bugs as (
    select
        pair_id,
        count(*) filter (where side = 'P') as p_bugs_reported,
        count(*) filter (where side = 'Q') as q_bugs_reported,
        count(*) filter (where side = 'P' and finding = 'confirmed') as p_bugs_confirmed,
        count(*) filter (where side = 'Q' and finding = 'confirmed') as q_bugs_confirmed,
        count(*) filter (where finding = 'not_a_bug') as bugs_not_a_bug,
        count(*) filter (where finding = 'cannot_tell') as bugs_cannot_tell,
        count(*) filter (where finding is null) as bugs_awaiting_check
    from {{ ref('stg_paired_bugs') }}
    group by pair_id
)

select
    p.pair_id,
    p.item_id,
    p.revision,
    p.project_id,
    c.criterion,
    c.criterion_order,
    p.p_label,
    p.q_label,
    p.p_patch_id,
    p.q_patch_id,
    p.draw_seed,
    p.drawn,
    c.judges,
    c.valid_judges,
    case when c.valid_judges >= 2 then c.p_median end as p_median,
    case when c.valid_judges >= 2 then c.q_median end as q_median,
    case when c.valid_judges >= 2 then c.p_spread end as p_spread,
    case when c.valid_judges >= 2 then c.q_spread end as q_spread,
    case when c.valid_judges >= 2 then 'judged' else 'insufficient_judges' end as status,
    coalesce(b.p_bugs_reported, 0) as p_bugs_reported,
    coalesce(b.q_bugs_reported, 0) as q_bugs_reported,
    coalesce(b.p_bugs_confirmed, 0) as p_bugs_confirmed,
    coalesce(b.q_bugs_confirmed, 0) as q_bugs_confirmed,
    coalesce(b.bugs_not_a_bug, 0) as bugs_not_a_bug,
    coalesce(b.bugs_cannot_tell, 0) as bugs_cannot_tell,
    coalesce(b.bugs_awaiting_check, 0) as bugs_awaiting_check
from per_criterion as c
inner join pairs as p on p.pair_id = c.pair_id
left join bugs as b on b.pair_id = c.pair_id
