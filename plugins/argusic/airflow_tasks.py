"""Thin helpers the Airflow DAGs call, task by task. No Airflow import here: the DAG files own the
scheduling, these functions own the file layout (XCom carries paths, never data).

Plan layout: `runs/<cycle_id>/plan/<attempt_id>.json`, one small AttemptSpec document per attempt.
"""

from __future__ import annotations

import os
from datetime import date, timedelta
from pathlib import Path

from argusic.attempt import AttemptSpec, run_with_reruns
from argusic.cycle import plan_attempts, pools_dir, publish_dir
from argusic.pool import CatalogueError, cycle_window, load_pool, reveal_private
from argusic.settings import runs_dir


class PlanTooLarge(ValueError):
    """The plan has more attempts than one mapped task may expand to ([core] max_map_length)."""


class NothingPlanned(ValueError):
    """The plan of this run is empty: a cycle that planned nothing fails loudly."""


def cycle_id_for(day: date) -> str:
    """The cycle a date belongs to: a calendar month, `YYYY-MM`."""
    return f"{day.year:04d}-{day.month:02d}"


def previous_cycle_of(cycle_id: str) -> str:
    """The calendar month before a cycle (`2027-01` -> `2026-12`)."""
    start, _ = cycle_window(cycle_id)
    return cycle_id_for(start - timedelta(days=1))


def default_catalogue() -> Path:
    """ARGUSIC_CATALOGUE, or the demo forge's catalogue (`<ARGUSIC_FORGE_DIR>/catalogue.json`)."""
    if catalogue := os.environ.get("ARGUSIC_CATALOGUE"):
        return Path(catalogue)
    from argusic.settings import forge_dir

    return forge_dir() / "catalogue.json"


def pool_path_for(cycle_id: str) -> Path:
    """Where `rotate_pool` writes a cycle's internal pool."""
    return pools_dir() / cycle_id / "pool.json"


def reveal_if_ended(cycle_id: str, today: date) -> str | None:
    """Publish the private part of `cycle_id` if it has ended; None when there is nothing to do yet
    (no pool recorded for that cycle, or the cycle is still running)."""
    pool_path = pool_path_for(cycle_id)
    if not pool_path.exists():
        return None
    try:
        return str(reveal_private(pool_path, publish_dir(), today))
    except CatalogueError:
        return None  # still sealed: the cycle has not ended on `today`


def plan_dir(cycle_id: str) -> Path:
    return runs_dir() / cycle_id / "plan"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text() == text:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_plan(
    pool_path: Path,
    agents: list[str],
    attempts_per_pair: int | None = None,
    demo: bool = False,
    shard_index: int = 0,
    shard_count: int = 1,
    max_specs: int | None = None,
    budget_scale: float | None = None,
) -> list[str]:
    """Write one spec file per attempt of this shard and return their paths, in plan order.

    A shard holds every attempt of its projects (projects dealt round-robin in pool order), so the
    three attempts of a pair always land in the same DAG run. Rewriting the same plan is a no-op.
    """
    if shard_count < 1 or not 0 <= shard_index < shard_count:
        raise ValueError(f"shard {shard_index} of {shard_count}: expected 0 <= shard_index < shard_count")
    if not agents:
        raise ValueError("no agents to plan for")
    pool = load_pool(Path(pool_path))
    project_ids = [entry.project_id for entry in pool.entries]
    mine = {pid for i, pid in enumerate(project_ids) if i % shard_count == shard_index}
    specs = [
        s
        for s in plan_attempts(Path(pool_path), agents, attempts_per_pair, demo, budget_scale)
        if s.project_id in mine
    ]
    if not specs:
        raise NothingPlanned(
            f"cycle {pool.cycle_id}: nothing to plan: {len(project_ids)} project(s) in the pool, "
            f"{len(mine)} in shard {shard_index} of {shard_count}"
        )
    if max_specs is not None and len(specs) > max_specs:
        raise PlanTooLarge(
            f"{len(specs)} attempts in one run exceed [core] max_map_length={max_specs}: raise it "
            f"(AIRFLOW__CORE__MAX_MAP_LENGTH) or split the cycle with shard_count / one run per agent"
        )
    folder = plan_dir(pool.cycle_id)
    paths = []
    for spec in specs:
        path = folder / f"{spec.attempt_id}.json"
        _write_atomic(path, spec.model_dump_json(indent=1) + "\n")
        paths.append(str(path))
    return paths


