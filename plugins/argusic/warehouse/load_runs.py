"""Load run records into DuckDB (raw layer), idempotently by attempt_id.

The raw layer is the only thing this module writes; every number is computed by dbt from it.
DuckDB has one writer: callers serialise ingest and build (the cycle DAG runs them as single tasks
in a one-slot pool; every writer holds `writer_lock`, and readers wait for it: see
`argusic.warehouse.lock`).

Run records are hostile input: each file is read with a size cap as strict UTF-8 JSON, validated
against the contract (ids follow the attempt id grammar and agree with the fields), and its evidence
URIs must be where their sha256 puts them in the configured store. A refusal names the file and the
field, and loads nothing of the batch.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from argusic.attempts.agents import known_agents
from argusic.core.evidence import record_evidence_problems
from argusic.core.record import ID_PART_RE, RecordError, RecordFile, RunRecord
from argusic.core.settings import evidence_url, warehouse_path
from argusic.cycle.tally import read_run_records, require_valid_attempts
from argusic.sources.pool import load_pool
from argusic.warehouse.db import connect
from argusic.warehouse.load_judging import (
    HintsIngestError,
    compute_change_similarity,
    hints_files,
    judgement_files,
    load_hints,
    load_judgements,
)
from argusic.warehouse.load_repair import (
    RepairIngestResult,
    batch_result,
    ingest_repair_task,
    load_batch,
    read_batch,
)
from argusic.warehouse.lock import writer_lock
from argusic.warehouse.schema import COLUMNS, migrate_raw

# Folders never searched for run records: a harness's output (`out/`, written by the project and the
# agent under test: a record found there would be forged), `argusic reproduce`'s reproductions (never
# loaded: `argusic ingest runs/` skips them; named directly, each is refused) and hidden working folders.
SKIPPED_FOLDERS = frozenset({"out", "reproductions"})
RECORD_NAMES = "run_record.json or *.record.json"


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
    repair: RepairIngestResult | None = None  # repair items, validations and grades loaded with them

    def counts(self) -> dict[str, int]:
        """What a task returns (XCom-safe): files, inserted, already_present, and repair_<kind> for the
        repair records loaded with them."""
        counts = {"files": self.files, "inserted": self.inserted, "already_present": self.already_present}
        if self.repair is not None:
            counts |= {f"repair_{kind}": n for kind, n in self.repair.counts().items()}
        return counts


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


def _checked(path: Path, record: RunRecord, url: str, known_agents: set[str] | None) -> None:
    """Refuse a parsed record that may not be loaded (IngestError naming the file and the field)."""
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


def _batch(
    files: Iterable[Path | RecordFile], known_agents: set[str] | None, store_url: str | None
) -> list[RecordFile]:
    """Parse each file not parsed yet (once), check every record, refuse the whole batch on the first
    bad one."""
    records: list[RecordFile] = []
    seen: dict[str, Path] = {}
    url = store_url or evidence_url()
    for entry in files:
        if isinstance(entry, RecordFile):
            loaded = entry
        else:
            try:
                loaded = RecordFile.load(entry)
            except RecordError as err:
                raise IngestError(str(err)) from None
        path, record = loaded.path, loaded.record
        _checked(path, record, url, known_agents)
        if record.attempt_id in seen:
            raise IngestError(f"{path}: attempt_id {record.attempt_id!r} also in {seen[record.attempt_id]}")
        seen[record.attempt_id] = path
        records.append(loaded)
    return records


def validate_batch(
    files: list[Path], known_agents: set[str] | None = None, store_url: str | None = None
) -> list[RunRecord]:
    """Parse every file; refuse the whole batch on the first bad record.

    Checked for each: size, encoding, JSON, the contract (ids and their agreement), the agent, the
    evidence URIs (inside the store at `store_url`, ARGUSIC_EVIDENCE_URL by default, under the key
    of their sha256), that it is not a reproduction (``reproduces`` set: a reproduction is compared
    with its original, never loaded), and that no attempt id comes twice."""
    return [loaded.record for loaded in _batch(files, known_agents, store_url)]


def ingest(
    paths: Iterable[Path | RecordFile],
    db_path: Path | None = None,
    known_agents: set[str] | None = None,
    store_url: str | None = None,
    repair_paths: Iterable[Path | str] = (),
) -> IngestResult:
    """Load run records, keyed by attempt_id: a record already present is left as it is.

    `paths`: record files and folders, or records a step of the same task parsed already
    (RecordFile: checked, not parsed again). `repair_paths`: repair items, validations and grades to
    load with them (``argusic.warehouse.load_repair``; a cycle's repair attempts' grades).

    A record that reuses a known attempt_id with different content is refused: evidence and records
    are write-once. Everything is read and checked before the warehouse is locked, then loaded under
    one writer lock in one transaction: a refusal loads nothing. Evidence URIs must lie in the store
    at `store_url` (ARGUSIC_EVIDENCE_URL by default).
    """
    path = db_path or warehouse_path()
    entries: dict[Path, Path | RecordFile] = {}
    for given in paths:
        if isinstance(given, RecordFile):
            entries.setdefault(given.path, given)
        else:
            entries.update((f, f) for f in record_files([Path(given)]) if f not in entries)
    loaded = _batch(entries.values(), known_agents, store_url)
    repair_paths = [Path(p) for p in repair_paths]
    repair = read_batch(repair_paths) if repair_paths else None
    records = [r.record for r in loaded]
    files = [r.path for r in loaded]
    with writer_lock(path), connect(path) as con:
        migrate_raw(con)  # the repair tables too
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
            if repair is not None:  # after the run records, in the same transaction
                load_batch(con, repair)
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
        repair=None if repair is None else batch_result(repair),
    )


class PoolEntriesError(ValueError):
    """A pool that cannot be loaded as given (the message names the entry and the problem)."""


COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


def load_pool_entries(pool_path: Path, db_path: Path | None = None) -> int:
    """Load a cycle's pool (its projects at their pinned commits) into raw.pool_entries; the number of
    entries added. Idempotent: an entry already loaded is left alone; one loaded with another commit,
    repository or tier is refused (a cycle's pool never changes once drawn)."""
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
    "IngestError",
    "IngestResult",
    "PoolEntriesError",
    "ingest",
    "load_pool_entries",
    "record_files",
    "validate_batch",
]


def ingest_cycle_records(
    cycle_id: str, record_paths: Sequence[str | Path | RecordFile], repair_paths: Iterable[str] = ()
) -> dict[str, int]:
    """The cycle's ingest step: refuse a run that planned nothing or whose attempts are all invalid
    (CycleFailed: nothing loaded, so nothing can be published), else load its records, with the
    repair items and grades of its repair attempts (`repair_paths`) under the same lock, in the same
    transaction. Counts: files, inserted, already_present, and repair_<kind> when repair paths are
    given."""
    records = read_run_records(record_paths)  # each parsed once: tallied and loaded from these
    require_valid_attempts(cycle_id, records)
    result = ingest(records, known_agents=known_agents(), repair_paths=repair_paths)
    return result.counts()


def ingest_records(record_paths: list[str]) -> dict[str, int]:
    return ingest([Path(p) for p in record_paths], known_agents=known_agents()).counts()


def ingest_repair_records(paths: list[str]) -> dict[str, int]:
    """Load repair items, validations and grades (files or folders: the items folder, the cycle's
    grades) into raw.repair_*; counts by kind. After the run records: a grade of a repair attempt
    is attributed to its agent through the attempt's run record (dbt: int_repair_grades_attributed).
    A cycle loads its repair attempts' grades with its run records instead (ingest_cycle_records)."""
    return ingest_repair_task(paths)
