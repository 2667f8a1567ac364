-- One row per (agent_label, track, source_kind, source_set, item_id): how many of the runs of one
-- item by one agent (seed 001: every model runs every item var('repair_runs_per_item') = 3 times)
-- resolved it. Runs counted as in marts.repair_rates (patches that count; resolved_after_rerun and
-- env_setup_failed apart). pass_rate = resolved_runs / runs is a reported figure (DOUBLE).
with runs as (

    select
        *,
        verdict in ('resolved_after_rerun', 'env_setup_failed') as is_set_apart
    from {{ ref('repair_runs') }}
    where counts_in_rates

),

per_item as (

    select
        agent_label,
        track,
        source_kind,
        source_set,
        item_id,
        count(*) filter (where not is_set_apart) as runs,
        count(*) filter (where verdict = 'resolved') as resolved_runs,
        count(*) filter (where is_set_apart) as runs_set_apart
    from runs
    group by agent_label, track, source_kind, source_set, item_id

)

select
    agent_label,
    track,
    source_kind,
    source_set,
    item_id,
    runs,
    resolved_runs,
    runs_set_apart,
    {{ var('repair_runs_per_item') }} as runs_planned,
    runs >= {{ var('repair_runs_per_item') }} as has_every_run,
    case when runs > 0 then resolved_runs::double / runs end as pass_rate,
    runs > 0 and resolved_runs = runs as resolved_every_run
from per_item
