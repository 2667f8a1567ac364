-- One row per (project_id, commit_sha) with any attempt (METHODOLOGY.md §7 "Project verdicts").
-- Verdict = best result any valid attempt reached (board or verdict purpose, any agent):
-- pass_full -> runs; else pass_mock -> runs_with_mocks; else could_not_verify once the standard
-- agent has two complete attempts (valid, completed or timed out); else not_yet_verified.
with attempts as (

    select
        scores.*,
        coalesce(agents.is_standard, false) as by_standard_agent
    from {{ ref('int_attempt_scores') }} as scores
    left join {{ ref('agents') }} as agents
        on agents.agent_id = scores.agent_id

),

projects as (

    select
        project_id,
        commit_sha,
        count(*) as recorded_attempts,
        count(*) filter (where is_valid) as valid_attempts,
        count(*) filter (
            where is_valid and by_standard_agent and end_reason in ('completed', 'timeout')
        ) as complete_attempts,
        count(*) filter (where outcome = 'pass_full') as full_passes,
        count(*) filter (where outcome = 'pass_mock') as mock_passes,
        -- the attempt that proves the verdict: earliest (ended_at) pass of the best kind, ties by
        -- attempt_id (unique). Structs compare field by field with nulls last, the order of
        -- `order by best, ended_at, attempt_id`.
        arg_min(
            {'agent_id': agent_id, 'attempt_id': attempt_id, 'ended_at': ended_at},
            {'best': case outcome when 'pass_full' then 0 else 1 end, 'ended_at': ended_at, 'attempt_id': attempt_id}
        ) filter (where outcome in ('pass_full', 'pass_mock')) as first_pass
    from attempts
    group by project_id, commit_sha

),

final as (

    select
        projects.project_id,
        projects.commit_sha,
        case
            when projects.full_passes > 0 then 'runs'
            when projects.mock_passes > 0 then 'runs_with_mocks'
            when projects.complete_attempts >= 2 then 'could_not_verify'
            else 'not_yet_verified'
        end as verdict,
        first_pass.agent_id as verified_by_agent,
        first_pass.attempt_id as verified_by_attempt_id,
        first_pass.ended_at as verified_at,
        projects.complete_attempts,
        projects.valid_attempts,
        projects.recorded_attempts
    from projects

)

select * from final
