"""The analyst copy: what readers open instead of the pipeline's own warehouse file.

DuckDB lets a file be open read-write by one process or read-only by any number, never both: an
analyst's read-only connection to the warehouse keeps ``ingest`` and ``build`` out. So readers never
touch the writer's file. After every successful build (dbt build and every expectation passed), and
only then, the build publishes a consistent read-only copy under ``ARGUSIC_ANALYST_DIR`` (default:
``analyst/`` beside the warehouse file, i.e. ``warehouse/analyst/``)::

    warehouse/analyst/                 -> a link to .analyst.versions/<published-at>-<random>/
        argusic.duckdb                 marts.*, reference.* (seeds), raw.run_records (slimmed: below),
                                       meta (one row: this copy's version, build time, cycles and the
                                       state of each cycle's board, the warehouse's fingerprint)
        parquet/<mart>/cycle_id=<id>/data_0.parquet   marts with a cycle_id, hive-partitioned
        parquet/<mart>/data.parquet    marts without one (verdicts, editions, hardware)
        manifest.json                  when, from which warehouse, tables and rows (argusic.analyst_copy/1)

The stable path is the link's: ``warehouse/analyst/argusic.duckdb`` (``analyst_db_path()``) always
opens the copy published now; a version folder is deleted two publications later, so nothing prints
one as the place to open (``AnalystCopy.summary`` names the link). A reader that opened a copy finds
out whether a newer one was published since with ``newer_copy`` (one readlink: cheap enough for every
query; `argusic sql` checks before each).

Publication is atomic: the new copy is written whole into a new folder, then the link is replaced by
``rename`` (one system call: a reader resolves either the old copy or the new one, never half of
one). A reader that holds the old copy open keeps reading it: the old folder stays until the copy
after next is published, and on Linux a file deleted while open stays readable through its open
descriptors. Nothing ever opens a published copy for writing, so readers never wait for anyone.

The copy is made under the writer lock the build already holds (so it is exactly what was built and
validated), by a DuckDB connection to the new file that attaches the warehouse read-only. Only what
changed is written (issue 27): the new file starts as a byte copy of the published one (never written
again: a reader holding it open keeps its rows), and each table whose rows are the previous copy's is
kept as it is; a mart with a cycle_id gets only its changed cycles deleted and inserted again; any
other changed table is replaced whole. Whether a table changed: from the build's inputs when given
(the project's and every source table's fingerprint, ``argusic_build.built_from``, and dbt's lineage:
a relation not downstream of a changed source table is kept unread, a base table's row count checked
as well), else by its fingerprint measured on the warehouse (rows and the sum of DuckDB's row hashes
over the columns copied: one scan, per cycle for a mart with a cycle_id), compared with the one the
previous manifest records. At a million attempts: ~0.3 CPU-s a copy when nothing the marts are made
from changed, ~3 CPU-s when every table has to be measured again, ~34 CPU-s for a first copy written
whole. The file is written whole again when more than half of its blocks are free (rows replaced
since), or the DuckDB version or the copy's layout changed.

Every table and column gets its description as a DuckDB comment (``SELECT comment
FROM duckdb_columns()``): the marts' and seeds' from the dbt manifest of the build (its yml
descriptions), the raw layer's from ``argusic.warehouse``. They are written here, in the copy's one
transaction, rather than by dbt's ``persist_docs`` in every build: that costs dbt a describe and a
comment statement per relation, +0.6 s (+36%) of dbt time a build at 10k attempts.

A cycle's Parquet partition is written only when its rows changed. Each partitioned mart's
partitions carry a fingerprint in the manifest (per cycle: the row count and the sum of DuckDB's
64-bit row hashes, with the SELECT that writes them); a partition whose fingerprint equals the one of
the copy published before is hard-linked from it (published files are never written again, so two
copies may share them), the others are written anew; a mart without a cycle_id is linked whole when
unchanged. A published cycle's board, scores and sets do not change, so a build of the current cycle
rewrites its own partitions and links the other eleven (at a million attempts the Parquet of
attempt_scores alone took 22 CPU-seconds a build).

Parquet has no 128-bit integer (DuckDB would write HUGEINT as DOUBLE, losing exactness): the exact
numerators and denominators are written as DECIMAL(38,0), which pandas, Polars, Spark and DuckDB read
exactly.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from argusic.core.settings import ANALYST_DIR_ENV, analyst_dir, warehouse_path
from argusic.cycle.pools import latest_cycle_of

MANIFEST_SCHEMA = "argusic.analyst_copy/1"
DB_NAME = "argusic.duckdb"
PARQUET = "parquet"
MANIFEST = "manifest.json"
# The copy's own description, one row (in the main schema: `SELECT * FROM meta`).
META_TABLE = "meta"
# Where each cycle's board state comes from (a dbt mart); a copy of a warehouse built before it says so.
BOARD_STATES = ("marts", "board_publication")

# What goes into the copy: every table of these schemas, and these raw tables.
COPIED_SCHEMAS = ("marts", "reference")
# raw.run_records, slimmed to the facts of a record that marts.attempt_scores does not already carry
# (the agent's report, sizes, harness, key, the environment it ran under): attempt_scores has the
# ids, times, budgets, outcome, final state, served copies and fingerprints. Left in the pipeline's
# warehouse: the whole record (record_json, a few KB an attempt; also in
# runs/<cycle>/<attempt>/run_record.json) and the raw evidence URIs (private store locations,
# `sha256/<sha[:2]>/<sha>` under ARGUSIC_EVIDENCE_URL). At a million attempts the copy is then about
# half the size, and half the time, of a whole raw layer.
RAW_TABLES = {
    "run_records": (
        "attempt_id", "invalid_reason", "executor", "has_report", "install_ok", "ran_ok",
        "errors_encountered", "errors_fixed", "test_depth", "verified_how", "key_kind", "harness_name",
        "harness_version", "log_bytes", "recording_bytes", "report_bytes", "masking_applied",
        # the environment the attempt ran under (issue #15; null for older records)
        "harness_edition", "scaffold_sha256", "image_role", "image_reference", "image_digest",
        "instructions_version", "instructions_sha256", "limit_cpus", "limit_memory_bytes", "limit_pids",
        "limit_disk_bytes", "network_mode", "limit_budget_seconds", "display",
    ),
}  # fmt: skip
RAW_COPY_COMMENT = (
    "In the analyst copy: the facts of each run record that marts.attempt_scores does not carry (the "
    "agent's report, evidence sizes, harness, key, environment); join on attempt_id. The whole record "
    "and the raw evidence URIs stay in the pipeline's warehouse."
)
# Memory DuckDB may use while copying (its default is 80% of the machine's): a copy of a million
# attempts then peaks near 1 GB instead of 2.4 GB, for the same time.
COPY_MEMORY_LIMIT = "1GB"
# Parquet compression: zstd halves the files against snappy (hex fingerprints and URIs), and pandas
# (pyarrow), Polars, Spark and DuckDB all read it. Level 1, not DuckDB's default 3: measured on the
# 300k-attempt bench's copy, attempt_scores 5.3 -> 3.8 CPU-s and review_queue 3.4 -> 2.5 CPU-s, the
# files no larger (59 -> 56 MB, 25 -> 23 MB: the hex fingerprints do not compress at any level).
PARQUET_COMPRESSION = "zstd"
PARQUET_LEVEL = 1
# Parquet: every mart; partitioned by this column when the mart has it.
PARTITION_COLUMN = "cycle_id"


class AnalystCopyError(RuntimeError):
    """The analyst copy could not be published (the previous copy, if any, is left as it was)."""


class AnalystCopyMissing(FileNotFoundError):
    """No analyst copy has been published yet where readers look for it."""


def analyst_db_path(db_path: Path | None = None) -> Path:
    """The analyst copy's DuckDB file (``<analyst dir>/argusic.duckdb``)."""
    return analyst_dir(db_path) / DB_NAME


