{{ config(materialized='incremental', incremental_strategy='append', pre_hook="{{ delete_changed_cycles() }}") }}
-- One row per cycle_id: did the cycle's valid attempts run under one environment (methodology
-- sections 4 and 14: the same conditions for every agent, one harness per cycle)? Only attempts
-- whose record carries an environment are compared (older records carry none: counted apart).
-- Parts compared: harness edition, scaffold, instructions (version and sha256), executor, container
-- limits; the image digest within each image role (the runner image and the agents image
-- legitimately differ, by the agent's harness); the budget within each tier (tiers have their own).
-- Validity after corrections is read where the rules computed it once (int_attempt_scores.is_valid,
-- one row per board and verdict attempt, as stability reads it); the environment from the record.
-- The attempts carry only the record's columns compared below: the CTE is read twice, so DuckDB
-- computes it once for both readers, and records.* made that one pass compute every column of
-- stg_run_records for every attempt (its JSON fields too): 0.38 -> 0.26 CPU-s at 300k attempts.
with attempts as (

    select
        scores.is_valid,
        records.cycle_id,
        records.has_environment,
        records.harness_edition,
        records.scaffold_sha256,
        records.instructions_version,
        records.instructions_sha256,
        records.executor,
        records.image_role,
        records.image_digest,
        records.limit_cpus,
        records.limit_memory_bytes,
        records.limit_pids,
        records.limit_disk_bytes,
        records.network_mode,
        records.tier,
        records.limit_budget_seconds
    from {{ ref('int_attempt_scores') }} as scores
    inner join {{ ref('stg_run_records') }} as records on records.attempt_id = scores.attempt_id
    where {{ in_changed_cycles('scores.cycle_id') }} and {{ in_changed_cycles('records.cycle_id') }}

),

counts as (

    select
        cycle_id,
        count(*) filter (where is_valid) as valid_attempts,
        count(*) filter (where is_valid and has_environment) as attempts_with_environment,
        count(*) filter (where is_valid and not has_environment) as attempts_without_environment
    from attempts
    group by cycle_id

),

compared as (

    select * from attempts
    where is_valid and has_environment

),

parts as (

    select
        cycle_id,
        count(distinct harness_edition) as harness_editions,
        count(distinct scaffold_sha256) as scaffolds,
        count(distinct {'version': instructions_version, 'sha256': instructions_sha256}) as instructions,
        count(distinct coalesce(executor, 'unrecorded')) as executors,
        count(distinct image_digest) filter (where image_role = 'runner') as runner_images,
        count(distinct image_digest) filter (where image_role = 'agents') as agents_images,
        count(distinct {
            'cpus': limit_cpus, 'memory_bytes': limit_memory_bytes, 'pids': limit_pids,
            'disk_bytes': limit_disk_bytes, 'network': network_mode
        }) as limit_sets,
        string_agg(distinct harness_edition, ', ' order by harness_edition) as edition_list
    from compared
    group by cycle_id

),

budgets as (

    select
        cycle_id,
        max(budgets) as budgets_per_tier
    from (
        select cycle_id, tier, count(distinct limit_budget_seconds) as budgets
        from compared
        group by cycle_id, tier
    )
    group by cycle_id

),

final as (

    select
        counts.cycle_id,
        counts.valid_attempts,
        counts.attempts_with_environment,
        counts.attempts_without_environment,
        case
            when parts.harness_editions = 1 then parts.edition_list
            when parts.harness_editions > 1 then 'mixed: ' || parts.edition_list
        end as harness_edition,
        coalesce(parts.harness_editions, 0) as harness_editions,
        coalesce(parts.scaffolds, 0) as scaffolds,
        coalesce(parts.instructions, 0) as instructions,
        coalesce(parts.executors, 0) as executors,
        coalesce(parts.runner_images, 0) as runner_images,
        coalesce(parts.agents_images, 0) as agents_images,
        coalesce(parts.limit_sets, 0) as limit_sets,
        coalesce(budgets.budgets_per_tier, 0) as budgets_per_tier,
        -- 1 when uniform; else the most distinct values any one part took (0: nothing to compare)
        greatest(
            coalesce(parts.harness_editions, 0), coalesce(parts.scaffolds, 0),
            coalesce(parts.instructions, 0), coalesce(parts.executors, 0),
            coalesce(parts.runner_images, 0), coalesce(parts.agents_images, 0),
            coalesce(parts.limit_sets, 0), coalesce(budgets.budgets_per_tier, 0)
        ) as environments,
        nullif(concat_ws(', ',
            case when parts.harness_editions > 1 then 'harness_edition' end,
            case when parts.scaffolds > 1 then 'scaffold' end,
            case when parts.instructions > 1 then 'instructions' end,
            case when parts.executors > 1 then 'executor' end,
            case when parts.runner_images > 1 then 'runner_image' end,
            case when parts.agents_images > 1 then 'agents_image' end,
            case when parts.limit_sets > 1 then 'limits' end,
            case when budgets.budgets_per_tier > 1 then 'budget' end
        ), '') as disagrees_on
    from counts
    left join parts
        on parts.cycle_id = counts.cycle_id
    left join budgets
        on budgets.cycle_id = counts.cycle_id

)

select
    * exclude (disagrees_on),
    -- null when no valid attempt carries an environment (nothing to compare)
    case when attempts_with_environment > 0 then disagrees_on is null end as is_uniform,
    disagrees_on
from final
