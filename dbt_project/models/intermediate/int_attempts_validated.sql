-- One row per attempt with its validity. An invalid attempt is kept with every reason that
-- applies, never scored, never on the board (METHODOLOGY.md §5 and §7). Only the rubric's purposes
-- (board, verdict): repair attempts are graded by the repair grader (marts.repair_runs), not scored.
with attempts as (

    select * from {{ ref('stg_run_records') }}
    where purpose in ('board', 'verdict')

),

reasons as (

    select
        attempts.*,
        concat_ws('; ',
            recorded_invalid_reason,
            case
                when not has_log and not has_recording then 'missing log and recording evidence'
                when not has_log then 'missing log evidence'
                when not has_recording then 'missing recording evidence'
            end,
            case end_reason
                when 'harness_error' then 'cut by our tooling (harness_error): not a complete attempt'
                when 'cancelled' then 'cancelled: not a complete attempt'
            end,
            case
                when end_reason = 'completed' and not has_report
                    then 'completed without a report: the harness could not read the agent''s report'
            end,
            case
                when errors_fixed > errors_encountered
                    then 'claims more errors fixed than encountered'
            end,
            case
                when errors_fixed < 0 or errors_encountered < 0
                    then 'negative error counts in the report'
            end
        ) as reasons_text

    from attempts

)

select
    * exclude (reasons_text),
    nullif(reasons_text, '') as invalid_reason,
    nullif(reasons_text, '') is null as is_valid
from reasons
