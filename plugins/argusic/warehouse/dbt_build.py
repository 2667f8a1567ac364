"""The dbt build of the warehouse and its gate: dbt run and tests, then the expectations; a failure
raises PublicationBlocked and nothing is published (publication/ composes the board from what passed)."""

from __future__ import annotations

import atexit
import hashlib
import importlib.metadata
import json
import logging
import multiprocessing.util
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from argusic.core.settings import dbt_project_dir, warehouse_path
from argusic.warehouse.analyst import AnalystCopy, Descriptions, descriptions_of, publish_analyst_copy
from argusic.warehouse.db import connect
from argusic.warehouse.expectations import suites
from argusic.warehouse.expectations.results import ValidationReport
from argusic.warehouse.expectations.suites import OPTIONAL_TABLES, REQUIRED_TABLES
from argusic.warehouse.expectations.validate import load_gx, validate_warehouse
from argusic.warehouse.lock import WarehouseBusy, writer_lock
from argusic.warehouse.schema import migrate_raw

_FAILED = {"error", "fail", "runtime error"}


class PublicationBlocked(RuntimeError):
    """dbt or an expectation failed, or evidence failed the audit: nothing is published."""


@dataclass(frozen=True)
class NodeResult:
    unique_id: str
    status: str
    message: str
    seconds: float = 0.0


@dataclass(frozen=True)
class BuildResult:
    db_path: Path
    nodes: list[NodeResult]
    validation: ValidationReport
    dbt_seconds: float
    validation_seconds: float
    note: str = ""  # e.g. which data tests a session did not re-run, and why
    analyst: AnalystCopy | None = None  # the analyst copy published after the build (None: not asked)
    changed_sources: tuple[str, ...] = ()  # a partial build: the source tables it rebuilt from (else ())
    # the cycles whose rows the incremental models rebuilt (macros/changed_cycles.sql); None: those
    # models, when the build ran them, were rebuilt whole (--full-refresh)
    incremental_cycles: tuple[str, ...] | None = None

    @property
    def analyst_seconds(self) -> float:
        return self.analyst.seconds if self.analyst else 0.0

    def summary(self) -> str:
        note = f" ({self.note})" if self.note else ""
        analyst = f"\n{self.analyst.summary()}" if self.analyst else ""
        return (
            f"dbt build: {len(self.nodes)} nodes ok in {self.dbt_seconds:.1f} s{note}\n"
            f"{self.validation.summary()}{analyst}"
        )

    def slowest(self, count: int = 8) -> list[tuple[str, float]]:
        """The ``count`` dbt nodes that took longest: (unique_id, seconds)."""
        return [(n.unique_id, n.seconds) for n in sorted(self.nodes, key=lambda n: -n.seconds)[:count]]


@contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _release_dbt_duckdb() -> None:
    """Close the DuckDB database dbt-duckdb keeps open in this process after an invocation.

    dbt-duckdb caches one environment (and its DuckDB instance) per process; left open, the
    read-only connection of the expectations fails ("different configuration than existing
    connections") and the file stays held. This uses dbt-duckdb internals (1.11): if they move,
    nothing is closed and the read-only open will say so.
    """
    try:
        # deferred: dbt takes seconds to import; only a process that ran dbt has anything to release
        from dbt.adapters.duckdb.connections import DuckDBConnectionManager as manager
    except ImportError:  # pragma: no cover - another adapter
        return
    with manager._LOCK:
        env = manager._ENV
        manager._ENV = None
        if env is not None:
            env.close()


def _first_lines(message: str, count: int = 2) -> str:
    return " | ".join([line.strip() for line in message.splitlines() if line.strip()][:count])


def dbt_threads() -> int:
    """dbt threads for the build: ``ARGUSIC_DBT_THREADS``, else two per CPU (at least 2).

    Every thread shares one DuckDB database, which already runs each query on every core; more dbt
    threads than cores only overlap dbt's own Python work (compiling, bookkeeping) with queries.
    """
    configured = os.environ.get("ARGUSIC_DBT_THREADS", "").strip()
    if configured:
        return max(1, int(configured))
    return max(2, 2 * (os.cpu_count() or 1))


