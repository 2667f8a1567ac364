{{ config(materialized='incremental', incremental_strategy='append', pre_hook="{{ delete_changed_cycles() }}") }}
-- One row per (cycle_id, agent_id, project_id) of board-purpose attempts (METHODOLOGY.md §6).
-- low / middle / high are chosen on an exact integer order key and the 30% line is tested on
-- exact fractions (cross-multiplied HUGEINTs), never on floats:
-- spread > 30%  <=>  (high - low) * 100 > 30 * middle.
with board_attempts as (

    select * from {{ ref('int_attempt_scores') }}
    where purpose = 'board' and {{ in_changed_cycles() }}

),

-- Two BIGINTs per scored attempt, exact for reduced scores n / d with 0 < d < 2^28 and
-- 0 <= n <= 100 d (all guarded by the test assert_scores_fit_the_exact_order_key):
--   k = floor(n * 2^56 / d), the order key, by long division in base 2^28 so nothing overflows:
--       q0 = n // d, r0 = n % d;  q1 = r0 * 2^28 // d, r1 = r0 * 2^28 % d;  q2 = r1 * 2^28 // d;
--       k = q0 * 2^56 + q1 * 2^28 + q2  (r0, r1 < d < 2^28, so r * 2^28 < 2^56; k <= 100 * 2^56 < 2^63).
--       Two different scores differ by at least 1 / (d1 d2) > 2^-56, so 2^56 times them differ
--       by more than 1 and their floors differ; equal scores get equal keys (floor is monotone):
--       k orders exactly as comparing n1 * d2 with n2 * d1 does.
--   p = n * 2^28 + d, the score packed (n < 2^35, so p < 2^63); n = p // 2^28, d = p % 2^28.
-- A reduced fraction is the only (n, d) of its value, so equal k <=> equal score <=> equal p.
-- The casts to BIGINT are exact under the same bounds (and fail loudly outside them).
keyed as (

    select
        cycle_id,
        agent_id,
        project_id,
        attempt_id,
        attempt_no,
        is_valid,
        -- the edition as a comparable number: 1.6 -> 1006
        split_part(methodology_version, '.', 1)::integer * 1000
            + split_part(methodology_version, '.', 2)::integer as edition_code,
        n * 268435456 + d as p,
        (n // d) * 72057594037927936
            + ((n % d) * 268435456 // d) * 268435456
            + ((n % d) * 268435456 % d) * 268435456 // d as k
    from (
        select
            *,
            score_numerator::bigint as n,
            score_denominator::bigint as d
        from board_attempts
    )

),

-- one pass per set: the counts, the lowest and highest valid score (the p of least / greatest k)
-- and the sum of the valid p. The ties arg_min / arg_max may break arbitrarily share one p.
sets as (

    select
        cycle_id,
        agent_id,
        project_id,
        count(*) as recorded_attempts,
        count(*) filter (where is_valid) as valid_attempts,
        count(*) filter (where not is_valid) as invalid_attempts,
        -- complete: exactly three valid attempts, one per attempt_no 1..3. Three values with
        -- min 1, max 3 and sum 6 can only be {1, 2, 3}; were one of them null, the other two
        -- would have min 1, max 3 and sum 4 (min, max and sum skip nulls).
        coalesce(
            count(*) filter (where is_valid) = 3
            and min(attempt_no) filter (where is_valid) = 1
            and max(attempt_no) filter (where is_valid) = 3
            and sum(attempt_no) filter (where is_valid) = 6,
            false
        ) as is_complete,
        arg_min(p, k) filter (where is_valid) as low_p,
        arg_max(p, k) filter (where is_valid) as high_p,
        sum(p) filter (where is_valid) as sum_p,
        -- the valid attempts from lowest to highest score (equal scores by attempt_no): the first
        -- is the low attempt, the last the high one, and in a complete set the second the middle
        list(attempt_id order by k, attempt_no, attempt_id) filter (where is_valid) as valid_in_order,
        min(edition_code) filter (where is_valid) as min_edition_code
    from keyed
    group by cycle_id, agent_id, project_id

),

-- low = least valid score, high = greatest; middle (complete sets only: exactly three valid
-- scores a <= b <= c, so low = a and high = c) = b = sum - low - high, exact integer arithmetic
-- on the packed scores
picked as (

    select
        * exclude (low_p, high_p, sum_p, mid_p, valid_in_order),
        valid_in_order[1] as low_attempt_id,
        case when is_complete then valid_in_order[2] end as middle_attempt_id,
        valid_in_order[-1] as high_attempt_id,
        (low_p // 268435456)::hugeint as low_n,
        (low_p % 268435456)::hugeint as low_d,
        (mid_p // 268435456)::hugeint as mid_n,
        (mid_p % 268435456)::hugeint as mid_d,
        (high_p // 268435456)::hugeint as high_n,
        (high_p % 268435456)::hugeint as high_d
    from (
        select
            *,
            case when is_complete then (sum_p - low_p - high_p)::bigint end as mid_p
        from sets
    )

),

spread as (

    select
        *,
        -- (high - low) / middle * 100 = spread_n / spread_d  (exact)
        (high_n * low_d - low_n * high_d) * 100 * mid_d as spread_n,
        high_d * low_d * mid_n as spread_d
    from picked

),

final as (

    select
        cycle_id,
        agent_id,
        project_id,
        recorded_attempts,
        valid_attempts,
        invalid_attempts,
        is_complete,
        low_n::double / low_d::double as low_score,
        mid_n::double / mid_d::double as middle_score,
        high_n::double / high_d::double as high_score,
        low_n as low_numerator,
        low_d as low_denominator,
        mid_n as middle_numerator,
        mid_d as middle_denominator,
        high_n as high_numerator,
        high_d as high_denominator,
        case
            when not is_complete then null
            when mid_n = 0 and high_n > 0 then 'inf'::double
            when high_n = 0 then 0::double
            else spread_n::double / spread_d::double
        end as spread_pct,
        case
            -- an incomplete set is not judged: never counted, never marked unstable
            when not is_complete then false
            -- spread_n / spread_d > 30 with spread_d >= 0; middle 0 and any score above 0 is +inf
            else spread_n > 30 * spread_d
        end as is_unstable,
        -- added after the first release (appended: the contract's columns keep their places)
        low_attempt_id,
        middle_attempt_id,
        high_attempt_id,
        -- edition 1.6: an unstable set is flagged and its middle counts like any other (setting it
        -- aside let an agent or a project drop a set by making its runs differ); a set with a run of
        -- an earlier edition keeps that edition's rule (set aside)
        is_complete and spread_n > 30 * spread_d and coalesce(min_edition_code >= 1006, false)
            as unstable_counts_at_middle
    from spread

)

select * from final
