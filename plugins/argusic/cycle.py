"""A benchmark cycle: pool → (agent × project × attempt) specs → attempts → warehouse → board.

The Airflow DAGs call these functions task by task; `argusic demo` calls `run_cycle` in one process.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from argusic.attempt import AttemptSpec, run_with_reruns
from argusic.evidence import EvidenceStore
from argusic.executor import Executor, get_executor
from argusic.pool import load_pool, select_pool, write_pool
from argusic.settings import orchestrator_config, project_root, runs_dir

# Demo cycles scale the budgets down (90 min → 15 s); records keep the real budget_seconds.
DEMO_BUDGET_SCALE = 1 / 360


def publish_dir() -> Path:
    return Path(os.environ.get("ARGUSIC_PUBLISH_DIR", project_root() / "published"))


def pools_dir() -> Path:
    return runs_dir() / "pools"


def rotate_pool(cycle_id: str, catalogue: Path, size: int | None = None) -> dict[str, str]:
    """Select and write the cycle's pool; returns the paths written (internal pool, public list)."""
    pool = select_pool(Path(catalogue), cycle_id, size)
    return write_pool(pool, pools_dir(), publish_dir())


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
    scale = budget_scale if budget_scale is not None else (DEMO_BUDGET_SCALE if demo else 1.0)
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
