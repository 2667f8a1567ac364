-- One row per repair item (item_id) at its current revision: was the grader validated on it, and so
-- may it be used (seed 001: the gold patch resolved three times out of three, the empty patch
-- unresolved, and a split item's partial gold patch resolved)? Why not, when not. The originals of
-- split items may be usable but stay out of the main set (their tests are counted by the splits).
with items as (

    select * from {{ ref('stg_repair_items') }}
    where is_current_revision

),

runs as (

    select * from {{ ref('stg_repair_validations') }}

),

validations as (

    select
        item_id,
        revision,
        count(*) filter (where patch = 'gold') as gold_runs,
        count(*) filter (where patch = 'gold' and gave_expected_verdict) as gold_resolved_runs,
        count(*) filter (where patch = 'empty') as empty_runs,
        count(*) filter (where patch = 'empty' and gave_expected_verdict) as empty_unresolved_runs,
        count(*) filter (where patch = 'partial_gold') as partial_gold_runs,
        count(*) filter (where patch = 'partial_gold' and gave_expected_verdict) as partial_gold_resolved_runs,
        bool_and(recorded_usable) as recorded_usable,
        max(recorded_problems) as recorded_problems,
        max(validated_at) as validated_at,
        max(grader_image_digest) as grader_image_digest
    from runs
    group by item_id, revision

),

checked as (

    select
        items.item_id,
        items.revision,
        items.project_id,
        items.track,
        items.pr_key,
        items.is_split,
        items.split_original,
        items.split_topic,
        items.superseded_by_split,
        items.f2p_count,
        items.p2p_count,
        validations.item_id is not null as is_validated,
        coalesce(validations.gold_runs, 0) as gold_runs,
        coalesce(validations.gold_resolved_runs, 0) as gold_resolved_runs,
        coalesce(validations.empty_runs, 0) as empty_runs,
        coalesce(validations.empty_unresolved_runs, 0) as empty_unresolved_runs,
        coalesce(validations.partial_gold_runs, 0) as partial_gold_runs,
        coalesce(validations.partial_gold_resolved_runs, 0) as partial_gold_resolved_runs,
        validations.recorded_usable,
        nullif(validations.recorded_problems, '') as recorded_problems,
        validations.validated_at,
        validations.grader_image_digest
    from items
    left join validations
        on validations.item_id = items.item_id
        and validations.revision = items.revision

),

reasons as (

    select
        *,
        nullif(concat_ws('; ',
            case when not is_validated then 'not validated (no validation of the current revision)' end,
            case
                when is_validated and (gold_runs < 3 or gold_resolved_runs < gold_runs)
                    then 'gold patch resolved in ' || gold_resolved_runs || ' of ' || gold_runs
                        || ' runs (three of three needed)'
            end,
            case
                when is_validated and (empty_runs < 1 or empty_unresolved_runs < empty_runs)
                    then 'empty patch unresolved in ' || empty_unresolved_runs || ' of ' || empty_runs
                        || ' runs (every run, at least one, needed)'
            end,
            case
                when is_validated and is_split
                    and (partial_gold_runs < 1 or partial_gold_resolved_runs < partial_gold_runs)
                    then 'partial gold patch resolved in ' || partial_gold_resolved_runs || ' of '
                        || partial_gold_runs || ' runs (a split item needs every run, at least one)'
            end,
            case
                when is_validated and not recorded_usable
                    then 'the validation record says not usable'
                        || coalesce(': ' || recorded_problems, '')
            end
        ), '') as why_not_usable
    from checked

)

select
    * exclude (why_not_usable),
    why_not_usable is null as is_usable,
    why_not_usable is null and not superseded_by_split as in_main_set,
    why_not_usable
from reasons