def _dbt_args(project_dir: Path, command: str, *, lean: bool = False) -> list[str]:
    """dbt's global flags and ``command`` on the project (its own profiles.yml).

    The relation cache is filled up front (one listing per schema): filled lazily, as nodes need it,
    two views of one schema built side by side race in it ("Cache inconsistency detected: in rename":
    5 of 16 repeated in-process builds failed, 0 of 16 with the cache filled first). A one-off build
    keeps dbt's usual artifacts (target/run_results.json, manifest.json) and an info-level dbt.log;
    ``lean`` (the build worker's repeated builds) writes no artifacts and has no dbt logger at all:
    dbt formats every event of every node into a line for each of its loggers (scrubbing it for
    secrets by scanning the environment) before the logger's level drops it, ~15% of dbt's CPU on
    the demo warehouse. The worker reports every node's status and time in its answer, and dbt's
    warnings and errors reach its own log (``_dbt_warnings``).
    """
    flags = ["--no-send-anonymous-usage-stats", "--populate-cache"]
    if lean:
        flags += ["--log-level", "none", "--log-level-file", "none", "--no-write-json"]
    else:
        flags += ["--log-level-file", "info"]
    return [*flags, command, "--project-dir", str(project_dir), "--profiles-dir", str(project_dir)]


_dbt_log = logging.getLogger("argusic.warehouse.dbt")


def _dbt_warnings(msg: Any) -> None:
    """dbt's warnings and errors, into this process's log (a lean build has no dbt logger)."""
    level = getattr(getattr(msg, "info", None), "level", "")
    if level in ("warn", "error"):
        _dbt_log.log(logging.WARNING if level == "warn" else logging.ERROR, "dbt: %s", msg.info.msg)


def _invoke_dbt(args: list[str], db_path: Path, manifest: Any = None) -> Any:
    """One dbt invocation in this process on the warehouse ``db_path``; the file is released after."""
    from dbt.cli.main import dbtRunner  # deferred: dbt takes seconds to import; only a build needs it

    callbacks = [_dbt_warnings] if "none" in args else []  # lean: dbt's own loggers are off
    with _env("ARGUSIC_WAREHOUSE", str(db_path)):
        try:
            return dbtRunner(manifest=manifest, callbacks=callbacks).invoke(args)
        finally:
            _release_dbt_duckdb()


def _run_dbt(
    project_dir: Path,
    db_path: Path,
    quiet: bool,
    include_unit_tests: bool = False,
    manifest: Any = None,
    exclude: tuple[str, ...] = (),
    select: tuple[str, ...] = (),
    full_refresh: bool = True,
) -> list[NodeResult]:
    """``dbt build`` in-process; raises PublicationBlocked naming the failed nodes.

    Unit tests are excluded unless ``include_unit_tests``: they check the SQL of the rules on
    fixed inputs, not the data, and run in development and CI (``make test``,
    tests/warehouse/test_dbt_rules.py), as dbt recommends. Every data test still runs. dbt keeps its target
    folder (the project's ``target/`` or ``DBT_TARGET_PATH``) between builds, so an unchanged
    project is parsed partially (``partial_parse.msgpack``). ``manifest``: a manifest parsed for this
    project and warehouse (``BuildSession``), so that dbt does not parse at all. ``select``: dbt
    selectors of a partial build (``Changes.selectors``); none: the whole project. ``full_refresh``:
    incremental models rebuilt whole (else only the cycles in ``argusic_build.changed_cycles``).
    """
    args = [*_dbt_args(project_dir, "build", lean=manifest is not None), "--threads", str(dbt_threads())]
    if not include_unit_tests:
        args += ["--exclude-resource-type", "unit_test"]
    if select:
        args += ["--select", *select]
    if exclude:
        args += ["--exclude", *exclude]
    if full_refresh:
        args.append("--full-refresh")
    if quiet:
        args.insert(0, "--quiet")
    res = _invoke_dbt(args, db_path, manifest)

    nodes: list[NodeResult] = []
    for r in getattr(res.result, "results", None) or []:
        status = str(getattr(r.status, "value", r.status))
        seconds = float(getattr(r, "execution_time", 0.0) or 0.0)
        nodes.append(NodeResult(r.node.unique_id, status, (r.message or "").strip(), seconds))
    failed = [n for n in nodes if n.status in _FAILED]
    if not res.success and res.exception is not None and "Could not set lock" in str(res.exception):
        raise WarehouseBusy(  # another process opened the file between our wait and dbt's open
            f"dbt could not open the warehouse {db_path}: {_first_lines(str(res.exception))}"
        )
    if failed:
        details = "; ".join(f"{n.unique_id} ({n.status}): {_first_lines(n.message)}" for n in failed)
        raise PublicationBlocked(f"dbt build failed: {details}")
    if not res.success:
        reason = res.exception or "dbt reported failure without a failed node"
        raise PublicationBlocked(
            f"dbt build failed: {type(reason).__name__ if res.exception else ''} {reason}".strip()
        )
    return nodes


