-- One row per bug a valid paired judgement reported (issue #31), with the person's check in force
-- (the latest decisions.paired_bug_checks row of the bug; null finding: not re-checked yet).
with checks as (
    select
        bug_id,
        finding,
        decided_by,
        decided_at,
        note,
        row_number() over (partition by bug_id order by decided_at desc) as nth
    from {{ source('decisions', 'paired_bug_checks') }}
)

select
    b.bug_id,
    b.pair_id,
    b.judge_id,
    b.side,
    b.file,
    b.quote,
    b.description,
    c.finding,
    c.decided_by as checked_by,
    c.decided_at as checked_at,
    c.note as check_note,
    b.loaded_at
from {{ source('raw', 'paired_bugs') }} as b
left join checks as c on c.bug_id = b.bug_id and c.nth = 1