def _versions_dir(target: Path) -> Path:
    return target.parent / f".{target.name}.versions"


def current_copy(target: Path | None = None) -> Path:
    """The folder of the copy published now (the link resolved), or AnalystCopyMissing."""
    target = Path(target) if target else analyst_dir()
    folder = target.resolve()
    if not (folder / DB_NAME).is_file():
        raise AnalystCopyMissing(
            f"analyst copy {target / DB_NAME} does not exist yet: it is published by every successful "
            "`argusic build` (run `argusic ingest PATH` and `argusic build`, or `argusic demo`)"
        )
    return folder


def connect_analyst(target: Path | None = None) -> duckdb.DuckDBPyConnection:
    """A read-only DuckDB connection to the analyst copy published now. Never waits: nobody writes it.

    The link is resolved first, so a process that connects again after a new publication gets the new
    copy (DuckDB shares one database per path within a process: connecting by the link's path would
    hand back the copy an older connection of the same process still holds)."""
    folder = current_copy(target)
    return duckdb.connect(str(folder / DB_NAME), read_only=True)


def copy_version(folder: Path) -> str:
    """A copy's version: the name of its folder (``<published-at>-<random>``), as its meta table says."""
    return Path(folder).name


def newer_copy(opened: Path, target: Path | None = None) -> Path | None:
    """The folder of the copy published now when it is not ``opened`` (the folder a reader resolved
    when it connected), else None. One readlink, no file read: cheap enough before every query. None
    too when no copy is published at all (nothing newer to open)."""
    target = Path(target) if target else analyst_dir()
    try:
        now = target.resolve(strict=True)
    except OSError:
        return None
    return None if now == Path(opened).resolve() else now


def parquet_dir(target: Path | None = None) -> Path:
    """The Parquet folder of the copy published now, the link resolved: a reader that lists and then
    opens many files reads them all from one copy even if a new one is published meanwhile."""
    return current_copy(target) / PARQUET


def read_manifest(target: Path | None = None) -> dict[str, Any]:
    """The published copy's manifest.json (when, from which warehouse, tables, rows, layout)."""
    return json.loads((current_copy(target) / MANIFEST).read_text())


@dataclass
class TableCopy:
    name: str  # schema.table
    rows: int
    parquet: str | None = None  # relative folder, for marts
    partitioned_by: str | None = None
    # partitioned marts: {"select": the SELECT written, "cycles": {cycle_id: fingerprint}, "reused": n}
    partitions: dict[str, Any] | None = None
    columns: str | None = None  # "name TYPE, ..." as copied
    measure: dict[str, Any] | None = None  # rows and row-hash sums (_measure)
    how: str = "written"  # kept (the previous copy's rows), cycles (changed cycles replaced), written
    select: str | None = None  # marts without a cycle: the SELECT of their Parquet file


@dataclass
class AnalystCopy:
    """What one publication wrote."""

    target: Path  # the link readers use
    folder: Path  # the version folder it points at
    tables: list[TableCopy] = field(default_factory=list)
    seconds: float = 0.0
    bytes: int = 0

    def summary(self) -> str:
        rows = sum(t.rows for t in self.tables)
        return (
            f"analyst copy {self.target / DB_NAME} (version {self.version}): {len(self.tables)} tables, "
            f"{rows:,} rows, {self.bytes / 2**20:.1f} MiB, published in {self.seconds:.2f} s"
        )

    @property
    def version(self) -> str:
        return copy_version(self.folder)


