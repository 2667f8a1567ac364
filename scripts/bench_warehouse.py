"""The warehouse build against a hand-written SQL floor, at 10k, 100k and 1M synthetic attempts.

For each size, a temporary DuckDB file gets a synthetic ``raw.run_records`` generated in DuckDB SQL
(deterministic, hash-based: cycles, 5-20 agents a cycle, thousands of projects, attempts 1..3 per
(agent, project), invalid attempts and their reruns, timeouts, verdict-purpose attempts, error
fractions, missing evidence, projects that fail with everyone). Then, each phase in its own
subprocess so that its peak memory (the kernel's ru_maxrss of that child, read with ``os.wait4``) is
its own:

* floor: ONE hand-written SQL statement computing the board from the raw records (validity, exact
  scores, middle of three, the exact 30% line, review exclusion, median per agent, rank, pass rate)
  on a read-only connection;
* build (cold): ``argusic.warehouse.dbt_build.build_warehouse`` in a fresh process, as a one-off
  ``argusic build`` does it: GX and dbt imports, parse, dbt build (seeds, models and data tests —
  unit tests are excluded from production builds and run by tests/warehouse/test_dbt_rules.py), then the GX
  expectations;
* build worker: a real ``argusic build-worker`` process (dbt and GX imported once, the parsed
  project kept) asked over its socket to build the same file ``--repeats`` more times after its first
  build; the median of those is the worker's figure;
* the worker's build after one change each (issue 27): the last cycle's records are taken out (a
  catch-up build, not timed), then (1) a review decision, (2) a dispute ruling on an attempt of the
  first cycle, (3) the held-back cycle's records ingested again; each build's wall, CPU-s and ratio to
  the floor (the incremental models rebuild the changed cycles only);
* check: marts.board (as the worker last built it, after those changes) compared with the floor's
  board on the same inputs, value for value (exact fractions).

Every build ends by publishing the analyst copy (``argusic.warehouse.analyst``: a DuckDB snapshot of the
marts, seeds and raw layer, and Parquet per mart) beside the benchmark's warehouse; its time is printed next
to the build's. The build figures and their ratio to the floor are the dbt build and expectations alone (as
before the copy existed); a second ratio includes the copy.

The target (issue "The whole methodology as tested SQL", Speed): full build + expectations within
5x the floor at 1M attempts, under 2 GB peak memory. It is judged on the build worker, the shape
production uses for repeated builds; the cold process is printed next to it. The figures are printed
as measured. dbt writes its target/ and logs into the bench's temporary folder (DBT_TARGET_PATH,
DBT_LOG_PATH), never into dbt_project/target; the slowest dbt nodes come from the worker's answer.

Usage: .venv/bin/python scripts/bench_warehouse.py [--sizes 10000,100000,1000000] [--quick]
       [--keep DIR] [--top 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

from argusic.warehouse.schema import COLUMNS

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = [10_000, 100_000, 1_000_000]
TARGET_RATIO = 5.0
TARGET_PEAK_MB = 2048.0

# ---------------------------------------------------------------------------------------------------
# CPU seconds: the machine is shared, so each phase's wall time is read next to its CPU time (user +
# system, of the process's every thread and of its waited-for children)
# ---------------------------------------------------------------------------------------------------


def cpu_seconds() -> float:
    """CPU seconds used so far by this process (every thread) and its waited-for children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


CPU_PROBE_ENV = "ARGUSIC_BENCH_CPU_PROBE"


def install_cpu_probe(path: Path) -> None:
    """Time each step of a build (dbt, expectations, analyst copy) in CPU seconds, in this process.

    Wraps the steps ``argusic.warehouse.dbt_build`` calls (``_run_dbt``, ``validate_warehouse``,
    ``publish_analyst_copy``; a step it no longer has is skipped) and appends one JSON line a step to
    ``path``: ``{"step": ..., "cpu": ...}``. The steps of a build run one after another, so the
    process's CPU time across a step is that step's. Used in the cold build phase and, through
    ``python -c``, in the build worker the benchmark starts.
    """
    from argusic.warehouse import dbt_build

    def probe(step: str, fn):
        def timed(*args, **kwargs):
            began = cpu_seconds()
            try:
                return fn(*args, **kwargs)
            finally:
                with open(path, "a") as out:
                    out.write(json.dumps({"step": step, "cpu": cpu_seconds() - began}) + "\n")

        return timed

    steps = {"_run_dbt": "dbt", "validate_warehouse": "expectations", "publish_analyst_copy": "copy"}
    for name, step in steps.items():
        if hasattr(dbt_build, name):
            setattr(dbt_build, name, probe(step, getattr(dbt_build, name)))


def read_cpu_probe(path: Path) -> list[dict[str, float]]:
    """The probe's lines grouped by build: one dict {step: cpu} a build (a build starts with dbt)."""
    builds: list[dict[str, float]] = []
    if not path.exists():
        return builds
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry["step"] == "dbt" or not builds:
            builds.append({})
        builds[-1][entry["step"]] = builds[-1].get(entry["step"], 0.0) + entry["cpu"]
    return builds


# ---------------------------------------------------------------------------------------------------
# Synthetic run records, generated in DuckDB SQL
# ---------------------------------------------------------------------------------------------------

# Board attempts per (agent, project) set, including reruns of invalid attempts; verdict attempts
# per project and cycle (30% of projects, 1.6 attempts each). Used to size the pool for a target.
_BOARD_PER_SET = 3.12
_VERDICT_PER_PROJECT = 0.3 * 1.6


def plan(size: int) -> tuple[list[int], int]:
    """Agents per cycle (5..20) and projects per cycle for about ``size`` attempts."""
    cycles = 3 if size <= 20_000 else 6 if size <= 200_000 else 12
    agents = [5 + (c * 7 + 3) % 16 for c in range(cycles)]
    per_project = _BOARD_PER_SET * sum(agents) + _VERDICT_PER_PROJECT * cycles
    return agents, max(4, round(size / per_project))


# The columns the generator fills, by name (raw.run_records gains columns over time: those not
# listed here stay null, as in a warehouse ingested before they existed).
GENERATED_COLUMNS = [
    c for c in COLUMNS if c not in ("masking_applied", "presentation_withheld", "effective_budget_seconds")
]


