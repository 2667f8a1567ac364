-- One row per (cycle_id, project_id): a project a cycle's pool pinned, at its commit.
select
    cycle_id,
    project_id,
    commit_sha,
    repo_url,
    tier,
    visibility
from {{ source('raw', 'pool_entries') }}