# (schema, table) -> (table description, {column: description}), from a dbt manifest.
Descriptions = dict[tuple[str, str], tuple[str, dict[str, str]]]


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def descriptions_of(manifest: Any) -> Descriptions:
    """The descriptions of every model and seed of a dbt manifest (the parsed ``Manifest`` a build
    session holds, or the dict of a ``manifest.json``), by the relation they build."""
    nodes = _get(manifest, "nodes") or {}
    out: Descriptions = {}
    for node in nodes.values():
        kind = _get(node, "resource_type")
        if str(getattr(kind, "value", kind)) not in ("model", "seed"):
            continue
        columns = {
            name: str(_get(column, "description") or "").strip()
            for name, column in (_get(node, "columns") or {}).items()
        }
        relation = (str(_get(node, "schema")), str(_get(node, "alias") or _get(node, "name")))
        out[relation] = (str(_get(node, "description") or "").strip(), columns)
    return out


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _tables(con: duckdb.DuckDBPyConnection, src: str) -> list[tuple[str, str, list[str] | None]]:
    """(schema, table, columns kept or None for all) of the warehouse relations that go into the
    copy: the tables of COPIED_SCHEMAS, the views of `marts` (stored as tables), RAW_TABLES."""
    listed = con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? "
        "UNION ALL SELECT schema_name, view_name FROM duckdb_views() WHERE database_name = ? "
        "AND schema_name = 'marts' AND NOT internal ORDER BY ALL",
        [src, src],
    ).fetchall()
    chosen: list[tuple[str, str, list[str] | None]] = []
    for schema, table in listed:
        if schema in COPIED_SCHEMAS:
            chosen.append((schema, table, None))
        elif schema == "raw" and table in RAW_TABLES:
            present = {
                row[0]
                for row in con.execute(
                    "SELECT column_name FROM duckdb_columns() WHERE database_name = ? "
                    "AND schema_name = ? AND table_name = ?",
                    [src, schema, table],
                ).fetchall()
            }
            chosen.append((schema, table, [c for c in RAW_TABLES[table] if c in present]))
    return chosen


def _comments_sql(
    con: duckdb.DuckDBPyConnection,
    src: str,
    chosen: list[tuple[str, str, list[str] | None]],
    descriptions: Descriptions,
) -> str:
    """COMMENT ON statements for the copy's tables and columns: the dbt descriptions where given,
    else (and for the raw layer) the comments the warehouse itself holds."""
    docs: Descriptions = {}
    for schema, table, comment in con.execute(
        "SELECT schema_name, table_name, comment FROM duckdb_tables() WHERE database_name = ?", [src]
    ).fetchall():
        docs[(schema, table)] = (comment or "", {})
    for schema, table, column, comment in con.execute(
        "SELECT schema_name, table_name, column_name, comment FROM duckdb_columns() "
        "WHERE database_name = ? AND comment IS NOT NULL",
        [src],
    ).fetchall():
        docs.setdefault((schema, table), ("", {}))[1][column] = comment
    for relation, (table_doc, column_docs) in descriptions.items():
        held_doc, held_columns = docs.get(relation, ("", {}))
        given = {c: d for c, d in column_docs.items() if d}
        docs[relation] = (table_doc or held_doc, {**held_columns, **given})
    statements = []
    for schema, table, kept in chosen:
        table_doc, column_docs = docs.get((schema, table), ("", {}))
        relation = f"{_quote(schema)}.{_quote(table)}"
        if schema == "raw":
            table_doc = f"{table_doc} {RAW_COPY_COMMENT}".strip()
        if table_doc:
            statements.append(f"COMMENT ON TABLE {relation} IS {_literal(table_doc)}")
        for column, text in column_docs.items():
            if text and (kept is None or column in kept):
                statements.append(f"COMMENT ON COLUMN {relation}.{_quote(column)} IS {_literal(text)}")
    return ";\n".join(statements)


def _parquet_select(columns: list[tuple[str, str]], table: str) -> str:
    """SELECT of a mart of the copy for Parquet (HUGEINT as DECIMAL(38,0)), from its (column, type)."""
    items = [
        f"CAST({_quote(c)} AS DECIMAL(38, 0)) AS {_quote(c)}" if t == "HUGEINT" else _quote(c)
        for c, t in columns
    ]
    return f"SELECT {', '.join(items)} FROM marts.{_quote(table)}"


def _partition_folder(value: str) -> str:
    return f"{PARTITION_COLUMN}={value}"


@dataclass
class _Source:
    """One warehouse relation that goes into the copy, as the warehouse holds it now."""

    schema: str
    table: str
    kept: list[str] | None  # columns copied (None: all)
    columns: list[tuple[str, str]]  # (name, type) of what is copied, in order
    base_table: bool  # a table (not a view): its row count is known without a scan

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def relation(self) -> str:
        return f"{_quote(self.schema)}.{_quote(self.table)}"

    @property
    def partitioned(self) -> bool:
        return self.schema == "marts" and any(c == PARTITION_COLUMN for c, _ in self.columns)

    @property
    def signature(self) -> str:
        return ", ".join(f"{c} {t}" for c, t in self.columns)

    def select(self, src: str) -> str:
        chosen = "*" if self.kept is None else ", ".join(_quote(c) for c in self.kept)
        return f"SELECT {chosen} FROM {_quote(src)}.{self.relation}"


def _sources(con: duckdb.DuckDBPyConnection, src: str) -> list[_Source]:
    """The warehouse relations that go into the copy (``_tables``), with their columns and types."""
    tables = _tables(con, src)
    views = {
        (s, t)
        for s, t in con.execute(
            "SELECT schema_name, view_name FROM duckdb_views() WHERE database_name = ?", [src]
        ).fetchall()
    }
    columns: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for schema, table, column, kind in con.execute(
        "SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE database_name = ? ORDER BY schema_name, table_name, column_index",
        [src],
    ).fetchall():
        columns.setdefault((schema, table), []).append((column, kind))
    out = []
    for schema, table, kept in tables:
        present = columns.get((schema, table), [])
        if kept is not None:
            types = dict(present)
            chosen = [(c, types[c]) for c in kept if c in types]
            kept = [c for c, _ in chosen]
        else:
            chosen = present
        out.append(_Source(schema, table, kept, chosen, (schema, table) not in views))
    return out


