-- depends_on: {{ ref('stg_run_records') }}
-- (build order only: the staging views are built one after another, never side by side. Two
-- views of one schema built at once, in a process that builds repeatedly (the build worker,
-- `argusic verdicts run`), race in dbt's lazily filled relation cache: "Cache inconsistency
-- detected: in rename". An ephemeral model avoids the rename but breaks a reused manifest.)
-- One row per (cycle_id, project_id): a project a cycle's pool pinned, at its commit.
select
    cycle_id,
    project_id,
    commit_sha,
    repo_url,
    tier,
    visibility
from {{ source('raw', 'pool_entries') }}
