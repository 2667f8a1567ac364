-- One row per group of attempts (task_id, agent_id, project_id, repair item and revision, environment,
-- method) with at least one compared pair (issue #14, seed 004): how alike an agent's changes are
-- across attempts — a repair attempt's patch for one item, an install-and-run attempt's changes to
-- the project (argusic.sandbox.changes; item_id and item_revision null). Pairs come from raw.change_similarity
-- (computed at ingest: rapidfuzz normalized Indel similarity of the non-test changed lines,
-- docs/judging.md); a pair
-- counts while both its attempts stand, as in the repair rates: the record is loaded, was not cut
-- by our tooling (harness_error, cancelled, emergency_stop) and no loaded rerun replaces it. Informational only.
with pairs as (

    select * from {{ ref('stg_change_similarity') }}

),

-- the attempts some pair names: only theirs are read below (a million records, a few thousand pairs)
paired as (

    select attempt_a as attempt_id from pairs
    union
    select attempt_b as attempt_id from pairs

),

records as (

    select
        attempt_id,
        case when purpose = 'repair' then 'repair' else 'install_and_run' end as task_id,
        agent_id,
        project_id,
        repair_item_id,
        repair_item_revision,
        end_reason,
        concat_ws(' | ',
            harness_edition,
            'scaffold ' || scaffold_sha256,
            coalesce(image_digest, 'no image'),
            'instructions ' || instructions_sha256
        ) as environment
    from {{ ref('stg_run_records') }}
    where purpose in ('repair', 'board', 'verdict')
        and attempt_id in (select attempt_id from paired)

),

replaced as (

    select distinct rerun_of as attempt_id
    from {{ ref('stg_run_records') }}
    where rerun_of is not null

),

standing as (

    select records.*
    from records
    left join replaced on replaced.attempt_id = records.attempt_id
    where records.end_reason not in ('harness_error', 'cancelled', 'emergency_stop')
        and replaced.attempt_id is null

),

counted as (

    select
        a.task_id,
        a.agent_id,
        a.project_id,
        a.repair_item_id as item_id,
        a.repair_item_revision as item_revision,
        a.environment,
        pairs.method,
        pairs.attempt_a,
        pairs.attempt_b,
        pairs.similarity,
        pairs.identical
    from pairs
    inner join standing as a on a.attempt_id = pairs.attempt_a
    inner join standing as b on b.attempt_id = pairs.attempt_b
    -- the pair was made within one group at ingest; a record that disagrees is not compared here
    where a.task_id = b.task_id
        and a.agent_id = b.agent_id
        and a.project_id = b.project_id
        and a.repair_item_id is not distinct from b.repair_item_id
        and a.repair_item_revision is not distinct from b.repair_item_revision
        and a.environment = b.environment

)

select
    task_id,
    agent_id,
    project_id,
    item_id,
    item_revision,
    environment,
    method,
    -- the distinct attempts behind the pairs
    len(list_distinct(flatten(list([attempt_a, attempt_b])))) as attempts,
    count(*) as pairs,
    avg(similarity) as mean_similarity,
    min(similarity) as min_similarity,
    max(similarity) as max_similarity,
    count(*) filter (where identical) as identical_pairs
from counted
group by task_id, agent_id, project_id, item_id, item_revision, environment, method
