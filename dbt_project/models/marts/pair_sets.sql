-- One row per (cycle_id, agent_id, project_id) of board-purpose attempts (RULES.md sections 9-10).
-- low / middle / high are chosen and the 30% line is tested on exact fractions (cross-multiplied
-- HUGEINTs), never on floats: spread > 30%  <=>  (high - low) * 100 > 30 * middle.
with board_attempts as (

    select * from {{ ref('attempt_scores') }}
    where purpose = 'board'

),

valid as (

    select
        cycle_id,
        agent_id,
        project_id,
        attempt_id,
        score_numerator as n,
        score_denominator as d
    from board_attempts
    where is_valid

),

-- position of each valid attempt inside its set, ordered by exact score (ties by attempt_id)
positioned as (

    select
        s.cycle_id,
        s.agent_id,
        s.project_id,
        s.attempt_id,
        s.n,
        s.d,
        count(o.attempt_id) as position
    from valid as s
    left join valid as o
        on o.cycle_id = s.cycle_id
        and o.agent_id = s.agent_id
        and o.project_id = s.project_id
        and (
            o.n * s.d < s.n * o.d
            or (o.n * s.d = s.n * o.d and o.attempt_id < s.attempt_id)
        )
    group by s.cycle_id, s.agent_id, s.project_id, s.attempt_id, s.n, s.d

),

sets as (

    select
        cycle_id,
        agent_id,
        project_id,
        count(*) as recorded_attempts,
        count(*) filter (where is_valid) as valid_attempts,
        count(*) filter (where not is_valid) as invalid_attempts,
        count(distinct attempt_no) filter (where is_valid) as valid_attempt_nos,
        coalesce(bool_and(attempt_no between 1 and 3) filter (where is_valid), false) as attempt_nos_in_range
    from board_attempts
    group by cycle_id, agent_id, project_id

),

picked as (

    select
        sets.*,
        -- complete: exactly three valid attempts, one per attempt_no 1..3
        (sets.valid_attempts = 3 and sets.valid_attempt_nos = 3 and sets.attempt_nos_in_range) as is_complete,
        max(p.n) filter (where p.position = 0) as low_n,
        max(p.d) filter (where p.position = 0) as low_d,
        max(p.n) filter (where p.position = 1 and sets.valid_attempts = 3 and sets.valid_attempt_nos = 3 and sets.attempt_nos_in_range) as mid_n,
        max(p.d) filter (where p.position = 1 and sets.valid_attempts = 3 and sets.valid_attempt_nos = 3 and sets.attempt_nos_in_range) as mid_d,
        max(p.n) filter (where p.position = sets.valid_attempts - 1) as high_n,
        max(p.d) filter (where p.position = sets.valid_attempts - 1) as high_d
    from sets
    left join positioned as p
        on p.cycle_id = sets.cycle_id
        and p.agent_id = sets.agent_id
        and p.project_id = sets.project_id
    group by all

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
