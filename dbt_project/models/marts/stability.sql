-- One row per (agent_id, project_id, environment) with at least two counted attempts of purposes
-- board and verdict (issue #14, seed 004): how stable an agent's score is on one project when
-- nothing but the agent's own variation changes. Counted: valid after corrections
-- (int_attempt_scores.is_valid), with a recorded environment (older records carry none: left out,
-- since they cannot be said to share one). Environment: the harness edition, the scaffold, the
-- image the attempt ran in (its digest) and the instructions (sha256), as the record pins them.
-- Informational only: no model that feeds a score, a verdict or the board reads it (a guard test).
--
-- Exactness: attempt scores are reduced fractions a_i / b_i (integers in the common case, b_i = 1).
-- With L the least common multiple of the b_i and c_i = a_i * (L / b_i), every score is c_i / L,
-- so the sample variance is exactly
--     (n * sum(c_i^2) - sum(c_i)^2) / (n * (n - 1) * L^2)
-- and the mean sum(c_i) / (n * L), both reduced by their gcd. HUGEINT holds it while n * L < 1e15
-- (scores are at most 100, so n * sum(c_i^2) <= 1e4 * (n * L)^2 < 1.7e38); L is bounded by the
-- product of the distinct denominators, checked in DOUBLE before any HUGEINT is formed. A group
-- beyond that bound (many distinct large denominators) gets the DOUBLE figures only and
-- is_exact = false, rather than an overflow that would stop the build.
with scored as (

    select
        scores.attempt_id,
        scores.cycle_id,
        scores.agent_id,
        scores.project_id,
        scores.score_numerator,
        scores.score_denominator,
        scores.score,
        records.harness_edition,
        records.scaffold_sha256,
        records.image_digest,
        records.instructions_sha256,
        concat_ws(' | ',
            records.harness_edition,
            'scaffold ' || records.scaffold_sha256,
            coalesce(records.image_digest, 'no image'),
            'instructions ' || records.instructions_sha256
        ) as environment
    from {{ ref('int_attempt_scores') }} as scores
    inner join {{ ref('stg_run_records') }} as records on records.attempt_id = scores.attempt_id
    where scores.is_valid
        and scores.purpose in ('board', 'verdict')
        and records.has_environment

),

groups as (

    select
        agent_id,
        project_id,
        environment,
        any_value(harness_edition) as harness_edition,
        any_value(scaffold_sha256) as scaffold_sha256,
        any_value(image_digest) as image_digest,
        any_value(instructions_sha256) as instructions_sha256,
        count(*) as attempts,
        min(score) as min_score,
        max(score) as max_score,
        avg(score) as mean_score_float,
        var_samp(score) as variance_float
    from scored
    group by agent_id, project_id, environment
    having count(*) >= 2

),

-- the distinct counts come from small distinct sets, not from DISTINCT aggregates over every
-- attempt (those made DuckDB keep a hash set per group: ~20% of this model's CPU at 300k attempts)
cycles as (

    select agent_id, project_id, environment, count(*) as cycles
    from (select distinct agent_id, project_id, environment, cycle_id from scored)
    group by agent_id, project_id, environment

),

-- sum(c_i) and sum(c_i^2) from each denominator's own sums: every attempt with denominator b has
-- c_i = a_i * (L / b), so sum(c_i) = sum over b of (L / b) * sum(a_i) and sum(c_i^2) = sum over b
-- of (L / b)^2 * sum(a_i^2). The attempts are summed once per (group, b), then scaled by L / b.
by_denominator as (

    select
        agent_id,
        project_id,
        environment,
        score_denominator,
        sum(score_numerator) as sum_a,
        sum(score_numerator * score_numerator) as sum_a_squared
    from scored
    group by agent_id, project_id, environment, score_denominator

),

-- the group's distinct denominators (one by_denominator row each)
denominators as (

    select
        agent_id,
        project_id,
        environment,
        list(score_denominator) as denominators,
        -- an upper bound of L (the lcm divides the product of the distinct denominators)
        exp(sum(ln(score_denominator::double))) as denominator_product_bound
    from by_denominator
    group by agent_id, project_id, environment

),

common as (

    select
        groups.*,
        cycles.cycles,
        denominators.denominators,
        denominators.denominator_product_bound,
        attempts::double * denominator_product_bound < 1e15 as is_exact,
        case
            when attempts::double * denominator_product_bound < 1e15
                then list_reduce(denominators, lambda a, b: lcm(a, b))::hugeint
        end as common_denominator
    from groups
    inner join cycles using (agent_id, project_id, environment)
    inner join denominators using (agent_id, project_id, environment)

),

sums as (

    select
        by_denominator.agent_id,
        by_denominator.project_id,
        by_denominator.environment,
        sum(by_denominator.sum_a * (common.common_denominator // by_denominator.score_denominator)) as sum_c,
        sum(
            by_denominator.sum_a_squared
            * (common.common_denominator // by_denominator.score_denominator)
            * (common.common_denominator // by_denominator.score_denominator)
        ) as sum_c_squared
    from by_denominator
    inner join common
        on common.agent_id = by_denominator.agent_id
        and common.project_id = by_denominator.project_id
        and common.environment = by_denominator.environment
    group by by_denominator.agent_id, by_denominator.project_id, by_denominator.environment

),

raw_fractions as (

    select
        common.*,
        common.attempts::hugeint * sums.sum_c_squared - sums.sum_c * sums.sum_c as raw_variance_numerator,
        common.attempts::hugeint * (common.attempts - 1)::hugeint
            * common.common_denominator * common.common_denominator as raw_variance_denominator,
        sums.sum_c as raw_mean_numerator,
        common.attempts::hugeint * common.common_denominator as raw_mean_denominator
    from common
    inner join sums
        on sums.agent_id = common.agent_id
        and sums.project_id = common.project_id
        and sums.environment = common.environment

),

final as (

    select
        agent_id,
        project_id,
        environment,
        harness_edition,
        scaffold_sha256,
        image_digest,
        instructions_sha256,
        attempts,
        cycles,
        (raw_mean_numerator // gcd(raw_mean_numerator, raw_mean_denominator))::hugeint as mean_numerator,
        (raw_mean_denominator // gcd(raw_mean_numerator, raw_mean_denominator))::hugeint as mean_denominator,
        case
            when is_exact then raw_mean_numerator::double / raw_mean_denominator::double
            else mean_score_float
        end as mean_score,
        (raw_variance_numerator // gcd(raw_variance_numerator, raw_variance_denominator))::hugeint
            as variance_numerator,
        (raw_variance_denominator // gcd(raw_variance_numerator, raw_variance_denominator))::hugeint
            as variance_denominator,
        case
            when is_exact then raw_variance_numerator::double / raw_variance_denominator::double
            else variance_float
        end as variance,
        min_score,
        max_score,
        is_exact
    from raw_fractions

)

select * from final
