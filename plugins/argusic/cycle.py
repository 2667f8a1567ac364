"""A benchmark cycle: pool → (agent × project × attempt) specs → attempts → warehouse → board.

The Airflow DAGs call these functions task by task (through argusic.airflow_tasks), and so does
`argusic cycle run`; `argusic demo` calls `run_cycle` in one process.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from argusic.attempts.common import existing_record, share_record
from argusic.attempts.keys import KeyBroker
from argusic.attempts.run import max_reruns_for, run_attempt
from argusic.core.evidence import EvidenceStore
from argusic.core.layout import pools_dir, publish_dir
from argusic.core.record import load_record_file
from argusic.core.settings import orchestrator_config, runs_dir
from argusic.core.spec import AttemptSpec
from argusic.sandbox.executor import get_executor
from argusic.sandbox.launch import Executor
from argusic.sources.pool import Candidate, PoolSelection, draw_pool, load_pool, write_pool

log = logging.getLogger(__name__)

# Demo cycles scale the budgets down (90 min → 15 s); records keep the real budget_seconds.
DEMO_BUDGET_SCALE = 1 / 360
SELECTION_FILE = "selection.json"  # beside the internal pool: how it was drawn (counts, exclusions)


def source_check(repo_roots: Iterable[Path | str] = ()) -> Callable[[list[Candidate]], dict[str, str]]:
    """The pool's source check: mirror remote repositories, check local ones against the allowed
    roots, and verify every pinned commit; {project_id: reason} for the candidates that fail."""
    from argusic.sources import mirror

    roots = mirror.repo_roots(repo_roots)

    def check(candidates: list[Candidate]) -> dict[str, str]:
        return mirror.check_sources(((c.project_id, c.repo_url, c.commit) for c in candidates), roots=roots)

    return check


def draw_checked_pool(
    cycle_id: str, catalogue: Path, size: int | None = None, repo_roots: Iterable[Path | str] = ()
) -> PoolSelection:
    """Draw the cycle's pool, every candidate's repository mirrored and its commit verified first."""
    from argusic.sources.pool import cycle_window

    cycle_window(cycle_id)  # a bad cycle id is refused before any fetch
    return draw_pool(Path(catalogue), cycle_id, size, check_sources=source_check(repo_roots))


def rotate_pool(
    cycle_id: str, catalogue: Path, size: int | None = None, repo_roots: Iterable[Path | str] = ()
) -> dict[str, str]:
    """Select and write the cycle's pool; returns the paths written (internal pool, public list, and
    the selection report: counts, shortfall, every exclusion with its reason)."""
    selection = draw_checked_pool(cycle_id, catalogue, size, repo_roots)
    for line in selection.lines():
        log.info("%s", line)
    paths = write_pool(selection.pool, pools_dir(), publish_dir())
    report = Path(paths["pool"]).with_name(SELECTION_FILE)
    tmp = report.with_name(f".{report.name}.{os.getpid()}.tmp")
    tmp.write_text(selection.to_json() + "\n")
    tmp.replace(report)
    from argusic.core.runs_store import push

    push(report)  # on a cluster: every host plans and runs from the runs store's pool
    push(paths["pool"])
    return paths | {"selection": str(report)}


def latest_cycle_of(rows: Iterable[tuple[str, datetime | None]]) -> str:
    """The latest of (cycle_id, end of its latest attempt) rows: by the cycle's month first, then by
    that time, never by the name (`2026-12-demo` sorts after `2026-12` by name, not by date)."""
    from argusic.sources.pool import cycle_window

    def when(row: tuple[str, datetime | None]) -> tuple:
        try:
            start = cycle_window(row[0])[0]
        except ValueError:
            start = date.min
        moment = row[1].timestamp() if row[1] is not None else float("-inf")
        return (start, moment)

    return max(rows, key=when)[0]


def read_selection(pool_path: Path) -> dict | None:
    """The selection report written beside a pool (None for a pool drawn elsewhere)."""
    try:
        return json.loads(Path(pool_path).with_name(SELECTION_FILE).read_text())
    except (OSError, ValueError):
        return None


def budget_scale_for(demo: bool, budget_scale: float | None) -> tuple[bool, float]:
    """(demo, scale) of planned attempts: `budget_scale` when given, else 1/360 for a demo, else 1.

    A scaled budget is recorded as the demo cycles are: demo true, real budget_seconds kept,
    effective_budget_seconds beside it; the board flags the cycle (is_demo_cycle)."""
    if budget_scale is not None and not 0 < budget_scale <= 1:
        raise ValueError(f"budget scale {budget_scale}: expected a number in (0, 1]")
    scale = budget_scale if budget_scale is not None else (DEMO_BUDGET_SCALE if demo else 1.0)
    return demo or scale < 1, scale


def plan_attempts(
    pool_path: Path,
    agents: list[str],
    attempts_per_pair: int | None = None,
    demo: bool = False,
    budget_scale: float | None = None,
) -> list[AttemptSpec]:
    """Every (agent × project × attempt 1..n) of the cycle, in a stable order."""
    pool = load_pool(Path(pool_path))
    n = attempts_per_pair or orchestrator_config().attempts_per_pair
    demo, scale = budget_scale_for(demo, budget_scale)
    return [
        AttemptSpec(
            cycle_id=pool.cycle_id,
            agent_id=agent,
            project_id=entry.project_id,
            repo_url=entry.repo_url,
            commit=entry.commit,
            tier=entry.tier,
            attempt_no=attempt_no,
            demo=demo,
            budget_scale=scale,
        )
        for agent in agents
        for entry in pool.entries
        for attempt_no in range(1, n + 1)
    ]


@dataclass(frozen=True)
class CycleRun:
    cycle_id: str
    pool_path: Path
    record_paths: list[Path]


def run_attempts(
    specs: list[AttemptSpec],
    executor: Executor | None = None,
    store: EvidenceStore | None = None,
    workers: int = 2,
    on_done: Callable[[AttemptSpec, list[Path]], None] | None = None,
) -> list[Path]:
    executor = executor or get_executor()
    store = store or EvidenceStore()

    def one(spec: AttemptSpec) -> list[Path]:
        paths = run_with_reruns(spec, executor, store)
        if on_done:
            on_done(spec, paths)
        return paths

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(one, specs))
    return [path for paths in results for path in paths]


def run_cycle(
    cycle_id: str,
    catalogue: Path,
    agents: list[str],
    demo: bool = False,
    workers: int = 2,
    executor: Executor | None = None,
    on_done: Callable[[AttemptSpec, list[Path]], None] | None = None,
) -> CycleRun:
    paths = rotate_pool(cycle_id, catalogue)
    specs = plan_attempts(Path(paths["pool"]), agents, demo=demo)
    records = run_attempts(specs, executor=executor, workers=workers, on_done=on_done)
    return CycleRun(cycle_id, Path(paths["pool"]), records)


# --- a cycle's outcome, before anything is loaded or published ---------------------------------------


class CycleFailed(RuntimeError):
    """A cycle that must not be published: nothing planned, or no valid attempt."""


@dataclass
class CycleTally:
    """The planned attempts of a run and how each ended (its last record, reruns included)."""

    planned: int = 0
    valid: int = 0
    invalid: int = 0
    passes: int = 0  # valid attempts whose report shows a pass (the warehouse decides the outcome)
    invalid_reasons: Counter = field(default_factory=Counter)

    def add(self, record) -> None:
        self.planned += 1
        if record.invalid_reason is None:
            self.valid += 1
            self.passes += int(record_passes(record))
        else:
            self.invalid += 1
            self.invalid_reasons[_reason_kind(record.invalid_reason)] += 1


def record_passes(record) -> bool:
    """What the rubric will call pass_full or pass_mock (marts.attempt_scores decides; this is for
    progress lines only): valid, completed, installed, ran, verified for real or with mocks."""
    report = record.report
    return bool(
        record.invalid_reason is None
        and record.end_reason == "completed"
        and report is not None
        and report.install_ok
        and report.ran_ok
        and report.test_depth in ("tier1_real", "tier2_mock")
    )


def _reason_kind(reason: str) -> str:
    """Group reasons that differ only by ids, paths or numbers."""
    reason = re.sub(r"[0-9a-f]{40}", "<commit>", reason)
    return reason if len(reason) <= 200 else reason[:197] + "..."


_RERUN = re.compile(r"\.r\d+$")


def tally_records(record_paths: Iterable[str | Path]) -> CycleTally:
    """Each planned attempt counted once, by its last record (the highest rerun)."""
    from argusic.core.record import RecordError, load_record_file

    last: dict[str, tuple[int, object]] = {}
    for path in record_paths:
        try:
            record = load_record_file(Path(path))
        except (OSError, RecordError) as err:
            raise CycleFailed(f"{path}: unreadable run record: {err}") from None
        base = _RERUN.sub("", record.attempt_id)
        rerun = int(record.attempt_id.rsplit(".r", 1)[1]) if _RERUN.search(record.attempt_id) else 0
        if base not in last or rerun >= last[base][0]:
            last[base] = (rerun, record)
    tally = CycleTally()
    for _rerun, record in last.values():
        tally.add(record)
    return tally


def require_valid_attempts(cycle_id: str, record_paths: list[str] | list[Path]) -> CycleTally:
    """Refuse to load or publish a cycle run that measured nothing valid (CycleFailed says why)."""
    if not record_paths:
        raise CycleFailed(
            f"cycle {cycle_id}: no attempt was run (the plan was empty): nothing loaded, nothing published"
        )
    tally = tally_records(record_paths)
    if tally.valid == 0:
        reasons = "; ".join(f"{n} × {why}" for why, n in tally.invalid_reasons.most_common(5))
        raise CycleFailed(
            f"cycle {cycle_id}: all {tally.planned} attempt(s) are invalid (our tooling failed, even "
            f"after reruns): {reasons}. Nothing loaded, nothing published; the records and evidence "
            f"are kept under {runs_dir() / cycle_id}. Fix the cause, then run a new cycle id."
        )
    return tally


def compute_hints_quietly(
    record_path: Path, base_dir: Path | None = None, store: EvidenceStore | None = None
) -> Path | None:
    """The attempt's Layer 1 hints (argusic.judging.hints) beside its record, shared like the record,
    and their screenshots in the evidence store (by content address, for the served page and the
    review queue). Hints are never part of a score: a failure to compute them is logged and never
    fails the attempt (`argusic hints compute` computes them again)."""
    try:
        from argusic.judging.hints import hints_for_attempt, store_hint_evidence

        hints = hints_for_attempt(record_path.parent)
        store_hint_evidence(record_path.parent, store or EvidenceStore())
        if base_dir is None:
            from argusic.core.runs_store import push

            push(hints)
        return hints
    except Exception as err:  # noqa: BLE001 - a hint is advice; the attempt's measurement stands
        log.warning("%s: hints not computed: %s: %s", record_path.parent.name, type(err).__name__, err)
        return None


def run_with_reruns(
    spec: AttemptSpec,
    executor: Executor | None = None,
    store: EvidenceStore | None = None,
    base_dir: Path | None = None,
    broker: KeyBroker | None = None,
    live_log: bool = False,
) -> list[Path]:
    """Run an attempt; rerun it (bounded) while its record is invalid. Returns every record made."""
    paths = []
    max_reruns = max_reruns_for(spec)
    current = spec
    while True:
        existing_record(current, base_dir)  # on a cluster: measured on another host before? pulled here
        path = run_attempt(current, executor, store, base_dir, broker, live_log=live_log)
        share_record(path, base_dir)
        paths.append(path)
        compute_hints_quietly(path, base_dir, store)
        record = load_record_file(path)
        if record.invalid_reason is None:
            log.info("%s: %s (record %s)", current.label, record.end_reason, path)
            return paths
        if current.rerun_no >= max_reruns:
            log.warning("%s: invalid after %d rerun(s): %s", current.label, max_reruns, record.invalid_reason)
            return paths
        log.warning("%s: invalid (%s); rerunning", current.label, record.invalid_reason)
        current = current.rerun()