def _measure(con: duckdb.DuckDBPyConnection, src: str, source: _Source) -> dict[str, Any]:
    """A relation's fingerprint, from the warehouse: rows and the sum of DuckDB's 64-bit row hashes
    over exactly the columns copied; a mart with a cycle_id per cycle (``cycles``: "rows:sum") and
    for its rows without one (``rest``). One scan."""
    if source.partitioned:
        found = con.execute(
            f"SELECT {PARTITION_COLUMN}, count(*), coalesce(sum(hash(t)::HUGEINT), 0)::VARCHAR "
            f"FROM ({source.select(src)}) AS t GROUP BY ALL"
        ).fetchall()
        cycles = {str(c): f"{n}:{h}" for c, n, h in found if c is not None}
        rest = next((f"{n}:{h}" for c, n, h in found if c is None), "0:0")
        return {"rows": sum(n for _, n, _ in found), "cycles": cycles, "rest": rest}
    (rows, total) = con.execute(
        f"SELECT count(*), coalesce(sum(hash(t)::HUGEINT), 0)::VARCHAR FROM ({source.select(src)}) AS t"
    ).fetchone()
    return {"rows": rows, "total": f"{rows}:{total}"}


def _count(measure: dict[str, Any]) -> int:
    return int(measure["rows"])


# Copies the previous copy's DuckDB file and changes only what changed, as long as at most this share
# of its blocks is free (left by rows replaced since it was last written whole); beyond, one whole write.
MAX_FREE_SHARE = 0.5


@dataclass
class _Previous:
    """The copy published now, as the next one may reuse it."""

    folder: Path
    manifest: dict[str, Any]
    # relations known unchanged since this copy without reading them (_unchanged_by_lineage)
    trusted: set[str] = field(default_factory=set)

    @property
    def entries(self) -> dict[str, dict[str, Any]]:
        return {e["name"]: e for e in self.manifest.get("tables", []) if isinstance(e, dict) and "name" in e}

    def reusable_file(self) -> bool:
        """Its DuckDB file may be the start of the next copy: same layout and DuckDB version, not
        mostly free blocks."""
        m = self.manifest
        blocks = m.get("blocks") or {}
        free, total = int(blocks.get("free", 0)), int(blocks.get("total", 0))
        return (
            m.get("layout") == LAYOUT
            and m.get("duckdb_version") == duckdb.__version__
            and (self.folder / DB_NAME).is_file()
            and (total == 0 or free <= MAX_FREE_SHARE * total)
        )


# The copy's layout: 2 records each table's columns and fingerprint, and the build's inputs.
LAYOUT = 2
# (known, dirty): the relations ("schema.table") a build makes from the project and its sources, and
# those among them downstream of the given changed source tables; None when the build cannot tell.
Lineage = Any  # Callable[[tuple[str, ...]], tuple[set[str], set[str]] | None]


def _unchanged_by_lineage(
    previous: _Previous | None,
    warehouse: Path,
    inputs: dict[str, str] | None,
    lineage: Lineage | None,
) -> set[str]:
    """The relations whose rows are those of the previous copy without looking at them: the build's
    inputs (project and every source table's fingerprint, ``argusic_build.built_from``) are those the
    previous copy was made from but for some source tables, and the relation is not downstream of
    them (a model is a function of the project and its sources: the same premise as a partial build)."""
    if previous is None or not inputs or lineage is None:
        return set()
    old = previous.manifest.get("inputs")
    if not isinstance(old, dict) or set(old) != set(inputs) or old.get("project") != inputs.get("project"):
        return set()
    if previous.manifest.get("warehouse") != str(warehouse.resolve()):
        return set()
    changed = tuple(sorted(k for k in inputs if k != "project" and old[k] != inputs[k]))
    found = lineage(changed)
    if found is None:
        return set()
    known, dirty = found
    raw = {f"raw.{t}" for t in RAW_TABLES if f"raw.{t}" not in changed}
    return (set(known) - set(dirty)) | raw


def _write_partitions(
    con: duckdb.DuckDBPyConnection,
    select: str,
    out: Path,
    options: str,
    fingerprints: dict[str, str],
    nulls: int,
    earlier: tuple[Path, dict[str, Any]] | None,
) -> dict[str, Any]:
    """The hive partitions of one mart by cycle: a cycle whose rows are those of the previous copy
    (same SELECT, same count and sum of row hashes) is hard-linked from it, the others are written.

    A null cycle_id (a folder DuckDB names itself) is always written."""
    reused: list[str] = []
    if earlier is not None:
        old_folder, old = earlier
        if (
            old.get("select") == select
            and old.get("duckdb_version") == duckdb.__version__
            and old.get("layout") == LAYOUT
        ):
            old_cycles = old.get("cycles") or {}
            for cycle, fingerprint in fingerprints.items():
                source = old_folder / _partition_folder(cycle)
                if old_cycles.get(cycle) == fingerprint and source.is_dir() and any(source.iterdir()):
                    reused.append(cycle)
    # everything not reused, in one partitioned COPY (DuckDB's own layout and file names)
    keep = ", ".join(_literal(c) for c in reused)
    where = f"WHERE {PARTITION_COLUMN} IS NULL OR {PARTITION_COLUMN} NOT IN ({keep})" if reused else ""
    if len(reused) < len(fingerprints) or nulls or not fingerprints:
        con.execute(
            f"COPY (SELECT * FROM ({select}) AS t {where}) TO {_literal(str(out))} "
            f"({options}, PARTITION_BY ({PARTITION_COLUMN}))"
        )
    out.mkdir(exist_ok=True)
    for cycle in reused:
        source, dest = earlier[0] / _partition_folder(cycle), out / _partition_folder(cycle)  # type: ignore[index]
        _link_tree(source, dest)
    return {
        "select": select,
        "duckdb_version": duckdb.__version__,
        "layout": LAYOUT,
        "cycles": fingerprints,
        "reused": len(reused),
    }


