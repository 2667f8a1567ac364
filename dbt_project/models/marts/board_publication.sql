-- One row per cycle with a board (marts.board): whether its board is published, rejected or pending,
-- from the people's publication decisions (decisions.publication_decisions: appended, never updated;
-- the cycle's latest decision is in force, as argusic.review.publication.decision_in_force reads it:
-- by decided_at, then decided_by, descending). `argusic board` shows the latest published board unless
-- asked otherwise; the analyst copy's meta table lists every cycle with this state.
with cycles as (

    select
        cycle_id,
        bool_or(is_demo_cycle) as is_demo_cycle
    from {{ ref('board') }}
    group by cycle_id

),

decisions as (

    select
        *,
        row_number() over (
            partition by cycle_id order by decided_at desc, decided_by desc
        ) as newest_first
    from {{ source('decisions', 'publication_decisions') }}

),

history as (

    select
        cycle_id,
        count(*) as decisions,
        count(*) filter (where decision = 'approved') as approvals,
        max(decided_at) filter (where decision = 'approved') as last_approved_at,
        arg_max(board_sha256, decided_at) filter (where decision = 'approved') as last_approved_board_sha256
    from decisions
    group by cycle_id

),

in_force as (

    select * from decisions where newest_first = 1

)

select
    cycles.cycle_id,
    case in_force.decision
        when 'approved' then 'published'
        when 'rejected' then 'rejected'
        else 'pending'
    end as publication_state,
    coalesce(history.approvals, 0) > 0 as ever_published,
    in_force.decision,
    in_force.board_sha256,
    in_force.decided_by,
    in_force.decided_at,
    in_force.note as decision_note,
    coalesce(history.decisions, 0) as decisions,
    history.last_approved_at,
    history.last_approved_board_sha256,
    cycles.is_demo_cycle
from cycles
left join in_force
    on in_force.cycle_id = cycles.cycle_id
left join history
    on history.cycle_id = cycles.cycle_id
