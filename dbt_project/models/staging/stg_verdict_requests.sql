-- depends_on: {{ ref('stg_pool_entries') }}
-- (build order only: the staging views are built one after another, never side by side. Two
-- views of one schema built at once, in a process that builds repeatedly (the build worker,
-- `argusic verdicts run`), race in dbt's lazily filled relation cache: "Cache inconsistency
-- detected: in rename". An ephemeral model avoids the rename but breaks a reused manifest.)
-- One row per (project_id, commit_sha, agent_id): a person asked for a stronger agent's attempt.
select
    project_id,
    commit_sha,
    agent_id,
    decided_by as requested_by,
    decided_at as requested_at,
    note
from {{ source('decisions', 'verdict_requests') }}
