"""Load run records into DuckDB (raw layer), idempotently by attempt_id.

The raw layer is the only thing this module writes; every number is computed by dbt from it.
DuckDB has one writer: callers serialise ingest and build (the cycle DAG runs them as single tasks
in a one-slot pool; every writer holds `writer_lock`, and readers wait for it: see
`argusic.warehouse_lock`).

Run records are hostile input: each file is read with a size cap as strict UTF-8 JSON, validated
against the contract (ids follow the attempt id grammar and agree with the fields), and its evidence
URIs must be where their sha256 puts them in the configured store. A refusal names the file and the
field, and loads nothing of the batch.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from argusic.core.evidence import record_evidence_problems
from argusic.core.record import RecordError, RunRecord, load_record_file
from argusic.core.settings import evidence_url, warehouse_path
from argusic.decisions import ddl as decisions_ddl
from argusic.judging.ingest import (
    HintsIngestError,
    compute_change_similarity,
    hints_files,
    judgement_files,
    load_hints,
    load_judgements,
    migrate_judging,
)
from argusic.repair.ingest import migrate_repair
from argusic.warehouse_lock import WarehouseBusy, open_duckdb, writer_lock

# Folders never searched for run records: a harness's output (`out/`, written by the project and the
# agent under test: a record found there would be forged), `argusic reproduce`'s reproductions (never
# loaded: `argusic ingest runs/` skips them; named directly, each is refused) and hidden working folders.
SKIPPED_FOLDERS = frozenset({"out", "reproductions"})
RECORD_NAMES = "run_record.json or *.record.json"

RAW_DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
CREATE TABLE IF NOT EXISTS raw.run_records (
    attempt_id            VARCHAR PRIMARY KEY,
    cycle_id              VARCHAR NOT NULL,
    purpose               VARCHAR NOT NULL,
    agent_id              VARCHAR NOT NULL,
    project_id            VARCHAR NOT NULL,
    commit_sha            VARCHAR NOT NULL,
    tier                  VARCHAR NOT NULL,
    attempt_no            INTEGER NOT NULL,
    methodology_version   VARCHAR NOT NULL,
    started_at            TIMESTAMP NOT NULL,  -- UTC
    ended_at              TIMESTAMP NOT NULL,  -- UTC
    budget_seconds        INTEGER NOT NULL,
    end_reason            VARCHAR NOT NULL,
    invalid_reason        VARCHAR,
    executor              VARCHAR,
    is_demo               BOOLEAN NOT NULL,
    rerun_of              VARCHAR,
    log_sha256            VARCHAR,
    log_uri               VARCHAR,
    log_bytes             BIGINT,
    recording_sha256      VARCHAR,
    recording_uri         VARCHAR,
    recording_bytes       BIGINT,
    report_sha256         VARCHAR,
    report_uri            VARCHAR,
    report_bytes          BIGINT,
    has_report            BOOLEAN NOT NULL,
    install_ok            BOOLEAN,
    ran_ok                BOOLEAN,
    errors_encountered    INTEGER,
    errors_fixed          INTEGER,
    test_depth            VARCHAR,
    verified_how          VARCHAR,
    final_state           VARCHAR,
    key_kind              VARCHAR,
    harness_name          VARCHAR,
    harness_version       VARCHAR,
    record_json           JSON NOT NULL
);
-- Added after the first release; older warehouse files gain them on the next ingest.
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS masking_applied BOOLEAN;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS presentation_withheld BOOLEAN;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS effective_budget_seconds INTEGER;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS served_log_uri VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS served_recording_uri VARCHAR;
-- The environment (issue #15), flattened from record.environment; null for older records.
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS harness_edition VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS scaffold_sha256 VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS image_role VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS image_reference VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS image_digest VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS instructions_version VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS instructions_sha256 VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS limit_cpus DOUBLE;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS limit_memory_bytes BIGINT;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS limit_pids BIGINT;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS limit_disk_bytes BIGINT;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS network_mode VARCHAR;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS limit_budget_seconds INTEGER;
ALTER TABLE raw.run_records ADD COLUMN IF NOT EXISTS display VARCHAR;
"""

