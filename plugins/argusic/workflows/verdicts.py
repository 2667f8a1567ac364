"""Adaptive project verdicts (METHODOLOGY.md §7 "Project verdicts"): run only the attempts the
rule still needs, for the projects of a cycle's pool at their pinned commits.

The rule lives in dbt (`marts.verdict_plan`: the standard agent once; once more after a complete
attempt without a pass; nothing after a pass or after two complete attempts without one; a stronger
agent's single attempt when a person asked for it). This module only carries it out, round by round:

    prepare  load the pool's projects (raw.pool_entries); record the stronger-agent request of the run
    build    dbt build, so the plan reads every attempt and decision so far
    plan     marts.verdict_plan -> one AttemptSpec (purpose `verdict`) per pending project, written
             where the cycle writes its plan (runs/<cycle>/plan/<attempt_id>.json)
    run      each spec through the one attempt path (`argusic.cycle.run.run_planned_attempt`: bounded
             reruns of an invalid attempt, resumable by attempt id)
    ingest   the records of the plan (reruns included) into the warehouse
    build    again: a fail is scored before its second attempt can be planned

and again from `plan` until nothing is pending or MAX_ROUNDS rounds have run. The `argusic_verdicts`
DAG runs the same steps as tasks; `argusic verdicts run` in one process. Attempt ids are deterministic
(`<cycle>.verdict.<agent>.<project>.a<N>`, N from the mart), so a rerun of either finds what was
measured and measures nothing twice; with nothing pending it plans nothing and runs nothing.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from argusic.attempts.agents import known_agents, registry_path
from argusic.core.layout import pool_path_for
from argusic.core.record import ID_PART_RE
from argusic.core.spec import AttemptSpec, write_spec
from argusic.cycle.plan import budget_scale_for, require_scaled_budgets_on_the_forge
from argusic.cycle.run import measured_records, records_of_plan, run_planned_attempt
from argusic.sources.pool import load_pool
from argusic.warehouse import decisions, load_runs
from argusic.warehouse.db import connect
from argusic.warehouse.load_runs import ingest_records, load_pool_entries
from argusic.workflows.verdict_rounds import MAX_ROUNDS

# The argusic_verdicts DAG's parse reads only verdict_rounds; its tasks import this module.

log = logging.getLogger(__name__)

PURPOSE = "verdict"


class VerdictConfigurationError(ValueError):
    """Params or a request that no retry can fix; the message says what to change."""


@dataclass(frozen=True)
class Targets:
    """The projects a verdict run is for: entries of one cycle's pool (all, or the ones listed)."""

    cycle_id: str
    pool_path: str
    projects: tuple[tuple[str, str], ...]  # (project_id, commit_sha), in pool order

    def to_dict(self) -> dict:
        return {"cycle_id": self.cycle_id, "pool_path": self.pool_path,
                "projects": [list(p) for p in self.projects]}  # fmt: skip

    @classmethod
    def from_dict(cls, doc: dict) -> Targets:
        return cls(doc["cycle_id"], doc["pool_path"], tuple((p, c) for p, c in doc["projects"]))


@dataclass(frozen=True)
class PlannedAttempt:
    """One row of marts.verdict_plan for a target, with the spec that carries it out."""

    spec: AttemptSpec
    verdict: str
    reason: str
    is_rerun: bool
    by_stronger_agent: bool
    exhausted: bool  # invalid after the bounded reruns: a person must look (not run again)


@dataclass
class VerdictPlan:
    pending: list[PlannedAttempt] = field(default_factory=list)
    exhausted: list[PlannedAttempt] = field(default_factory=list)


# --- agents -------------------------------------------------------------------------------------------


def standard_agent(path: Path | None = None) -> str:
    """The standard agent of the registry (dbt_project/seeds/agents.csv): exactly one."""
    with open(path or registry_path(), newline="") as handle:
        standard = [
            r["agent_id"] for r in csv.DictReader(handle) if r["is_standard"].strip().lower() == "true"
        ]
    if len(standard) != 1:
        raise VerdictConfigurationError(f"the agent registry names {len(standard)} standard agents, not one")
    return standard[0]


