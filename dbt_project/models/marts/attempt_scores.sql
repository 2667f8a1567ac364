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

-- one read of the run records for both groups of columns (one join, not one per group)
records as (

    select
        attempt_id,
        -- the evidence
        final_state,
        served_log_uri,
        served_recording_uri,
        served_copy_withheld,
        log_sha256,
        recording_sha256,
        report_sha256,
        -- the agent's claims (its report) beside what the harness observed (edition 1.7, issue #25)
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
        seal_status,
        -- the comparison (issue #31, seed 002)
        condition,
        harness_name,
        harness_grade
    from {{ ref('stg_run_records') }}

)

select
    scores.* exclude (container_fault, claims_not_shown),
    records.final_state,
    records.served_log_uri,
    records.served_recording_uri,
    records.served_copy_withheld,
    records.log_sha256,
    records.recording_sha256,
    records.report_sha256,
    -- appended (issue #25): the contract's earlier columns keep their places
    scores.container_fault,
    -- appended (edition 1.7, issue #25): each claim beside its observation, then which claims the
    -- observation did not show
    records.claimed_install_ok,
    records.observed_install_ok,
    records.claimed_ran_ok,
    records.observed_ran_ok,
    records.claimed_errors_encountered,
    records.observed_errors_encountered,
    records.claimed_errors_fixed,
    records.observed_errors_fixed,
    records.claimed_test_depth,
    records.observed_verified,
    records.seal_status,
    scores.claims_not_shown,
    -- appended (issue #31, seed 002): where analysts compare harnesses, the condition the attempt ran
    -- under, its harness and that harness's comparison grade; a reference run (another model
    -- answered) is for reference only, never read as the harness's difference
    records.condition,
    records.harness_name,
    records.harness_grade,
    coalesce(records.harness_grade = 'reference', false) as reference_only
from scores
left join records
    on records.attempt_id = scores.attempt_id
