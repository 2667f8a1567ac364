-- One row per (cycle_id, agent_id, project_id) of board-purpose attempts (RULES.md sections 9-10).
-- low / middle / high are chosen and the 30% line is tested on exact fractions (cross-multiplied
-- HUGEINTs), never on floats: spread > 30%  <=>  (high - low) * 100 > 30 * middle.
with board_attempts as (

    select * from {{ ref('attempt_scores') }}
    where purpose = 'board'

),

-- one pass per set: the counts, and its valid attempts as a list ordered by exact score (ties
-- by attempt_id). The sort key floor(n * 10^25 / d) is exact for 0 < d < 2^31 and
-- 0 <= n <= 100 d (guarded by the test assert_scores_fit_the_exact_order_key): two different
-- scores differ by at least 1 / (d1 d2) > 2^-62, so their keys differ; equal scores get equal
-- keys; n * 10^25 < 2^127 fits a HUGEINT. Same order as comparing n1 * d2 with n2 * d1.
sets as (

    select
        cycle_id,
        agent_id,
        project_id,
        count(*) as recorded_attempts,
        count(*) filter (where is_valid) as valid_attempts,
        count(*) filter (where not is_valid) as invalid_attempts,
        count(distinct attempt_no) filter (where is_valid) as valid_attempt_nos,
        coalesce(bool_and(attempt_no between 1 and 3) filter (where is_valid), false) as attempt_nos_in_range,
        list(
            {'n': score_numerator, 'd': score_denominator}
            order by score_numerator * '10000000000000000000000000'::hugeint // score_denominator, attempt_id
        ) filter (where is_valid) as ordered
    from board_attempts
    group by cycle_id, agent_id, project_id

),

-- low = position 0, middle = position 1 (complete sets only), high = last valid position
picked as (

    select
        * exclude (ordered),
        -- complete: exactly three valid attempts, one per attempt_no 1..3
        (valid_attempts = 3 and valid_attempt_nos = 3 and attempt_nos_in_range) as is_complete,
        ordered[1].n as low_n,
        ordered[1].d as low_d,
        case when valid_attempts = 3 and valid_attempt_nos = 3 and attempt_nos_in_range then ordered[2].n end as mid_n,
        case when valid_attempts = 3 and valid_attempt_nos = 3 and attempt_nos_in_range then ordered[2].d end as mid_d,
        ordered[valid_attempts].n as high_n,
        ordered[valid_attempts].d as high_d
    from sets

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
        end as is_unstable
    from spread

)

select * from final
