{{ config(alias='harness_editions') }}
-- One row per harness edition (the harness changelog, seed harness_editions; methodology section
-- 14). Like the methodology editions, the effective date is read from the run records: the day of
-- the first attempt recorded under that edition; it wins over the written date. Records written
-- before environments were recorded name no edition and count for none.
with editions as (

    select * from {{ ref('harness_editions') }}

),

first_runs as (

    select
        harness_edition,
        min(started_at) as first_run_at,
        count(*) as runs_recorded,
        count(distinct cycle_id) as cycles_recorded
    from {{ ref('stg_run_records') }}
    where harness_edition is not null
        and purpose in ('board', 'verdict')  -- the rubric's attempts; repair runs are graded apart
    group by harness_edition

),

final as (

    select
        editions.edition,
        editions.written_on,
        cast(first_runs.first_run_at as date) as effective_on,
        coalesce(cast(first_runs.first_run_at as date) < editions.written_on, false) as effective_before_written,
        first_runs.first_run_at,
        coalesce(first_runs.runs_recorded, 0) as runs_recorded,
        coalesce(first_runs.cycles_recorded, 0) as cycles_recorded,
        editions.instructions_version,
        editions.scaffold_sha256,
        editions.summary
    from editions
    left join first_runs
        on first_runs.harness_edition = editions.edition

)

select * from final
