"""Thin helpers the Airflow DAGs call, task by task. No Airflow import here: the DAG files own the
scheduling, these functions own the file layout (XCom carries paths, never data).

Plan layout: `runs/<cycle_id>/plan/<attempt_id>.json`, one small AttemptSpec document per attempt.
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from argusic.attempts.story import _text
from argusic.core.layout import pool_path_for, publish_dir
from argusic.core.spec import AttemptSpec, read_spec, write_spec
from argusic.cycle import plan_attempts, run_with_reruns
from argusic.sources.pool import CatalogueError, cycle_window, load_pool, reveal_private


class PlanTooLarge(ValueError):
    """The plan has more attempts than one mapped task may expand to ([core] max_map_length)."""


class NothingPlanned(ValueError):
    """The plan of this run is empty: a cycle that planned nothing fails loudly."""


class ConfigurationError(ValueError):
    """A trigger's params that no retry can fix; the message says what to change."""


def cycle_id_for(day: date) -> str:
    """The cycle a date belongs to: a calendar month, `YYYY-MM`."""
    return f"{day.year:04d}-{day.month:02d}"


RUN_ID_PREFIX = "cycle__"


def run_id_for(cycle_id: str, moment: datetime) -> str:
    """The run id a cycle run is triggered with (`cycle__2026-12__20261201T120000Z`): the cycle is
    read in every list of runs, not hidden in the run's conf. Airflow allows `[A-Za-z0-9_.~:+-]`."""
    return f"{RUN_ID_PREFIX}{cycle_id}__{moment.astimezone(UTC):%Y%m%dT%H%M%SZ}"


def cycle_of_run_id(run_id: str | None) -> str | None:
    """The cycle a run id names (`cycle__<cycle_id>__<anything>`), or None."""
    if not run_id or not run_id.startswith(RUN_ID_PREFIX):
        return None
    return run_id[len(RUN_ID_PREFIX) :].split("__", 1)[0] or None


def cycle_id_of_run(param: str | None, run_id: str | None, day: date) -> str:
    """The cycle of a DAG run: the `cycle_id` param, else the cycle its run id names, else the month
    of the run. A param and a run id that name different cycles are refused (ConfigurationError)."""
    named = cycle_of_run_id(run_id)
    if param and named and param != named:
        raise ConfigurationError(
            f"the run id {run_id!r} names cycle {named} but the param cycle_id is {param!r}: trigger "
            f"again with one cycle in both (run id cycle__{param}__<time>), or leave cycle_id empty"
        )
    cycle_id = param or named or cycle_id_for(day)
    try:
        cycle_window(cycle_id)
    except ValueError as err:
        raise ConfigurationError(
            f"{err}; set the param cycle_id (or the run id cycle__<cycle_id>__<time>)"
        ) from None
    return cycle_id


def previous_cycle_of(cycle_id: str) -> str:
    """The calendar month before a cycle (`2027-01` -> `2026-12`)."""
    start, _ = cycle_window(cycle_id)
    return cycle_id_for(start - timedelta(days=1))


def default_catalogue(build: bool = False) -> Path:
    """ARGUSIC_CATALOGUE, or the demo forge's catalogue (`<ARGUSIC_FORGE_DIR>/catalogue.json`; with
    `build`, the forge is made first when it is missing: it is deterministic, so any machine makes
    the same repositories and commits)."""
    if catalogue := os.environ.get("ARGUSIC_CATALOGUE"):
        return Path(catalogue)
    from argusic.core.settings import forge_dir

    path = forge_dir() / "catalogue.json"
    if build and not path.exists():
        from argusic.sources.forge import build_forge

        return build_forge(forge_dir())
    return path


