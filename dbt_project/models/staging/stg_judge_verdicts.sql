-- One row per (attempt_id, judge_id, task_revision, evidence_sha256): a model judge's judgement as
-- loaded (issue #14, Layer 2), its two criteria extracted as INTEGER (null when the judge gave none,
-- e.g. no_verdict). No rule is applied here; judges never feed a score, a verdict or the board.
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
    try_cast(json_extract(scores_json, '$.code_structure') as integer) as code_structure,
    try_cast(json_extract(scores_json, '$.logic_correctness') as integer) as logic_correctness,
    scores_json,
    quotes_json,
    summary,
    replayed,
    judgement_sha256,
    loaded_at
from {{ source('raw', 'judge_verdicts') }}
