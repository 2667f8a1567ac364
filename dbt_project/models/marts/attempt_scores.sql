{{ config(materialized='view') }}
-- Contract mart marts.attempt_scores: one row per attempt, its points, exact score and outcome
-- (int_attempt_scores, the rules) with the attempt's evidence beside them: the agent's final state,
-- the served (masked) log and recording, the raw fingerprints, and (edition 1.7) each of the agent's
-- claims beside what the harness observed. A view, so that no build rewrites a
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

),

-- the agent's claims (its report) beside what the harness observed (edition 1.7, issue #25)
claims as (

    select
        attempt_id,
        install_ok as claimed_install_ok,
        observed_install_ok,
        ran_ok as claimed_ran_ok,
        observed_ran_ok,
        errors_encountered as claimed_errors_encountered,
        observed_errors_encountered,
        errors_fixed as claimed_errors_fixed,
        observed_errors_fixed,
        test_depth as claimed_test_depth,
        observed_verified,
        seal_status
    from {{ ref('stg_run_records') }}

)

select
    scores.* exclude (container_fault, claims_not_shown),
    evidence.* exclude (attempt_id),
    -- appended (issue #25): the contract's earlier columns keep their places
    scores.container_fault,
    -- appended (edition 1.7, issue #25): each claim beside its observation, then which claims the
    -- observation did not show
    claims.* exclude (attempt_id),
    scores.claims_not_shown
from scores
left join evidence
    on evidence.attempt_id = scores.attempt_id
left join claims
    on claims.attempt_id = scores.attempt_id