# Column comments of the raw layer (DuckDB `COMMENT ON`, shown by duckdb_columns() and carried into the
# analyst copy); the marts' come from their dbt descriptions (argusic.analyst).
RAW_TABLE_COMMENT = (
    "The run records (argusic.run_record/1) as loaded: checked, write-once. Grain: one row per attempt "
    "(attempt_id). Every number is computed from it by dbt (marts.*)."
)
RAW_COLUMN_COMMENTS = {
    "attempt_id": "<cycle_id>.<purpose>.<agent_id>.<project_id>.a<attempt_no>[.r<n> for the n-th rerun]",
    "cycle_id": "Benchmark cycle (YYYY-MM, optional suffix)",
    "purpose": "board | verdict | repair (repair attempts are graded apart: marts.repair_*)",
    "agent_id": "Agent (reference.agents)",
    "project_id": "Project (from the cycle's pool)",
    "commit_sha": "Pinned commit the attempt ran against",
    "tier": "standard | heavy | gpu (sets the budget)",
    "attempt_no": "1..3 within the set; a rerun keeps the number it replaces",
    "methodology_version": "Edition the attempt was measured under",
    "started_at": "Start (UTC)",
    "ended_at": "End (UTC)",
    "budget_seconds": "The tier's budget in seconds (the real one, also in scaled runs)",
    "end_reason": "completed | timeout | cancelled | harness_error",
    "invalid_reason": "Reason the pipeline marked the attempt invalid when it recorded it (null if none)",
    "executor": "docker | local (development only, no isolation)",
    "is_demo": "Ran with scaled-down budgets (demo or dry run)",
    "rerun_of": "attempt_id this attempt reruns",
    "log_sha256": "sha256 of the raw log",
    "log_uri": "Raw log in the evidence store (private: may hold unmasked output)",
    "log_bytes": "Size of the raw log",
    "recording_sha256": "sha256 of the raw asciicast recording",
    "recording_uri": "Raw recording in the evidence store (private)",
    "recording_bytes": "Size of the raw recording",
    "report_sha256": "sha256 of the agent's report.json",
    "report_uri": "The agent's report in the evidence store",
    "report_bytes": "Size of the report",
    "has_report": "The harness could read the agent's report",
    "install_ok": "Report: installed",
    "ran_ok": "Report: ran or tested successfully",
    "errors_encountered": "Report: errors met",
    "errors_fixed": "Report: errors fixed",
    "test_depth": "Report: tier1_real | tier2_mock | tier3_none",
    "verified_how": "Report: how the agent verified the result",
    "final_state": "Report: where the agent left the project",
    "key_kind": "Model key: per_run | shared | none",
    "harness_name": "Harness that drove the agent",
    "harness_version": "Its version",
    "record_json": "The whole run record as loaded (not in the analyst copy)",
    "masking_applied": "Live credentials were masked in the served copies",
    "presentation_withheld": "The served copies were withheld (could not be verified clean)",
    "effective_budget_seconds": "Budget actually allowed in a scaled run (null: budget_seconds)",
    "served_log_uri": "Served (masked) log shown to the public",
    "served_recording_uri": "Served (masked) recording shown to the public",
    "harness_edition": "Harness changelog edition the attempt ran under (reference.harness_editions; "
    "null: recorded before environments were)",
    "scaffold_sha256": "sha256 over the harness files handed to the container",
    "image_role": "runner | agents: which image the attempt ran in (null: local executor, no image)",
    "image_reference": "The image's name as asked for (a tag: rebuilt in place, so not an identity)",
    "image_digest": "Content digest (image id, sha256:...) of the image the attempt ran in",
    "instructions_version": "Version of the standard instructions the harness handed the agent",
    "instructions_sha256": "sha256 of the standard instructions template",
    "limit_cpus": "Container CPU limit (null: none set, local executor)",
    "limit_memory_bytes": "Container memory limit in bytes (null: none set)",
    "limit_pids": "Container process limit (null: none set)",
    "limit_disk_bytes": "Writable areas' size cap in bytes, /out and work area together (null: none set)",
    "network_mode": "Docker network mode of the container (host: local executor)",
    "limit_budget_seconds": "Budget the attempt was actually allowed, from its environment (scaled in demos)",
    "display": "Virtual display the harness found, WIDTHxHEIGHTxDEPTH (null: none)",
}