def check_stronger_agent(agent_id: str) -> str:
    """A stronger agent must be a known agent other than the standard one."""
    agent_id = (agent_id or "").strip()
    known = known_agents()
    if agent_id not in known:
        raise VerdictConfigurationError(
            f"stronger agent {agent_id!r} is not in the agent registry: one of {', '.join(sorted(known))}"
        )
    if agent_id == standard_agent():
        raise VerdictConfigurationError(
            f"{agent_id!r} is the standard agent: a stronger agent is another one "
            f"({', '.join(sorted(known - {agent_id}))})"
        )
    return agent_id


# --- targets and requests -----------------------------------------------------------------------------


def pool_of_cycle(cycle_id: str, pool: str | None = None) -> Path:
    """The pool a verdict run reads: an explicit pool file of the cycle, else the one recorded for it."""
    if pool:
        path = Path(pool)
        if not path.is_file():
            raise VerdictConfigurationError(
                f"pool {path}: no such file (give an absolute path on the worker)"
            )
        found = load_pool(path).cycle_id
        if found != cycle_id:
            raise VerdictConfigurationError(f"{path} is the pool of cycle {found}, not {cycle_id}")
        return path
    recorded = pool_path_for(cycle_id)
    if not recorded.is_file():
        raise VerdictConfigurationError(
            f"cycle {cycle_id} has no pool yet ({recorded}): draw it first (argusic_pool_rotation, "
            "argusic_cycle or `argusic cycle run`), or name a pool file of this cycle (pool)"
        )
    return recorded


def select_targets(cycle_id: str, pool_path: Path, projects: Iterable[str] = ()) -> Targets:
    """The cycle's pool entries, all of them or the ones named (a name not in the pool is refused)."""
    pool = load_pool(pool_path)
    wanted = [p.strip() for p in projects if p and p.strip()]
    ids = [e.project_id for e in pool.entries]
    unknown = [p for p in wanted if p not in ids]
    if unknown:
        raise VerdictConfigurationError(
            f"not in the pool of cycle {cycle_id} ({pool_path}): {', '.join(unknown)}; its projects: "
            + ", ".join(ids)
        )
    chosen = [e for e in pool.entries if not wanted or e.project_id in wanted]
    return Targets(cycle_id, str(pool_path), tuple((e.project_id, e.commit) for e in chosen))


def request_stronger_agent(
    project_id: str,
    commit_sha: str,
    agent_id: str,
    requested_by: str,
    note: str,
    decided_at: datetime | None = None,
    db_path: Path | None = None,
) -> bool:
    """Record a person's request for a stronger agent on a project at a commit (decisions.record:
    journalled, then in the warehouse). True when new; the same request again changes nothing. The
    plan acts on it once the standard agent's two complete attempts found no pass."""
    if not ID_PART_RE.fullmatch(project_id or ""):
        raise VerdictConfigurationError(f"project {project_id!r}: expected a project id ([A-Za-z0-9_-])")
    if not load_runs.COMMIT_RE.fullmatch(commit_sha or ""):
        raise VerdictConfigurationError(
            f"commit {commit_sha!r}: expected the full 40-hex SHA-1 of the pinned commit"
        )
    row = {
        "project_id": project_id,
        "commit_sha": commit_sha,
        "agent_id": check_stronger_agent(agent_id),
        "decided_by": requested_by,
        "decided_at": decided_at or decisions.utc_now(),
        "note": note,
    }
    return decisions.record("verdict_requests", row, db_path)