# ---------------------------------------------------------------------------------------------------
# What changed since the last build: only what depends on it is rebuilt
# ---------------------------------------------------------------------------------------------------
#
# A successful build records, in the warehouse itself (``argusic_build.built_from``, never copied for
# analysts), what it was built from: a fingerprint of the project (its files, dbt's and DuckDB's
# versions, the expectation suites) and one of each source table (every table of the schemas
# ``raw`` and ``decisions``). The record is deleted when a build starts and written only when dbt
# and every expectation passed, so it always describes marts that are complete and checked. The next
# build compares: when the project is the same and only some source tables changed (a review, an
# approval, a judging review, a verdict request), dbt builds only the tables and data tests
# downstream of those sources (``source:<table>+``), and the expectations run only on the marts
# downstream of them. Views are not recreated (their SQL is the project's, unchanged; they read their
# inputs live), seeds are not reloaded, and the attempt-level tables stay as they were. When nothing
# changed at all, a build asked for anyway rebuilds every table and runs every data test and every
# expectation (a full check, as before), but it too keeps the views and seeds of the unchanged project
# (``Changes.recheck``: 23 of the demo's 159 nodes, dbt's per-node work on a small warehouse). Anything
# else builds the whole project: no record, a changed project, a source table added or removed, or
# unit tests asked for.
#
# Within a partial build, the heavy attempt-level models whose rows for one cycle depend only on that
# cycle's inputs are incremental (macros/changed_cycles.sql, CYCLE_SCOPED_SOURCES below): after a new
# cycle's ingest or a dispute ruling they delete and rebuild the changed cycles' rows only. Every
# other build (full, recheck, or a partial one where an input not fingerprinted by cycle feeds them)
# rebuilds them whole with --full-refresh, exactly their plain select. Their data tests still scan the
# whole table.

STATE_SCHEMA = "argusic_build"
STATE_TABLE = f"{STATE_SCHEMA}.built_from"
SOURCE_SCHEMAS = ("raw", "decisions")
PROJECT_KEY = "project"
# Write-once source tables: rows are only inserted, under a primary key, and a column added later is
# filled by migrate_raw (which changes the table's column list, part of its fingerprint). Their key
# stands for the row: hashing whole rows of raw.run_records (record_json, KBs each) costs ~3 s at a
# million attempts, the key ~0.05 s. Every other source table (replaced by key on re-ingest: hints,
# verdicts, repair items; decisions) is fingerprinted by its whole rows.
WRITE_ONCE_KEYS = {"raw.run_records": "attempt_id", "raw.pool_entries": "cycle_id, project_id"}

# Incremental models keyed by cycle (macros/changed_cycles.sql): the heavy attempt-level models whose
# rows for one cycle depend only on that cycle's inputs (int_attempt_scores, int_attempt_costs,
# int_judging_attempt_facts, pair_sets, cycle_environments; not stability nor project_verdicts, which
# group one agent's or one commit's attempts across cycles). Their cycle-scoped inputs are
# fingerprinted per cycle as well (``cycle:<cycle_id>`` in the build record): the run records (key
# only, as above; a rerun also counts in its original's cycle, whose correction it may complete), and
# the disputes and their rulings (whole rows) in the cycle of the disputed attempt (a dispute of an
# attempt not loaded changes no row: it counts when its attempt's cycle is ingested). When the only
# changed sources that feed an incremental model are these, the build runs the incremental models on
# the changed cycles alone; otherwise (the project changed, no record, another input such as
# raw.attempt_hints or raw.repair_grades changed, a recheck) it rebuilds them whole (--full-refresh).
CYCLE_SCOPED_SOURCES = ("raw.run_records", "decisions.disputes", "decisions.dispute_rulings")
CYCLE_PREFIX = "cycle:"
CHANGED_CYCLES_TABLE = f"{STATE_SCHEMA}.changed_cycles"
_CYCLE_FINGERPRINTS = """
WITH records AS (SELECT attempt_id, cycle_id, rerun_of FROM raw.run_records),
keyed AS (
    SELECT cycle_id, 'r' AS part, hash(attempt_id) AS h FROM records
    UNION ALL
    SELECT original.cycle_id, 'r', hash(rerun.attempt_id)
    FROM records AS rerun JOIN records AS original ON original.attempt_id = rerun.rerun_of
    WHERE original.cycle_id <> rerun.cycle_id
    UNION ALL
    SELECT records.cycle_id, 'd', hash(d) FROM decisions.disputes AS d JOIN records USING (attempt_id)
    UNION ALL
    SELECT records.cycle_id, 'u', hash(u)
    FROM decisions.dispute_rulings AS u
    JOIN decisions.disputes AS d ON d.dispute_id = u.dispute_id
    JOIN records ON records.attempt_id = d.attempt_id
)
SELECT cycle_id, string_agg(part || ' ' || n || ' ' || h, ', ' ORDER BY part)
FROM (SELECT cycle_id, part, count(*) AS n, sum(h) AS h FROM keyed GROUP BY ALL)
GROUP BY cycle_id
"""


