-- One row per (attempt_a, attempt_b, method): two repair attempts' patches compared at ingest
-- (argusic.warehouse.load_judging, issue #14). No rule is applied here.
select
    attempt_a,
    attempt_b,
    method,
    similarity,
    identical
from {{ source('raw', 'change_similarity') }}
