-- One row per (cycle_id, agent_id) with board-purpose attempts (METHODOLOGY.md §6).
-- board_score = median over projects of the per-project middle scores, using only complete sets
-- of projects not excluded by environment review, and stable (an unstable set of edition 1.6 or
-- later counts at its middle: see pair_sets.unstable_counts_at_middle); computed and ranked on exact
-- fractions (board_score_numerator / board_score_denominator). Agents with nothing left have no
-- score and no rank and are listed last (display_position).
with board_attempts as (

    select * from {{ ref('int_attempt_scores') }}
    where purpose = 'board'

),

agent_cycles as (

    select
        cycle_id,
        agent_id,
        count(*) filter (where is_valid) as valid_attempts,
        count(*) filter (where not is_valid) as invalid_attempts,
        count(*) filter (where outcome in ('pass_full', 'pass_mock')) as passes,
        -- a demo cycle (budgets scaled down) is flagged so it is never mistaken for a real one
        bool_or(is_demo) as is_demo_cycle
    from board_attempts
    group by cycle_id, agent_id

),

sets as (

    select
        pair_sets.*,
        coalesce(review.excluded_from_board, false) as excluded_by_review,
        -- counted: complete, not under review, and stable -- or unstable under edition 1.6, which
        -- counts an unstable set at its middle instead of setting it aside (pair_sets)
        pair_sets.is_complete
            and not coalesce(review.excluded_from_board, false)
            and (not pair_sets.is_unstable or coalesce(pair_sets.unstable_counts_at_middle, false))
            as counts
    from {{ ref('pair_sets') }} as pair_sets
    left join {{ ref('project_review') }} as review
        on review.cycle_id = pair_sets.cycle_id
        and review.project_id = pair_sets.project_id

),

set_counts as (

    select
        cycle_id,
        agent_id,
        count(*) as sets_total,
        count(*) filter (where counts) as sets_counted,
        count(*) filter (where is_complete and is_unstable) as sets_unstable,
        count(*) filter (where excluded_by_review) as sets_under_review,
        count(*) filter (where not is_complete) as sets_incomplete
    from sets
    group by cycle_id, agent_id

),

counted as (

    select
        cycle_id,
        agent_id,
        project_id,
        middle_numerator as n,
        middle_denominator as d
    from sets
    where counts

),

-- the counted middle scores of an agent as a list in exact order (ties by project_id), and its
-- lower and upper middle elements (the same element for an odd count). The order key is the one
-- of pair_sets: k = floor(n * 2^56 / d) by long division in base 2^28, a BIGINT exact for
-- reduced n / d with 0 < d < 2^28 and 0 <= n <= 100 d (guarded by the test
-- assert_scores_fit_the_exact_order_key; middle scores are attempt scores): r * 2^28 < 2^56 and
-- k <= 100 * 2^56 < 2^63; two different scores differ by at least 1 / (d1 d2) > 2^-56, so their
-- keys differ; equal scores get equal keys. Same order as comparing n1 * d2 with n2 * d1.
median_parts as (

    select
        cycle_id,
        agent_id,
        ordered[(len(ordered) - 1) // 2 + 1].n as lo_n,
        ordered[(len(ordered) - 1) // 2 + 1].d as lo_d,
        ordered[len(ordered) // 2 + 1].n as hi_n,
        ordered[len(ordered) // 2 + 1].d as hi_d
    from (
        select
            cycle_id,
            agent_id,
            list({'n': n, 'd': d} order by k, project_id) as ordered
        from (
            select
                *,
                (n::bigint // d::bigint) * 72057594037927936
                    + ((n::bigint % d::bigint) * 268435456 // d::bigint) * 268435456
                    + ((n::bigint % d::bigint) * 268435456 % d::bigint) * 268435456 // d::bigint as k
            from counted
        )
        group by cycle_id, agent_id
    )

),

-- median = (lo + hi) / 2 (lo = hi for an odd count), kept exact and reduced
medians as (

    select
        cycle_id,
        agent_id,
        (lo_n * hi_d + hi_n * lo_d) // gcd(lo_n * hi_d + hi_n * lo_d, 2 * lo_d * hi_d) as n,
        (2 * lo_d * hi_d) // gcd(lo_n * hi_d + hi_n * lo_d, 2 * lo_d * hi_d) as d
    from median_parts

),

-- competition rank: 1 + number of agents of the cycle with a strictly higher exact score
ranked as (

    select
        m.cycle_id,
        m.agent_id,
        1 + count(o.agent_id) as rank
    from medians as m
    left join medians as o
        on o.cycle_id = m.cycle_id
        and o.n * m.d > m.n * o.d
    group by m.cycle_id, m.agent_id

),

final as (

    select
        agent_cycles.cycle_id,
        agent_cycles.agent_id,
        agents.display_name,
        coalesce(agents.is_standard, false) as is_standard_agent,
        medians.n::double / medians.d::double as board_score,
        medians.n as board_score_numerator,
        medians.d as board_score_denominator,
        ranked.rank,
        row_number() over (
            partition by agent_cycles.cycle_id
            order by ranked.rank asc nulls last, agent_cycles.agent_id
        ) as display_position,
        case
            when agent_cycles.valid_attempts > 0
                then agent_cycles.passes::double / agent_cycles.valid_attempts::double
        end as pass_rate,
        agent_cycles.passes,
        agent_cycles.valid_attempts,
        agent_cycles.invalid_attempts,
        coalesce(set_counts.sets_total, 0) as sets_total,
        coalesce(set_counts.sets_counted, 0) as sets_counted,
        coalesce(set_counts.sets_unstable, 0) as sets_unstable,
        coalesce(set_counts.sets_under_review, 0) as sets_under_review,
        coalesce(set_counts.sets_incomplete, 0) as sets_incomplete,
        agent_cycles.is_demo_cycle,
        -- added for issue #15 (appended: the contract's columns keep their places): the harness
        -- edition the cycle ran ("mixed: …" when its attempts disagree, which an expectation flags)
        -- and the agent's sponsorship, disclosed next to its result (methodology section 13)
        environments.harness_edition,
        agents.sponsor,
        agents.sponsorship
    from agent_cycles
    left join set_counts
        on set_counts.cycle_id = agent_cycles.cycle_id
        and set_counts.agent_id = agent_cycles.agent_id
    left join medians
        on medians.cycle_id = agent_cycles.cycle_id
        and medians.agent_id = agent_cycles.agent_id
    left join ranked
        on ranked.cycle_id = agent_cycles.cycle_id
        and ranked.agent_id = agent_cycles.agent_id
    left join {{ ref('agents') }} as agents
        on agents.agent_id = agent_cycles.agent_id
    left join {{ ref('cycle_environments') }} as environments
        on environments.cycle_id = agent_cycles.cycle_id

)

select * from final