def _link_tree(source: Path, dest: Path) -> None:
    """The files of ``source`` in ``dest`` (made), hard-linked: published files are never written
    again, so two copies may share them; a copy of the same bytes where links are not allowed."""
    dest.mkdir(parents=True, exist_ok=True)
    for file in source.iterdir():
        try:
            os.link(file, dest / file.name)
        except OSError:  # another file system, or links not allowed
            shutil.copy2(file, dest / file.name)


def _clone_file(source: Path, dest: Path) -> None:
    """A byte copy of ``source`` at ``dest``, in the kernel (copy_file_range: a reflink where the
    file system has them), else shutil's."""
    try:
        with open(source, "rb") as fin, open(dest, "wb") as fout:
            left = os.fstat(fin.fileno()).st_size
            while left > 0:
                done = os.copy_file_range(fin.fileno(), fout.fileno(), left)
                if done == 0:
                    break
                left -= done
            if left > 0:
                raise OSError("short copy")
    except (OSError, AttributeError):
        shutil.copyfile(source, dest)


def _write(
    db_path: Path,
    folder: Path,
    descriptions: Descriptions | None = None,
    previous: _Previous | None = None,
) -> list[TableCopy]:
    """Write the copy of the warehouse ``db_path`` into the new, empty ``folder``.

    ``previous``: the copy published now. When its file can be reused, the new copy starts as a byte
    copy of it and only what changed is written: a table whose fingerprint is that of the previous
    copy (or which is among ``previous.trusted``: its inputs are) is kept as it is; a mart
    with a cycle_id gets only its changed cycles replaced; the rest is replaced whole. Its unchanged
    Parquet files are hard-linked. Otherwise every table is written anew."""
    # Written under a name of its own, renamed at the end: the warehouse is attached under its own
    # name (its file's stem, the catalog dbt's views name), which must not be the copy's.
    db_file = folder / f"writing-{secrets.token_hex(4)}.duckdb"
    parquet = folder / PARQUET
    parquet.mkdir()
    incremental = previous is not None and previous.reusable_file()
    if incremental:
        _clone_file(previous.folder / DB_NAME, db_file)  # type: ignore[union-attr]
    entries = previous.entries if previous is not None else {}
    trusted = previous.trusted if previous is not None else set()
    copied: list[TableCopy] = []
    config = {
        "memory_limit": COPY_MEMORY_LIMIT,
        "preserve_insertion_order": False,  # rows of a table in any order: less memory, same time
    }
    src = Path(db_path).stem
    with duckdb.connect(str(db_file), config=config) as con:
        con.execute("SET enable_progress_bar = false")  # the build's output is the build's
        con.execute(f"ATTACH {_literal(str(db_path))} AS {_quote(src)} (READ_ONLY)")
        con.execute("BEGIN")  # one commit for every table and comment (each commit is a disk sync)
        # Names are the warehouse's own schema and table names (dbt's and ours), quoted anyway.
        sources = _sources(con, src)
        if incremental:
            con.execute(f"DROP TABLE IF EXISTS main.{META_TABLE}")
            wanted = {s.name for s in sources}
            for name in entries:  # relations the warehouse no longer has
                if name not in wanted:
                    schema, table = name.split(".", 1)
                    con.execute(f"DROP TABLE IF EXISTS {_quote(schema)}.{_quote(table)}")
        for source in sources:
            old = entries.get(source.name) or {}
            same_columns = old.get("columns") == source.signature and isinstance(old.get("measure"), dict)
            measure = None
            if source.name in trusted and same_columns:
                measure = old["measure"]
                if source.base_table:  # a table's count is known without a scan: one more check
                    (rows,) = con.execute(f"SELECT count(*) FROM {_quote(src)}.{source.relation}").fetchone()
                    measure = measure if rows == _count(measure) else None
            measure = measure or _measure(con, src, source)
            how = _apply(con, src, source, measure, old if (incremental and same_columns) else None)
            copied.append(
                TableCopy(source.name, _count(measure), columns=source.signature, measure=measure, how=how)
            )
        columns = {(s.schema, s.table): s for s in sources}
        tables = [(s.schema, s.table, s.kept) for s in sources]
        present = {(s.schema, s.table, c) for s in sources for c, _ in s.columns}
        known = {
            relation: (doc, {c: d for c, d in cols.items() if (*relation, c) in present})
            for relation, (doc, cols) in (descriptions or {}).items()
        }
        if comments := _comments_sql(con, src, tables, known):
            con.execute(comments)
        con.execute("COMMIT")
        con.execute(f"DETACH {_quote(src)}")
        # Parquet from the copy itself (the same rows), one folder per mart.
        options = f"FORMAT parquet, COMPRESSION {PARQUET_COMPRESSION}, COMPRESSION_LEVEL {PARQUET_LEVEL}"
        for item in copied:
            schema, table = item.name.split(".", 1)
            if schema != "marts":
                continue
            out = parquet / table
            source = columns[(schema, table)]
            select = _parquet_select(source.columns, table)
            old = entries.get(item.name) or {}
            if source.partitioned and item.rows:
                earlier = None
                if isinstance(old.get("partitions"), dict) and old.get("parquet") and previous is not None:
                    earlier = (previous.folder / old["parquet"], old["partitions"])
                nulls = int(str(item.measure["rest"]).split(":")[0])  # type: ignore[index]
                cycles = item.measure["cycles"]  # type: ignore[index]
                item.partitions = _write_partitions(con, select, out, options, cycles, nulls, earlier)
                item.partitioned_by = PARTITION_COLUMN
            else:  # no cycle (or no row yet): one file, so that the folder is never empty
                before = (
                    previous.folder / str(old.get("parquet")) if previous and old.get("parquet") else None
                )
                if (
                    before is not None
                    and old.get("select") == select
                    and old.get("measure") == item.measure
                    and not old.get("partitions")
                    and (before / "data.parquet").is_file()
                ):
                    _link_tree(before, out)
                else:
                    out.mkdir()
                    con.execute(f"COPY ({select}) TO {_literal(str(out / 'data.parquet'))} ({options})")
                item.select = select
            item.parquet = f"{PARQUET}/{table}"
        con.execute("CHECKPOINT")
    db_file.rename(folder / DB_NAME)
    return copied