def generate_sql(agents: list[int], projects: int) -> str:
    """One INSERT that fills raw.run_records (RAW_DDL) with a deterministic synthetic history.

    u(key) is a uniform in [0, 1) from DuckDB's hash of a text key. A (agent, project) set has a
    profile drawn once; each attempt keeps it with probability 0.88 and redraws it otherwise, so
    most sets are stable and some are not.
    """
    agents_values = ", ".join(f"({c}, {n})" for c, n in enumerate(agents))
    shift = max(1, projects // 5)  # consecutive cycles share 80% of their pool
    return f"""
    INSERT INTO raw.run_records ({", ".join(GENERATED_COLUMNS)})
    WITH
    cycles AS (
        SELECT c, n_agents,
               strftime(TIMESTAMP '2026-01-01' + to_months(c), '%Y-%m') AS cycle_id,
               TIMESTAMP '2026-01-01' + to_months(c) AS cycle_start
        FROM (VALUES {agents_values}) AS t(c, n_agents)
    ),
    agents AS (
        SELECT a,
               CASE a WHEN 0 THEN 'readme-runner' WHEN 1 THEN 'readme-runner-norecover'
                      ELSE 'agent-' || lpad(a::VARCHAR, 2, '0') END AS agent_id,
               0.35 + 0.6 * ((hash('skill' || a) % 1000000) / 1e6) AS skill
        FROM range(20) AS t(a)
    ),
    projects AS (
        SELECT cycles.*, p,
               'proj-' || lpad((c * {shift} + p)::VARCHAR, 7, '0') AS project_id
        FROM cycles, range({projects}) AS t(p)
    ),
    projects2 AS (
        SELECT *,
               md5(project_id || '@' || (c // 3)::VARCHAR) || left(md5(project_id), 8) AS commit_sha,
               (hash('broken' || project_id) % 1000000) / 1e6 < 0.04 AS broken,
               CASE WHEN (hash('tier' || project_id) % 100) < 85 THEN 'standard'
                    WHEN (hash('tier' || project_id) % 100) < 97 THEN 'heavy' ELSE 'gpu' END AS tier
        FROM projects
    ),
    -- board attempts: every agent of the cycle x every project x attempt_no 1..3 (some sets of the
    -- current cycle still miss attempt 3)
    board AS (
        SELECT pr.*, ag.agent_id, ag.skill, n AS attempt_no, 'board' AS purpose,
               pr.cycle_id || '.board.' || ag.agent_id || '.' || pr.project_id AS set_key
        FROM projects2 AS pr
        JOIN agents AS ag ON ag.a < pr.n_agents
        CROSS JOIN range(1, 4) AS t(n)
    ),
    board2 AS (
        SELECT * FROM board
        WHERE NOT (c = {len(agents) - 1} AND attempt_no = 3
                   AND (hash('running' || set_key) % 100) < 8)
    ),
    -- verdict attempts: the standard agent on 30% of the projects, a retry on half of them, a
    -- stronger agent on request on a few
    verdict AS (
        SELECT pr.*, ag.agent_id, ag.skill, n AS attempt_no, 'verdict' AS purpose,
               pr.cycle_id || '.verdict.' || ag.agent_id || '.' || pr.project_id AS set_key
        FROM projects2 AS pr
        JOIN agents AS ag ON ag.a IN (0, 5)
        CROSS JOIN range(1, 3) AS t(n)
        WHERE (hash('verdict' || pr.project_id || pr.cycle_id) % 100) < 30
          AND ((ag.a = 0 AND (n = 1 OR (hash('retry' || pr.project_id || pr.cycle_id) % 100) < 50))
               OR (ag.a = 5 AND n = 1 AND (hash('strong' || pr.project_id || pr.cycle_id) % 100) < 10))
    ),
    firsts AS (
        SELECT *, set_key || '.a' || attempt_no::VARCHAR AS attempt_id, NULL::VARCHAR AS rerun_of,
               0 AS rerun_no
        FROM (SELECT * FROM board2 UNION ALL SELECT * FROM verdict)
    ),
    -- an attempt is invalid with probability 3%; each invalid one is rerun (same attempt_no)
    flagged AS (
        SELECT *, (hash('invalid' || attempt_id) % 1000) < 30 AS made_invalid FROM firsts
    ),
    reruns AS (
        SELECT * EXCLUDE (attempt_id, rerun_of, rerun_no, made_invalid),
               attempt_id || '.rerun1' AS attempt_id, attempt_id AS rerun_of, 1 AS rerun_no,
               (hash('invalid' || attempt_id || '.rerun1') % 1000) < 30 AS made_invalid
        FROM flagged WHERE made_invalid
    ),
    attempts AS (
        SELECT * FROM flagged UNION ALL SELECT * FROM reruns
    ),
    draws AS (
        SELECT *,
               (hash('jitter' || attempt_id) % 100) < 12 AS jitter,
               (hash('kind' || attempt_id) % 6) AS invalid_kind,
               (hash('timeout' || attempt_id) % 1000) / 1e3 AS u_timeout,
               (hash('start' || attempt_id) % (27 * 86400)) AS start_offset,
               (hash('dur' || attempt_id) % 1000) / 1e3 AS u_dur
        FROM attempts
    ),
    uniforms AS (
        SELECT *,
               (hash('inst' || CASE WHEN jitter THEN attempt_id ELSE set_key END) % 1000000) / 1e6 AS u_inst,
               (hash('ran' || CASE WHEN jitter THEN attempt_id ELSE set_key END) % 1000000) / 1e6 AS u_ran,
               (hash('enc' || CASE WHEN jitter THEN attempt_id ELSE set_key END) % 1000000) / 1e6 AS u_enc,
               (hash('fix' || CASE WHEN jitter THEN attempt_id ELSE set_key END) % 1000000) / 1e6 AS u_fix,
               (hash('dep' || CASE WHEN jitter THEN attempt_id ELSE set_key END) % 1000000) / 1e6 AS u_depth,
               (hash('claim' || attempt_id) % 1000) < 3 AS overclaims
        FROM draws
    ),
    shaped AS (
        SELECT *,
               u_timeout < 0.05 AS timed_out,
               CASE tier WHEN 'standard' THEN 5400 ELSE 7200 END AS budget,
               NOT broken AND u_inst < 0.45 + 0.5 * skill AS inst_ok,
               u_ran < 0.35 + 0.6 * skill AS ran_ok0,
               floor(u_enc * 13)::INTEGER AS enc
        FROM uniforms
    ),
    final AS (
        SELECT *,
               cycle_start + to_seconds(start_offset) AS started,
               CASE
                   WHEN made_invalid AND invalid_kind = 4 THEN 'harness_error'
                   WHEN made_invalid AND invalid_kind = 5 THEN 'cancelled'
                   WHEN made_invalid AND invalid_kind = 3 THEN 'completed'
                   WHEN timed_out THEN 'timeout'
                   ELSE 'completed'
               END AS end_reason,
               -- a report: not for most timeouts, not for a completed attempt the harness could not read
               NOT ((timed_out AND (hash('treport' || attempt_id) % 10) < 8)
                    OR (made_invalid AND invalid_kind = 3)) AS has_rep,
               CASE WHEN overclaims THEN enc + 1
                    ELSE floor(u_fix * (enc + 1))::INTEGER END AS fixed
        FROM shaped
    )
    SELECT
        attempt_id, cycle_id, purpose, agent_id, project_id, commit_sha, tier, attempt_no::INTEGER,
        CASE WHEN c < {len(agents)} // 2 THEN '1.4' ELSE '1.5' END,
        started,
        started + to_seconds(CASE WHEN end_reason = 'timeout' THEN budget
                                  ELSE (60 + u_dur * (budget - 120))::BIGINT END),
        budget, end_reason,
        CASE WHEN made_invalid AND invalid_kind = 0
             THEN 'the harness could not read the agent''s report (parser error)' END,
        'docker', false, rerun_of,
        CASE WHEN made_invalid AND invalid_kind = 1 THEN NULL ELSE sha256(attempt_id || '/log') END,
        CASE WHEN made_invalid AND invalid_kind = 1 THEN NULL ELSE 'file:///ev/' || attempt_id || '/log' END,
        CASE WHEN made_invalid AND invalid_kind = 1 THEN NULL ELSE 1000 + hash(attempt_id) % 90000 END,
        CASE WHEN made_invalid AND invalid_kind = 2 THEN NULL ELSE sha256(attempt_id || '/cast') END,
        CASE WHEN made_invalid AND invalid_kind = 2 THEN NULL ELSE 'file:///ev/' || attempt_id || '/cast' END,
        CASE WHEN made_invalid AND invalid_kind = 2 THEN NULL ELSE 5000 + hash(attempt_id) % 900000 END,
        CASE WHEN has_rep THEN sha256(attempt_id || '/report') END,
        CASE WHEN has_rep THEN 'file:///ev/' || attempt_id || '/report' END,
        CASE WHEN has_rep THEN 400 + hash(attempt_id) % 2000 END,
        has_rep,
        CASE WHEN has_rep THEN inst_ok END,
        CASE WHEN has_rep THEN ran_ok0 AND (inst_ok OR (hash('claimran' || attempt_id) % 20) = 0) END,
        CASE WHEN has_rep THEN enc END,
        CASE WHEN has_rep THEN fixed END,
        CASE WHEN NOT has_rep THEN NULL
             WHEN u_depth < 0.6 * skill THEN 'tier1_real'
             WHEN u_depth < 0.6 * skill + 0.25 THEN 'tier2_mock'
             ELSE 'tier3_none' END,
        CASE WHEN has_rep THEN 'python3 -m project --selftest -> exit 0' END,
        CASE WHEN has_rep THEN 'Installed and ran the project.' END,
        CASE WHEN agent_id LIKE 'readme-runner%' THEN NULL ELSE 'per_run' END,
        split_part(agent_id, '-', 1) || '-harness', '1',
        json_object('schema', 'argusic.run_record/1', 'attempt_id', attempt_id, 'synthetic', true),
        -- served (masked) copies, where the raw evidence was landed
        CASE WHEN made_invalid AND invalid_kind = 1 THEN NULL
             ELSE 'file:///ev/served/' || attempt_id || '/' || sha256(attempt_id || '/log') || '/log.txt' END,
        CASE WHEN made_invalid AND invalid_kind = 2 THEN NULL
             ELSE 'file:///ev/served/' || attempt_id || '/' || sha256(attempt_id || '/cast')
                  || '/recording.cast' END,
        -- the environment (issue #15): one per cycle, as the cycle's pin gives it; the reference
        -- agents run in the runner image, the others in the agents image
        '1', '{"e" * 64}',
        CASE WHEN agent_id LIKE 'readme-runner%' THEN 'runner' ELSE 'agents' END,
        CASE WHEN agent_id LIKE 'readme-runner%' THEN 'argusic-runner:bookworm'
             ELSE 'argusic-agents:bookworm' END,
        CASE WHEN agent_id LIKE 'readme-runner%' THEN 'sha256:{"1" * 64}' ELSE 'sha256:{"2" * 64}' END,
        '1', '{"f" * 64}', 2.0, 4294967296, 512, 6442450944, 'none', budget, '1280x800x24'
    FROM final
    """


# ---------------------------------------------------------------------------------------------------
# The floor: one hand-written statement, raw records -> board
# ---------------------------------------------------------------------------------------------------

# Exact ordering key of a score n/d (d = errors encountered or 1, so 0 < d < 2^31 and n <= 100 d):
# two different scores differ by at least 1/(d1 d2) > 2^-62, far more than 10^-25, so
# floor(n * 10^25 / d) orders scores exactly and equal scores get equal keys (n * 10^25 < 2^127).
FLOOR_SQL = """
WITH
attempts AS (
    SELECT
        cycle_id, agent_id, project_id, attempt_no, end_reason, test_depth,
        coalesce(invalid_reason, '') = ''
            AND log_sha256 IS NOT NULL AND log_uri IS NOT NULL
            AND recording_sha256 IS NOT NULL AND recording_uri IS NOT NULL
            AND end_reason IN ('completed', 'timeout')
            AND NOT (end_reason = 'completed' AND NOT has_report)
            AND NOT coalesce(errors_fixed > errors_encountered, false)
            AND NOT coalesce(errors_fixed < 0 OR errors_encountered < 0, false) AS ok,
        coalesce(install_ok, false) AS inst,
        coalesce(install_ok, false) AND coalesce(ran_ok, false) AS ran,
        coalesce(errors_encountered, 0) AS enc,
        coalesce(errors_fixed, 0) AS fix
    FROM raw.run_records
    WHERE purpose = 'board'
),
scored AS (
    SELECT
        *,
        end_reason <> 'timeout' AND ran AND test_depth IN ('tier1_real', 'tier2_mock') AS passed,
        CASE WHEN end_reason = 'timeout' OR enc = 0 THEN 1 ELSE enc END::HUGEINT AS d,
        CASE
            WHEN end_reason = 'timeout' THEN 0::HUGEINT
            ELSE (30 * inst::INT + 30 * ran::INT
                  + CASE WHEN ran AND test_depth = 'tier1_real' THEN 20
                         WHEN ran AND test_depth = 'tier2_mock' THEN 12 ELSE 0 END)::HUGEINT
                 * (CASE WHEN enc = 0 THEN 1 ELSE enc END)
                 + CASE WHEN enc = 0 THEN 20 ELSE 20 * fix END
        END AS n
    FROM attempts
),
sets AS (
    SELECT
        cycle_id, agent_id, project_id,
        count(*) FILTER (WHERE ok) = 3
            AND count(DISTINCT attempt_no) FILTER (WHERE ok) = 3
            AND coalesce(bool_and(attempt_no BETWEEN 1 AND 3) FILTER (WHERE ok), false) AS complete,
        list({'k': n * {scale} // d, 'n': n, 'd': d} ORDER BY n * {scale} // d)
            FILTER (WHERE ok) AS s
    FROM scored
    GROUP BY ALL
),
judged AS (
    SELECT
        cycle_id, agent_id, project_id, complete,
        s[2] AS mid,
        complete AND (s[3].n * s[1].d - s[1].n * s[3].d) * 100 * s[2].d
                      > 30 * s[3].d * s[1].d * s[2].n AS unstable
    FROM sets
),
decisions AS (
    SELECT cycle_id, project_id, decision
    FROM decisions.review_decisions
    QUALIFY row_number() OVER (PARTITION BY cycle_id, project_id
                               ORDER BY decided_at DESC, decided_by DESC) = 1
),
excluded AS (
    SELECT p.cycle_id, p.project_id
    FROM (SELECT cycle_id, project_id FROM scored GROUP BY ALL
          HAVING count(*) FILTER (WHERE ok) > 0 AND count(*) FILTER (WHERE ok AND passed) = 0) AS p
    LEFT JOIN decisions USING (cycle_id, project_id)
    WHERE coalesce(decisions.decision, '') <> 'project_at_fault'
),
per_agent AS (
    SELECT
        j.cycle_id, j.agent_id,
        list(j.mid ORDER BY j.mid.k) FILTER (WHERE j.complete AND NOT j.unstable AND x.project_id IS NULL)
            AS mids,
        count(*) FILTER (WHERE j.complete AND NOT j.unstable AND x.project_id IS NULL) AS sets_counted,
        count(*) FILTER (WHERE j.complete AND j.unstable) AS sets_unstable,
        count(*) FILTER (WHERE x.project_id IS NOT NULL) AS sets_under_review
    FROM judged AS j
    LEFT JOIN excluded AS x USING (cycle_id, project_id)
    GROUP BY ALL
),
medians AS (
    SELECT
        cycle_id, agent_id, sets_counted, sets_unstable, sets_under_review,
        -- median = (lo + hi) / 2, lo = hi for an odd count
        mids[(len(mids) - 1) // 2 + 1].n * mids[len(mids) // 2 + 1].d
            + mids[len(mids) // 2 + 1].n * mids[(len(mids) - 1) // 2 + 1].d AS mn,
        2 * mids[(len(mids) - 1) // 2 + 1].d * mids[len(mids) // 2 + 1].d AS md
    FROM per_agent
),
counts AS (
    SELECT cycle_id, agent_id,
           count(*) FILTER (WHERE ok) AS valid_attempts,
           count(*) FILTER (WHERE ok AND passed) AS passes
    FROM scored
    GROUP BY ALL
)
SELECT
    c.cycle_id, c.agent_id,
    m.mn AS board_n, m.md AS board_d,
    CASE WHEN m.mn IS NOT NULL THEN 1 + (
        SELECT count(*) FROM medians AS o
        WHERE o.cycle_id = m.cycle_id AND o.mn IS NOT NULL AND o.mn * m.md > m.mn * o.md
    ) END AS rank,
    c.passes, c.valid_attempts,
    m.sets_counted, m.sets_unstable, m.sets_under_review
FROM counts AS c
JOIN medians AS m USING (cycle_id, agent_id)
ORDER BY c.cycle_id, c.agent_id
"""

BOARD_COLUMNS = [
    "cycle_id", "agent_id", "board_n", "board_d", "rank", "passes", "valid_attempts",
    "sets_counted", "sets_unstable", "sets_under_review",
]  # fmt: skip

MARTS_BOARD_SQL = """
SELECT cycle_id, agent_id, board_score_numerator, board_score_denominator, rank, passes, valid_attempts,
       sets_counted, sets_unstable, sets_under_review
FROM marts.board ORDER BY cycle_id, agent_id
"""


def floor_sql() -> str:
    return FLOOR_SQL.replace("{scale}", f"'{10**25}'::HUGEINT")


# ---------------------------------------------------------------------------------------------------
# Phases (each runs in its own process: ``--phase NAME``)
# ---------------------------------------------------------------------------------------------------


def phase_generate(db: Path, size: int) -> dict:
    import duckdb
    from argusic.warehouse.decisions import ddl as decisions_ddl
    from argusic.warehouse.schema import RAW_DDL

    agents, projects = plan(size)
    started = time.perf_counter()
    with duckdb.connect(str(db)) as con:
        con.execute(RAW_DDL)
        con.execute(decisions_ddl())  # as ingest leaves it: people's decisions (none here) beside the records
        con.execute(generate_sql(agents, projects))
        rows = con.execute("SELECT count(*) FROM raw.run_records").fetchone()[0]
        shape = con.execute(
            """
            SELECT count(DISTINCT cycle_id), count(DISTINCT agent_id), count(DISTINCT project_id),
                   count(*) FILTER (WHERE purpose = 'verdict'), count(*) FILTER (WHERE rerun_of IS NOT NULL),
                   count(*) FILTER (WHERE end_reason = 'timeout')
            FROM raw.run_records
            """
        ).fetchone()
    keys = ["cycles", "agents", "projects", "verdict_attempts", "reruns", "timeouts"]
    return {
        "seconds": time.perf_counter() - started,
        "rows": rows,
        "projects_per_cycle": projects,
        **dict(zip(keys, shape, strict=True)),
    }


def phase_floor(db: Path, out: Path) -> dict:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        sql = floor_sql()
        started, cpu = time.perf_counter(), cpu_seconds()
        rows = con.execute(sql).fetchall()
        seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    out.write_text(json.dumps([[str(v) if v is not None else None for v in row] for row in rows]))
    return {"seconds": seconds, "cpu_seconds": cpu, "rows": len(rows)}


def phase_build(db: Path, target: Path) -> dict:
    os.environ["DBT_TARGET_PATH"] = str(target)
    os.environ["DBT_LOG_PATH"] = str(target / "logs")
    probe = target.parent / "cpu_cold.jsonl"
    probe.unlink(missing_ok=True)
    install_cpu_probe(probe)
    from argusic.warehouse.dbt_build import build_warehouse

    started, cpu = time.perf_counter(), cpu_seconds()
    result = build_warehouse(db, quiet=True)
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    steps = (read_cpu_probe(probe) or [{}])[-1]
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,  # the same span as seconds: imports, parse, build, expectations, copy
        "dbt_cpu_seconds": steps.get("dbt", 0.0),
        "validation_cpu_seconds": steps.get("expectations", 0.0),
        "analyst_cpu_seconds": steps.get("copy", 0.0),
        "dbt_seconds": result.dbt_seconds,
        "validation_seconds": result.validation_seconds,
        "analyst_seconds": result.analyst_seconds,
        "analyst_mb": result.analyst.bytes / 2**20 if result.analyst else 0.0,
        "nodes": len(result.nodes),
        "validation_success": result.validation.success,
    }


