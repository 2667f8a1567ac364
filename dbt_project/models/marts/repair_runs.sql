-- One row per graded patch (grade_id): its verdict, the item's track, whom it measures (agent label:
-- the agent of a repair attempt, or a predictions file's model label) and in which set (the cycle,
-- or the predictions file), the quality figures, and whether it counts in marts.repair_rates (and
-- why not). Empty patches are flagged and not measured: their quality figures are null (seed 001).
-- Blinded (issue #31): grade_id and attempt_id are the blinded ids of int_repair_grades_attributed
-- (the agent part replaced by its label); no agent id or model name in any column.
with grades as (

    select * from {{ ref('int_repair_grades_attributed') }}

),

items as (

    select * from {{ ref('stg_repair_items') }}

),

validation as (

    select * from {{ ref('repair_item_validation') }}

),

costs as (

    select * from {{ ref('int_attempt_costs') }}

),

joined as (

    select
        grades.blind_grade_id as grade_id,
        grades.item_id,
        grades.revision,
        coalesce(items.is_current_revision, false) as is_current_revision,
        items.project_id,
        items.track,
        items.pr_key,
        grades.source_kind,
        grades.blind_attempt_id as attempt_id,
        grades.cycle_id,
        grades.predictions_sha256,
        grades.agent_label,
        grades.source_set,
        grades.verdict,
        grades.verdict = 'resolved' as is_resolved,
        grades.failing_test_count,
        grades.excluded_path_count,
        grades.patch_bytes,
        grades.is_empty_patch,
        -- quality: measured only for a patch that is not empty
        case when not grades.is_empty_patch then grades.changed_lines end as changed_lines,
        grades.gold_changed_lines,
        case
            when not grades.is_empty_patch and grades.gold_changed_lines > 0
                then grades.changed_lines::double / grades.gold_changed_lines
        end as size_vs_gold,
        case when not grades.is_empty_patch then grades.lint_new_errors end as lint_new_errors,
        case when not grades.is_empty_patch then grades.suppressions_added end as suppressions_added,
        coalesce(validation.is_usable, false) as item_usable,
        coalesce(validation.in_main_set, false) as item_in_main_set,
        grades.graded_at,
        grades.grader_image_digest,
        grades.grader_image_digest is not distinct from validation.grader_image_digest
            as same_grader_as_validation,
        grades.detail,
        -- the attempt's model use (repair attempts only: a predictions file states no usage)
        costs.input_tokens,
        costs.output_tokens,
        costs.cost_usd_from_tokens,
        nullif(concat_ws('; ',
            case when items.item_id is null then 'item revision not loaded' end,
            case
                when items.item_id is not null and not items.is_current_revision
                    then 'graded against revision ' || left(grades.revision, 12)
                        || ', not the item''s current one'
            end,
            case
                when items.is_current_revision and not validation.is_usable
                    then 'item not usable: ' || validation.why_not_usable
            end,
            case
                when items.is_current_revision and validation.is_usable and items.superseded_by_split
                    then 'original item superseded by its split items'
            end,
            grades.attempt_problem
        ), '') as not_counted_reason
    from grades
    left join items
        on items.item_id = grades.item_id
        and items.revision = grades.revision
    left join validation
        on validation.item_id = grades.item_id
    left join costs
        on costs.attempt_id = grades.attempt_id

)

select
    * exclude (not_counted_reason),
    not_counted_reason is null as counts_in_rates,
    not_counted_reason
from joined
