{{ config(materialized='view') }}
-- Contract mart marts.attempt_scores: one row per attempt, its points, exact score and outcome
-- (int_attempt_scores, the rules) with the attempt's evidence beside them: the agent's final state,
-- the served (masked) log and recording, the raw fingerprints. A view, so that no build rewrites a
-- million attempts' fingerprints and URIs (+4.7 s a build at a million attempts as a table): the
-- evidence stays where ingest wrote it once, and the analyst copy stores this view as a table.
with scores as (

    select * from {{ ref('int_attempt_scores') }}

),

evidence as (

    select
        attempt_id,
        final_state,
        served_log_uri,
        served_recording_uri,
        served_copy_withheld,
        log_sha256,
        recording_sha256,
        report_sha256
    from {{ ref('stg_run_records') }}

)

select
    scores.* exclude (container_fault),
    evidence.* exclude (attempt_id),
    -- appended (issue #25): the contract's earlier columns keep their places
    scores.container_fault
from scores
left join evidence
    on evidence.attempt_id = scores.attempt_id
