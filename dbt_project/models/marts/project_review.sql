-- One row per (cycle_id, project_id) with board-purpose attempts: environment review
-- (METHODOLOGY.md §8). A project whose every valid board attempt in the cycle, by every agent,
-- failed or timed out is under review and excluded from scoring until a person decides:
-- project_at_fault -> its results count again; environment_at_fault -> they stay excluded.
with board_attempts as (

    select * from {{ ref('int_attempt_scores') }}
    where purpose = 'board'

),

projects as (

    select
        cycle_id,
        project_id,
        count(*) filter (where is_valid) as valid_attempts,
        count(distinct agent_id) filter (where is_valid) as agents_attempted,
        count(*) filter (where outcome in ('pass_full', 'pass_mock')) as passes
    from board_attempts
    group by cycle_id, project_id

),

decisions as (

    -- people's decisions (decisions.review_decisions: the Airflow form argusic_review, or
    -- `argusic review decide`); the latest per (cycle, project) is in force
    select * from {{ source('decisions', 'review_decisions') }}
    qualify row_number() over (
        partition by cycle_id, project_id order by decided_at desc, decided_by desc
    ) = 1

),

final as (

    select
        projects.cycle_id,
        projects.project_id,
        projects.valid_attempts,
        projects.agents_attempted,
        projects.passes,
        (projects.valid_attempts > 0 and projects.passes = 0) as under_review,
        decisions.decision,
        decisions.decided_by,
        decisions.decided_at,
        case
            when not (projects.valid_attempts > 0 and projects.passes = 0) then 'not_under_review'
            when decisions.decision is null then 'awaiting_decision'
            else decisions.decision
        end as review_status,
        (
            projects.valid_attempts > 0 and projects.passes = 0
            and coalesce(decisions.decision, '') <> 'project_at_fault'
        ) as excluded_from_board,
        decisions.note as decision_note
    from projects
    left join decisions
        on decisions.cycle_id = projects.cycle_id
        and decisions.project_id = projects.project_id

)

select * from final
