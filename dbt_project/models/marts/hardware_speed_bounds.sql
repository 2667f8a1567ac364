-- One row per (machine, tier): does the tier fit, and the upper bound on generation speed for a
-- dense model of the tier: tokens/s <= bandwidth / weight bytes (METHODOLOGY.md appendix). An upper
-- bound, never a prediction; unknown (nulls) when any input is missing.
with estimates as (

    select * from {{ ref('hardware_estimates') }}

),

tiers as (

    select * from {{ ref('hardware_tiers') }}

),

final as (

    select
        estimates.machine_id,
        tiers.tier,
        tiers.tier_order,
        case
            when estimates.status = 'estimate' then estimates.model_memory_gb >= tiers.required_gb
        end as fits,
        case
            when estimates.status = 'estimate' then estimates.bandwidth_gb_per_s / tiers.weights_gb
        end as tokens_per_s_max,
        estimates.status
    from estimates
    cross join tiers

)

select * from final
