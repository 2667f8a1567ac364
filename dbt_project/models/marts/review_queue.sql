-- One row per attempt with a run record (issue #14, Layer 3; docs/judging.md): every attempt can be
-- reviewed by a person (issue #31, seed 004). The five selection rules decide the order, not whether
-- it is here: is_selected (the reasons it was selected) puts it first; readers order by
-- is_selected desc (argusic.review.judging.queue). Beside it, everything the review form shows
-- (provisional result, duration, tokens, cost, the three Layer 1 hints, the judges' medians, total
-- and disagreement). A row stays once reviewed (review_status 'reviewed'); only 'awaiting' rows get
-- a form. People's data and advice: no model that feeds a score, a verdict or the board reads this
-- mart (a guard test). Blinded (issue #31, seed 001): a repair attempt shows its agent's label as
-- agent_id and inside attempt_id (macros shown_agent_id, shown_attempt_id; repair/labels.toml), and
-- its served log and recording (which name the model) are not linked; the raw ids stay in the raw
-- layer (argusic.review.judging maps a shown id back when it records a review).
with facts as (

    select * from {{ ref('int_judging_attempt_facts') }}

),

hints as (

    select * from {{ ref('attempt_hints') }}

),

panel as (

    select * from {{ ref('judge_panel') }}

),

disputes as (

    select attempt_id, count(*) as disputes
    from {{ source('decisions', 'disputes') }}
    group by attempt_id

),

-- the served copies and the final state, joined in here at the end (long text the wide attempt-level
-- table int_judging_attempt_facts does not carry through its joins and window functions)
records as (

    select attempt_id, served_log_uri, served_recording_uri, served_copy_withheld, final_state
    from {{ ref('stg_run_records') }}

),

-- the review in force: the latest per attempt
reviews as (

    select attempt_id, look, decision, decided_by, decided_at
    from {{ source('decisions', 'judging_reviews') }}
    {{ review_in_force() }}

),

joined as (

    select
        facts.*,
        hints.needles_score,
        hints.needles_status,
        hints.rendering_score,
        hints.rendering_status,
        hints.rendering_pages,
        hints.agent_logic_score,
        hints.agent_logic_status,
        coalesce(panel.judges, 0) as judges,
        coalesce(panel.valid_judges, 0) as valid_judges,
        -- an attempt no judge has read has fewer than two valid verdicts too
        coalesce(panel.status, 'insufficient_judges') as judges_status,
        panel.code_structure_median,
        panel.logic_correctness_median,
        panel.judges_total,
        4 as judges_total_max,
        coalesce(panel.judges_disagree, false) as judges_disagree,
        coalesce(disputes.disputes, 0) as disputes,
        (hints.needles_status = 'measured')::int
            + (hints.rendering_status = 'measured')::int
            + (hints.agent_logic_status = 'measured')::int as measured_hints,
        coalesce(
            hints.needles_score = 0 or hints.rendering_score = 0 or hints.agent_logic_score = 0, false
        ) as a_measured_hint_is_0,
        -- a score is null when its hint is not measured: coalesce(…, 1) leaves it out of "every"
        coalesce(hints.needles_score, 1) = 1
            and coalesce(hints.rendering_score, 1) = 1
            and coalesce(hints.agent_logic_score, 1) = 1 as every_measured_hint_is_1,
        reviews.look,
        reviews.decision,
        reviews.decided_by,
        reviews.decided_at
    from facts
    left join hints on hints.attempt_id = facts.attempt_id
    -- judge_panel's ids are the shown ones
    left join panel on panel.attempt_id = {{ shown_attempt_id('facts.attempt_id') }}
    left join disputes on disputes.attempt_id = facts.attempt_id
    left join reviews on reviews.attempt_id = facts.attempt_id

),

rules as (

    select
        *,
        -- (1) the judges disagree: a criterion's valid scores spread 2 or more
        judges_disagree as rule_judges_disagree,
        -- (2) hints and judges disagree (judged attempts: at least two valid verdicts)
        judges_status = 'judged' and coalesce(
            (a_measured_hint_is_0 and judges_total >= 3)
            or (measured_hints > 0 and every_measured_hint_is_1 and judges_total <= 1),
            false
        ) as rule_hints_vs_judges,
        -- (3) near the boundary between pass and fail
        coalesce(
            outcome = 'pass_mock'
            or (outcome = 'fail' and score >= 80)
            or repair_verdict = 'resolved_after_rerun',
            false
        ) as rule_near_boundary,
        -- (4) too few valid judges for something a judge could have read
        judges_status = 'insufficient_judges' and has_artifact_or_patch as rule_insufficient_judges,
        -- (5) a maintainer disputes the attempt's result
        disputes > 0 as rule_disputed
    from joined

)

select
    {{ shown_attempt_id('rules.attempt_id') }} as attempt_id,
    cycle_id,
    purpose,
    {{ shown_agent_id('agent_id', 'purpose') }} as agent_id,
    project_id,
    attempt_no,
    task_id,
    task_revision,
    concat_ws(
        ', ',
        case when rule_judges_disagree then 'judges_disagree' end,
        case when rule_hints_vs_judges then 'hints_vs_judges' end,
        case when rule_near_boundary then 'near_boundary' end,
        case when rule_insufficient_judges then 'insufficient_judges' end,
        case when rule_disputed then 'disputed' end
    ) as reasons,
    -- a selection rule holds: the attempt comes first in the queue (every attempt is in it)
    rule_judges_disagree
        or rule_hints_vs_judges
        or rule_near_boundary
        or rule_insufficient_judges
        or rule_disputed as is_selected,
    rule_judges_disagree,
    rule_hints_vs_judges,
    rule_near_boundary,
    rule_insufficient_judges,
    rule_disputed,
    case when decided_at is null then 'awaiting' else 'reviewed' end as review_status,
    end_reason,
    is_valid,
    outcome,
    score,
    repair_verdict,
    provisional_result,
    duration_seconds,
    input_tokens,
    output_tokens,
    cost_usd,
    case when purpose = 'repair' then null else records.served_log_uri end as served_log_uri,
    case when purpose = 'repair' then null else records.served_recording_uri end as served_recording_uri,
    records.served_copy_withheld,
    -- the agent's own words may name its model
    case when purpose = 'repair' then null else records.final_state end as final_state,
    has_artifact_or_patch,
    needles_score,
    needles_status,
    rendering_score,
    rendering_status,
    rendering_pages,
    agent_logic_score,
    agent_logic_status,
    judges,
    valid_judges,
    judges_status,
    code_structure_median,
    logic_correctness_median,
    judges_total,
    judges_total_max,
    judges_disagree,
    disputes,
    look,
    decision,
    decided_by,
    decided_at
from rules
left join records on records.attempt_id = rules.attempt_id
