-- One row per (agent_label, track, source_kind, source_set): the resolution rate of the repair track
-- (seed 001) over the graded patches that count (marts.repair_runs.counts_in_rates: usable items of
-- the main set at their current revision, attempts that stand). n = resolved + unresolved +
-- patch_apply_failed + test_patch_conflict + no_report. Counted apart and never in n:
-- resolved_after_rerun (a flaky pass, neither a resolution nor a failure) and env_setup_failed (our
-- environment's fault, never the model's). rate = resolved / n; its 95% half-width
-- 1.96 * sqrt(p(1 - p) / n) assumes independent items, which items from one PR are not: the
-- number of distinct PRs stands beside n. Both are reported figures (DOUBLE), not a rule's line.
with runs as (

    select * from {{ ref('repair_runs') }}
    where counts_in_rates

),

counted as (

    select
        agent_label,
        track,
        source_kind,
        source_set,
        count(*) as graded,
        count(*) filter (
            where verdict not in ('resolved_after_rerun', 'env_setup_failed')
        ) as n,
        count(*) filter (where verdict = 'resolved') as resolved,
        count(*) filter (where verdict = 'unresolved') as unresolved,
        count(*) filter (where verdict = 'patch_apply_failed') as patch_apply_failed,
        count(*) filter (where verdict = 'test_patch_conflict') as test_patch_conflict,
        count(*) filter (where verdict = 'no_report') as no_report,
        count(*) filter (where verdict = 'resolved_after_rerun') as resolved_after_rerun,
        count(*) filter (where verdict = 'env_setup_failed') as env_setup_failed,
        count(distinct item_id) filter (
            where verdict not in ('resolved_after_rerun', 'env_setup_failed')
        ) as items,
        count(distinct pr_key) filter (
            where verdict not in ('resolved_after_rerun', 'env_setup_failed')
        ) as prs,
        count(*) filter (where is_empty_patch) as empty_patches,
        count(*) filter (where not is_empty_patch) as measured_patches,
        median(size_vs_gold) as median_size_vs_gold,
        sum(lint_new_errors) as lint_new_errors,
        sum(suppressions_added) as suppressions_added
    from runs
    group by agent_label, track, source_kind, source_set

)

select
    agent_label,
    track,
    source_kind,
    source_set,
    n,
    resolved,
    case when n > 0 then resolved::double / n end as rate,
    case
        when n > 0 then 1.96 * sqrt((resolved::double / n) * (1 - resolved::double / n) / n)
    end as half_width_95,
    items,
    prs,
    unresolved,
    patch_apply_failed,
    test_patch_conflict,
    no_report,
    resolved_after_rerun,
    env_setup_failed,
    graded,
    empty_patches,
    measured_patches,
    median_size_vs_gold,
    lint_new_errors,
    suppressions_added
from counted