def _apply(
    con: duckdb.DuckDBPyConnection,
    src: str,
    source: _Source,
    measure: dict[str, Any],
    old: dict[str, Any] | None,
) -> str:
    """Make the copy's table of ``source`` hold the warehouse's rows. ``old``: the previous copy's
    entry when the copy started from its file (same columns); what was done: kept, cycles, written."""
    relation = source.relation
    if old is not None and old.get("measure") == measure:
        return "kept"
    if old is not None and source.partitioned:
        before = old["measure"]
        old_cycles, new_cycles = before.get("cycles") or {}, measure.get("cycles") or {}
        changed = sorted(c for c in {*old_cycles, *new_cycles} if old_cycles.get(c) != new_cycles.get(c))
        rest = before.get("rest") != measure.get("rest")
        moved = sum(int(str(v).split(":")[0]) for c, v in new_cycles.items() if c in changed)
        if moved <= _count(measure) // 2:  # else: replacing most of it, rewrite it whole
            chosen = ", ".join(_quote(c) for c, _ in source.columns)
            listed = ", ".join(_literal(c) for c in changed) or "NULL"
            where = f"{PARTITION_COLUMN} IN ({listed})" + (f" OR {PARTITION_COLUMN} IS NULL" if rest else "")
            con.execute(f"DELETE FROM {relation} WHERE {where}")
            con.execute(
                f"INSERT INTO {relation} ({chosen}) SELECT {chosen} FROM ({source.select(src)}) AS t "
                f"WHERE {where}"
            )
            return "cycles"
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(source.schema)}")
    con.execute(f"CREATE OR REPLACE TABLE {relation} AS {source.select(src)}")
    return "written"


META_COMMENTS = {
    None: (
        "This analyst copy, one row: its version, when the build that made it ran, the stable path to "
        "open, the warehouse it was copied from and that warehouse's fingerprint, and every cycle with "
        "a board with the state of its board (published, rejected or pending; marts.board_publication). "
        "Written by the build (argusic.warehouse.analyst), never by SQL's now()."
    ),
    "copy_version": (
        "This copy's version (the name of its folder under .analyst.versions/). `argusic sql` warns when "
        "the copy published now has another one."
    ),
    "built_at": (
        "When the build that published this copy ran (UTC): the time the build passes, else the start "
        "of this copy's publication, right after the build's every check passed."
    ),
    "published_at": "When this copy was written (UTC), after the build's every check passed.",
    "stable_path": (
        "The path that always opens the copy published now (a link replaced at each publication); a "
        "version folder is deleted two publications later."
    ),
    "warehouse": "The pipeline's warehouse file this copy was made from (writers only: never open it).",
    "warehouse_fingerprint": (
        "sha256 over every table copied from the warehouse (its name, rows and the sum of DuckDB's "
        "row hashes): two copies with the same fingerprint hold the same rows."
    ),
    "duckdb_version": "The DuckDB version that wrote this copy.",
    "latest_published_cycle": (
        "The latest cycle whose board is published (by the cycle's month, then its latest attempt); "
        "null when no board is published. `argusic board` shows this one unless asked otherwise."
    ),
    "boards": (
        "Every cycle with a board and its state, one sentence each (e.g. `2027-01: rejected by ops at "
        '... ("reason"): never published`).'
    ),
    "cycles": (
        "Every cycle with a board, latest first: cycle_id, publication_state (published, rejected, "
        "pending; null when the warehouse has no marts.board_publication), ever_published, decided_by, "
        "decided_at, decision_note, is_demo_cycle, latest_attempt_at, state (the sentence of boards). "
        "`SELECT unnest(cycles, recursive := true) FROM meta` gives one row per cycle."
    ),
}


@dataclass
class CycleState:
    """One cycle's board in the copy, and its publication state (marts.board_publication)."""

    cycle_id: str
    publication_state: str | None  # published | rejected | pending; None: no board_publication mart
    ever_published: bool | None
    decided_by: str | None
    decided_at: datetime | None
    decision_note: str | None
    is_demo_cycle: bool | None
    latest_attempt_at: datetime | None

    @property
    def sentence(self) -> str:
        when = f" at {self.decided_at:%Y-%m-%d %H:%M} UTC" if self.decided_at else ""
        why = f' ("{self.decision_note}")' if self.decision_note else ""
        demo = " (demo cycle)" if self.is_demo_cycle else ""
        if self.publication_state == "published":
            return f"{self.cycle_id}{demo}: published (approved by {self.decided_by}{when})"
        if self.publication_state == "rejected":
            before = (
                "; an earlier board of this cycle was published"
                if self.ever_published
                else ": never published"
            )
            return f"{self.cycle_id}{demo}: rejected by {self.decided_by}{when}{why}{before}"
        if self.publication_state == "pending":
            return f"{self.cycle_id}{demo}: pending (no publication decision yet): not published"
        return (
            f"{self.cycle_id}{demo}: publication state unknown (the warehouse has no marts.board_publication)"
        )