def read_spec(spec_path: str | Path) -> AttemptSpec:
    return AttemptSpec.model_validate_json(Path(spec_path).read_text())


def attempt_label(spec_path: str | Path) -> str:
    """`agent / project / attempt N` for the Airflow UI's map index; falls back to the file name."""
    try:
        return read_spec(spec_path).label
    except (OSError, ValueError):
        return Path(str(spec_path)).stem


def run_planned_attempt(spec_path: str | Path, executor=None) -> list[str]:
    """Run one planned attempt (with its bounded reruns); returns every run record path it made.

    Idempotent by attempt_id: a retry of the task finds the record and does not measure again.
    `executor`: the CLI's choice; the DAG leaves it to ARGUSIC_EXECUTOR (default docker when up).
    """
    return [str(p) for p in run_with_reruns(read_spec(spec_path), executor)]


def flatten_paths(groups) -> list[str]:
    """The mapped attempt tasks each return a list of record paths; ingest wants one list."""
    out: list[str] = []
    for group in groups:
        if group is None:
            continue
        out.extend([group] if isinstance(group, str) else group)
    return out


def ingest_cycle_records(cycle_id: str, record_paths: list[str]) -> dict[str, int]:
    """The cycle's ingest step: refuse a run that planned nothing or whose attempts are all invalid
    (CycleFailed: nothing loaded, so nothing can be published), else load its records."""
    from argusic.cycle import require_valid_attempts

    require_valid_attempts(cycle_id, record_paths)
    return ingest_records(record_paths)


def ingest_records(record_paths: list[str]) -> dict[str, int]:
    from argusic.agents import known_agents
    from argusic.warehouse import ingest

    result = ingest([Path(p) for p in record_paths], known_agents=known_agents())
    return {"files": result.files, "inserted": result.inserted, "already_present": result.already_present}


def resolve_pool(
    cycle_id: str,
    pool: str | None = None,
    catalogue: str | None = None,
    size: int | None = None,
    repo_roots: list[str] | None = None,
) -> str:
    """The pool a cycle run uses: an explicit pool file; else the one the rotation DAG recorded for the
    cycle; else draw it now from the catalogue (same rules, idempotent: a different pool is refused).
    Drawing mirrors every candidate's repository and verifies its pinned commit first; a candidate
    that fails is left out with its reason (runs/pools/<cycle>/selection.json)."""
    if pool:
        path = Path(pool)
        if load_pool(path).cycle_id != cycle_id:
            raise ValueError(f"{path} is the pool of cycle {load_pool(path).cycle_id}, not {cycle_id}")
        return str(path)
    recorded = pool_path_for(cycle_id)
    if size is None and recorded.exists():
        if catalogue:
            import hashlib

            digest = hashlib.sha256(Path(catalogue).read_bytes()).hexdigest()
            drawn_from = load_pool(recorded).catalogue_sha256
            if digest != drawn_from:
                raise CatalogueError(
                    f"cycle {cycle_id} already has a pool ({recorded}) drawn from another catalogue "
                    f"(sha256 {drawn_from[:12]}…, this one is {digest[:12]}…): a cycle's pool never "
                    "changes once drawn; use a new cycle id for this catalogue"
                )
        return str(recorded)
    from argusic.cycle import rotate_pool

    chosen = Path(catalogue) if catalogue else default_catalogue()
    return rotate_pool(cycle_id, chosen, size, repo_roots or ())["pool"]


def build_warehouse_summary() -> str:
    """dbt build + expectations; raises PublicationBlocked (task fails, publish never runs).

    Through the build worker (ARGUSIC_BUILD_WORKER) when one answers, else in the task's process.
    """
    from argusic.build_worker import build_or_delegate

    return build_or_delegate()


def publish_cycle_board(cycle_id: str) -> str:
    """The board of the cycle, re-validated under the writer lock; returns the published path."""
    from argusic.build_worker import publish_or_delegate

    return str(publish_or_delegate(cycle_id, publish_dir()))