def phase_check(db: Path, floor_out: Path) -> dict:
    import duckdb

    floor = [_normalise(row) for row in json.loads(floor_out.read_text())]
    with duckdb.connect(str(db), read_only=True) as con:
        built = [_normalise(row) for row in con.execute(MARTS_BOARD_SQL).fetchall()]
    floor_by = {row[:2]: row for row in floor}
    built_by = {row[:2]: row for row in built}
    differences = []
    for key in sorted(set(floor_by) | set(built_by)):
        if floor_by.get(key) != built_by.get(key):
            differences.append({"key": list(key), "floor": floor_by.get(key), "marts": built_by.get(key)})
    scored = sum(1 for row in built if row[2] is not None)
    return {
        "agree": not differences,
        "rows": len(built),
        "scored_rows": scored,
        "differences": len(differences),
        "examples": [json.loads(json.dumps(d, default=str)) for d in differences[:3]],
    }


def _normalise(row) -> tuple:
    """(cycle, agent, exact board score or None, rank, passes, valid, counted, unstable, review)."""
    cycle, agent, n, d, *rest = row
    score = None if n is None else Fraction(int(n), int(d))
    return (cycle, agent, score, *[None if v is None else int(v) for v in rest])


# ---------------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------------


def run_phase(args: list[str], env: dict | None = None) -> dict:
    """Run one phase in a child process; its own peak RSS comes from the kernel (os.wait4)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        wall = time.perf_counter()
        proc = subprocess.Popen([sys.executable, __file__, *args], stdout=out, stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - wall
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise RuntimeError(
            f"phase {args[:2]} failed ({proc.returncode}):\n{stdout[-4000:]}\n{stderr[-4000:]}"
        )
    result = json.loads(stdout.strip().splitlines()[-1])
    result["peak_mb"] = usage.ru_maxrss / 1024  # Linux: kilobytes
    result["process_seconds"] = wall
    return result


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a running process and its waited-for children (/proc; Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # after the name: state(3) ... utime(14) stime(15) cutime(16) cstime(17), counted from 1
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


SCENARIOS = ("review decision", "dispute ruling", "new cycle")


def _held_path(db: Path) -> Path:
    return db.parent / "held_cycle.duckdb"


def hold_back_last_cycle(db: Path) -> tuple[str, int]:
    """Move the last cycle's run records out of the warehouse into a side file (to ingest later)."""
    import duckdb

    held = _held_path(db)
    held.unlink(missing_ok=True)
    with duckdb.connect(str(db)) as con:
        last = con.execute("SELECT max(cycle_id) FROM raw.run_records").fetchone()[0]
        con.execute(f"ATTACH '{held}' AS held")
        con.execute("CREATE TABLE held.run_records AS FROM raw.run_records WHERE cycle_id = ?", [last])
        rows = con.execute("SELECT count(*) FROM held.run_records").fetchone()[0]
        con.execute("DELETE FROM raw.run_records WHERE cycle_id = ?", [last])
        con.execute("DETACH held")
    return last, rows


