-- One row per (project_id, commit_sha) that still needs a verdict attempt (METHODOLOGY.md §7,
-- "Project verdicts"): the attempt the adaptive rule asks for next, for a project some cycle's pool
-- pinned at that commit. The verdict itself is marts.project_verdicts (any valid attempt counts,
-- board or verdict purpose, by any agent); this model only says what to run so that it settles:
--   not_yet_verified (the standard agent has fewer than two complete attempts, no pass anywhere)
--     -> the standard agent: its first attempt, or its second after a complete one without a pass;
--   could_not_verify -> nothing, unless a person asked for a stronger agent (decisions.verdict_requests)
--     that has no complete attempt here yet: that agent, one attempt (the earliest request first);
--   runs / runs_with_mocks -> nothing (a pass ends it).
-- Verdict attempts are numbered per (project, commit, agent) across cycles. A verdict attempt whose
-- records are all invalid (our tooling cut it) is not a new attempt: the same number is planned again
-- (is_rerun) and the bounded-rerun path continues its chain (.r1, .r2, ...).
with targets as (

    select
        project_id,
        commit_sha,
        -- the same commit in several cycles' pools: repository and tier of the earliest cycle (by id)
        arg_min(repo_url, cycle_id) as repo_url,
        arg_min(tier, cycle_id) as tier,
        list(cycle_id order by cycle_id) as pool_cycles
    from {{ ref('stg_pool_entries') }}
    group by project_id, commit_sha

),

agents as (

    select agent_id, is_standard from {{ ref('agents') }}

),

-- exactly one (tests/assert_exactly_one_standard_agent.sql); two would break the grain test below
standard_agent as (

    select agent_id from agents where is_standard

),

verdicts as (

    select
        targets.*,
        coalesce(verdicts.verdict, 'not_yet_verified') as verdict,
        coalesce(verdicts.complete_attempts, 0) as standard_complete_attempts
    from targets
    left join {{ ref('project_verdicts') }} as verdicts
        on verdicts.project_id = targets.project_id
        and verdicts.commit_sha = targets.commit_sha

),

attempts as (

    select * from {{ ref('int_attempt_scores') }}

),

-- complete attempts (valid: worked until it stopped or hit the time limit) by each agent, board or
-- verdict purpose (int_attempt_scores holds no other: repair attempts are graded apart)
completed_by_agent as (

    select
        project_id,
        commit_sha,
        agent_id,
        count(*) filter (where is_valid and end_reason in ('completed', 'timeout')) as complete_attempts
    from attempts
    group by project_id, commit_sha, agent_id

),

-- one row per verdict-purpose attempt (cycle, agent, project, attempt_no), its reruns folded in; the
-- last record of the chain is the longest id (a1 < a1.r1 < a1.r2 … within one attempt)
verdict_slots as (

    select
        project_id,
        commit_sha,
        agent_id,
        cycle_id,
        attempt_no,
        bool_or(is_valid) as has_valid,
        arg_max(attempt_id, {'len': length(attempt_id), 'id': attempt_id}) as last_attempt_id,
        arg_max(invalid_reason, {'len': length(attempt_id), 'id': attempt_id}) as last_invalid_reason
    from attempts
    where purpose = 'verdict'
    group by project_id, commit_sha, agent_id, cycle_id, attempt_no

),

next_numbers as (

    select
        project_id,
        commit_sha,
        agent_id,
        max(attempt_no) + 1 as next_attempt_no
    from verdict_slots
    group by project_id, commit_sha, agent_id

),

-- the earliest verdict attempt of an agent with no valid record: it is rerun before any new number
open_slots as (

    select
        project_id,
        commit_sha,
        agent_id,
        arg_min(
            {'cycle_id': cycle_id, 'attempt_no': attempt_no, 'last_attempt_id': last_attempt_id,
             'last_invalid_reason': last_invalid_reason},
            {'attempt_no': attempt_no, 'cycle_id': cycle_id}
        ) as slot
    from verdict_slots
    where not has_valid
    group by project_id, commit_sha, agent_id

),

-- requests acted on: a known agent other than the standard one, which has no complete attempt here
pending_requests as (

    select
        requests.project_id,
        requests.commit_sha,
        arg_min(
            {'agent_id': requests.agent_id, 'requested_by': requests.requested_by,
             'requested_at': requests.requested_at},
            {'at': requests.requested_at, 'agent_id': requests.agent_id}
        ) as request
    from {{ ref('stg_verdict_requests') }} as requests
    inner join agents
        on agents.agent_id = requests.agent_id
        and not agents.is_standard
    left join completed_by_agent as done
        on done.project_id = requests.project_id
        and done.commit_sha = requests.commit_sha
        and done.agent_id = requests.agent_id
    where coalesce(done.complete_attempts, 0) = 0
    group by requests.project_id, requests.commit_sha

),

next_attempt as (

    select
        verdicts.*,
        verdicts.verdict = 'could_not_verify' as by_stronger_agent,
        case verdicts.verdict
            when 'not_yet_verified' then standard_agent.agent_id
            when 'could_not_verify' then pending_requests.request.agent_id
        end as agent_id,
        case when verdicts.verdict = 'could_not_verify' then pending_requests.request.requested_by end
            as requested_by,
        case when verdicts.verdict = 'could_not_verify' then pending_requests.request.requested_at end
            as requested_at
    from verdicts
    cross join standard_agent
    left join pending_requests
        on pending_requests.project_id = verdicts.project_id
        and pending_requests.commit_sha = verdicts.commit_sha
    where verdicts.verdict in ('not_yet_verified', 'could_not_verify')

),

final as (

    select
        next_attempt.project_id,
        next_attempt.commit_sha,
        next_attempt.verdict,
        next_attempt.agent_id,
        next_attempt.by_stronger_agent,
        coalesce(open_slots.slot.attempt_no, next_numbers.next_attempt_no, 1) as attempt_no,
        open_slots.slot is not null as is_rerun,
        open_slots.slot.cycle_id as rerun_cycle_id,
        open_slots.slot.last_attempt_id as rerun_of_attempt_id,
        case
            when open_slots.slot is not null
                then 'rerun: verdict attempt ' || open_slots.slot.last_attempt_id || ' is invalid ('
                    || left(coalesce(open_slots.slot.last_invalid_reason, 'no reason recorded'), 160)
                    || '); the bounded rerun path measures it again under the same number'
            when next_attempt.by_stronger_agent
                then 'stronger agent ' || next_attempt.agent_id || ' requested by '
                    || next_attempt.requested_by || ': the standard agent''s two complete attempts'
                    || ' found no pass'
            when next_attempt.standard_complete_attempts = 0
                then 'standard agent, first attempt: no complete attempt yet'
            else 'standard agent, second attempt: one complete attempt without a pass'
        end as reason,
        next_attempt.standard_complete_attempts,
        next_attempt.requested_by,
        next_attempt.requested_at,
        next_attempt.repo_url,
        next_attempt.tier,
        next_attempt.pool_cycles
    from next_attempt
    left join open_slots
        on open_slots.project_id = next_attempt.project_id
        and open_slots.commit_sha = next_attempt.commit_sha
        and open_slots.agent_id = next_attempt.agent_id
    left join next_numbers
        on next_numbers.project_id = next_attempt.project_id
        and next_numbers.commit_sha = next_attempt.commit_sha
        and next_numbers.agent_id = next_attempt.agent_id
    where next_attempt.agent_id is not null

)

select * from final
