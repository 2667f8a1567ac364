{{ config(materialized='table') }}
-- One row per attempt with a run record: whether it counts as a result (seed 004, Layer 3; issue
-- #31). The final decision is the person's promote/reject when a review is in force (the latest of
-- decisions.judging_reviews), else the provisional one of the layers (a provisional pass promotes,
-- a fail rejects; none while the attempt has no outcome or grade). An item counts as a result
-- exactly when its final decision is promote. People's data and advice beside the rules: no model
-- that feeds a score, a verdict or the board reads this mart (a guard test); the public run page
-- shows it. Blinded (issue #31, seed 001): a repair attempt's agent_id and attempt_id show its
-- agent's label (macros shown_agent_id, shown_attempt_id; repair/labels.toml).
with facts as (

    select attempt_id, cycle_id, purpose, agent_id, project_id, attempt_no, provisional_result
    from {{ ref('int_judging_attempt_facts') }}

),

conditions as (

    select attempt_id, condition
    from {{ ref('stg_run_records') }}

),

-- the review in force: the latest per attempt (as marts.review_queue reads it)
reviews as (

    select attempt_id, look, decision, decided_by, decided_at
    from {{ source('decisions', 'judging_reviews') }}
    {{ review_in_force() }}

),

decided as (

    select
        {{ shown_attempt_id('facts.attempt_id') }} as attempt_id,
        facts.cycle_id,
        facts.purpose,
        {{ shown_agent_id('facts.agent_id', 'facts.purpose') }} as agent_id,
        facts.project_id,
        facts.attempt_no,
        case when facts.purpose = 'repair' then 'repair' else 'install_and_run' end as task_id,
        conditions.condition,
        facts.provisional_result,
        case facts.provisional_result when 'pass' then 'promote' when 'fail' then 'reject' end
            as provisional_decision,
        reviews.decision as person_decision,
        reviews.look,
        reviews.decided_by,
        reviews.decided_at
    from facts
    left join conditions on conditions.attempt_id = facts.attempt_id
    left join reviews on reviews.attempt_id = facts.attempt_id

)

select
    *,
    coalesce(person_decision, provisional_decision) as final_decision,
    case
        when person_decision is not null then 'person'
        when provisional_decision is not null then 'provisional'
    end as decided_by_kind,
    coalesce(coalesce(person_decision, provisional_decision) = 'promote', false) as counts_as_result,
    -- the person overturned the layers: promoted a provisional fail, or rejected a provisional pass
    coalesce(person_decision <> provisional_decision, false) as overturned
from decided