def scenario_change(db: Path, scenario: str) -> str:
    """Make one change to the warehouse's inputs, as ingest or a person's decision would; what it was."""
    import duckdb

    at = "2027-01-01 09:00:00"
    with duckdb.connect(str(db)) as con:
        if scenario == "review decision":
            cycle, project = con.execute(
                "SELECT cycle_id, project_id FROM raw.run_records WHERE purpose = 'board' "
                "ORDER BY cycle_id, project_id LIMIT 1"
            ).fetchone()
            con.execute(
                "INSERT INTO decisions.review_decisions VALUES (?, ?, 'project_at_fault', 'bench', ?, 'b')",
                [cycle, project, at],
            )
            return f"project_at_fault on {project} in {cycle}"
        if scenario == "dispute ruling":
            attempt = con.execute(
                "SELECT min(attempt_id) FROM raw.run_records WHERE purpose = 'board' "
                "AND cycle_id = (SELECT min(cycle_id) FROM raw.run_records)"
            ).fetchone()[0]
            con.execute(
                "INSERT INTO decisions.disputes VALUES ('bench-d1', ?, 'env', 'x@ex.org', 'bench', ?, 'b')",
                [attempt, at],
            )
            con.execute(
                "INSERT INTO decisions.dispute_rulings VALUES "
                "('bench-d1', 'environment_at_fault', NULL, 'bench', ?, 'bench')",
                [at],
            )
            return f"environment_at_fault on {attempt}"
        if scenario == "new cycle":
            con.execute(f"ATTACH '{_held_path(db)}' AS held (READ_ONLY)")
            con.execute("INSERT INTO raw.run_records SELECT * FROM held.run_records")
            rows, cycle = con.execute("SELECT count(*), max(cycle_id) FROM held.run_records").fetchone()
            return f"{rows:,} run records of cycle {cycle} ingested"
    raise ValueError(scenario)