def prepare(
    cycle_id: str,
    pool: str | None = None,
    projects: Iterable[str] = (),
    stronger_agent: str | None = None,
    requested_by: str | None = None,
    note: str | None = None,
    decided_at: datetime | None = None,
) -> Targets:
    """The run's targets; their pool loaded into the warehouse (raw.pool_entries, idempotent); and,
    with `stronger_agent`, a request for it on every target (who and why are required)."""
    pool_path = pool_of_cycle(cycle_id, pool)
    targets = select_targets(cycle_id, pool_path, projects)
    if stronger_agent:
        check_stronger_agent(stronger_agent)
        if not (requested_by or "").strip() or not (note or "").strip():
            raise VerdictConfigurationError(
                f"a stronger agent ({stronger_agent}) is a person's request: say who asks and why "
                "(requested_by and note)"
            )
    added = load_pool_entries(pool_path)
    if added:
        log.info("cycle %s: %d pool entr(y/ies) loaded into raw.pool_entries", cycle_id, added)
    if stronger_agent:
        for project_id, commit in targets.projects:
            new = request_stronger_agent(
                project_id, commit, stronger_agent, str(requested_by), str(note), decided_at
            )
            log.info("%s @ %s: stronger agent %s %s", project_id, commit[:12], stronger_agent,
                     "requested" if new else "was already requested")  # fmt: skip
    return targets


# --- the plan ------------------------------------------------------------------------------------------

PLAN_SQL = """
SELECT project_id, commit_sha, verdict, agent_id, by_stronger_agent, attempt_no, is_rerun,
       rerun_cycle_id, reason, repo_url, tier
FROM marts.verdict_plan
ORDER BY project_id, commit_sha
"""


def _rows(sql: str, db_path: Path | None = None) -> list[dict]:
    con = connect(db_path, read_only=True)
    try:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()


def read_plan(
    targets: Targets,
    demo: bool = False,
    budget_scale: float | None = None,
    db_path: Path | None = None,
) -> VerdictPlan:
    """marts.verdict_plan for the targets, as AttemptSpecs of purpose `verdict` (as the warehouse was
    last built). A new attempt takes the run's cycle; a rerun keeps the cycle of the invalid attempt.
    An attempt whose chain is invalid after the bounded reruns is listed apart (never run again)."""
    demo, scale = budget_scale_for(demo, budget_scale)
    wanted = set(targets.projects)
    plan = VerdictPlan()
    for row in _rows(PLAN_SQL, db_path):
        if (row["project_id"], row["commit_sha"]) not in wanted:
            continue
        spec = AttemptSpec(
            cycle_id=row["rerun_cycle_id"] or targets.cycle_id,
            purpose=PURPOSE,
            agent_id=row["agent_id"],
            project_id=row["project_id"],
            repo_url=row["repo_url"],
            commit=row["commit_sha"],
            tier=row["tier"],
            attempt_no=int(row["attempt_no"]),
            demo=demo,
            budget_scale=scale,
        )
        exhausted = bool(row["is_rerun"]) and measured_records(spec) is not None
        item = PlannedAttempt(
            spec,
            row["verdict"],
            row["reason"],
            bool(row["is_rerun"]),
            bool(row["by_stronger_agent"]),
            exhausted,
        )
        (plan.exhausted if exhausted else plan.pending).append(item)
    return plan


def write_plan(plan: VerdictPlan) -> list[str]:
    """One spec file per pending attempt, where the cycle writes its plan; their paths, in order."""
    return [write_spec(item.spec) for item in plan.pending]


def plan_lines(plan: VerdictPlan) -> list[str]:
    """What is pending and why, one line each (and what needs a person)."""
    if not plan.pending and not plan.exhausted:
        return ["nothing pending: every target's verdict is settled or waits for nothing the rules run"]
    lines = [f"{len(plan.pending)} verdict attempt(s) pending:"] if plan.pending else []
    for item in plan.pending:
        s = item.spec
        lines.append(f"  {s.project_id} @ {s.commit[:12]} ({item.verdict}): {s.attempt_id}: {item.reason}")
    for item in plan.exhausted:
        s = item.spec
        lines.append(
            f"  {s.project_id} @ {s.commit[:12]}: {s.attempt_id} is invalid after the bounded reruns "
            "(our tooling failed): not run again; see its run records and fix the cause"
        )
    return lines


# --- verdicts as they stand -----------------------------------------------------------------------------


