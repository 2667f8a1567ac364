-- STAND-IN (helper B): one row per loaded judge verdict (attempt_id, judge_id, task_revision,
-- evidence_sha256), with the two judged criteria extracted as INTEGER (0..2; null when the verdict
-- has no score for it). Helper A's model replaces this one. Never read by a score, verdict or board.
select
    attempt_id,
    cycle_id,
    task_id,
    task_revision,
    judge_id,
    harness,
    model,
    evidence_sha256,
    session_sha256,
    status,
    reason,
    scores_json,
    quotes_json,
    summary,
    replayed,
    judgement_sha256,
    loaded_at,
    try_cast(json_extract(scores_json, '$.code_structure') as integer) as code_structure,
    try_cast(json_extract(scores_json, '$.logic_correctness') as integer) as logic_correctness
from {{ source('raw', 'judge_verdicts') }}
