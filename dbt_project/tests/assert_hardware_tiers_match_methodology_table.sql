-- The methodology appendix's table of requirements must come out of the computation in
-- marts.hardware_tiers (rounded to 2 decimals as printed). Any row returned is a mismatch.
with printed(tier, weights_gb, context_gb, required_gb, required_unified_gb) as (
    values
        ('7-8B',   4.89,  1.21,  7.10,   9.47),
        ('14B',    8.57,  1.34, 10.91,  14.54),
        ('27-32B', 19.58, 2.15, 22.73,  30.30),
        ('70B',    42.83, 2.68, 46.51,  62.01),
        ('120B+',  73.42, 2.95, 77.37, 103.16)
)

select
    printed.tier,
    computed.tier as computed_tier,
    printed.required_gb,
    round(computed.required_gb, 2) as computed_required_gb,
    printed.required_unified_gb,
    round(computed.required_unified_gb, 2) as computed_required_unified_gb
from printed
full outer join {{ ref('hardware_tiers') }} as computed
    on computed.tier = printed.tier
where computed.tier is null
    or printed.tier is null
    or round(computed.weights_gb, 2) <> printed.weights_gb
    or round(computed.context_gb, 2) <> printed.context_gb
    or round(computed.required_gb, 2) <> printed.required_gb
    or round(computed.required_unified_gb, 2) <> printed.required_unified_gb
