-- One row per (project_id, commit_sha, agent_id): a person asked for a stronger agent's attempt.
select
    project_id,
    commit_sha,
    agent_id,
    decided_by as requested_by,
    decided_at as requested_at,
    note
from {{ source('decisions', 'verdict_requests') }}