def worker_builds(db: Path, target: Path, repeats: int, scenarios: bool = False) -> dict:
    """Builds through a real build worker (``argusic build-worker``) in its own process.

    The first build after the worker starts also parses the project; the next ``repeats`` builds are
    the steady state (the figure compared with the target is their median). The worker's peak memory
    is its own (os.wait4 after SIGTERM), over its whole life: imports and every build.
    """
    from argusic.publication.build_worker import request

    socket_path = target.parent / "worker" / "build.sock"
    probe = target.parent / "cpu_worker.jsonl"
    probe.unlink(missing_ok=True)
    env = {
        **os.environ, "DBT_TARGET_PATH": str(target), "DBT_LOG_PATH": str(target / "logs"),
        CPU_PROBE_ENV: str(probe),
    }  # fmt: skip
    # the worker as `argusic build-worker` starts it, with the CPU probe around its build's steps
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
        "import os, pathlib, bench_warehouse; "
        f"bench_warehouse.install_cpu_probe(pathlib.Path(os.environ[{CPU_PROBE_ENV!r}])); "
        "from argusic.cli.main import app; app()"
    )
    with tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "build-worker", "--socket", str(socket_path)],
            stdout=subprocess.PIPE, stderr=err, env=env, cwd=ROOT, text=True,
        )  # fmt: skip
        try:
            ready = proc.stdout.readline() if proc.stdout else ""
            if "build worker ready" not in ready:
                proc.wait(timeout=30)
                err.seek(0)
                raise RuntimeError(f"the build worker did not start: {ready}{err.read()[-4000:]}")
            start_seconds = time.perf_counter() - started
            timings = []
            for _ in range(repeats + 1):
                began, cpu = time.perf_counter(), _process_cpu(proc.pid)
                answer = request(socket_path, "build", db_path=str(db))
                timings.append(
                    {
                        "seconds": time.perf_counter() - began,
                        "cpu_seconds": _process_cpu(proc.pid) - cpu,
                        "dbt_seconds": answer["dbt_seconds"],
                        "validation_seconds": answer["validation_seconds"],
                        "analyst_seconds": answer["analyst_seconds"],
                        "nodes": answer["nodes"],
                        "slowest_nodes": answer["slowest_nodes"],
                    }
                )
            # After the steady builds: one change of each kind, then a build (the cycle held back
            # before is taken out first: that build is a catch-up, not timed in the table).
            changed = []
            if scenarios:
                hold_back_last_cycle(db)
                request(socket_path, "build", db_path=str(db))
                for scenario in SCENARIOS:
                    what = scenario_change(db, scenario)
                    seen = len(probe.read_text().splitlines()) if probe.exists() else 0
                    began, cpu = time.perf_counter(), _process_cpu(proc.pid)
                    answer = request(socket_path, "build", db_path=str(db))
                    lines = [json.loads(x) for x in probe.read_text().splitlines()[seen:]]
                    changed.append(
                        {
                            "scenario": scenario,
                            "change": what,
                            "seconds": time.perf_counter() - began,
                            "cpu_seconds": _process_cpu(proc.pid) - cpu,
                            "analyst_seconds": answer["analyst_seconds"],
                            "dbt_seconds": answer["dbt_seconds"],
                            "validation_seconds": answer["validation_seconds"],
                            "nodes": answer["nodes"],
                            "slowest_nodes": answer["slowest_nodes"],
                            "analyst_cpu_seconds": sum(x["cpu"] for x in lines if x["step"] == "copy"),
                        }
                    )
            parses = request(socket_path, "ping")["parses"]
        finally:
            proc.terminate()
            _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the build worker exited with {os.waitstatus_to_exitcode(status)}")
    # The build alone (dbt + expectations, as measured before the analyst copy existed) and the copy;
    # in CPU the same, the copy's CPU from the probe.
    steps = read_cpu_probe(probe)
    for i, t in enumerate(timings):
        step = steps[i] if i < len(steps) else {}
        t["build_seconds"] = t["seconds"] - t["analyst_seconds"]
        t["analyst_cpu_seconds"] = step.get("copy", 0.0)
        t["build_cpu_seconds"] = t["cpu_seconds"] - t["analyst_cpu_seconds"]
        t["dbt_cpu_seconds"] = step.get("dbt", 0.0)
        t["validation_cpu_seconds"] = step.get("expectations", 0.0)
    for t in changed:  # the build alone, as for the steady builds: less the analyst copy
        t["build_seconds"] = t["seconds"] - t["analyst_seconds"]
        t["build_cpu_seconds"] = t["cpu_seconds"] - t["analyst_cpu_seconds"]
    steady = sorted(timings[1:], key=lambda t: t["build_seconds"])[len(timings[1:]) // 2]
    copies = sorted(timings[1:], key=lambda t: t["analyst_seconds"])[len(timings[1:]) // 2]
    return {
        "cpu_seconds": steady["build_cpu_seconds"],
        "dbt_cpu_seconds": steady["dbt_cpu_seconds"],
        "validation_cpu_seconds": steady["validation_cpu_seconds"],
        "analyst_cpu_seconds": copies["analyst_cpu_seconds"],
        "start_seconds": start_seconds,
        "first": timings[0],
        "steady": [t["build_seconds"] for t in timings[1:]],
        "seconds": steady["build_seconds"],
        "with_copy_seconds": steady["seconds"],
        "analyst_seconds": copies["analyst_seconds"],
        "analyst_steady": sorted(t["analyst_seconds"] for t in timings[1:]),
        "dbt_seconds": steady["dbt_seconds"],
        "validation_seconds": steady["validation_seconds"],
        "nodes": steady["nodes"],
        "slowest_nodes": steady["slowest_nodes"],
        "parses": parses,
        "peak_mb": usage.ru_maxrss / 1024,
        "scenarios": changed,
    }


def bench(size: int, work: Path, top: int, repeats: int = 3) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    db = work / "warehouse.duckdb"
    for stale in work.glob("warehouse.duckdb*"):
        stale.unlink()
    floor_out = work / "floor_board.json"
    target = work / "dbt_target"
    shutil.rmtree(target, ignore_errors=True)
    shutil.rmtree(work / "dbt_target_worker", ignore_errors=True)

    print(f"\n== {size:,} attempts (work dir {work})", flush=True)
    gen = run_phase(["--phase", "generate", "--db", str(db), "--size", str(size)])
    print(
        f"generated {gen['rows']:,} run records in {gen['seconds']:.1f} s: {gen['cycles']} cycles, "
        f"{gen['agents']} agents, {gen['projects']:,} projects ({gen['projects_per_cycle']:,} a cycle), "
        f"{gen['verdict_attempts']:,} verdict attempts, {gen['reruns']:,} reruns, {gen['timeouts']:,} "
        f"timeouts; file {db.stat().st_size / 2**20:.0f} MB",
        flush=True,
    )
    floor = run_phase(["--phase", "floor", "--db", str(db), "--out", str(floor_out)])
    print(
        f"floor: {floor['seconds']:.2f} s ({floor['cpu_seconds']:.2f} CPU-s), {floor['rows']} board rows, "
        f"peak {floor['peak_mb']:.0f} MB"
    )
    build = run_phase(["--phase", "build", "--db", str(db), "--target", str(target)])
    print(
        f"build: {build['seconds']:.2f} s, {build['cpu_seconds']:.2f} CPU-s (dbt "
        f"{build['dbt_seconds']:.2f} s / {build['dbt_cpu_seconds']:.2f} CPU-s, expectations "
        f"{build['validation_seconds']:.2f} s / "
        f"{build['validation_cpu_seconds']:.2f} CPU-s, {build['nodes']} nodes; then the analyst copy "
        f"{build['analyst_seconds']:.2f} s / {build['analyst_cpu_seconds']:.2f} CPU-s, "
        f"{build['analyst_mb']:.0f} MB), peak {build['peak_mb']:.0f} MB"
    )
    worker = worker_builds(db, work / "dbt_target_worker", repeats, scenarios=True)
    steady = ", ".join(f"{t:.2f}" for t in worker["steady"])
    copies = ", ".join(f"{t:.2f}" for t in worker["analyst_steady"])
    print(
        f"build worker: ready in {worker['start_seconds']:.1f} s; first build "
        f"{worker['first']['build_seconds']:.2f} s (parses the project); then {steady} s, median "
        f"{worker['seconds']:.2f} s, {worker['cpu_seconds']:.2f} CPU-s (dbt {worker['dbt_seconds']:.2f} s / "
        f"{worker['dbt_cpu_seconds']:.2f} CPU-s, expectations {worker['validation_seconds']:.2f} s / "
        f"{worker['validation_cpu_seconds']:.2f} CPU-s); {worker['parses']} parse(s); worker peak "
        f"{worker['peak_mb']:.0f} MB"
    )
    print(
        f"analyst copy after each worker build: {copies} s, median {worker['analyst_seconds']:.2f} s "
        f"({worker['analyst_cpu_seconds']:.2f} CPU-s) "
        f"(+{100 * worker['analyst_seconds'] / worker['seconds']:.0f}% of the build); "
        f"{build['analyst_mb']:.0f} MB (DuckDB snapshot + Parquet)"
    )
    nodes = worker["slowest_nodes"][:top]
    if nodes:
        print("slowest dbt nodes (median worker build): " + ", ".join(
            f"{uid.split('.', 2)[-1]} {t:.2f} s" for uid, t in nodes
        ))  # fmt: skip
    for t in worker["scenarios"]:
        slow = ", ".join(f"{uid.split('.', 2)[-1]} {s:.2f} s" for uid, s in t["slowest_nodes"][:4])
        print(
            f"worker build after a {t['scenario']} ({t['change']}): {t['build_seconds']:.2f} s, "
            f"{t['build_cpu_seconds']:.2f} CPU-s, {t['nodes']} nodes (dbt {t['dbt_seconds']:.2f} s, "
            f"expectations {t['validation_seconds']:.2f} s; copy {t['analyst_seconds']:.2f} s); "
            f"{t['build_seconds'] / floor['seconds']:.1f}x the floor "
            f"({t['build_cpu_seconds'] / floor['cpu_seconds']:.1f}x in CPU); slowest: {slow}"
        )
    # the marts after the changes: the board again against the floor on the same inputs (the review
    # decision and the dispute are in both)
    floor_after = run_phase(["--phase", "floor", "--db", str(db), "--out", str(floor_out)])
    floor_after.pop("peak_mb", None)
    check = run_phase(["--phase", "check", "--db", str(db), "--out", str(floor_out)])
    word = "agree" if check["agree"] else "DISAGREE"
    print(
        f"agreement ({size:,}): {word}: floor board vs marts.board after the changes, {check['rows']} rows "
        f"({check['scored_rows']} with a score), {check['differences']} differences"
    )
    for example in check["examples"]:
        print(f"  e.g. {example}")
    return {
        "size": size, "generate": gen, "floor": floor, "build": build, "worker": worker, "check": check,
        "nodes": nodes,
    }  # fmt: skip


def print_table(rows: list[dict]) -> None:
    header = (
        f"{'attempts':>10} {'floor s':>8} {'cold s':>8} {'worker s':>9} {'dbt s':>7} {'expect s':>8} "
        f"{'copy s':>7} {'cold':>7} {'worker':>7} {'floor MB':>9} {'cold MB':>8} {'worker MB':>10} "
        f"{'board':>9}"
    )
    print("\n" + header)
    print("-" * len(header))
    for r in rows:
        floor, cold, worker = r["floor"], r["build"], r["worker"]
        print(
            f"{r['generate']['rows']:>10,} {floor['seconds']:>8.2f} {cold['seconds']:>8.2f} "
            f"{worker['seconds']:>9.2f} {worker['dbt_seconds']:>7.2f} {worker['validation_seconds']:>8.2f} "
            f"{worker['analyst_seconds']:>7.2f} {cold['seconds'] / floor['seconds']:>6.1f}x "
            f"{worker['seconds'] / floor['seconds']:>6.1f}x "
            f"{floor['peak_mb']:>9.0f} {cold['peak_mb']:>8.0f} {worker['peak_mb']:>10.0f} "
            f"{'agree' if r['check']['agree'] else 'DISAGREE':>9}"
        )
    header = (
        f"{'attempts':>10} {'floor CPU':>10} {'cold CPU':>9} {'worker CPU':>11} {'dbt CPU':>8} "
        f"{'expect CPU':>11} {'copy CPU':>9} {'cold':>7} {'worker':>7}"
    )
    print("\n" + header + "   (CPU seconds: user + system, every thread)")
    print("-" * len(header))
    for r in rows:
        floor, cold, worker = r["floor"], r["build"], r["worker"]
        print(
            f"{r['generate']['rows']:>10,} {floor['cpu_seconds']:>10.2f} {cold['cpu_seconds']:>9.2f} "
            f"{worker['cpu_seconds']:>11.2f} {worker['dbt_cpu_seconds']:>8.2f} "
            f"{worker['validation_cpu_seconds']:>11.2f} {worker['analyst_cpu_seconds']:>9.2f} "
            f"{cold['cpu_seconds'] / floor['cpu_seconds']:>6.1f}x "
            f"{worker['cpu_seconds'] / floor['cpu_seconds']:>6.1f}x"
        )
    header = (
        f"{'attempts':>10} {'after a':<16} {'wall s':>7} {'CPU-s':>7} {'nodes':>6} {'wall/floor':>11} "
        f"{'CPU/floor':>10}"
    )
    print("\n" + header + "   (the build worker's build after one change; without the analyst copy)")
    print("-" * len(header))
    for r in rows:
        floor = r["floor"]
        for t in r["worker"].get("scenarios", []):
            print(
                f"{r['generate']['rows']:>10,} {t['scenario']:<16} {t['build_seconds']:>7.2f} "
                f"{t['build_cpu_seconds']:>7.2f} {t['nodes']:>6} "
                f"{t['build_seconds'] / floor['seconds']:>10.1f}x "
                f"{t['build_cpu_seconds'] / floor['cpu_seconds']:>9.1f}x"
            )
    print(
        "cold = one `argusic build` process (build_warehouse): imports (GX ~5 s, dbt), parse, build.\n"
        "worker = median steady build through `argusic build-worker` (dbt and GX imported once, manifest "
        "kept):\n  dbt build (seeds, models, data tests; no unit tests) + expectations (SQL checks, GX).\n"
        "dbt s / expect s: of the worker's median build. copy s: the analyst copy published after it\n"
        "(not in worker s; in cold s). Peak memory: each process's own (kernel ru_maxrss).\n"
        "CPU: the same spans in CPU seconds (the process's every thread and waited-for children), so that\n"
        "a figure taken on a shared machine can be read without the other processes' load: floor = the\n"
        "query, cold = the build process from build_warehouse on, worker = the worker process across a\n"
        "build request, less the copy (its steps timed in the worker)."
    )
    for r in rows:
        floor, cold, worker = r["floor"], r["build"], r["worker"]
        ratio = worker["seconds"] / floor["seconds"]
        verdict = "within" if ratio <= TARGET_RATIO else "over"
        peak = max(worker["peak_mb"], cold["peak_mb"])
        memory = "under" if peak < TARGET_PEAK_MB else "over"
        with_copy = (worker["seconds"] + worker["analyst_seconds"]) / floor["seconds"]
        print(
            f"ratio build/floor at {r['generate']['rows']:,} attempts: {ratio:.1f}x through the build worker "
            f"({verdict} the {TARGET_RATIO:g}x target), {with_copy:.1f}x with the analyst copy "
            f"(+{worker['analyst_seconds']:.2f} s), {cold['seconds'] / floor['seconds']:.1f}x as a cold "
            f"process; peak {peak:.0f} MB ({memory} {TARGET_PEAK_MB:.0f} MB)"
        )
        cpu_with_copy = (worker["cpu_seconds"] + worker["analyst_cpu_seconds"]) / floor["cpu_seconds"]
        print(
            f"CPU ratio build/floor at {r['generate']['rows']:,} attempts: "
            f"{worker['cpu_seconds'] / floor['cpu_seconds']:.1f}x through the build worker, "
            f"{cpu_with_copy:.1f}x with the analyst copy (+{worker['analyst_cpu_seconds']:.2f} CPU-s), "
            f"{cold['cpu_seconds'] / floor['cpu_seconds']:.1f}x as a cold process"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES))
    parser.add_argument("--quick", action="store_true", help="10,000 attempts only")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep the files")
    parser.add_argument("--top", type=int, default=8, help="slowest dbt nodes to list")
    parser.add_argument(
        "--repeats", type=int, default=3, help="steady builds through the build worker (median reported)"
    )
    parser.add_argument("--json", type=Path, help="also write the measurements as JSON here")
    parser.add_argument("--phase", choices=["generate", "floor", "build", "check"], help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--target", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.phase:
        result = {
            "generate": lambda: phase_generate(args.db, args.size),
            "floor": lambda: phase_floor(args.db, args.out),
            "build": lambda: phase_build(args.db, args.target),
            "check": lambda: phase_check(args.db, args.out),
        }[args.phase]()
        result["self_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result, default=str))
        return 0

    sizes = [10_000] if args.quick else [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    base = args.keep or Path(tempfile.mkdtemp(prefix="argusic-bench-"))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; sizes {sizes}")
    rows = []
    try:
        for size in sizes:
            rows.append(bench(size, base / f"n{size}", args.top, max(1, args.repeats)))
    finally:
        if rows:
            print_table(rows)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2, default=str))
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0 if all(r["check"]["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