def verdict_rows(targets: Targets, db_path: Path | None = None) -> list[dict]:
    """marts.project_verdicts for the targets (not_yet_verified for a target without any attempt)."""
    rows = {
        (r["project_id"], r["commit_sha"]): r
        for r in _rows(
            "SELECT project_id, commit_sha, verdict, verified_by_agent, verified_by_attempt_id, "
            "complete_attempts, valid_attempts FROM marts.project_verdicts",
            db_path,
        )
    }
    out = []
    for project_id, commit in targets.projects:
        row = rows.get((project_id, commit)) or {
            "project_id": project_id, "commit_sha": commit, "verdict": "not_yet_verified",
            "verified_by_agent": None, "verified_by_attempt_id": None, "complete_attempts": 0,
            "valid_attempts": 0,
        }  # fmt: skip
        out.append(row)
    return out


def verdict_lines(targets: Targets, db_path: Path | None = None) -> list[str]:
    lines = []
    for r in verdict_rows(targets, db_path):
        by = (
            f", verified by {r['verified_by_agent']} ({r['verified_by_attempt_id']})"
            if r["verified_by_agent"]
            else ""
        )
        lines.append(
            f"  {r['project_id']} @ {r['commit_sha'][:12]}: {r['verdict']}{by}; "
            f"{r['complete_attempts']} complete standard-agent attempt(s), {r['valid_attempts']} valid in all"
        )
    return lines


# --- one round, and the loop ------------------------------------------------------------------------------


def run_specs(spec_paths: list[str], executor=None, workers: int = 2, live_log: bool = False) -> list[str]:
    """Every planned attempt through the one attempt path (bounded reruns, resumable)."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
        groups = list(threads.map(lambda p: run_planned_attempt(p, executor, live_log=live_log), spec_paths))
    return [path for group in groups for path in group]


def ingest_plan(spec_paths: list[str]) -> dict[str, int]:
    """Load every record of the planned attempts (reruns included); a planned attempt without any
    record (its task was marked done without running) is refused by name."""
    found, missing = records_of_plan(spec_paths)
    if missing:
        raise RuntimeError(
            f"{len(missing)} planned verdict attempt(s) have no run record: {', '.join(missing[:10])}"
        )
    return ingest_records(found) if found else {"files": 0, "inserted": 0, "already_present": 0}


_SESSION = None  # this process's BuildSession, made at its first in-process build


def build() -> str:
    """dbt build + expectations (the first line says how it went): through the build worker when one
    is configured; else in this process, through one BuildSession for all of its builds (a verdict
    run builds once a round, and dbt's plain in-process invocations are one to a process)."""
    global _SESSION
    # deferred: both load pandas with the expectations engine (and dbt once they build): not when the
    # command line starts
    from argusic.publication.build_worker import build_warehouse_summary, worker_socket
    from argusic.warehouse.dbt_build import BuildSession, release_semaphores_at_exit  # deferred: as above

    if worker_socket() is not None:
        return build_warehouse_summary()
    release_semaphores_at_exit()
    if _SESSION is None:
        _SESSION = BuildSession()
    return _SESSION.build(quiet=True).summary()


@dataclass
class VerdictRun:
    targets: Targets
    rounds: int = 0
    attempts: list[str] = field(default_factory=list)  # attempt ids planned and run, in order
    left: VerdictPlan = field(default_factory=VerdictPlan)  # what was still pending when it stopped


def run_verdicts(
    targets: Targets,
    demo: bool = False,
    budget_scale: float | None = None,
    executor=None,
    workers: int = 2,
    max_rounds: int = MAX_ROUNDS,
    say=log.info,
) -> VerdictRun:
    """build → (plan → run → ingest → build) until nothing is pending or `max_rounds` rounds ran."""
    require_scaled_budgets_on_the_forge(targets.pool_path, demo, budget_scale)
    run = VerdictRun(targets)
    say(build().splitlines()[0])
    while True:
        plan = read_plan(targets, demo, budget_scale)
        run.left = plan
        if not plan.pending or run.rounds >= max_rounds:
            break
        run.rounds += 1
        for line in plan_lines(plan):
            say(f"round {run.rounds}: {line}")
        paths = write_plan(plan)
        run_specs(paths, executor, workers)
        run.attempts += [item.spec.attempt_id for item in plan.pending]
        ingested = ingest_plan(paths)
        say(f"round {run.rounds}: ingest {ingested}")
        say(build().splitlines()[0])
    return run
