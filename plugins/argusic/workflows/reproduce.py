"""`argusic reproduce ATTEMPT_ID`: run an attempt again under its recorded configuration, and compare.

The original is found where ``argusic play`` finds it (``argusic.publication.replay.find_attempt``: the
analyst copy, the warehouse read-only, then ``runs/<cycle>/<attempt>/run_record.json``). Every input it ran
under must still be had exactly, or the reproduction is refused naming each one that cannot:

- **the commit**, in the project's repository or its mirror (``argusic.sources.mirror.attempt_source``).
  Records do not carry the repository's address: it is read from the cycle's pool
  (``runs/pools/<cycle>/pool.json``: the pool is write-once and pins the commit), else from the
  planned spec (``runs/<cycle>/plan/<attempt>.json``), else from the warehouse's ``raw.pool_entries``
  (read-only); each must name the record's commit;
- **the images**, by their recorded content digest (pinned images are kept under
  ``<name>:pinned-<hex16>``);
- **the harness**: the scaffold hash and the standard instructions' hash must be the recorded ones
  (harness editions are kept in git: the refusal names the commit that recorded the edition);
- **the agent driver**, the **limits** (applied as recorded, not as configured now), the **budget**
  (the recorded effective budget) and the **display** (the configured virtual display must be the
  size the original found).

The reproduction runs through the same attempt path (``argusic.attempts.run.run_attempt``) into its own
cycle, ``repro-<UTC date>-<n>`` (a real cycle id starts with ``YYYY-MM``: no collision), under
``runs/reproductions/<repro cycle>/`` (cycle folders are ``runs/<cycle>``: no cycle's plan, ingest or
DAG ever reads this one). Before the attempt starts, the reproduction cycle is pinned to the
*recorded* environment (its ``environment.json`` written from the record): ``run_attempt`` then
checks the environment now against that pin, exactly as for a cycle, and runs in the pinned image by
digest. Its record carries ``reproduces: <original attempt id>``; it is never ingested and nothing
here writes the warehouse.

The comparison scores both records with the rubric itself (dbt, ``+attempt_scores``) over a scratch
DuckDB holding only these two records (never the warehouse), and finds where the two served logs
diverge after conservative normalisation (``NORMALISATIONS``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from argusic.attempts import environment
from argusic.attempts.agents import driver_for
from argusic.attempts.keys import KeyUnavailable
from argusic.attempts.run import run_attempt
from argusic.core.record import RunRecord, load_record_file, parse_attempt_id, parse_record
from argusic.core.safe_io import write_atomic
from argusic.core.settings import (
    dbt_project_dir,
    orchestrator_config,
    parse_size,
    project_root,
    runs_dir,
    warehouse_path,
)
from argusic.core.spec import AttemptSpec, is_packed, planned_spec_reference, read_spec
from argusic.publication.replay import AttemptFacts, ReplayRefused, fetch_served, find_attempt, printable
from argusic.sandbox.containment import Containment
from argusic.sandbox.executor import DockerExecutor, LocalExecutor, docker_available
from argusic.sources.mirror import SourceUnavailable, attempt_source
from argusic.sources.pool import Pool
from argusic.warehouse.db import connect
from argusic.warehouse.load_runs import _row
from argusic.warehouse.schema import COLUMNS, migrate_raw

REPRODUCTIONS = "reproductions"
REPRO_PREFIX = "repro"
POOL_MAX_BYTES = 64 * 1024**2  # a pool of every project of a large catalogue is a few MB
NOT_REPRODUCIBLE = "recorded before environment identity: cannot be reproduced exactly"


class ReproductionRefused(RuntimeError):
    """The attempt cannot be reproduced (unknown, a reproduction itself, no environment, or an input
    that is no longer available): the message says which and why."""


def reproductions_dir(base: Path | None = None) -> Path:
    """Where reproductions live: ``runs/reproductions/`` (never a cycle's folder)."""
    return (base or runs_dir()) / REPRODUCTIONS


# --- the original --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Original:
    record: RunRecord
    source: str  # where it was found


def find_original(attempt_id: str) -> Original:
    """The original's validated record; refused when unknown, a reproduction, or without environment."""
    try:
        parts = parse_attempt_id(attempt_id)
    except ValueError as err:
        raise ReproductionRefused(f"not an attempt id: {err}") from None
    own = reproductions_dir() / str(parts["cycle_id"]) / attempt_id / "run_record.json"
    if own.is_file() and not own.is_symlink():
        raise ReproductionRefused(
            f"{attempt_id} is itself a reproduction (of {load_record_file(own).reproduces}; {own}): "
            "reproduce the original"
        )
    try:
        facts = find_attempt(attempt_id)
    except ReplayRefused as err:
        raise ReproductionRefused(f"unknown attempt: {err}") from None
    record = facts.record
    if record.reproduces is not None:
        raise ReproductionRefused(
            f"{attempt_id} is itself a reproduction (of {record.reproduces}): reproduce the original"
        )
    if record.environment is None:
        raise ReproductionRefused(f"{attempt_id}: {NOT_REPRODUCIBLE}")
    return Original(record, facts.source)


# --- its inputs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RepoSource:
    url: str
    where: str  # which file or table named it


def _pool_source(record: RunRecord, base: Path) -> RepoSource | None:
    path = base / "pools" / record.cycle_id / "pool.json"
    if not path.is_file() or path.is_symlink() or path.stat().st_size > POOL_MAX_BYTES:
        return None
    try:
        pool = Pool.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None
    for entry in pool.entries:
        if entry.project_id == record.project_id and entry.commit == record.commit:
            return RepoSource(entry.repo_url, str(path))
    return None


def _plan_source(record: RunRecord, base: Path) -> RepoSource | None:
    parts = parse_attempt_id(record.attempt_id)
    bare = f"{record.cycle_id}.{parts['purpose']}.{record.agent_id}.{record.project_id}.a{record.attempt_no}"
    try:
        path = planned_spec_reference(record.cycle_id, bare, base)  # in a pack, or a single file
        if path is None:
            return None
        single = Path(path)  # a spec file of its own is read only when plain and small
        if not is_packed(path) and (single.is_symlink() or single.stat().st_size > 64 * 1024):
            return None
        spec = read_spec(path)
    except (OSError, ValueError):
        return None
    if spec.project_id == record.project_id and spec.commit == record.commit:
        return RepoSource(spec.repo_url, path)
    return None


def _warehouse_source(record: RunRecord) -> RepoSource | None:
    db = warehouse_path()
    if not db.is_file():
        return None
    with connect(db, read_only=True) as con:  # waits for a writer, saying whom for
        try:
            row = con.execute(
                "SELECT repo_url FROM raw.pool_entries WHERE cycle_id = ? AND project_id = ? "
                "AND commit_sha = ?",
                [record.cycle_id, record.project_id, record.commit],
            ).fetchone()
        except duckdb.CatalogException:
            return None
    return None if row is None else RepoSource(row[0], f"warehouse {db}: raw.pool_entries")


def repo_source(record: RunRecord, base: Path | None = None) -> RepoSource:
    """The project's repository address (records do not carry it): the cycle's pool file, else its
    planned spec, else the warehouse's raw.pool_entries; each must pin the record's commit."""
    base = base or runs_dir()
    for find in (lambda: _pool_source(record, base), lambda: _plan_source(record, base)):
        if found := find():
            return found
    if found := _warehouse_source(record):
        return found
    raise ReproductionRefused(
        f"repository: the address of project {record.project_id} at commit {record.commit} is not known "
        f"here (run records do not carry it): not in {base / 'pools' / record.cycle_id / 'pool.json'}, "
        f"nor in the cycle's plan ({base / record.cycle_id / 'plan'}), nor in the warehouse's "
        "raw.pool_entries"
    )


def edition_commit(scaffold: str) -> str | None:
    """The git commit that added the harness edition with this scaffold hash to the changelog (the
    harness files of that edition are those of that commit), or None when git cannot tell."""
    try:
        relative = environment.changelog_path().resolve().relative_to(project_root().resolve())
        out = subprocess.run(
            ["git", "log", "--format=%H", "--reverse", f"-S{scaffold}", "--", str(relative)],
            cwd=project_root(), capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    commits = out.stdout.split() if out.returncode == 0 else []
    return commits[0] if commits else None


def _harness_problems(env) -> list[str]:
    problems = []
    now = environment.scaffold_sha256()
    try:
        edition = environment.current_edition()
        current = f"edition {edition.edition} (scaffold sha256 {now})"
    except environment.HarnessUnrecorded:
        edition, current = None, f"files recorded in no edition (scaffold sha256 {now})"
    if now != env.scaffold_sha256:
        known = {e.scaffold_sha256: e.edition for e in environment.harness_editions()}
        named = known.get(env.scaffold_sha256, env.harness_edition)
        where = edition_commit(env.scaffold_sha256)
        how = (
            f"check out commit {where[:12]} (it recorded edition {named}), e.g. `git worktree add "
            f"../argusic-harness-{named} {where}`, and reproduce from there"
            if where
            else "check out the commit whose dbt_project/seeds/harness_editions.csv row names that "
            f"scaffold sha256 (`git log -S{env.scaffold_sha256} -- dbt_project/seeds/harness_editions.csv`)"
        )
        problems.append(
            f"harness: the attempt ran under harness edition {env.harness_edition} (scaffold sha256 "
            f"{env.scaffold_sha256}); this checkout's harness is {current}: {how}"
        )
    elif edition is not None:
        instructions = environment.instructions_identity(edition)
        if instructions.sha256 != env.instructions.sha256:
            problems.append(
                f"instructions: the attempt's standard instructions were version {env.instructions.version} "
                f"(sha256 {env.instructions.sha256}); the file here is version {instructions.version} "
                f"(sha256 {instructions.sha256})"
            )
    return problems


def _image_problems(env) -> list[str]:
    problems = []
    for image in env.images:
        try:
            environment.image_digest(image.digest)
        except environment.EnvironmentUnavailable as err:
            problems.append(
                f"image: the {image.role} image {image.reference} the attempt ran in ({image.digest}, kept "
                f"as {environment.pinned_tag(image.reference, image.digest)}) is no longer available: {err}"
            )
    return problems


@dataclass(frozen=True)
class Plan:
    """What the reproduction will run: the spec, the pin (the recorded environment), the executor."""

    original: Original
    repo: RepoSource
    spec: Any  # AttemptSpec
    pin: Any  # environment.Pin
    executor: Any
    notes: list[str] = field(default_factory=list)


def _containment(limits, notes: list[str]):
    """The Docker containment with the recorded limits. The record gives the writable areas' total
    only: the configured split is kept when its total is the recorded one, else scaled to it."""
    now = Containment.from_config()
    disk = limits.disk_bytes
    total = now.out_bytes + now.work_bytes
    out = now.out_bytes if disk == total else max(1, disk * now.out_bytes // total)
    if disk != total:
        notes.append(
            f"disk: the record gives the writable areas' total ({disk} bytes) but not its split; /out gets "
            f"{out} bytes and the work area {disk - out} (the configured proportions)"
        )
    return dataclasses.replace(
        now,
        cpus=limits.cpus,
        memory=str(limits.memory_bytes),
        pids_limit=limits.pids,
        out_bytes=out,
        work_bytes=disk - out,
        network=limits.network,
        package_indexes=tuple(sorted(limits.package_indexes.items())),  # the mirrors it was pointed at
    )


def _network_problem(network: str) -> str | None:
    if network in ("none", "host", "bridge", "section7"):  # section7: made when the attempt runs
        return None
    import docker  # deferred: the Docker SDK loads only to look up a named network

    try:
        docker.from_env().networks.get(network)
    except docker.errors.NotFound:
        return f"network: the Docker network {network!r} the attempt ran on does not exist on this engine"
    except docker.errors.DockerException as err:
        return f"network: the Docker engine did not answer ({err})"
    return None


def plan_reproduction(
    original: Original,
    repro_cycle: str,
    base: Path | None = None,
    executor_factory: Callable[[Any], Any] | None = None,
) -> Plan:
    """Check every input; the spec, pin and executor of the reproduction. ReproductionRefused naming
    every input that is not available (all of them, not the first)."""
    record, env = original.record, original.record.environment
    assert env is not None
    problems: list[str] = []
    notes: list[str] = []
    if record.purpose == "repair":  # its item, fresh working copy and grade are not replayed here
        raise ReproductionRefused(
            f"{record.attempt_id}: a repair attempt (item {record.repair.item_id}) cannot be reproduced "
            "yet: argusic reproduce replays board and verdict attempts"
        )
    repo = None
    try:
        repo = repo_source(record, base)
        attempt_source(repo.url, record.commit)
    except ReproductionRefused as err:
        problems.append(str(err))
    except SourceUnavailable as err:
        problems.append(f"commit: {record.commit} of {record.project_id} cannot be had: {err}")
    problems += _image_problems(env)
    problems += _harness_problems(env)
    driver = None
    try:
        driver = driver_for(record.agent_id)
    except ValueError as err:
        problems.append(f"agent: {err}")
    role = "agents" if driver is not None and driver.external else "runner"
    if driver is not None and record.executor == "docker" and role not in {i.role for i in env.images}:
        problems.append(
            f"agent: {record.agent_id} runs in the {role} image now, the record names only "
            f"{', '.join(sorted(i.role for i in env.images)) or 'no image'}"
        )

    config = orchestrator_config()
    budget_now = config.budget_seconds(record.tier)
    wanted = env.limits.budget_seconds
    demo = record.demo or wanted != budget_now
    scale = wanted / budget_now
    if wanted > budget_now:
        problems.append(
            f"budget: the attempt was allowed {wanted} s; the {record.tier} budget is now {budget_now} s "
            "(orchestrator.toml [budgets_minutes]) and a reproduction is never allowed more than it"
        )
        scale = 1.0
    elif wanted != budget_now and not record.demo:
        notes.append(
            f"budget: the {record.tier} budget is now {budget_now} s; the reproduction is allowed the "
            f"recorded {wanted} s, recorded as a scaled (demo) budget"
        )

    executor_kind = record.executor or ("docker" if env.images else "local")
    display = getattr(config, "display_size", None) if executor_kind == "docker" else None
    if env.display is not None and executor_kind == "docker":
        size = f"{env.display.width}x{env.display.height}x{env.display.depth}"
        if display != size:
            problems.append(
                f"display: the attempt had a {size} display; the configured size is now {display}"
            )
    container = None
    executor = None
    if executor_kind == "docker":
        limits = env.limits
        missing = [n for n in ("cpus", "memory_bytes", "pids", "disk_bytes") if getattr(limits, n) is None]
        if missing:
            problems.append(f"limits: the record has no {', '.join(missing)} for its Docker container")
        elif problem := _network_problem(limits.network):
            problems.append(problem)
        else:
            containment = _containment(limits, notes)
            container = environment.ContainerLimits(
                cpus=containment.cpus,
                memory_bytes=parse_size(containment.memory),
                pids=containment.pids_limit,
                disk_bytes=containment.out_bytes + containment.work_bytes,
                network=limits.network,
                package_indexes=dict(limits.package_indexes),
            )
            if not problems:
                executor = (executor_factory or _docker_executor)(containment)
    elif not problems:
        executor = (executor_factory or _local_executor)(None)
    if problems:
        raise ReproductionRefused(
            f"{record.attempt_id} cannot be reproduced exactly:\n- " + "\n- ".join(problems)
        )
    assert repo is not None
    spec = AttemptSpec(
        cycle_id=repro_cycle,
        purpose=record.purpose,
        agent_id=record.agent_id,
        project_id=record.project_id,
        repo_url=repo.url,
        commit=record.commit,
        tier=record.tier,
        attempt_no=record.attempt_no,
        demo=demo,
        budget_scale=scale,
    )
    pin = environment.Pin(
        cycle_id=repro_cycle,
        harness_edition=env.harness_edition,
        scaffold_sha256=env.scaffold_sha256,
        instructions=env.instructions,
        executor=executor_kind,
        images={image.role: image for image in env.images},
        container=container,
        budgets_seconds={tier: config.budget_seconds(tier) for tier in sorted(config.budgets_minutes)},
        budget_scale=scale,
        demo=demo,
        display=display,
    )
    if pin.budget_for(record.tier) != wanted:  # pragma: no cover (rounding of a scaled budget)
        raise ReproductionRefused(f"budget: {wanted} s cannot be expressed as a scaled budget here")
    return Plan(original, repo, spec, pin, executor, notes)


def _docker_executor(containment):
    if not docker_available():
        raise ReproductionRefused("executor: the attempt ran in Docker and no Docker engine answers here")
    return DockerExecutor(network=containment.network, containment=containment)


def _local_executor(_containment):
    return LocalExecutor()


# --- running it ----------------------------------------------------------------------------------


def claim_cycle(base: Path | None = None, now: datetime | None = None) -> str:
    """A new reproduction cycle id, ``repro-<YYYYMMDD>-<n>``, its folder made (claimed atomically)."""
    folder = reproductions_dir(base)
    folder.mkdir(parents=True, exist_ok=True)
    day = (now or datetime.now(UTC)).strftime("%Y%m%d")
    n = 1
    while True:
        cycle = f"{REPRO_PREFIX}-{day}-{n}"
        try:
            (folder / cycle).mkdir()
            return cycle
        except FileExistsError:
            n += 1


@dataclass(frozen=True)
class Reproduction:
    original: Original
    record: RunRecord
    record_path: Path
    plan: Plan


def reproduce(
    attempt_id: str,
    base: Path | None = None,
    store=None,
    executor_factory: Callable[[Any], Any] | None = None,
    on_plan: Callable[[Plan], None] | None = None,
) -> Reproduction:
    """Find the original, check its inputs, run it again under the recorded environment into a new
    reproduction cycle, and return both records. Nothing is written to the warehouse."""
    original = find_original(attempt_id)
    folder = reproductions_dir(base)
    repro_cycle = claim_cycle(base)
    try:
        plan = plan_reproduction(original, repro_cycle, base, executor_factory)
    except ReproductionRefused:
        _remove_empty(folder / repro_cycle)
        raise
    if on_plan:
        on_plan(plan)
    # The reproduction cycle is pinned to the recorded environment before its attempt starts:
    # run_attempt checks the environment now against this pin and runs in its images by digest.
    write_atomic(environment.pin_path(repro_cycle, folder), plan.pin.to_json())
    try:
        path = run_attempt(plan.spec, plan.executor, store, base_dir=folder)
    except environment.EnvironmentError_ as err:
        raise ReproductionRefused(f"environment: {err}") from None
    except KeyUnavailable as err:
        raise ReproductionRefused(f"agent key: {err}") from None
    record = load_record_file(path)
    if record.reproduces != original.record.attempt_id:
        doc = json.loads(record.to_json())
        doc["reproduces"] = original.record.attempt_id
        record = parse_record(doc, source=str(path))
        write_atomic(path, record.to_json() + "\n")
    return Reproduction(original, record, path, plan)


def _remove_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()


# --- comparing -----------------------------------------------------------------------------------

SCORE_COLUMNS = (
    "is_valid", "invalid_reason", "outcome", "install_points", "run_points", "recovery_points",
    "depth_points", "score", "score_numerator", "score_denominator",
)  # fmt: skip


def score_records(records: list[RunRecord], workdir: Path | None = None) -> dict[str, dict[str, Any]]:
    """Each record's points, score and outcome as the rubric (dbt, ``+attempt_scores``) computes them,
    over a scratch DuckDB holding only these records: never the warehouse. A reproduction's record is
    held without its ``reproduces`` mark (an ordinary attempt of its own cycle, scored by the same
    rules; staging may leave reproductions out)."""
    # deferred: dbt_build loads pandas (the expectations engine) at import time; only scoring needs it
    from argusic.warehouse.dbt_build import _dbt_args, _env, _first_lines, _invoke_dbt

    with tempfile.TemporaryDirectory(prefix="argusic-repro-score-", dir=workdir) as tmp:
        db = Path(tmp) / "scratch.duckdb"
        with duckdb.connect(str(db)) as con:
            migrate_raw(con)
            for record in records:
                plain = record.model_copy(update={"reproduces": None})
                con.execute(
                    f"INSERT INTO raw.run_records ({', '.join(COLUMNS)}) VALUES "
                    f"({', '.join('?' for _ in COLUMNS)})",
                    list(_row(plain)),
                )
        project = dbt_project_dir()
        args = [*_dbt_args(project, "build"), "--select", "+attempt_scores", "--threads", "1"]
        args += ["--exclude-resource-type", "unit_test", "--indirect-selection", "cautious", "--quiet"]
        # dbt's target and logs go to the scratch folder: the project's own manifest stays the build's.
        with (
            _env("DBT_TARGET_PATH", str(Path(tmp) / "target")),
            _env("DBT_LOG_PATH", str(Path(tmp) / "logs")),
        ):
            res = _invoke_dbt(args, db)
        if not res.success:
            failed = [
                f"{r.node.unique_id}: {_first_lines(r.message or '')}"
                for r in getattr(res.result, "results", None) or []
                if str(getattr(r.status, "value", r.status)) in {"error", "fail"}
            ]
            raise RuntimeError(
                "the rubric could not score the two records: " + ("; ".join(failed) or str(res.exception))
            )
        with duckdb.connect(str(db), read_only=True) as con:
            cursor = con.execute(
                f"SELECT attempt_id, {', '.join(SCORE_COLUMNS)} FROM marts.attempt_scores "
                f"WHERE attempt_id IN ({', '.join('?' for _ in records)})",
                [r.attempt_id for r in records],
            )
            return {row[0]: dict(zip(SCORE_COLUMNS, row[1:], strict=True)) for row in cursor.fetchall()}


# Log normalisations: only what differs between any two runs of the same attempt, whatever happened.
NORMALISATIONS = (
    "attempt ids: the original's and the reproduction's → <attempt>",
    "cycle ids: the original's and the reproduction's → <cycle>",
    "container names argusic-<installation>-<attempt> → <container>",
    "ISO-8601 date-times (2026-11-30T14:50:09.360Z) → <time>",
    "common-log dates (30/Nov/2026 14:50:09) → <time>",
    "times of day (14:50:09, 14:50:09.360) → <time>",
)
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
_CLF = re.compile(r"\d{2}/[A-Z][a-z]{2}/\d{4}[ :]\d{2}:\d{2}:\d{2}(?: [+-]\d{4})?")
_TIME = re.compile(r"(?<![\d:.])\d{2}:\d{2}:\d{2}(?:\.\d+)?(?![\d:])")
_CONTAINER = re.compile(r"argusic-[a-z0-9][a-z0-9-]{0,23}-<attempt>")


def log_normaliser(ids: list[str], cycles: list[str]) -> Callable[[str], str]:
    """A line normaliser for these attempts' logs (see NORMALISATIONS)."""
    ids = sorted(set(ids), key=len, reverse=True)
    cycles = sorted(set(cycles), key=len, reverse=True)

    def normalise(line: str) -> str:
        # times first: a date such as 2026-12-01 must not be taken for the cycle 2026-12
        line = _ISO.sub("<time>", line)
        line = _CLF.sub("<time>", line)
        line = _TIME.sub("<time>", line)
        for value in ids:
            line = line.replace(value, "<attempt>")
        line = _CONTAINER.sub("<container>", line)
        for value in cycles:  # a whole id part only: 2026-12 is not the start of 2026-12-demo
            line = re.sub(rf"(?<![A-Za-z0-9_-]){re.escape(value)}(?![A-Za-z0-9_-])", "<cycle>", line)
        return line

    return normalise


@dataclass(frozen=True)
class Divergence:
    """Where two logs first differ after normalisation (1-based line numbers; None past the end)."""

    equal: bool
    lines: tuple[int, int]  # lines compared in each
    original_line: int | None = None
    reproduction_line: int | None = None
    original_text: str | None = None  # as logged (before normalisation), cut short
    reproduction_text: str | None = None
    changed: int = 0  # lines the normalisations changed, both logs together
    differing: int = 0  # lines that differ after normalisation (a missing line counts)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


LINE_SHOWN = 300


def first_divergence(
    original: list[str], reproduction: list[str], normalise: Callable[[str], str]
) -> Divergence:
    """The first line where the two logs differ after `normalise` (a log that ends first diverges at
    the other's next line)."""
    a = [normalise(x) for x in original]
    b = [normalise(x) for x in reproduction]
    changed = sum(x != y for x, y in zip(original, a, strict=True)) + sum(
        x != y for x, y in zip(reproduction, b, strict=True)
    )
    sizes = (len(a), len(b))
    differing = sum(
        1 for i in range(max(sizes)) if (a[i] if i < len(a) else None) != (b[i] if i < len(b) else None)
    )
    for i in range(max(sizes)):
        left = a[i] if i < len(a) else None
        right = b[i] if i < len(b) else None
        if left != right:
            return Divergence(
                False,
                sizes,
                i + 1 if left is not None else None,
                i + 1 if right is not None else None,
                _cut(original[i]) if left is not None else None,
                _cut(reproduction[i]) if right is not None else None,
                changed,
                differing,
            )
    return Divergence(True, sizes, changed=changed)


def _cut(line: str) -> str:
    return printable(line, LINE_SHOWN)


LOG_MAX_BYTES = 64 * 1024**2  # a served log bigger than this is compared on its first 64 MiB


def _served_lines(record: RunRecord, dest: Path) -> list[str]:
    path = fetch_served(AttemptFacts(record, None, "reproduce"), "log", dest)
    with open(path, "rb") as handle:
        data = handle.read(LOG_MAX_BYTES)
    return data.decode("utf-8", errors="replace").splitlines()


def compare_logs(original: RunRecord, reproduction: RunRecord) -> Divergence | str:
    """The first divergence of the two served logs, or why they cannot be compared."""
    with tempfile.TemporaryDirectory(prefix="argusic-repro-logs-") as tmp:
        try:
            a = _served_lines(original, Path(tmp) / "original.txt")
            b = _served_lines(reproduction, Path(tmp) / "reproduction.txt")
        except ReplayRefused as err:
            return f"not compared: {err}"
    normalise = log_normaliser(
        [original.attempt_id, reproduction.attempt_id], [original.cycle_id, reproduction.cycle_id]
    )
    return first_divergence(a, b, normalise)


@dataclass(frozen=True)
class Row:
    field: str
    original: Any
    reproduction: Any

    @property
    def same(self) -> bool:
        return self.original == self.reproduction


def _env_rows(a: RunRecord, b: RunRecord) -> list[Row]:
    ea, eb = a.environment, b.environment
    rows = []
    for name in ("harness_edition", "scaffold_sha256", "instructions", "images", "limits", "display"):
        va = None if ea is None else getattr(ea, name)
        vb = None if eb is None else getattr(eb, name)
        rows.append(Row(f"environment.{name}", _plain(va), _plain(vb)))
    return rows


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


@dataclass(frozen=True)
class Comparison:
    original: RunRecord
    reproduction: RunRecord
    rows: list[Row]
    log: Divergence | str
    normalisations: tuple[str, ...] = NORMALISATIONS

    @property
    def same_outcome(self) -> bool:
        return next(r for r in self.rows if r.field == "outcome").same

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "argusic.reproduction/1",
            "original": self.original.attempt_id,
            "reproduction": self.reproduction.attempt_id,
            "same_outcome": self.same_outcome,
            "fields": [
                {
                    "field": r.field,
                    "original": _jsonable(r.original),
                    "reproduction": _jsonable(r.reproduction),
                    "same": r.same,
                }
                for r in self.rows
            ],  # fmt: skip
            "log": self.log if isinstance(self.log, str) else self.log.to_dict(),
            "log_normalisations": list(self.normalisations),
        }


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def compare(
    original: RunRecord, reproduction: RunRecord, scores: dict[str, dict[str, Any]] | None = None
) -> Comparison:
    """Side by side: the rubric's outcome, points and score; the report; how it ended; the
    environment; where the served logs diverge."""
    scores = scores if scores is not None else score_records([original, reproduction])
    sa, sb = scores.get(original.attempt_id, {}), scores.get(reproduction.attempt_id, {})
    rows = [Row(name, sa.get(name), sb.get(name)) for name in SCORE_COLUMNS if name not in
            ("score_numerator", "score_denominator")]  # fmt: skip
    for name in ("install_ok", "ran_ok", "errors_encountered", "errors_fixed", "test_depth", "verified_how",
                 "final_state"):  # fmt: skip
        ra = None if original.report is None else getattr(original.report, name)
        rb = None if reproduction.report is None else getattr(reproduction.report, name)
        rows.append(Row(f"report.{name}", ra, rb))
    rows.append(Row("end_reason", original.end_reason, reproduction.end_reason))
    rows.append(Row("recorded invalid_reason", original.invalid_reason, reproduction.invalid_reason))
    rows.append(Row("duration_seconds", _duration(original), _duration(reproduction)))
    rows.append(Row("commit", original.commit, reproduction.commit))
    rows.append(Row("budget_seconds", original.budget_seconds, reproduction.budget_seconds))
    rows.append(Row("effective_budget_seconds", original.effective_budget_seconds,
                    reproduction.effective_budget_seconds))  # fmt: skip
    rows.append(Row("executor", original.executor, reproduction.executor))
    rows += _env_rows(original, reproduction)
    return Comparison(original, reproduction, rows, compare_logs(original, reproduction))


def _duration(record: RunRecord) -> float:
    return round((record.ended_at - record.started_at).total_seconds(), 3)
