-- One row per attempt (int_attempts_validated), with the corrections of disputes applied: an
-- original attempt whose correction rerun is loaded no longer counts (is_valid false, with the
-- reason), so the rerun, which has the same attempt_no, takes its place in every set, verdict and
-- board. Nothing else changes: an attempt without a correction passes through as it is.
with attempts as (

    select * from {{ ref('int_attempts_validated') }}

),

corrections as (

    select attempt_id, dispute_id, rerun_attempt_id
    from {{ ref('int_attempt_corrections') }}
    where rerun_attempt_id is not null

)

select
    attempts.* exclude (is_valid, invalid_reason),
    case
        when corrections.rerun_attempt_id is null then attempts.invalid_reason
        else concat_ws('; ',
            attempts.invalid_reason,
            'corrected: dispute ' || corrections.dispute_id
                || ' found our environment at fault; rerun ' || corrections.rerun_attempt_id
                || ' counts in its place'
        )
    end as invalid_reason,
    attempts.is_valid and corrections.rerun_attempt_id is null as is_valid,
    corrections.rerun_attempt_id as corrected_by_attempt_id
from attempts
left join corrections on corrections.attempt_id = attempts.attempt_id
