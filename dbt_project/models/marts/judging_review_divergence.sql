-- One row per reviewed attempt (issue #14, Layer 3; docs/judging.md): the review in force (the
-- latest per attempt) beside the judges' reading, and the divergence marker: per criterion the
-- person scored, gap = person − judges' median; the marker is the gap of largest absolute value
-- (a tie goes to the first criterion, code_structure), signed. People's data and advice: no model
-- that feeds a score, a verdict or the board reads this mart (a guard test). Blinded (issue #31,
-- seed 001): a repair attempt's agent_id and attempt_id show its agent's label (macros
-- shown_agent_id, shown_attempt_id; repair/labels.toml).
with reviews as (

    select
        *,
        count(*) over (partition by attempt_id) as reviews
    from {{ source('decisions', 'judging_reviews') }}
    {{ review_in_force() }}

),

facts as (

    select * from {{ ref('int_judging_attempt_facts') }}

),

panel as (

    select * from {{ ref('judge_panel') }}

),

gaps as (

    select
        {{ shown_attempt_id('reviews.attempt_id') }} as attempt_id,
        facts.cycle_id,
        facts.purpose,
        {{ shown_agent_id('facts.agent_id', 'facts.purpose') }} as agent_id,
        facts.project_id,
        reviews.task_revision,
        reviews.look,
        reviews.decision,
        reviews.decided_by,
        reviews.decided_at,
        reviews.note,
        reviews.reviews,
        reviews.code_structure as person_code_structure,
        reviews.logic_correctness as person_logic_correctness,
        panel.status as judges_status,
        panel.code_structure_median,
        panel.logic_correctness_median,
        panel.judges_total,
        facts.provisional_result,
        reviews.code_structure - panel.code_structure_median as code_structure_gap,
        reviews.logic_correctness - panel.logic_correctness_median as logic_correctness_gap
    from reviews
    left join facts on facts.attempt_id = reviews.attempt_id
    -- judge_panel's ids are the shown ones
    left join panel on panel.attempt_id = {{ shown_attempt_id('reviews.attempt_id') }}

),

marked as (

    select
        *,
        case
            when code_structure_gap is null then logic_correctness_gap
            when logic_correctness_gap is null then code_structure_gap
            when abs(logic_correctness_gap) > abs(code_structure_gap) then logic_correctness_gap
            else code_structure_gap
        end as divergence
    from gaps

)

select
    attempt_id,
    cycle_id,
    purpose,
    agent_id,
    project_id,
    task_revision,
    look,
    decision,
    decided_by,
    decided_at,
    note,
    reviews,
    person_code_structure,
    person_logic_correctness,
    judges_status,
    code_structure_median,
    logic_correctness_median,
    judges_total,
    code_structure_gap,
    logic_correctness_gap,
    divergence,
    case
        when person_code_structure is null and person_logic_correctness is null then 'not_scored'
        when divergence > 0 then 'person_higher'
        when divergence < 0 then 'judges_higher'
        when divergence = 0 then 'agree'
    end as divergence_direction,
    person_code_structure + person_logic_correctness - judges_total as total_gap,
    provisional_result,
    coalesce(
        (decision = 'promote' and provisional_result = 'fail')
        or (decision = 'reject' and provisional_result = 'pass'),
        false
    ) as decision_disagrees
from marked
