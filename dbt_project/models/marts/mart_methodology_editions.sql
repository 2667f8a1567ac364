{{ config(alias='methodology_editions') }}
-- One row per methodology edition (METHODOLOGY.md §11). The effective date is read from the run
-- records: the day of the first run measured under that version; it wins over the written date.
-- No edition is retroactive: every run is scored under the edition it records.
with editions as (

    select * from {{ ref('methodology_editions') }}

),

first_runs as (

    select
        methodology_version,
        min(started_at) as first_run_at,
        count(*) as runs_recorded
    from {{ ref('stg_run_records') }}
    where purpose in ('board', 'verdict')  -- the rubric's attempts; repair runs are graded apart
    group by methodology_version

),

final as (

    select
        editions.version,
        'v' || editions.version as label,
        editions.written_on,
        cast(first_runs.first_run_at as date) as effective_on,
        coalesce(cast(first_runs.first_run_at as date) < editions.written_on, false) as effective_before_written,
        first_runs.first_run_at,
        coalesce(first_runs.runs_recorded, 0) as runs_recorded,
        editions.budget_standard_min,
        editions.budget_heavy_min,
        editions.budget_gpu_min,
        editions.key_limit_usd,
        editions.verdict_rule
    from editions
    left join first_runs
        on first_runs.methodology_version = editions.version

)

select * from final
