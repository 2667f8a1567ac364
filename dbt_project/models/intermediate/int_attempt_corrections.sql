-- One row per dispute a person ruled environment_at_fault: our environment, not the agent, made the
-- attempt's result what it was (METHODOLOGY.md §10). The ruling is the dispute's first row in
-- decisions.dispute_rulings (a dispute is ruled once; `argusic dispute rule` and the argusic_disputes
-- form refuse a second ruling); a later row of the same dispute names the correction rerun.
-- The rerun counts in place of the original only when its record is loaded and is the original's
-- next run (its rerun_of is the original): a rerun_attempt_id that names anything else is ignored.
with rulings as (

    select * from {{ source('decisions', 'dispute_rulings') }}

),

first_rulings as (

    select *
    from rulings
    qualify row_number() over (partition by dispute_id order by decided_at, decided_by) = 1

),

reruns as (

    select dispute_id, max(rerun_attempt_id) as rerun_attempt_id
    from rulings
    where rerun_attempt_id is not null
    group by dispute_id

),

disputes as (

    select *
    from {{ source('decisions', 'disputes') }}
    qualify row_number() over (partition by dispute_id order by decided_at desc) = 1

),

loaded as (

    select attempt_id, rerun_of from {{ ref('stg_run_records') }}
    where purpose in ('board', 'verdict')  -- a repair attempt never corrects a scored one

)

select
    disputes.attempt_id,
    first_rulings.dispute_id,
    first_rulings.note,
    first_rulings.decided_by,
    first_rulings.decided_at,
    loaded.attempt_id as rerun_attempt_id
from first_rulings
join disputes on disputes.dispute_id = first_rulings.dispute_id
left join reruns on reruns.dispute_id = first_rulings.dispute_id
left join loaded
    on loaded.attempt_id = reruns.rerun_attempt_id
    and loaded.rerun_of = disputes.attempt_id
where first_rulings.ruling = 'environment_at_fault'
-- one correction per original attempt (the earliest ruling), whatever was filed twice
qualify row_number() over (
    partition by disputes.attempt_id order by first_rulings.decided_at, first_rulings.dispute_id
) = 1