def _columns_of(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> set[str]:
    """The columns of a table of the copy (none: no such table)."""
    return {
        row[0]
        for row in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
            "AND schema_name = ? AND table_name = ?",
            [schema, table],
        ).fetchall()
    }


def _cycle_states(con: duckdb.DuckDBPyConnection) -> list[CycleState]:
    """Every cycle with a board in the copy, latest first, with its board's publication state."""
    if not {"cycle_id", "is_demo_cycle"} <= _columns_of(con, "marts", "board"):
        return []
    ends = "SELECT NULL::VARCHAR AS cycle_id, NULL::TIMESTAMP AS ended_at"
    if {"cycle_id", "ended_at"} <= _columns_of(con, "marts", "attempt_scores"):
        ends = "SELECT cycle_id, max(ended_at) AS ended_at FROM marts.attempt_scores GROUP BY ALL"
    if _columns_of(con, *BOARD_STATES):
        states = (
            "p.publication_state, p.ever_published, p.decided_by, p.decided_at, p.decision_note, "
            "p.is_demo_cycle"
        )
        source = (
            "marts.board_publication AS p "
            "JOIN (SELECT DISTINCT cycle_id FROM marts.board) AS b ON b.cycle_id = p.cycle_id"
        )
    else:
        states = "NULL, NULL, NULL, NULL::TIMESTAMP, NULL, b.is_demo_cycle"
        source = (
            "(SELECT cycle_id, bool_or(is_demo_cycle) AS is_demo_cycle FROM marts.board GROUP BY ALL) AS b"
        )
    rows = con.execute(
        f"SELECT b.cycle_id, {states}, e.ended_at FROM {source} "
        f"LEFT JOIN ({ends}) AS e ON e.cycle_id = b.cycle_id"
    ).fetchall()
    found = [CycleState(*row) for row in rows]
    ordered: list[CycleState] = []
    while found:  # latest first, by the cycle's month then its latest attempt (never by name)
        latest = latest_cycle_of([(c.cycle_id, c.latest_attempt_at) for c in found])
        ordered += [c for c in found if c.cycle_id == latest]
        found = [c for c in found if c.cycle_id != latest]
    return ordered


def _fingerprint(tables: list[TableCopy]) -> str:
    """sha256 over every copied table's name, rows and sum of DuckDB's 64-bit row hashes (for a mart
    with a cycle_id, per cycle and for its rows without one), as measured on the warehouse or, for a
    table kept from the previous copy, as measured then: no scan here."""
    digest = hashlib.sha256()
    for item in sorted(tables, key=lambda t: t.name):
        measure = item.measure or {}
        if "cycles" in measure:
            cycles = json.dumps(measure["cycles"], sort_keys=True)
            total = f"cycles {cycles}; no cycle {measure.get('rest')}"
        else:
            total = str(measure.get("total"))
        digest.update(f"{item.name}\t{item.rows}\t{total}\n".encode())
    return digest.hexdigest()


def _write_meta(
    db_file: Path, *, version: str, built_at: datetime, target: Path, warehouse: Path, tables: list[TableCopy]
) -> dict[str, Any]:
    """Add the ``meta`` table (one row, commented) to the written copy ``db_file``; what it holds."""
    published_at = datetime.now(UTC).replace(tzinfo=None)
    built = built_at.astimezone(UTC).replace(tzinfo=None) if built_at.tzinfo else built_at
    with duckdb.connect(str(db_file)) as con:
        con.execute("SET enable_progress_bar = false")
        cycles = _cycle_states(con)
        fingerprint = _fingerprint(tables)
        latest = next((c.cycle_id for c in cycles if c.publication_state == "published"), None)
        con.execute("BEGIN")
        con.execute(
            "CREATE TEMP TABLE cycle_rows (ord INTEGER, cycle_id VARCHAR, publication_state VARCHAR, "
            "ever_published BOOLEAN, decided_by VARCHAR, decided_at TIMESTAMP, decision_note VARCHAR, "
            "is_demo_cycle BOOLEAN, latest_attempt_at TIMESTAMP, state VARCHAR)"
        )
        if cycles:
            con.executemany(
                "INSERT INTO cycle_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [i, c.cycle_id, c.publication_state, c.ever_published, c.decided_by, c.decided_at,
                     c.decision_note, c.is_demo_cycle, c.latest_attempt_at, c.sentence]
                    for i, c in enumerate(cycles)
                ],
            )  # fmt: skip
        con.execute(
            f"""
            CREATE TABLE main.{META_TABLE} AS SELECT
                ?::VARCHAR AS copy_version, ?::TIMESTAMP AS built_at, ?::TIMESTAMP AS published_at,
                ?::VARCHAR AS stable_path, ?::VARCHAR AS warehouse, ?::VARCHAR AS warehouse_fingerprint,
                ?::VARCHAR AS duckdb_version, ?::VARCHAR AS latest_published_cycle,
                (SELECT coalesce(string_agg(state, '; ' ORDER BY ord), 'no cycle has a board yet')
                 FROM cycle_rows) AS boards,
                (SELECT coalesce(list(struct_pack(cycle_id, publication_state, ever_published,
                        decided_by, decided_at, decision_note, is_demo_cycle, latest_attempt_at, state)
                        ORDER BY ord), []) FROM cycle_rows) AS cycles
            """,
            [version, built, published_at, str(target / DB_NAME), str(warehouse), fingerprint,
             duckdb.__version__, latest],
        )  # fmt: skip
        con.execute("DROP TABLE cycle_rows")
        for column, text in META_COMMENTS.items():
            if column is None:
                con.execute(f"COMMENT ON TABLE main.{META_TABLE} IS {_literal(text)}")
            else:
                con.execute(f"COMMENT ON COLUMN main.{META_TABLE}.{_quote(column)} IS {_literal(text)}")
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
        (total, free) = con.execute("SELECT total_blocks, free_blocks FROM pragma_database_size()").fetchone()
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return {
        "copy_version": version,
        "built_at": built.strftime(stamp),
        "stable_path": str(target / DB_NAME),
        "warehouse_fingerprint": fingerprint,
        "latest_published_cycle": latest,
        "blocks": {"total": total, "free": free},  # free: left by rows replaced since written whole
        "cycles": [
            {"cycle_id": c.cycle_id, "publication_state": c.publication_state, "state": c.sentence}
            for c in cycles
        ],
    }