def require_scaled_budgets_on_the_forge(
    pool_path: str | Path, demo: bool, budget_scale: float | None
) -> None:
    """Refuse real budgets on the demo forge's fixture projects (its timeout fixture alone would hold
    a worker for 90 minutes): a configuration error that says how to proceed."""
    from argusic.core.settings import forge_dir

    if demo or budget_scale:
        return
    from argusic.core.runs_store import local_path

    repos = (forge_dir() / "repos").resolve()
    pool = load_pool(local_path(pool_path))  # on a cluster: a runs store URI, pulled to this host
    if pool.entries and all(Path(e.repo_url).resolve().is_relative_to(repos) for e in pool.entries):
        raise ConfigurationError(
            f"cycle {pool.cycle_id}: the pool is the demo forge's fixture projects ({repos}) with real "
            "budgets (90 min an attempt; its timeout fixture alone would take 90 min): set demo: true "
            "(budgets x 1/360: 15 s) or budget_scale, or name your own catalogue (catalogue: /abs/path.json "
            "with a new cycle_id)"
        )


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


def write_plan(
    pool_path: Path,
    agents: list[str],
    attempts_per_pair: int | None = None,
    demo: bool = False,
    shard_index: int = 0,
    shard_count: int = 1,
    max_specs: int | None = None,
    budget_scale: float | None = None,
    executor=None,
) -> list[str]:
    """Write one spec file per attempt of this shard and return their paths, in plan order.

    A shard holds every attempt of its projects (projects dealt round-robin in pool order), so the
    three attempts of a pair always land in the same DAG run. Rewriting the same plan is a no-op.
    Planning pins the cycle's environment (argusic.attempts.environment) for the executor the attempts will
    run on (`executor`: an executor or its name; None: ARGUSIC_EXECUTOR or the default), or checks
    the pin already made (EnvironmentRefused when the harness, instructions or limits changed).
    """
    if shard_count < 1 or not 0 <= shard_index < shard_count:
        raise ValueError(f"shard {shard_index} of {shard_count}: expected 0 <= shard_index < shard_count")
    if not agents:
        raise ValueError("no agents to plan for")
    from argusic.core.runs_store import local_path

    pool_path = local_path(pool_path)  # on a cluster, prepare_pool may have run on another host
    pool = load_pool(pool_path)
    project_ids = [entry.project_id for entry in pool.entries]
    mine = {pid for i, pid in enumerate(project_ids) if i % shard_count == shard_index}
    specs = [
        s
        for s in plan_attempts(pool_path, agents, attempts_per_pair, demo, budget_scale)
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
    from argusic.attempts.agents import driver_for
    from argusic.attempts.environment import ensure_pin

    first = specs[0]
    roles = {"agents" if driver_for(agent).external else "runner" for agent in agents}
    ensure_pin(pool.cycle_id, executor, roles, first.demo, first.budget_scale)
    return [write_spec(spec) for spec in specs]


def run_planned_attempt(spec_path: str | Path, executor=None, live_log: bool = False) -> list[str]:
    """Run one planned attempt (with its bounded reruns); returns every run record path it made.

    Idempotent by attempt_id: a retry of the task finds the record and does not measure again.
    `executor`: the CLI's choice; the DAG leaves it to ARGUSIC_EXECUTOR (default docker when up).
    `live_log`: show the attempt's own log, masked, in the task log while it runs (the DAG does).
    """
    return [str(p) for p in run_with_reruns(read_spec(spec_path), executor, live_log=live_log)]


# --- what an attempt task tells (its log's last lines and its label in the UI) -----------------------


def measured_records(spec: AttemptSpec) -> list[str] | None:
    """The run records of an attempt measured before (reruns included) when nothing is left to do for
    it (its last record is valid, or invalid after the bounded reruns); None when it is still to run
    or to resume."""
    from argusic.attempts.common import existing_record
    from argusic.attempts.run import max_reruns_for
    from argusic.core.record import RecordError, load_record_file

    chain: list[str] = []
    current = spec
    while (path := existing_record(current)) is not None:
        chain.append(str(path))
        current = current.rerun()
    if not chain:
        return None
    try:
        last = load_record_file(Path(chain[-1]))
    except (OSError, RecordError):
        return None  # damaged: running it again measures it again
    done = last.invalid_reason is None or current.rerun_no > max_reruns_for(spec)
    return chain if done else None


def pull_hints(record_path: Path) -> None:
    """On a cluster, the attempt's hints.json (computed on the host that ran it) beside its pulled
    record, so ingest loads it; none is fine (hints are advice, `argusic hints compute` makes them)."""
    from argusic.core.runs_store import RunsStoreError, key_of_local, pull

    try:
        pull(key_of_local(Path(record_path).parent / "hints.json"))
    except (RunsStoreError, OSError, ValueError) as err:
        logging.getLogger("argusic.hints").warning(
            "%s: hints not pulled: %s", Path(record_path).parent.name, err
        )


def records_of_plan(spec_paths: list[str]) -> tuple[list[str], list[str]]:
    """Every run record of the planned attempts (reruns included), and the labels of the attempts that
    have none (their task failed before measuring). Ingest reads the plan, not the attempt tasks'
    return values: an attempt task whose measurement is invalid is skipped and returns nothing."""
    from argusic.attempts.common import existing_record

    found: list[str] = []
    missing: list[str] = []
    for spec_path in spec_paths:
        spec = read_spec(spec_path)
        current = spec
        while (path := existing_record(current)) is not None:
            found.append(str(path))
            pull_hints(path)
            current = current.rerun()
        if current is spec:
            missing.append(spec.label)
    return found, missing


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
    from argusic.attempts.agents import known_agents
    from argusic.warehouse import ingest

    result = ingest([Path(p) for p in record_paths], known_agents=known_agents())
    return {"files": result.files, "inserted": result.inserted, "already_present": result.already_present}


def ingest_repair_records(paths: list[str]) -> dict[str, int]:
    """Load repair items, validations and grades (files or folders: the items folder, the cycle's
    grades) into raw.repair_*; counts by kind. After the run records: a grade of a repair attempt
    is attributed to its agent through the attempt's run record (dbt: int_repair_grades_attributed)."""
    from argusic.repair.ingest import ingest_repair_task

    return ingest_repair_task(paths)


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
    from argusic.core.runs_store import local_path, pull, push

    if pool:
        path = local_path(pool)
        if load_pool(path).cycle_id != cycle_id:
            raise ValueError(f"{path} is the pool of cycle {load_pool(path).cycle_id}, not {cycle_id}")
        return str(pool)
    recorded = pool_path_for(cycle_id)
    pull(f"pools/{cycle_id}/pool.json")  # on a cluster: the pool another host recorded
    if recorded.exists():
        existing = load_pool(recorded)
        asked = []
        if catalogue:
            import hashlib

            try:
                digest = hashlib.sha256(Path(catalogue).read_bytes()).hexdigest()
            except OSError as err:
                raise CatalogueError(f"catalogue {catalogue}: cannot be read ({err.strerror})") from None
            if digest != existing.catalogue_sha256:
                asked.append(f"catalogue {catalogue} (sha256 {digest[:12]}…)")
        if size is not None and size != len(existing.entries):
            asked.append(f"pool_size {size}")
        if asked:
            raise CatalogueError(recorded_pool_conflict(cycle_id, recorded, " and ".join(asked)))
        return push(recorded)
    from argusic.cycle import rotate_pool

    chosen = Path(catalogue) if catalogue else default_catalogue(build=True)
    if not chosen.is_file():
        raise CatalogueError(f"catalogue {chosen}: no such file (give an absolute path on the worker)")
    written = rotate_pool(cycle_id, chosen, size, repo_roots or ())
    return push(written["pool"])  # XCom: the pool's URI on a cluster (plan may run on another host)


def recorded_pool_conflict(cycle_id: str, recorded: Path, asked: str) -> str:
    """Why a cycle with a recorded pool cannot be run with another one, and the two ways on."""
    pool = load_pool(recorded)
    ids = ", ".join(e.project_id for e in pool.entries[:8]) + (", …" if len(pool.entries) > 8 else "")
    return "\n".join(
        [
            f"cycle {cycle_id} already has a pool: {recorded}",
            f"  ({len(pool.entries)} projects: {ids}; drawn from the catalogue with sha256 "
            f"{pool.catalogue_sha256[:12]}…), and a cycle's pool never changes once drawn.",
            f"This run asks for {asked}. Either:",
            f"  - run cycle {cycle_id} with its pool: leave pool_size and catalogue empty (attempts "
            "measured before are not run twice), or",
            f"  - use a new cycle id for another pool (e.g. {cycle_id}-b).",
        ]
    )


def release_semaphores_at_exit() -> None:
    """Let multiprocessing unlink the semaphores dbt makes in this process when it exits.

    dbt makes its locks from a `spawn` context (dbt.mp_context): named POSIX semaphores, tracked by
    multiprocessing's resource tracker and unlinked by multiprocessing's exit hook. An Airflow task
    runs in a forked process that clears the exit hooks it inherited and leaves with os._exit after
    running only the hooks registered since the fork; without this, the hook never runs, the
    semaphores stay in /dev/shm, and the resource tracker reports them as two `leaked semaphore`
    lines on stderr (ERROR lines in the task's log). Registering it again is harmless elsewhere."""
    import atexit
    import multiprocessing.util

    exit_hook = getattr(multiprocessing.util, "_exit_function", None)
    if exit_hook is not None:
        atexit.unregister(exit_hook)  # once, whatever was registered before
        atexit.register(exit_hook)


def build_warehouse_summary() -> str:
    """dbt build + expectations; raises PublicationBlocked (task fails, publish never runs).

    Through the build worker (ARGUSIC_BUILD_WORKER) when one answers, else in the task's process.
    """
    from argusic.build_worker import build_or_delegate

    release_semaphores_at_exit()
    return build_or_delegate()


def publish_cycle_board(cycle_id: str, board_sha256: str | None = None) -> str:
    """The board of the cycle, re-validated under the writer lock, published only when the cycle's
    latest publication decision approves it exactly as it is (argusic.review.publication; with
    `board_sha256`, only that board); returns the published path."""
    from argusic.review.publication import publish_approved

    release_semaphores_at_exit()
    return str(publish_approved(cycle_id, board_sha256, publish_dir()))


def published_attempt_lines(cycle_id: str, spec_paths: list[str]) -> list[str]:
    """The planned attempts of a run as the rubric scored them (published/<cycle>/attempts.json,
    written from marts.attempt_scores): outcome, points, score, served evidence. One line each."""
    import json

    path = publish_dir() / cycle_id / "attempts.json"
    rows = {a["attempt_id"]: a for a in json.loads(path.read_text())["attempts"]}
    lines = [f"attempts of this run as scored by the rubric ({path}):"]
    for spec_path in spec_paths:
        spec = read_spec(spec_path)
        current, chain = spec, []
        while current.attempt_id in rows:
            chain.append(rows[current.attempt_id])
            current = current.rerun()
        if not chain:
            lines.append(f"  {spec.label}: not in the published attempts")
            continue
        row = chain[-1]
        reruns = f", after {len(chain) - 1} rerun(s)" if len(chain) > 1 else ""
        if not row["is_valid"]:
            lines.append(f"  {spec.label}: invalid{reruns}: {_text(row['invalid_reason'], 160)}")
            continue
        points = (
            f"{row['install_points']}+{row['run_points']}+{row['recovery_points']:g}+{row['depth_points']}"
        )
        lines.append(
            f"  {spec.label}: {row['outcome']}, points {points}, score {row['score']:.1f}{reruns}; "
            f"log {row['served_log_uri'] or 'none (no served copy)'}"
        )
    return lines
