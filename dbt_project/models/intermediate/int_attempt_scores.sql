{{ config(materialized='incremental', incremental_strategy='append', pre_hook="{{ delete_changed_cycles() }}") }}
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
-- Edition 1.7 (issue #25): points come from what the harness observed. The agent's report is its
-- claim; a claim earns points only when the observation shows it (install, run, a verifying
-- command), and recovery is counted on the observed failed and fixed commands, not on the reported
-- ones. A record of edition 1.7 or later with no observation earns nothing (it never fails open).
-- Records of earlier editions keep the reading of their edition: the report alone.
with attempts as (

    select
        *,
        -- the edition as a comparable number: 1.7 -> 1007 (as in int_attempts_validated)
        split_part(methodology_version, '.', 1)::integer * 1000
            + split_part(methodology_version, '.', 2)::integer as edition_code
    from {{ ref('int_attempts_corrected') }}
    where {{ in_changed_cycles() }}

),

claims as (

    select
        *,
        end_reason = 'timeout' as is_timeout,
        container_fault is not null as is_cut_by_container,
        -- from edition 1.7 a claim counts only as far as the harness's observation shows it
        coalesce(edition_code >= 1007, false) as scored_from_evidence,
        observed_source is not null as has_observation
    from attempts

),

-- The credited facts: what the points are computed from. Under edition 1.7 each is the agent's claim
-- AND the observation (no observation: nothing is credited); under earlier editions, the claim.
facts as (

    select
        *,
        case
            when not scored_from_evidence then coalesce(install_ok, false)
            else has_observation and coalesce(install_ok, false) and coalesce(observed_install_ok, false)
        end as installed,
        case
            when not scored_from_evidence then coalesce(install_ok, false) and coalesce(ran_ok, false)
            else has_observation
                and coalesce(install_ok, false) and coalesce(observed_install_ok, false)
                and coalesce(ran_ok, false) and coalesce(observed_ran_ok, false)
        end as ran,
        -- the claimed depth counts only when a verifying command was observed to succeed
        case
            when not scored_from_evidence then true
            else has_observation and coalesce(observed_verified, false)
        end as depth_shown,
        -- the error counts recovery is computed on: the report's before 1.7, the observed ones from
        -- 1.7; an observation that cannot tell (null or negative counts) earns no recovery
        case
            when not scored_from_evidence then true
            else has_observation
                and coalesce(observed_errors_encountered >= 0 and observed_errors_fixed >= 0, false)
        end as recovery_known,
        case
            when not scored_from_evidence then coalesce(errors_encountered, 0)
            else coalesce(observed_errors_encountered, 0)
        end as n_encountered,
        -- observed fixes are capped at the observed failures: recovery never exceeds 20
        case
            when not scored_from_evidence then coalesce(errors_fixed, 0)
            else coalesce(least(observed_errors_fixed, observed_errors_encountered), 0)
        end as n_fixed
    from claims

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
            when is_timeout or is_cut_by_container or not recovery_known then 0::bigint
            when n_encountered = 0 then 20::bigint
            else 20::bigint * n_fixed
        end as recovery_numerator,
        case
            when not is_valid then null
            when is_timeout or is_cut_by_container or not recovery_known or n_encountered = 0 then 1::bigint
            else n_encountered::bigint
        end as recovery_denominator,
        -- depth points need a successful run (and, from 1.7, an observed verifying command)
        case
            when not is_valid then null
            when is_timeout or is_cut_by_container or not ran or not depth_shown then 0
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
            when ran and depth_shown and test_depth = 'tier1_real' then 'pass_full'
            when ran and depth_shown and test_depth = 'tier2_mock' then 'pass_mock'
            else 'fail'
        end as outcome,
        -- added after the first release (appended: the contract's columns keep their places)
        budget_seconds,
        effective_budget_seconds,
        epoch(ended_at) - epoch(started_at) as duration_seconds,
        container_fault,
        -- edition 1.7: which of the agent's claims the harness's observation did not show (a claim
        -- not shown earns nothing); null when every claim was shown, for an invalid attempt (not
        -- measured) and under earlier editions (the claim was the reading)
        case
            when is_valid and scored_from_evidence then nullif(
                case
                    when not has_observation then
                        case
                            when coalesce(install_ok or ran_ok, false)
                                or test_depth in ('tier1_real', 'tier2_mock')
                                or errors_encountered is not null
                                then 'no observation recorded: no claim is shown, none earns points'
                        end
                    else concat_ws('; ',
                        case
                            when install_ok and not coalesce(observed_install_ok, false)
                                then 'install_ok claimed, not observed'
                        end,
                        case
                            when ran_ok and not coalesce(observed_ran_ok, false)
                                then 'ran_ok claimed, not observed'
                        end,
                        case
                            when errors_encountered is not null and observed_errors_encountered is null
                                then 'errors_encountered claimed, not observed'
                            when errors_encountered is distinct from observed_errors_encountered
                                and errors_encountered is not null
                                then errors_encountered::varchar || ' errors encountered claimed, '
                                    || observed_errors_encountered::varchar || ' observed'
                        end,
                        case
                            when errors_fixed is not null and observed_errors_fixed is null
                                then 'errors_fixed claimed, not observed'
                            when errors_fixed > observed_errors_fixed
                                then errors_fixed::varchar || ' errors fixed claimed, '
                                    || observed_errors_fixed::varchar || ' observed'
                        end,
                        case
                            when test_depth in ('tier1_real', 'tier2_mock')
                                and not coalesce(observed_verified, false)
                                then test_depth || ' claimed, no verifying command observed'
                        end
                    )
                end, '')
        end as claims_not_shown
    from fractions

)

select * from final