def _published(target: Path) -> _Previous | None:
    """The copy published at ``target`` now (its folder, resolved, and its manifest), if readable."""
    try:
        folder = current_copy(target)
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return _Previous(folder, manifest) if isinstance(manifest, dict) else None


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _swap(target: Path, folder: Path) -> Path | None:
    """Point the link ``target`` at ``folder`` in one rename; the folder it pointed at before."""
    previous = target.resolve() if target.is_symlink() else None
    if target.exists() and not target.is_symlink():
        if not target.is_dir():
            raise AnalystCopyError(f"{target} exists and is not a folder or a link: refusing to replace it")
        # A folder from before copies were published this way: kept among the versions.
        previous = _versions_dir(target) / f"earlier-{secrets.token_hex(4)}"
        target.rename(previous)
    link = target.parent / f".{target.name}.link-{secrets.token_hex(4)}"
    os.symlink(os.path.relpath(folder, target.parent), link)
    try:
        os.replace(link, target)
    except BaseException:
        link.unlink(missing_ok=True)
        raise
    return previous


def _prune(versions: Path, keep: set[Path]) -> None:
    """Delete copies other than ``keep``: the one just published and the one before it (a reader that
    resolved the link just before the swap may still be listing its Parquet files). A reader holding
    a deleted DuckDB file open keeps reading it. One warehouse per analyst folder: another
    publication into the same folder at the same time would lose its copy here."""
    for child in versions.iterdir():
        if child.resolve() not in keep:
            shutil.rmtree(child, ignore_errors=True)


def publish_analyst_copy(
    db_path: Path | None = None,
    target: Path | None = None,
    descriptions: Descriptions | None = None,
    built_at: datetime | None = None,
    *,
    inputs: dict[str, str] | None = None,
    lineage: Lineage | None = None,
) -> AnalystCopy:
    """Copy the warehouse ``db_path`` into a new analyst copy and publish it at ``target``.

    ``descriptions`` (``descriptions_of`` the build's dbt manifest) become the comments of the marts
    and seeds; without them the copy keeps whatever comments the warehouse holds. ``built_at``: when
    the build that made it ran (its meta table's built_at; default: now, as this publication starts).
    ``inputs``: what the build was made from (``argusic_build.built_from``: the project's and each
    source table's fingerprint) and ``lineage``: which relations depend on which source tables
    (``Lineage``); with both, a relation whose inputs are those of the previous copy is kept without
    being read. Without them, every table is fingerprinted (one scan) and kept when unchanged.

    Callers hold the warehouse writer lock (the build does), so the copy is exactly the warehouse as
    built and validated. On any failure the new folder is removed and the previous copy stays
    published (AnalystCopyError names the cause)."""
    started = time.perf_counter()
    built_at = built_at or datetime.now(UTC)
    db_path = Path(db_path or warehouse_path())
    target = Path(target) if target else analyst_dir(db_path)
    versions = _versions_dir(target)
    versions.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    folder = versions / f"{stamp}-{secrets.token_hex(4)}"
    folder.mkdir()
    try:
        previous = _published(target)
        if previous is not None:
            previous.trusted = _unchanged_by_lineage(previous, db_path, inputs, lineage)
        tables = _write(db_path, folder, descriptions, previous)
        meta = _write_meta(
            folder / DB_NAME,
            version=copy_version(folder),
            built_at=built_at,
            target=target.absolute(),
            warehouse=db_path.resolve(),
            tables=tables,
        )
        manifest = {
            "schema": MANIFEST_SCHEMA,
            "published_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            **meta,
            "warehouse": str(db_path.resolve()),
            "duckdb_version": duckdb.__version__,
            "database": DB_NAME,
            "layout": LAYOUT,
            **({"inputs": dict(inputs)} if inputs else {}),
            "tables": [
                {
                    "name": t.name,
                    "rows": t.rows,
                    "parquet": t.parquet,
                    "partitioned_by": t.partitioned_by,
                    **({"partitions": t.partitions} if t.partitions is not None else {}),
                    "columns": t.columns,
                    "measure": t.measure,
                    "copied": t.how,
                    **({"select": t.select} if t.select is not None else {}),
                }
                for t in tables
            ],
        }
        (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        previous = _swap(target, folder)
    except (duckdb.Error, OSError) as err:
        shutil.rmtree(folder, ignore_errors=True)
        raise AnalystCopyError(
            f"analyst copy not published ({type(err).__name__}: {str(err).splitlines()[0]}); "
            f"the previous copy at {target} is left as it was"
        ) from err
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    _prune(versions, {folder.resolve(), *([previous.resolve()] if previous else [])})
    return AnalystCopy(target, folder, tables, time.perf_counter() - started, _size(folder))


__all__ = [
    "ANALYST_DIR_ENV",
    "AnalystCopy",
    "AnalystCopyError",
    "AnalystCopyMissing",
    "analyst_db_path",
    "analyst_dir",
    "connect_analyst",
    "copy_version",
    "current_copy",
    "descriptions_of",
    "newer_copy",
    "parquet_dir",
    "publish_analyst_copy",
    "read_manifest",
]