@dataclass(frozen=True)
class Changes:
    """What a build rebuilds: everything (``full_because`` says why) or what depends on ``changed``."""

    changed: tuple[str, ...] = ()  # source tables (schema.table) whose rows changed
    full_because: str = ""
    # nothing changed since a recorded build of this very project: every table rebuilt and every data
    # test run, the views and seeds kept (the project's own, exactly as the recorded build made them)
    recheck: bool = False
    # the cycles whose cycle-scoped inputs changed (CYCLE_SCOPED_SOURCES), of a partial build
    cycles: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        return not self.full_because

    def selectors(self, materializations: Iterable[str] = ("table", "incremental")) -> tuple[str, ...]:
        """dbt selectors of a partial build: the models downstream of the changed sources that store
        data (not views), and every data test downstream of them (those on views included). A
        recheck: every model that stores data and every data test."""
        if self.recheck:
            tables = tuple(f"resource_type:model,config.materialized:{m}" for m in materializations)
            return (*tables, "resource_type:test")
        if not self.partial:
            return ()
        out: list[str] = []
        for source in self.changed:
            out += [f"source:{source}+,resource_type:model,config.materialized:{m}" for m in materializations]
            out.append(f"source:{source}+,resource_type:test")
        return tuple(out)

    def note(self, rebuilt: int, validated: Iterable[str] | None) -> str:
        if self.recheck:
            return (
                f"nothing changed since the last build: {rebuilt} tables and data tests rebuilt and run, "
                "every expectation; views and seeds of the unchanged project kept"
            )
        if not self.partial:
            return ""
        marts = "no mart" if validated is not None and not list(validated) else "its marts"
        checked = f"expectations on {marts}" if validated is not None else "every expectation"
        return (
            f"only {', '.join(self.changed)} changed since the last build: {rebuilt} nodes downstream "
            f"of it rebuilt and tested, {checked}; the rest is as the last build left and checked it"
        )


