{{ config(materialized='table') }}
-- One row per attempt: points, exact score and outcome (METHODOLOGY.md §5), the rules every mart
-- builds on (pair_sets, board, project_review, project_verdicts read this table). The contract mart
-- marts.attempt_scores is this table with each attempt's evidence beside it.
-- Scores are exact fractions score_numerator / score_denominator (recovery = 20 * fixed /
-- encountered, so the denominator divides errors_encountered); `score` is the same value as a
-- DOUBLE for display only. Invalid attempts keep their reason and get no points or score; their
-- outcome says `invalid`. A valid attempt the container cut short (container_fault: the harness
-- killed, the report rejected or missing, evidence refused or withheld) scores 0 in every category,
-- like a timeout, and its outcome is `fail` (int_attempts_validated says whose failure is whose).
-- The fraction is computed in BIGINT, which cannot overflow: errors_encountered and errors_fixed
-- are INTEGERs (|x| < 2^31), so |raw numerator| <= 80 * 2^31 + 20 * 2^31 < 2^38; the reduced
-- numerator and denominator are published as HUGEINT (the contract type).
with attempts as (

    select * from {{ ref('int_attempts_corrected') }}

),

facts as (

    select
        *,
        end_reason = 'timeout' as is_timeout,
        container_fault is not null as is_cut_by_container,
        coalesce(install_ok, false) as installed,
        coalesce(install_ok, false) and coalesce(ran_ok, false) as ran,
        coalesce(errors_encountered, 0) as n_encountered,
        coalesce(errors_fixed, 0) as n_fixed
    from attempts

),

points as (

    select
        *,
        case
            when not is_valid then null
            when is_timeout or is_cut_by_container then 0
            when installed then 30
            else 0
        end as install_points,
        -- run points need install
        case
            when not is_valid then null
            when is_timeout or is_cut_by_container then 0
            when ran then 30
            else 0
        end as run_points,
        -- recovery as an exact fraction: 20 * fixed / encountered, the full 20 when none encountered
        case
            when not is_valid then null
            when is_timeout or is_cut_by_container then 0::bigint
            when n_encountered = 0 then 20::bigint
            else 20::bigint * n_fixed
        end as recovery_numerator,
        case
            when not is_valid then null
            when is_timeout or is_cut_by_container or n_encountered = 0 then 1::bigint
            else n_encountered::bigint
        end as recovery_denominator,
        -- depth points need a successful run
        case
            when not is_valid then null
            when is_timeout or is_cut_by_container or not ran then 0
            when test_depth = 'tier1_real' then 20
            when test_depth = 'tier2_mock' then 12
            else 0
        end as depth_points
    from facts

),

fractions as (

    select
        *,
        (install_points + run_points + depth_points)::bigint * recovery_denominator
            + recovery_numerator as raw_numerator,
        recovery_denominator as raw_denominator
    from points

),

final as (

    select
        attempt_id,
        cycle_id,
        purpose,
        agent_id,
        project_id,
        commit_sha,
        tier,
        attempt_no,
        methodology_version,
        started_at,
        ended_at,
        end_reason,
        rerun_of,
        is_demo,
        is_valid,
        invalid_reason,
        install_points,
        run_points,
        recovery_numerator::double / recovery_denominator::double as recovery_points,
        depth_points,
        (raw_numerator // gcd(raw_numerator, raw_denominator))::hugeint as score_numerator,
        (raw_denominator // gcd(raw_numerator, raw_denominator))::hugeint as score_denominator,
        raw_numerator::double / raw_denominator::double as score,
        case
            when not is_valid then 'invalid'
            when is_timeout then 'timeout'
            when is_cut_by_container then 'fail'
            when ran and test_depth = 'tier1_real' then 'pass_full'
            when ran and test_depth = 'tier2_mock' then 'pass_mock'
            else 'fail'
        end as outcome,
        -- added after the first release (appended: the contract's columns keep their places)
        budget_seconds,
        effective_budget_seconds,
        epoch(ended_at) - epoch(started_at) as duration_seconds,
        container_fault
    from fractions

)

select * from final
