-- One row per attempt with its validity and, for a valid one, what the container did that cut its
-- own measurement (METHODOLOGY.md §5, §7, §8). Whose failure decides:
--   * ours -- the pipeline's tooling could not complete the attempt (the executor, the daemon, the
--     fetch, the gateway, our storage; a reason the pipeline set in the record; an operator's cancel
--     or emergency stop): INVALID,
--     kept with every reason that applies, rerun, never scored, never on the board;
--   * the container's -- the agent or the project stopped its own measurement (the harness killed,
--     /out refused, the report or the evidence missing or unreadable, a served copy withheld, a
--     report that claims more errors fixed than encountered): VALID, a measured failure with 0
--     points and its reason (container_fault). An invalid attempt is rerun and a set without three
--     valid runs is left off the board, so treating these as invalid would hand the code under test
--     a veto over its own result (issue #25).
-- Edition 1.6 made the rule; a record written before records said whose failure it was (no
-- container_fault) keeps the old reading: every missing part is ours, and a report claiming more
-- errors fixed than encountered makes an attempt of an earlier edition invalid. Only the rubric's
-- purposes (board, verdict): repair attempts are graded by the repair grader (marts.repair_runs).
with attempts as (

    select
        *,
        -- the edition as a comparable number: 1.6 -> 1006 (editions are "<major>.<minor>")
        split_part(methodology_version, '.', 1)::integer * 1000
            + split_part(methodology_version, '.', 2)::integer as edition_code
    from {{ ref('stg_run_records') }}
    where purpose in ('board', 'verdict')

),

editions as (

    select
        *,
        -- what the container did to cut its run counts from edition 1.6, the edition that made the rule
        case when edition_code >= 1006 then recorded_container_fault end as cut_by_container
    from attempts

),

reasons as (

    select
        editions.*,
        concat_ws('; ',
            recorded_invalid_reason,
            case
                when cut_by_container is not null then null
                when not has_log and not has_recording then 'missing log and recording evidence'
                when not has_log then 'missing log evidence'
                when not has_recording then 'missing recording evidence'
            end,
            case
                when end_reason = 'cancelled' then 'cancelled: not a complete attempt'
                when end_reason = 'emergency_stop' then 'emergency stop: not a complete attempt'
                when cut_by_container is not null then null
                when end_reason = 'harness_error'
                    then 'cut by our tooling (harness_error): not a complete attempt'
            end,
            case
                when end_reason = 'completed' and not has_report and cut_by_container is null
                    then 'completed without a report: the harness could not read the agent''s report'
            end,
            case
                when edition_code < 1006 and errors_fixed > errors_encountered
                    then 'claims more errors fixed than encountered'
            end,
            case
                when edition_code < 1006 and (errors_fixed < 0 or errors_encountered < 0)
                    then 'negative error counts in the report'
            end
        ) as reasons_text,
        -- a report claiming more errors fixed than encountered (§5): from edition 1.6 the claim is
        -- rejected and the run counts as a failure; under earlier editions the run was invalid
        concat_ws('; ',
            cut_by_container,
            case
                when edition_code >= 1006 and errors_fixed > errors_encountered
                    then 'report rejected: claims more errors fixed than encountered'
            end,
            case
                when edition_code >= 1006 and (errors_fixed < 0 or errors_encountered < 0)
                    then 'report rejected: negative error counts'
            end
        ) as faults_text

    from editions

)

select
    * exclude (edition_code, cut_by_container, reasons_text, faults_text),
    nullif(reasons_text, '') as invalid_reason,
    nullif(reasons_text, '') is null as is_valid,
    -- only for a valid attempt: an invalid one is not measured at all
    case when nullif(reasons_text, '') is null then nullif(faults_text, '') end as container_fault
from reasons
