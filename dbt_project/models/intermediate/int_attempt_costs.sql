{{ config(materialized='incremental', incremental_strategy='append', pre_hook="{{ delete_changed_cycles() }}") }}
-- One row per attempt (attempt_id): what its model use cost, from the usage tokens its record states
-- times the model's unit prices (seed model_prices), never the client's own estimate (seed 001).
-- The model is the one that answered (model.responded), else the one asked for. Null when either
-- token count is unavailable or the model has no price: an unknown cost is never 0.
-- A table: read by int_judging_attempt_facts and repair_runs, and its key's tests, once built (as a
-- view each re-read four JSON fields of every record; its unique test alone took 6.5 s at a million).
with records as (

    select
        attempt_id,
        cycle_id,
        agent_id,
        input_tokens,
        output_tokens,
        coalesce(model_responded, model_requested) as model
    from {{ ref('stg_run_records') }}
    where {{ in_changed_cycles() }}

),

prices as (

    select * from {{ ref('model_prices') }}

)

select
    records.attempt_id,
    records.agent_id,
    records.model,
    records.input_tokens,
    records.output_tokens,
    prices.model is not null as has_price,
    cast(
        (records.input_tokens * prices.usd_per_million_input_tokens
            + records.output_tokens * prices.usd_per_million_output_tokens) / 1000000
        as decimal(18, 6)
    ) as cost_usd_from_tokens,
    -- the key of its incremental builds (macros/changed_cycles.sql), last so the others keep their places
    records.cycle_id
from records
left join prices
    on prices.model = records.model
