-- Contract mart marts.attempt_corrections: one row per original attempt a dispute ruling found our
-- environment at fault for, with the person's note and the rerun that counts in its place (null
-- until the rerun's record is loaded). The original stays loaded, marked as corrected (its
-- invalid_reason in marts.attempt_scores says so); its raw evidence is never touched.
select
    attempt_id,
    dispute_id,
    note,
    decided_by,
    decided_at,
    rerun_attempt_id
from {{ ref('int_attempt_corrections') }}
