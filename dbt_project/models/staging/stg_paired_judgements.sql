-- One row per (pair_id, judge_id, side, criterion): a paired review judge's score of one side (P or
-- Q) on one of seed 001's six criteria (issue #31), as loaded; score null when the judgement is not
-- valid (refused answers keep no scores). No rule is applied here.
with criteria as (
    select * from (values
        ('correctness', 1), ('change_scope', 2), ('consistency', 3),
        ('simplicity', 4), ('tidiness', 5), ('overall', 6)
    ) as c (criterion, criterion_order)
),

sides as (
    select * from (values ('P'), ('Q')) as s (side)
)

select
    j.pair_id,
    j.item_id,
    j.revision,
    j.project_id,
    j.judge_id,
    j.model,
    j.status,
    j.reason,
    s.side,
    case when s.side = 'P' then j.p_label else j.q_label end as label,
    case when s.side = 'P' then j.p_patch_id else j.q_patch_id end as patch_id,
    c.criterion,
    c.criterion_order,
    try_cast(json_extract_string(j.scores_json, '$.' || s.side || '.' || c.criterion) as integer) as score,
    j.context_sha256,
    j.draw_seed,
    j.drawn,
    j.loaded_at
from {{ source('raw', 'paired_judgements') }} as j
cross join sides as s
cross join criteria as c