def _raw_comments_sql() -> str:
    def literal(text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    lines = [f"COMMENT ON TABLE raw.run_records IS {literal(RAW_TABLE_COMMENT)};"]
    lines += [
        f"COMMENT ON COLUMN raw.run_records.{c} IS {literal(t)};" for c, t in RAW_COLUMN_COMMENTS.items()
    ]
    return "\n".join(lines) + "\n"


# Columns flattened out of record_json after the first release. A warehouse that predates a column
# gets it filled from the records already loaded (the same values ingest writes), once, when the
# column is added: record_json is the record itself, so this only copies what is already there.
BACKFILL = {
    "effective_budget_seconds": "TRY_CAST(record_json ->> '$.effective_budget_seconds' AS INTEGER)",
    "served_log_uri": "record_json ->> '$.presentation.log.uri'",
    "served_recording_uri": "record_json ->> '$.presentation.recording.uri'",
    "harness_edition": "record_json ->> '$.environment.harness_edition'",
    "scaffold_sha256": "record_json ->> '$.environment.scaffold_sha256'",
    "image_role": "record_json ->> '$.environment.images[0].role'",
    "image_reference": "record_json ->> '$.environment.images[0].reference'",
    "image_digest": "record_json ->> '$.environment.images[0].digest'",
    "instructions_version": "record_json ->> '$.environment.instructions.version'",
    "instructions_sha256": "record_json ->> '$.environment.instructions.sha256'",
    "limit_cpus": "TRY_CAST(record_json ->> '$.environment.limits.cpus' AS DOUBLE)",
    "limit_memory_bytes": "TRY_CAST(record_json ->> '$.environment.limits.memory_bytes' AS BIGINT)",
    "limit_pids": "TRY_CAST(record_json ->> '$.environment.limits.pids' AS BIGINT)",
    "limit_disk_bytes": "TRY_CAST(record_json ->> '$.environment.limits.disk_bytes' AS BIGINT)",
    "network_mode": "record_json ->> '$.environment.limits.network'",
    "limit_budget_seconds": "TRY_CAST(record_json ->> '$.environment.limits.budget_seconds' AS INTEGER)",
    "display": (
        "CASE WHEN json_type(record_json, '$.environment.display') = 'OBJECT' THEN "
        "concat_ws('x', record_json ->> '$.environment.display.width', "
        "record_json ->> '$.environment.display.height', record_json ->> '$.environment.display.depth') END"
    ),
}

COLUMNS = [
    "attempt_id", "cycle_id", "purpose", "agent_id", "project_id", "commit_sha", "tier", "attempt_no",
    "methodology_version", "started_at", "ended_at", "budget_seconds", "end_reason", "invalid_reason",
    "executor", "is_demo", "rerun_of",
    "log_sha256", "log_uri", "log_bytes", "recording_sha256", "recording_uri", "recording_bytes",
    "report_sha256", "report_uri", "report_bytes", "has_report", "install_ok", "ran_ok",
    "errors_encountered", "errors_fixed", "test_depth", "verified_how", "final_state",
    "key_kind", "harness_name", "harness_version", "record_json",
    "masking_applied", "presentation_withheld",
    "effective_budget_seconds", "served_log_uri", "served_recording_uri",
    "harness_edition", "scaffold_sha256", "image_role", "image_reference", "image_digest",
    "instructions_version", "instructions_sha256", "limit_cpus", "limit_memory_bytes", "limit_pids",
    "limit_disk_bytes", "network_mode", "limit_budget_seconds", "display",
]  # fmt: skip
assert set(COLUMNS) == set(RAW_COLUMN_COMMENTS), "every raw column has a comment"
RAW_DDL += _raw_comments_sql()

# The projects each cycle's pool pinned (runs/pools/<cycle>/pool.json), loaded by `load_pool_entries`:
# the projects whose verdict is judged at that commit (marts.verdict_plan). Write-once per
# (cycle_id, project_id), like the pool itself.
POOL_DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
CREATE TABLE IF NOT EXISTS raw.pool_entries (
    cycle_id    VARCHAR NOT NULL,
    project_id  VARCHAR NOT NULL,
    commit_sha  VARCHAR NOT NULL,
    repo_url    VARCHAR NOT NULL,
    tier        VARCHAR NOT NULL,
    visibility  VARCHAR NOT NULL,
    PRIMARY KEY (cycle_id, project_id)
);
"""


def _row(record: RunRecord) -> tuple:
    ev = record.evidence
    rep = record.report

    def ref(name: str, part: str):
        item = getattr(ev, name)
        return None if item is None else getattr(item, part)

    def served(name: str):
        item = getattr(record.presentation, name) if record.presentation else None
        return None if item is None else item.uri

    return (
        record.attempt_id, record.cycle_id, record.purpose, record.agent_id, record.project_id,
        record.commit, record.tier, record.attempt_no, record.methodology_version,
        record.started_at.replace(tzinfo=None), record.ended_at.replace(tzinfo=None),
        record.budget_seconds, record.end_reason, record.invalid_reason,
        record.executor, record.demo, record.rerun_of,
        ref("log", "sha256"), ref("log", "uri"), ref("log", "bytes"),
        ref("recording", "sha256"), ref("recording", "uri"), ref("recording", "bytes"),
        ref("report", "sha256"), ref("report", "uri"), ref("report", "bytes"),
        rep is not None,
        rep.install_ok if rep else None, rep.ran_ok if rep else None,
        rep.errors_encountered if rep else None, rep.errors_fixed if rep else None,
        rep.test_depth if rep else None, rep.verified_how if rep else None,
        rep.final_state if rep else None,
        record.key.kind if record.key else None,
        record.harness.name if record.harness else None,
        record.harness.version if record.harness else None,
        record.to_json(),
        record.presentation.masking_applied if record.presentation else None,
        record.presentation.withheld if record.presentation else None,
        record.effective_budget_seconds,
        served("log"), served("recording"),
        *_environment_values(record),
    )  # fmt: skip


def _environment_values(record: RunRecord) -> tuple:
    """The environment columns of a record (all null for a record written before environments were).
    The image is the first the attempt names: the one it ran in (the record keeps every image)."""
    env = record.environment
    if env is None:
        return (None,) * 14
    image = env.images[0] if env.images else None
    limits, display = env.limits, env.display
    return (
        env.harness_edition, env.scaffold_sha256,
        image.role if image else None, image.reference if image else None, image.digest if image else None,
        env.instructions.version, env.instructions.sha256,
        limits.cpus, limits.memory_bytes, limits.pids, limits.disk_bytes, limits.network,
        limits.budget_seconds,
        f"{display.width}x{display.height}x{display.depth}" if display else None,
    )  # fmt: skip


@dataclass(frozen=True)
class IngestResult:
    files: int
    inserted: int
    already_present: int
    hints: int = 0  # hints documents (hints.json beside a record) written, new or changed (issue #14)
    similarity_pairs: int = 0  # pairs of repair attempts' patches compared (raw.change_similarity)
    judgements: int = 0  # model judges' judgements (judging/*.json beside a record) written (Layer 2)


class IngestError(ValueError):
    """The batch was refused; nothing of it was loaded."""


def record_files(paths: Iterable[Path]) -> list[Path]:
    """Expand files and folders into record files, each once.

    A folder is searched recursively, without following links, for files named run_record.json or
    *.record.json, skipping harness output folders (`out/`) and hidden folders; a folder holding
    none is refused (never a silent 0). A file given by name must be named like a record."""
    found: dict[Path, None] = {}
    for path in paths:
        path = Path(path)
        if path.is_dir():
            inside = _records_under(path)
            if not inside:
                raise IngestError(
                    f"{path}: no run records found (looked for {RECORD_NAMES}, not inside out/ or "
                    "hidden folders)"
                )
            found.update(dict.fromkeys(inside))
        elif path.is_file() or path.is_symlink():
            if not _is_record_name(path):
                raise IngestError(f"{path}: not a run record file name (expected {RECORD_NAMES})")
            found[path] = None
        else:
            raise IngestError(f"{path}: no such file or folder")
    return list(found)


def _records_under(folder: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(folder):  # links to folders are not followed
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS and not d.startswith("."))
        found.extend(Path(root) / name for name in sorted(files) if _is_record_name(Path(name)))
    return found


def _is_record_name(path: Path) -> bool:
    return path.name == "run_record.json" or path.name.endswith(".record.json")


def validate_batch(
    files: list[Path], known_agents: set[str] | None = None, store_url: str | None = None
) -> list[RunRecord]:
    """Parse every file; refuse the whole batch on the first bad record.

    Checked for each: size, encoding, JSON, the contract (ids and their agreement), the agent, the
    evidence URIs (inside the store at `store_url`, ARGUSIC_EVIDENCE_URL by default, under the key
    of their sha256), that it is not a reproduction (``reproduces`` set: a reproduction is compared
    with its original, never loaded), and that no attempt id comes twice."""
    records: list[RunRecord] = []
    seen: dict[str, Path] = {}
    url = store_url or evidence_url()
    for path in files:
        try:
            record = load_record_file(path)
        except RecordError as err:
            raise IngestError(str(err)) from None
        if problems := record_evidence_problems(record, url):
            details = "; ".join(f"{field}: {problem}" for field, problem in problems)
            raise IngestError(f"{path}: invalid run record: {details}")
        if record.reproduces is not None:
            raise IngestError(
                f"{path}: refused: reproduces: this record reproduces {record.reproduces} (argusic "
                "reproduce); a reproduction is compared with its original and never loaded into the "
                "warehouse or shown on the board"
            )
        if known_agents is not None and record.agent_id not in known_agents:
            raise IngestError(
                f"{path}: invalid run record: agent_id: unknown agent {record.agent_id!r} "
                f"(not in the agents registry dbt_project/seeds/agents.csv)"
            )
        if record.attempt_id in seen:
            raise IngestError(f"{path}: attempt_id {record.attempt_id!r} also in {seen[record.attempt_id]}")
        seen[record.attempt_id] = path
        records.append(record)
    return records


def connect(db_path: Path | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection to the warehouse that waits rather than fails when another process holds it.

    Read-only: waits for the writer (unless this thread is the writer) and for any connection open
    for writing elsewhere. Read-write: callers hold `writer_lock`; waits for connections open
    elsewhere (an analyst's). WarehouseBusy after ARGUSIC_LOCK_TIMEOUT seconds of waiting."""
    path = Path(db_path or warehouse_path())
    if read_only:
        if not path.exists():
            raise FileNotFoundError(f"warehouse {path} does not exist yet: run `argusic ingest` first")
        return open_duckdb(path, read_only=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    return open_duckdb(path)


def migrate_raw(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Create the raw layer, or bring an older one up to RAW_DDL; the columns added, by name.

    A column flattened out of record_json (BACKFILL) is filled from the records already loaded when
    it is added, so an older warehouse answers the new columns for every attempt."""
    before = {
        row[0]
        for row in con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'raw' AND table_name = 'run_records'"
        ).fetchall()
    }
    con.execute(RAW_DDL)
    con.execute(decisions_ddl())  # empty decision tables exist before anyone decides: marts read them
    con.execute(POOL_DDL)  # empty until a pool is loaded: marts.verdict_plan reads it
    migrate_repair(con)  # repair items, validations and grades (issue #13): empty until loaded
    migrate_judging(con)  # hints and change similarity (issue #14): empty until loaded
    if not before:
        return []
    added = [c for c in COLUMNS if c not in before]
    fills = [f"{c} = {BACKFILL[c]}" for c in added if c in BACKFILL]
    if fills:
        con.execute(f"UPDATE raw.run_records SET {', '.join(fills)}")
    return added


def ingest(
    paths: Iterable[Path],
    db_path: Path | None = None,
    known_agents: set[str] | None = None,
    store_url: str | None = None,
) -> IngestResult:
    """Load run records, keyed by attempt_id: a record already present is left as it is.

    A record that reuses a known attempt_id with different content is refused: evidence and records
    are write-once. The batch is one transaction; a refusal loads nothing. Evidence URIs must lie in
    the store at `store_url` (ARGUSIC_EVIDENCE_URL by default).
    """
    path = db_path or warehouse_path()
    files = record_files([Path(p) for p in paths])
    records = validate_batch(files, known_agents, store_url)
    with writer_lock(path), connect(path) as con:
        migrate_raw(con)
        con.execute("BEGIN")
        try:
            inserted = already = 0
            for record in records:
                existing = con.execute(
                    "SELECT record_json FROM raw.run_records WHERE attempt_id = ?", [record.attempt_id]
                ).fetchone()
                if existing is not None:
                    if json.loads(existing[0]) != json.loads(record.to_json()):
                        raise IngestError(
                            f"attempt_id {record.attempt_id!r}: already loaded with different content; "
                            "run records are write-once"
                        )
                    already += 1
                    continue
                placeholders = ", ".join("?" for _ in COLUMNS)
                con.execute(
                    f"INSERT INTO raw.run_records ({', '.join(COLUMNS)}) VALUES ({placeholders})",
                    list(_row(record)),
                )
                inserted += 1
            # hints are computed beside each attempt's record (argusic.judging.hints); a bad one
            # refuses the batch like a bad record: they come from the same attempt folder
            beside = {path.parent / "hints.json": r.attempt_id for path, r in zip(files, records, strict=True)
                      if path.name == "run_record.json"}  # fmt: skip
            hints = load_hints(con, hints_files(files), beside)
            # judgements of model judges lie beside the record too (argusic.judging.judges)
            attempt_of = {path: r.attempt_id for path, r in zip(files, records, strict=True)
                          if path.name == "run_record.json"}  # fmt: skip
            judged = {j: attempt_of[rec] for j, rec in judgement_files(files).items() if rec in attempt_of}
            judgements = load_judgements(con, list(judged), judged)
            pairs = compute_change_similarity(con, store_url)
            con.execute("COMMIT")
        except HintsIngestError as err:
            con.execute("ROLLBACK")
            raise IngestError(str(err)) from None
        except Exception:
            con.execute("ROLLBACK")
            raise
    return IngestResult(
        files=len(files),
        inserted=inserted,
        already_present=already,
        hints=hints,
        similarity_pairs=pairs,
        judgements=judgements,
    )


class PoolEntriesError(ValueError):
    """A pool that cannot be loaded as given (the message names the entry and the problem)."""


COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


def load_pool_entries(pool_path: Path, db_path: Path | None = None) -> int:
    """Load a cycle's pool (its projects at their pinned commits) into raw.pool_entries; the number of
    entries added. Idempotent: an entry already loaded is left alone; one loaded with another commit,
    repository or tier is refused (a cycle's pool never changes once drawn)."""
    from argusic.core.record import ID_PART_RE
    from argusic.sources.pool import load_pool

    pool = load_pool(Path(pool_path))
    problems = []
    for e in pool.entries:
        for name, value in (("cycle_id", pool.cycle_id), ("project_id", e.project_id)):
            if not ID_PART_RE.fullmatch(value):
                problems.append(f"{e.project_id!r}: {name} {value!r} is not [A-Za-z0-9_-]{{1,128}}")
        if not COMMIT_RE.fullmatch(e.commit):
            problems.append(f"{e.project_id!r}: commit {e.commit!r} is not a 40-hex SHA-1")
    if problems:
        raise PoolEntriesError(f"{pool_path}: " + "; ".join(problems))
    rows = [(pool.cycle_id, e.project_id, e.commit, e.repo_url, e.tier, e.visibility) for e in pool.entries]
    path = db_path or warehouse_path()
    with writer_lock(path), connect(path) as con:
        migrate_raw(con)
        con.execute("BEGIN")
        try:
            added = 0
            for row in rows:
                seen = con.execute(
                    "SELECT commit_sha, repo_url, tier, visibility FROM raw.pool_entries "
                    "WHERE cycle_id = ? AND project_id = ?",
                    list(row[:2]),
                ).fetchone()
                if seen is not None:
                    if tuple(seen) != row[2:]:
                        raise PoolEntriesError(
                            f"{pool_path}: {row[1]!r} of cycle {row[0]} is already loaded as {tuple(seen)}, "
                            f"not {row[2:]}: a cycle's pool never changes once drawn"
                        )
                    continue
                con.execute("INSERT INTO raw.pool_entries VALUES (?, ?, ?, ?, ?, ?)", list(row))
                added += 1
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    return added


__all__ = [
    "COLUMNS",
    "RAW_DDL",
    "IngestError",
    "IngestResult",
    "PoolEntriesError",
    "WarehouseBusy",
    "connect",
    "ingest",
    "load_pool_entries",
    "migrate_raw",
    "record_files",
    "validate_batch",
    "writer_lock",
]


def ingest_cycle_records(cycle_id: str, record_paths: list[str]) -> dict[str, int]:
    """The cycle's ingest step: refuse a run that planned nothing or whose attempts are all invalid
    (CycleFailed: nothing loaded, so nothing can be published), else load its records."""
    from argusic.cycle.tally import require_valid_attempts

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