def project_state(project_dir: Path) -> str:
    """The project's part of a build's inputs: its files, dbt's and DuckDB's versions, the suites."""
    digest = hashlib.sha256(project_fingerprint(project_dir).encode())
    for dist in ("dbt-core", "dbt-duckdb"):
        try:
            digest.update(f"{dist} {importlib.metadata.version(dist)}".encode())
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover - always installed
            digest.update(dist.encode())
    digest.update(f"duckdb {duckdb.__version__}".encode())
    for source in sorted(Path(suites.__file__).parent.glob("*.py")):  # the suites, the checks, GX's use
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def input_state(con: duckdb.DuckDBPyConnection, project: str) -> dict[str, str]:
    """Fingerprints of a build's inputs: ``project`` and each source table (columns, rows)."""
    listed = con.execute(
        "SELECT table_schema, table_name, string_agg(column_name || ' ' || data_type, ', ' "
        "ORDER BY ordinal_position) FROM information_schema.columns "
        f"WHERE table_schema IN {SOURCE_SCHEMAS} GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    state = {PROJECT_KEY: project}
    for schema, table, columns in listed:
        name = f"{schema}.{table}"
        hashed = f"hash({WRITE_ONCE_KEYS[name]})" if name in WRITE_ONCE_KEYS else "hash(t)"
        count, total = con.execute(
            f'SELECT count(*), coalesce(sum({hashed}), 0) FROM "{schema}"."{table}" AS t'
        ).fetchone()
        state[name] = hashlib.sha256(f"{columns}\n{count}\n{total}".encode()).hexdigest()
    for cycle, parts in con.execute(_CYCLE_FINGERPRINTS).fetchall():
        state[f"{CYCLE_PREFIX}{cycle}"] = hashlib.sha256(parts.encode()).hexdigest()
    return state


def built_from(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """What the marts in the warehouse were last built from and checked on ({} when unknown)."""
    found = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
        STATE_TABLE.split("."),
    ).fetchone()[0]
    return dict(con.execute(f"SELECT input, fingerprint FROM {STATE_TABLE}").fetchall()) if found else {}


def _forget_built_from(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {STATE_SCHEMA}")
    con.execute(f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} (input VARCHAR PRIMARY KEY, fingerprint VARCHAR)")
    con.execute(f"DELETE FROM {STATE_TABLE}")


def _record_built_from(path: Path, state: Mapping[str, str]) -> None:
    with connect(path) as con:
        _forget_built_from(con)
        con.executemany(f"INSERT INTO {STATE_TABLE} VALUES (?, ?)", list(state.items()))


def what_changed(previous: Mapping[str, str], current: Mapping[str, str], *, unit_tests: bool) -> Changes:
    """A partial build when only source tables changed since a recorded build; else a full one."""
    if unit_tests:
        return Changes(full_because="unit tests asked for")
    if not previous:
        return Changes(full_because="no record of a complete, checked build of this warehouse")
    if previous.get(PROJECT_KEY) != current[PROJECT_KEY]:
        return Changes(full_because="the project changed")
    tables = {k for k in current if not k.startswith(CYCLE_PREFIX)}
    if {k for k in previous if not k.startswith(CYCLE_PREFIX)} != tables:
        return Changes(full_because="a source table was added or removed")
    changed = tuple(sorted(k for k in tables if k != PROJECT_KEY and previous[k] != current[k]))
    cycles = tuple(
        sorted(
            k.removeprefix(CYCLE_PREFIX)
            for k in {*previous, *current}
            if k.startswith(CYCLE_PREFIX) and previous.get(k) != current.get(k)
        )
    )
    if not changed:
        because = (
            "nothing changed since the last build: every table rebuilt and checked, views and seeds kept"
        )
        return Changes(full_because=because, recheck=True)
    return Changes(changed, cycles=cycles)


def incremental_cycles(
    changes: Changes, graph: tuple[Mapping[str, Any], Mapping[str, Any]] | None
) -> tuple[str, ...] | None:
    """The cycles the incremental models rebuild in this build, or None: rebuild them whole.

    Only a partial build whose every changed source that feeds an incremental model is cycle-scoped
    (CYCLE_SCOPED_SOURCES) builds them incrementally; anything else, or no graph to tell, whole."""
    if not changes.partial or graph is None:
        return None
    child_map, incremental = graph[0], _incremental_models(graph)
    for source in changes.changed:
        if source not in CYCLE_SCOPED_SOURCES and downstream(child_map, [source]) & incremental:
            return None
    return changes.cycles


def _incremental_models(graph: tuple[Mapping[str, Any], Mapping[str, Any]] | None) -> set[str]:
    """The unique ids of the project's incremental models."""
    if graph is None:
        return set()
    return {
        uid
        for uid, node in graph[1].items()
        if uid.startswith("model.") and str(_field(_field(node, "config"), "materialized")) == "incremental"
    }


def _write_changed_cycles(con: duckdb.DuckDBPyConnection, cycles: Iterable[str] | None) -> None:
    """The cycles an incremental build rebuilds, where macros/changed_cycles.sql reads them; None:
    no list (dropped), so that the models are rebuilt whole by whoever runs dbt next."""
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {STATE_SCHEMA}")
    con.execute(f"DROP TABLE IF EXISTS {CHANGED_CYCLES_TABLE}")
    if cycles is None:
        return
    con.execute(f"CREATE TABLE {CHANGED_CYCLES_TABLE} (cycle_id VARCHAR)")
    rows = [[c] for c in cycles]
    if rows:
        con.executemany(f"INSERT INTO {CHANGED_CYCLES_TABLE} VALUES (?)", rows)


def _graph(manifest: Any, project: Path) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    """(child_map, nodes) of the manifest a session parsed, else of the manifest.json this build
    wrote (None when there is none)."""
    if manifest is not None:
        if getattr(manifest, "child_map", None) is None:
            manifest.build_parent_and_child_maps()
        return manifest.child_map, manifest.nodes
    written = Path(os.environ.get("DBT_TARGET_PATH") or project / "target") / "manifest.json"
    try:
        parsed = json.loads(written.read_text())
        return parsed["child_map"], parsed["nodes"]
    except (OSError, ValueError, KeyError):
        return None


def _field(node: Any, name: str) -> Any:
    return node.get(name) if isinstance(node, Mapping) else getattr(node, name, None)


def downstream(child_map: Mapping[str, Any], sources: Iterable[str]) -> set[str]:
    """Every node (models, tests) downstream of the source tables (``schema.table``)."""
    wanted = set(sources)
    seen: set[str] = set()
    todo = [u for u in child_map if u.startswith("source.") and ".".join(u.split(".")[-2:]) in wanted]
    while todo:
        for child in child_map.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def marts_downstream(graph: tuple[Mapping[str, Any], Mapping[str, Any]], sources: Iterable[str]) -> set[str]:
    """The relations of schema ``marts`` (tables and views) downstream of the source tables."""
    child_map, nodes = graph
    return {
        str(_field(nodes[uid], "alias") or _field(nodes[uid], "name"))
        for uid in downstream(child_map, sources)
        if uid.startswith("model.") and uid in nodes and _field(nodes[uid], "schema") == "marts"
    }


def _stored_materializations(manifest: Any) -> tuple[str, ...]:
    """The materializations of the project's models that store data (a session's manifest)."""
    if manifest is None:
        return ("table", "incremental")
    kinds = {
        str(_field(_field(n, "config"), "materialized"))
        for n in manifest.nodes.values()
        if _field(n, "resource_type") == "model"
    }
    return tuple(sorted(kinds - {"view", "ephemeral"})) or ("table",)


def build_warehouse(
    db_path: Path | None = None,
    project_dir: Path | None = None,
    *,
    quiet: bool = False,
    include_unit_tests: bool = False,
    analyst_target: Path | None = None,
    analyst: bool = True,
) -> BuildResult:
    """dbt build of dbt_project/ into the warehouse, then every expectation on the marts, then (only
    when both passed) the analyst copy readers use (``argusic.warehouse.analyst``; at ``analyst_target``,
    default ARGUSIC_ANALYST_DIR or ``analyst/`` beside the warehouse; ``analyst=False``: none).

    ``include_unit_tests``: also run dbt's unit tests (excluded by default in a production build:
    they test the rules' SQL on fixed inputs, not the warehouse's data; tests/warehouse/test_dbt_rules.py
    runs all of them). Every data test and every expectation runs either way.

    Raises PublicationBlocked when a dbt node fails (naming it) or an expectation fails (naming the
    table and the expectation, with the rows that broke it). One process, one build: a long-lived
    process builds through ``BuildSession`` instead (dbt and GX imported once, no re-parse).
    """
    path = Path(db_path) if db_path else warehouse_path()
    project = Path(project_dir) if project_dir else dbt_project_dir()
    return _build(
        path,
        project,
        quiet=quiet,
        include_unit_tests=include_unit_tests,
        analyst=analyst,
        analyst_target=analyst_target,
    )


@dataclass(frozen=True)
class DbtPlan:
    """What a session hands to one build: the parsed manifest, and data tests not to re-run."""

    manifest: Any
    reused_tests: tuple[str, ...] = ()
    note: str = ""
    state: tuple[str, str] | None = None  # (project fingerprint, warehouse file) it was made for
    exclude: tuple[str, ...] = ()  # dbt selectors of exactly ``reused_tests`` (else their names)


def _build(
    path: Path,
    project: Path,
    *,
    quiet: bool,
    include_unit_tests: bool,
    plan_for: Callable[[Path], DbtPlan] | None = None,
    after_dbt: Callable[[DbtPlan], None] | None = None,
    analyst: bool = True,
    analyst_target: Path | None = None,
) -> BuildResult:
    copy = None
    with writer_lock(path):
        # dbt opens the file read-write: first wait (saying for whom) until no other process has it
        # open, e.g. an analyst's connection, rather than letting dbt fail on DuckDB's lock. Every
        # source dbt reads must exist: bring the raw layer and the decision tables up to date first,
        # as ingest does (a warehouse from before a table was added, or made with RAW_DDL alone).
        # Then what changed since the last build, and the record of it forgotten until this one passes.
        with connect(path) as con:
            migrate_raw(con)
            current = input_state(con, project_state(project))
            changes = what_changed(built_from(con), current, unit_tests=include_unit_tests)
            _forget_built_from(con)
        started = time.perf_counter()
        plan = plan_for(path) if plan_for else DbtPlan(None)
        graph = _graph(plan.manifest, project) if changes.partial and plan.manifest is not None else None
        # the manifest of this project (a session's, else the one the last build of it wrote) tells
        # whether the incremental models can rebuild only the changed cycles
        cycles = incremental_cycles(changes, graph or (_graph(None, project) if changes.partial else None))
        # The list exists only while this build's dbt runs an incremental build: dbt run by anyone
        # else (no list) rebuilds the incremental models whole (macros/changed_cycles.sql).
        with connect(path) as con:
            _write_changed_cycles(con, cycles)
        nodes: list[NodeResult] = []
        selection = changes.selectors(_stored_materializations(plan.manifest))
        try:
            if graph is None or downstream(graph[0], changes.changed):  # else nothing reads what changed
                nodes = _run_dbt(
                    project,
                    path,
                    quiet,
                    include_unit_tests=include_unit_tests,
                    manifest=plan.manifest,
                    exclude=plan.exclude or plan.reused_tests,
                    **({"select": selection} if selection else {}),  # a full build: dbt's default, all
                    full_refresh=cycles is None,
                )
        finally:
            with connect(path) as con:
                _write_changed_cycles(con, None)
        dbt_seconds = time.perf_counter() - started
        if after_dbt:
            after_dbt(plan)
        # A partial build checks the marts downstream of what changed; the others are as the last
        # build left them, checked then (the suites are part of the project's fingerprint).
        if changes.partial and graph is None:
            graph = _graph(None, project)  # the manifest.json this build's dbt wrote
        only = None
        if graph is not None:  # the marts with a suite (some marts have none: dbt's tests check them)
            only = sorted(marts_downstream(graph, changes.changed) & {*REQUIRED_TABLES, *OPTIONAL_TABLES})
        report = validate_warehouse(path, only=only)
        if report.success:
            _record_built_from(path, current)
        # Readers get the new copy only from a build whose every check passed; still under the lock,
        # so that it is exactly what was validated. A failed build leaves the previous copy.
        if report.success and analyst:
            copy = publish_analyst_copy(
                path,
                analyst_target,
                _descriptions(plan, project),
                inputs=current,
                lineage=_lineage(plan, project),
            )
    if not report.success:
        raise PublicationBlocked(
            "expectations failed, publication blocked:\n" + "\n".join(report.failure_messages())
        )
    # a partial build selects no seed test; a recheck may have left the seeds' tests out (plan.note)
    ran_incremental = cycles is not None and bool({n.unique_id for n in nodes} & _incremental_models(graph))
    notes = (
        changes.note(len(nodes), only),
        f"incremental models rebuilt for cycles {', '.join(cycles) or '(none)'} only"
        if ran_incremental
        else "",
        "" if changes.partial else plan.note,
    )
    note = "; ".join(n for n in notes if n)
    return BuildResult(path, nodes, report, dbt_seconds, report.seconds, note, copy, changes.changed, cycles)


def _lineage(plan: DbtPlan, project: Path) -> Callable[[tuple[str, ...]], tuple[set[str], set[str]] | None]:
    """For the analyst copy: the relations the project builds (models and seeds, ``schema.table``)
    and those downstream of some source tables, from the manifest a session parsed or the
    manifest.json this build wrote (None when there is neither)."""

    def lineage(changed: tuple[str, ...]) -> tuple[set[str], set[str]] | None:
        graph = _graph(plan.manifest, project)
        if graph is None:
            return None
        child_map, nodes = graph

        def relation(uid: str) -> str:
            node = nodes[uid]
            return f"{_field(node, 'schema')}.{_field(node, 'alias') or _field(node, 'name')}"

        known = {relation(uid) for uid in nodes if uid.startswith(("model.", "seed."))}
        dirty = {
            relation(uid)
            for uid in downstream(child_map, changed)
            if uid.startswith("model.") and uid in nodes
        }
        return known, dirty

    return lineage


def _descriptions(plan: DbtPlan, project: Path) -> Descriptions | None:
    """The models' and seeds' descriptions for the analyst copy's comments: from the manifest a build
    session parsed, else from the manifest.json this build wrote (None when there is none)."""
    if plan.manifest is not None:
        return descriptions_of(plan.manifest)
    written = Path(os.environ.get("DBT_TARGET_PATH") or project / "target") / "manifest.json"
    try:
        return descriptions_of(json.loads(written.read_text()))
    except (OSError, ValueError):
        return None


# Folders of a dbt project that dbt writes (or installs) rather than parses.
_GENERATED = {"target", "logs", "dbt_packages", "dbt_modules"}


def project_fingerprint(project_dir: Path) -> str:
    """sha256 over every file dbt reads in the project (names and bytes; not target/, logs/, packages)."""
    digest = hashlib.sha256()
    for path in sorted(project_dir.rglob("*")):
        relative = path.relative_to(project_dir)
        if relative.parts[0] in _GENERATED or not path.is_file():
            continue
        digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class BuildSession:
    """Builds from one long-lived process: dbt and GX are imported once, and dbt's manifest is parsed
    once per (project state, warehouse file) and handed to every later build.

    A cold ``build_warehouse`` spends most of its time before any SQL runs: importing GX (~5 s),
    importing dbt and parsing the project. A session pays that once. The project's files are
    fingerprinted at every build, so a changed model, seed (a review decision) or macro is re-parsed
    before it is built: a session never builds stale SQL. The manifest is also keyed by the
    warehouse file (dbt-duckdb names the catalog after it). Builds run one at a time (dbt does not
    support concurrent invocations in one process); the writer lock still serialises them with
    ingest in other processes.
    """

    def __init__(self, project_dir: Path | None = None) -> None:
        self.project_dir = Path(project_dir) if project_dir else dbt_project_dir()
        self.parses = 0
        self.builds = 0
        self._manifest: Any = None
        self._manifest_key: tuple[str, str] | None = None
        self._seed_tests_passed: tuple[str, str] | None = None
        self._lock = threading.Lock()

    def warm(self) -> float:
        """Import dbt, dbt-duckdb and GX now (seconds taken), rather than in the first build."""
        started = time.perf_counter()
        # deferred: dbt takes seconds to import; warming up is when this process pays for it
        import dbt.adapters.duckdb  # noqa: F401
        from dbt.cli.main import dbtRunner  # noqa: F401  # deferred: as above

        load_gx()
        return time.perf_counter() - started

    def _plan(self, db_path: Path) -> DbtPlan:
        """The manifest for this project state and warehouse (parsed when either changed), and the
        data tests of seeds when they already passed for this very project state.

        A seed is a file of the project, reloaded whole by every build: a data test whose only
        inputs are seeds gives the same answer as long as the project's files are unchanged, so
        once it passed for a fingerprint it is not re-run for that fingerprint (any edit to a seed,
        a test or the configuration changes the fingerprint and runs them all again)."""
        key = (project_fingerprint(self.project_dir), str(db_path.resolve()))
        if key != self._manifest_key:
            res = _invoke_dbt(["--quiet", *_dbt_args(self.project_dir, "parse")], db_path)
            if not res.success or res.result is None:
                reason = res.exception or "dbt parse reported failure"
                raise PublicationBlocked(f"dbt parse failed: {reason}")
            self._manifest, self._manifest_key = res.result, key
            self.parses += 1
        if self._seed_tests_passed != key:
            return DbtPlan(self._manifest, state=key)
        reused = seed_only_tests(self._manifest)
        note = f"{len(reused)} data tests of unchanged seeds passed earlier for project state {key[0][:12]}"
        return DbtPlan(self._manifest, reused, note, key, reused_test_selectors(self._manifest, reused))

    def _passed(self, plan: DbtPlan) -> None:
        """dbt's build passed: if it ran the seeds' tests, they passed for this project state."""
        if not plan.reused_tests:
            self._seed_tests_passed = plan.state

    def build(
        self,
        db_path: Path | None = None,
        *,
        quiet: bool = True,
        include_unit_tests: bool = False,
        analyst_target: Path | None = None,
        analyst: bool = True,
    ) -> BuildResult:
        """``build_warehouse`` without the per-process costs: same lock, dbt build, expectations and
        analyst copy."""
        path = Path(db_path) if db_path else warehouse_path()
        with self._lock:
            result = _build(
                path,
                self.project_dir,
                quiet=quiet,
                include_unit_tests=include_unit_tests,
                plan_for=self._plan,
                after_dbt=self._passed,
                analyst=analyst,
                analyst_target=analyst_target,
            )
            self.builds += 1
            return result


def seed_only_tests(manifest: Any) -> tuple[str, ...]:
    """Names of the data tests whose every input is a seed (their result depends on project files)."""
    names = []
    for node in manifest.nodes.values():
        parents = list(getattr(node.depends_on, "nodes", []) or [])
        if node.resource_type == "test" and parents and all(p.startswith("seed.") for p in parents):
            names.append(node.name)
    return tuple(sorted(names))


def reused_test_selectors(manifest: Any, names: Iterable[str]) -> tuple[str, ...]:
    """dbt selectors that pick exactly the data tests ``names``: one ``path:<file>,resource_type:test``
    for each file whose every test is named (seeds/_seeds.yml: 35 of the 36 tests of seeds), the
    names of the others. A name is one selection criterion that dbt matches against every node of the
    project, three times a build: 36 names cost ~0.5-1 CPU-s a build, a file's path a glob."""
    wanted = set(names)
    by_file: dict[str, set[str]] = {}
    for node in manifest.nodes.values():
        if node.resource_type != "test":
            continue
        files = {node.original_file_path}  # what dbt's path method matches: the file, and the patch's
        if getattr(node, "patch_path", None):
            files.add(node.patch_path.split("://")[-1])
        for file in files:
            by_file.setdefault(file, set()).add(node.name)
    selectors, covered = [], set()
    for file, tests in sorted(by_file.items()):
        if tests <= wanted and not any(c in file for c in "*?[]{} ,"):  # no glob, no selector syntax
            selectors.append(f"path:{file},resource_type:test")
            covered |= tests
    return (*selectors, *sorted(wanted - covered))


def release_semaphores_at_exit() -> None:
    """Let multiprocessing unlink the semaphores dbt makes in this process when it exits.

    dbt makes its locks from a `spawn` context (dbt.mp_context): named POSIX semaphores, tracked by
    multiprocessing's resource tracker and unlinked by multiprocessing's exit hook. An Airflow task
    runs in a forked process that clears the exit hooks it inherited and leaves with os._exit after
    running only the hooks registered since the fork; without this, the hook never runs, the
    semaphores stay in /dev/shm, and the resource tracker reports them as two `leaked semaphore`
    lines on stderr (ERROR lines in the task's log). Registering it again is harmless elsewhere."""
    exit_hook = getattr(multiprocessing.util, "_exit_function", None)
    if exit_hook is not None:
        atexit.unregister(exit_hook)  # once, whatever was registered before
        atexit.register(exit_hook)
