-- One row per machine: model memory, largest tier that fits and GB of model memory per dollar
-- (METHODOLOGY.md appendix). Shown only when every input (memory size, memory type, chip bandwidth) is
-- known; otherwise status 'unknown' with nulls, never a guess.
with machines as (

    select * from {{ ref('machines') }}

),

chips as (

    select * from {{ ref('chips') }}

),

inputs as (

    select
        machines.machine_id,
        machines.name,
        machines.memory_gb,
        machines.memory_type,
        machines.chip_id,
        chips.bandwidth_gb_per_s,
        machines.price_usd,
        machines.price_date,
        nullif(concat_ws(', ',
            case when machines.memory_gb is null then 'memory_gb' end,
            case when machines.memory_type is null then 'memory_type' end,
            case when chips.bandwidth_gb_per_s is null then 'bandwidth_gb_per_s' end
        ), '') as missing_inputs
    from machines
    left join chips
        on chips.chip_id = machines.chip_id

),

memory as (

    select
        *,
        missing_inputs is null as inputs_known,
        case
            when missing_inputs is not null then null
            -- discrete GPU VRAM counts in full; unified or system memory at 75%
            when memory_type = 'vram' then memory_gb
            else memory_gb * {{ var('shared_memory_share') }}
        end as model_memory_gb
    from inputs

),

fits as (

    select
        memory.machine_id,
        arg_max(tiers.tier, tiers.tier_order) as largest_tier,
        max(tiers.tier_order) as largest_tier_order
    from memory
    inner join {{ ref('hardware_tiers') }} as tiers
        on tiers.required_gb <= memory.model_memory_gb
    group by memory.machine_id

),

final as (

    select
        memory.machine_id,
        memory.name,
        memory.memory_gb,
        memory.memory_type,
        memory.chip_id,
        memory.bandwidth_gb_per_s,
        memory.model_memory_gb,
        fits.largest_tier,
        fits.largest_tier_order,
        case when memory.inputs_known then fits.largest_tier is not null end as fits_any_tier,
        case
            when memory.inputs_known and memory.price_usd > 0
                then memory.model_memory_gb / memory.price_usd::double
        end as gb_per_dollar,
        memory.price_usd,
        memory.price_date,
        case when memory.inputs_known then 'estimate' else 'unknown' end as status,
        memory.missing_inputs
    from memory
    left join fits
        on fits.machine_id = memory.machine_id

)

select * from final
