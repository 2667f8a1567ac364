-- One row per model-size tier: memory a Q4_K_M model of the tier's largest size needs
-- (METHODOLOGY.md appendix). Arithmetic on published configs; the constants are project vars.
--   weights  = params x bits_per_weight / 8 bytes
--   context  = 2 (K and V) x layers x kv_heads x head_dim x bytes_per_value x context_tokens
--   required = weights + context + runtime overhead;  unified/system memory counts at 75%
with tiers as (

    select * from {{ ref('model_tiers') }}

),

bytes as (

    select
        tier,
        tier_order,
        check_params_b,
        reference_model,
        layers,
        kv_heads,
        head_dim,
        check_params_b * 1e9 * {{ var('q4_k_m_bits_per_weight') }} / 8 as weights_bytes,
        2::bigint * layers * kv_heads * head_dim
            * {{ var('kv_bytes_per_value') }} * {{ var('kv_context_tokens') }} as context_bytes
    from tiers

),

gigabytes as (

    select
        tier,
        tier_order,
        check_params_b,
        reference_model,
        layers,
        kv_heads,
        head_dim,
        weights_bytes / {{ var('bytes_per_gb') }} as weights_gb,
        context_bytes / {{ var('bytes_per_gb') }} as context_gb,
        {{ var('runtime_overhead_gb') }}::double as overhead_gb
    from bytes

),

final as (

    select
        *,
        weights_gb + context_gb + overhead_gb as required_gb,
        (weights_gb + context_gb + overhead_gb) / {{ var('shared_memory_share') }} as required_unified_gb
    from gigabytes

)

select * from final
