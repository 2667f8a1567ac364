"""Load repair items, their validations and grades into the warehouse's raw layer (issue #13).

Three record kinds, told apart by their ``schema`` field (a validation also by its file name):
``argusic.repair_item/1`` -> raw.repair_items (one row per item revision), ``*.validation.json``
(``argusic.repair_validation/1``) -> raw.repair_validations (one row per validation run) and
``argusic.repair_grade/1`` -> raw.repair_grades (one row per graded patch). Every number about them
is computed by dbt (models ``stg_repair_*``, ``repair_*``); this module only checks and loads.

Keyed and idempotent: a re-ingest replaces the rows of the same key (an item revision; every run of
an item revision's validation; a grade id), so loading the same files twice changes nothing. The
batch is one transaction: a refusal loads nothing of it.

Records are hostile input (they come out of containers and out of item repositories): each file is
read with a size cap, without following links, as strict UTF-8 JSON (no NaN, no duplicate keys);
ids follow the id grammar of ``argusic.core.record``; a refusal names the file and the field.
H1's pydantic models (``argusic.repair.items``) own the full contract; the checks here are the
minimum the warehouse needs to hold rows it can trust (types, ids, enumerations, sizes).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from argusic.core.record import ATTEMPT_ID_RE, ID_PART_RE
from argusic.core.safe_io import UnsafeDocument, read_json_document
from argusic.core.settings import warehouse_path
from argusic.repair.grader import VERDICTS  # the seven, defined once by the grader
from argusic.repair.items import load_item
from argusic.warehouse.db import connect
from argusic.warehouse.lock import writer_lock
from argusic.warehouse.schema import GRADE_COLUMNS, ITEM_COLUMNS, VALIDATION_COLUMNS, migrate_raw

ITEM_SCHEMA = "argusic.repair_item/1"
VALIDATION_SCHEMA = "argusic.repair_validation/1"
GRADE_SCHEMA = "argusic.repair_grade/1"
SCHEMAS = (ITEM_SCHEMA, VALIDATION_SCHEMA, GRADE_SCHEMA)

# An item holds two patches and the test states: at most 4 MiB (contract). A grade's results map
# and a validation's runs are of the same order; the same cap for all three.
MAX_REPAIR_RECORD_BYTES = 4 << 20
# Text fields copied into columns are cut to this many characters (the whole record stays on disk).
MAX_TEST_ID_CHARS = 2048
MAX_LIST_ENTRIES = 100_000

VALIDATION_PATCHES = ("gold", "empty", "partial_gold")
TRACKS = ("basic", "spec")
SOURCE_KINDS = ("merge", "commit", "range")
OUTCOMES = ("passed", "failed", "error", "skipped")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
SOURCE_REF_RE = re.compile(r"^[0-9a-f]{7,40}(\.\.[0-9a-f]{7,40})?$")
IMAGE_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
# A grade id is "<source id>.<item_id>" made safe (argusic.repair.grader.safe_id): id-part characters
# and dots, at most 200; never starting with a dot. It is a key, never a path.
GRADE_ID_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}$")

# Folders never searched (as warehouse.record_files): a harness's output is written by the agent
# under test (a grade found there would be forged); reproductions are never loaded.
SKIPPED_FOLDERS = frozenset({"out", "reproductions"})


class RepairIngestError(ValueError):
    """The batch was refused; nothing of it was loaded. The message names the file and the field."""


@dataclass(frozen=True)
class RepairIngestResult:
    items: int
    validations: int
    validation_runs: int
    grades: int
    skipped: tuple[str, ...] = field(default=())  # JSON files in a searched folder that are none of ours

    def counts(self) -> dict[str, int]:
        """What a task returns (XCom-safe): the counts by kind."""
        return {
            "items": self.items,
            "validations": self.validations,
            "validation_runs": self.validation_runs,
            "grades": self.grades,
            "skipped": len(self.skipped),
        }


# ---------------------------------------------------------------------------------------------------
# Reading: size cap, no links, strict UTF-8, strict JSON
# ---------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------
# Minimal field checks (H1's pydantic models hold the full contract)
# ---------------------------------------------------------------------------------------------------


class _Fields:
    """Typed access to a record's fields; every problem names the file and the field's path."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path, self.kind = path, kind

    def fail(self, name: str, problem: str) -> RepairIngestError:
        return RepairIngestError(f"{self.path}: invalid {self.kind}: {name}: {problem}")

    def get(self, doc: dict[str, Any], name: str, where: str = "") -> Any:
        if name not in doc:
            raise self.fail(where + name, "missing")
        return doc[name]

    def text(
        self,
        doc: dict[str, Any],
        name: str,
        where: str = "",
        *,
        null: bool = False,
        pattern: re.Pattern[str] | None = None,
        choices: Sequence[str] = (),
        limit: int | None = None,
    ) -> str | None:
        value = self.get(doc, name, where)
        if value is None and null:
            return None
        if not isinstance(value, str):
            raise self.fail(where + name, f"a string is expected, not {type(value).__name__}")
        if pattern is not None and not pattern.fullmatch(value):
            raise self.fail(where + name, f"{_shown(value)} does not match {pattern.pattern}")
        if choices and value not in choices:
            raise self.fail(where + name, f"{_shown(value)} is not one of {', '.join(choices)}")
        if limit is not None and len(value) > limit:
            raise self.fail(where + name, f"longer than {limit} characters")
        return value

    def id_part(self, doc: dict[str, Any], name: str, where: str = "", *, null: bool = False) -> str | None:
        value = self.text(doc, name, where, null=null)
        if value is not None and not ID_PART_RE.fullmatch(value):
            raise self.fail(
                where + name, f"{_shown(value)} is not an id part: 1-128 characters of A-Z a-z 0-9 _ -"
            )
        return value

    def boolean(self, doc: dict[str, Any], name: str, where: str = "") -> bool:
        value = self.get(doc, name, where)
        if not isinstance(value, bool):
            raise self.fail(where + name, "true or false is expected")
        return value

    def count(self, doc: dict[str, Any], name: str, where: str = "", *, null: bool = False) -> int | None:
        value = self.get(doc, name, where)
        if value is None and null:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**62:
            raise self.fail(where + name, f"a whole number >= 0 is expected, not {_shown(repr(value))}")
        return value

    def strings(
        self, doc: dict[str, Any], name: str, where: str = "", *, null: bool = False
    ) -> list[str] | None:
        value = self.get(doc, name, where)
        if value is None and null:
            return None
        if not isinstance(value, list) or len(value) > MAX_LIST_ENTRIES:
            raise self.fail(where + name, f"a list of at most {MAX_LIST_ENTRIES} strings is expected")
        for i, entry in enumerate(value):
            if not isinstance(entry, str) or not entry or len(entry) > MAX_TEST_ID_CHARS:
                raise self.fail(
                    f"{where}{name}[{i}]", f"a string of 1-{MAX_TEST_ID_CHARS} characters is expected"
                )
        return value

    def obj(
        self, doc: dict[str, Any], name: str, where: str = "", *, null: bool = False
    ) -> dict[str, Any] | None:
        value = self.get(doc, name, where)
        if value is None and null:
            return None
        if not isinstance(value, dict):
            raise self.fail(where + name, "an object is expected")
        return value

    def timestamp(self, doc: dict[str, Any], name: str, where: str = "") -> datetime:
        value = self.text(doc, name, where, limit=64)
        assert value is not None
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise self.fail(where + name, f"{_shown(value)} is not an ISO 8601 timestamp") from None
        if moment.tzinfo is None:
            raise self.fail(where + name, f"{_shown(value)} has no time zone (UTC expected)")
        return moment.astimezone(UTC).replace(tzinfo=None)

    def image(self, doc: dict[str, Any], where: str = "") -> tuple[str | None, str | None]:
        image = self.obj(doc, "grader_image", where, null=True)
        if image is None:
            return None, None
        reference = self.text(image, "reference", where + "grader_image.", limit=256)
        digest = self.text(image, "digest", where + "grader_image.", null=True, pattern=IMAGE_DIGEST_RE)
        return reference, digest


def _shown(value: str, limit: int = 80) -> str:
    return repr(value) if len(value) <= limit else repr(value[:limit]) + f"... ({len(value)} characters)"


def _name_agrees(path: Path, item_id: str, suffix: str, f: _Fields) -> None:
    if path.name != f"{item_id}{suffix}":
        raise f.fail(
            "item_id",
            f"{item_id!r} does not agree with the file name {path.name!r} (expected {item_id}{suffix})",
        )


# ---------------------------------------------------------------------------------------------------
# Records -> rows
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Item:
    key: tuple[str, str]
    row: tuple


@dataclass(frozen=True)
class _Validation:
    key: tuple[str, str]
    rows: list[tuple]


@dataclass(frozen=True)
class _Grade:
    key: str
    item: tuple[str, str]
    row: tuple


def parse_item(path: Path, doc: dict[str, Any]) -> _Item:
    f = _Fields(path, "repair item")
    f.text(doc, "schema", choices=(ITEM_SCHEMA,))
    item_id = f.id_part(doc, "item_id")
    assert item_id is not None
    revision = f.text(doc, "revision", pattern=SHA256_RE)
    # the current file <project>/<item_id>.json, or a revision the item store keeps:
    # <project>/revisions/<item_id>/<revision>.json
    archived = path.parent.name == item_id and path.parent.parent.name == "revisions"
    if not (archived and path.name == f"{revision}.json"):
        _name_agrees(path, item_id, ".json", f)
    project_id = f.id_part(doc, "project_id")
    repository = f.text(doc, "repository", limit=4096)
    base = f.text(doc, "base", pattern=COMMIT_RE)
    source = f.obj(doc, "source")
    assert source is not None
    source_kind = f.text(source, "kind", "source.", choices=SOURCE_KINDS)
    source_ref = f.text(source, "ref", "source.", pattern=SOURCE_REF_RE)
    track = f.text(doc, "track", choices=TRACKS)
    f.text(doc, "problem_statement", limit=MAX_REPAIR_RECORD_BYTES)
    spec = f.text(doc, "interface_spec", null=True, limit=MAX_REPAIR_RECORD_BYTES)
    if (track == "spec") != (spec is not None):
        raise f.fail(
            "track",
            f"{track!r} but interface_spec is {'set' if spec is not None else 'null'} "
            "(the spec track is exactly the items with an interface spec)",
        )
    test_patch = f.text(doc, "test_patch", limit=MAX_REPAIR_RECORD_BYTES)
    gold_patch = f.text(doc, "gold_patch", limit=MAX_REPAIR_RECORD_BYTES)
    test_files = f.strings(doc, "test_files")
    f.strings(doc, "test_command")
    f.strings(doc, "setup_command", null=True)
    f2p = f.strings(doc, "fail_to_pass")
    p2p = f.strings(doc, "pass_to_pass")
    assert f2p is not None and p2p is not None
    if not f2p:
        raise f.fail("fail_to_pass", "empty: an item needs at least one fail-to-pass test")
    if both := sorted(set(f2p) & set(p2p)):
        raise f.fail("pass_to_pass", f"{_shown(both[0])} is also fail-to-pass")
    split = f.obj(doc, "split", null=True)
    split_values: tuple[str | None, str | None, str | None] = (None, None, None)
    if split is not None:
        original = f.id_part(split, "original", "split.")
        topic = f.id_part(split, "topic", "split.")
        match = f.text(split, "match", "split.", limit=MAX_TEST_ID_CHARS)
        if item_id != f"{original}-{topic}":
            raise f.fail(
                "item_id", f"{item_id!r}: a split item's id is <original>-<topic> ({original}-{topic})"
            )
        split_values = (original, topic, match)
    superseded = f.boolean(doc, "superseded_by_split")
    if superseded and split is not None:
        raise f.fail("superseded_by_split", "a split item is never itself superseded by a split")
    f.obj(doc, "states")
    built_at = f.timestamp(doc, "built_at")
    reference, digest = f.image(doc)
    row = (
        item_id, revision, project_id, repository, base, source_kind, source_ref, track,
        spec is not None, test_files, f2p, p2p,
        len(test_patch.encode()), len(gold_patch.encode()),  # type: ignore[union-attr]
        *split_values, superseded, built_at, reference, digest,
        json.dumps(doc, ensure_ascii=False, sort_keys=True),
    )  # fmt: skip
    return _Item((item_id, revision), row)  # type: ignore[arg-type]


def parse_validation(path: Path, doc: dict[str, Any]) -> _Validation:
    f = _Fields(path, "repair validation")
    if "schema" in doc:
        f.text(doc, "schema", choices=(VALIDATION_SCHEMA,))
    item_id = f.id_part(doc, "item_id")
    assert item_id is not None
    _name_agrees(path, item_id, ".validation.json", f)
    revision = f.text(doc, "revision", pattern=SHA256_RE)
    validated_at = f.timestamp(doc, "validated_at")
    reference, digest = f.image(doc)
    usable = f.boolean(doc, "usable")
    problems = f.strings(doc, "problems")
    runs = f.get(doc, "runs")
    if not isinstance(runs, list) or not runs or len(runs) > 100:
        raise f.fail(
            "runs", "a list of 1-100 runs is expected (a validation runs the gold and the empty patch)"
        )
    rows, seen = [], set()
    for i, run in enumerate(runs):
        where = f"runs[{i}]."
        if not isinstance(run, dict):
            raise f.fail(f"runs[{i}]", "an object is expected")
        patch = f.text(run, "patch", where, choices=VALIDATION_PATCHES)
        run_no = f.count(run, "run_no", where)
        if not run_no or run_no > 99:
            raise f.fail(where + "run_no", "1..99 expected")
        if (patch, run_no) in seen:
            raise f.fail(where + "run_no", f"{patch} run {run_no} appears twice")
        seen.add((patch, run_no))
        verdict = f.text(run, "verdict", where, choices=VERDICTS)
        failing = f.strings(run, "failing_tests", where)
        rows.append(
            (
                item_id,
                revision,
                patch,
                run_no,
                verdict,
                failing,
                usable,
                problems,
                validated_at,
                reference,
                digest,
            )
        )
    return _Validation((item_id, revision), rows)  # type: ignore[arg-type]


def parse_grade(path: Path, doc: dict[str, Any]) -> _Grade:
    f = _Fields(path, "repair grade")
    f.text(doc, "schema", choices=(GRADE_SCHEMA,))
    grade_id = f.text(doc, "grade_id", pattern=GRADE_ID_RE)
    item_id = f.id_part(doc, "item_id")
    revision = f.text(doc, "revision", pattern=SHA256_RE)
    source = f.obj(doc, "source")
    assert source is not None
    source_kind = f.text(source, "kind", "source.", choices=("attempt", "predictions"))
    attempt_id = sha = label = None
    if source_kind == "attempt":
        attempt_id = f.text(source, "attempt_id", "source.", pattern=ATTEMPT_ID_RE)
        for extra in ("file_sha256", "label"):
            if source.get(extra) is not None:
                raise f.fail(f"source.{extra}", "an attempt's grade carries no predictions file or label")
    else:
        sha = f.text(source, "file_sha256", "source.", pattern=SHA256_RE)
        label = f.id_part(source, "label", "source.")  # labels.toml's label or model-<sha256[:8]>
        if source.get("attempt_id") is not None:
            raise f.fail("source.attempt_id", "a predictions grade names no attempt")
    patch_sha = f.text(doc, "patch_sha256", pattern=SHA256_RE)
    patch_bytes = f.count(doc, "patch_bytes")
    excluded = f.strings(doc, "excluded_paths")
    verdict = f.text(doc, "verdict", choices=VERDICTS)
    failing = f.strings(doc, "failing_tests")
    rerun_files = f.get(doc, "rerun_files")
    if not isinstance(rerun_files, list):
        raise f.fail("rerun_files", "a list is expected")
    for i, entry in enumerate(rerun_files):
        where = f"rerun_files[{i}]."
        if not isinstance(entry, dict):
            raise f.fail(f"rerun_files[{i}]", "an object is expected")
        f.text(entry, "file", where, limit=MAX_TEST_ID_CHARS)
        tries = f.count(entry, "tries", where)
        if tries is not None and tries > 3:
            raise f.fail(where + "tries", f"{tries}: a failing file is re-run at most 3 times")
        f.boolean(entry, "passed", where)
    results = f.obj(doc, "results")
    assert results is not None
    for test, outcome in results.items():
        if len(test) > MAX_TEST_ID_CHARS or outcome not in OUTCOMES:
            raise f.fail(
                f"results[{_shown(test)}]", f"outcome {outcome!r} is not one of {', '.join(OUTCOMES)}"
            )
    graded_at = f.timestamp(doc, "graded_at")
    reference, digest = f.image(doc)
    quality = f.obj(doc, "quality")
    assert quality is not None
    empty = f.boolean(quality, "empty_patch", "quality.")
    changed = f.count(quality, "changed_lines", "quality.", null=True)
    gold_changed = f.count(quality, "gold_changed_lines", "quality.")
    lint = f.count(quality, "lint_new_errors", "quality.", null=True)
    suppressions = f.count(quality, "suppressions_added", "quality.", null=True)
    if patch_bytes == 0 and not empty:  # (a patch of only blank lines is empty too, with bytes > 0)
        raise f.fail(
            "quality.empty_patch", "false but patch_bytes is 0: an empty patch file is an empty patch"
        )
    detail = f.text(doc, "detail", null=True, limit=4096) if "detail" in doc else None
    if verdict == "resolved_after_rerun" and not any(e.get("passed") for e in rerun_files):
        raise f.fail("verdict", "resolved_after_rerun but no re-run file passed")
    row = (
        grade_id, item_id, revision, source_kind, attempt_id, sha, label, patch_sha, patch_bytes,
        excluded, verdict, failing, json.dumps(rerun_files), json.dumps(results, sort_keys=True),
        graded_at, reference, digest, empty, changed, gold_changed, lint, suppressions, detail,
        json.dumps(doc, ensure_ascii=False, sort_keys=True),
    )  # fmt: skip
    return _Grade(grade_id, (item_id, revision), row)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------------


def _is_run_record_name(path: Path) -> bool:
    return path.name == "run_record.json" or path.name.endswith(".record.json")


def repair_files(paths: Iterable[Path]) -> list[tuple[Path, bool]]:
    """Expand files and folders into (candidate file, named directly). A folder is searched
    recursively without following links, skipping ``out/``, ``reproductions/`` and hidden folders,
    for ``*.json`` files other than run records."""
    found: dict[Path, bool] = {}
    for path in paths:
        path = Path(path)
        if path.is_symlink():
            raise RepairIngestError(
                f"{path}: is a symbolic link; repair records are read without following links"
            )
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS and not d.startswith("."))
                for name in sorted(files):
                    candidate = Path(root) / name
                    if name.endswith(".json") and not _is_run_record_name(candidate):
                        found.setdefault(candidate, False)
        elif path.is_file():
            if not path.name.endswith(".json"):
                raise RepairIngestError(f"{path}: not a repair record file name (expected *.json)")
            found[path] = True
        else:
            raise RepairIngestError(f"{path}: no such file or folder")
    return list(found.items())


@dataclass
class _Batch:
    items: dict[tuple[str, str], _Item] = field(default_factory=dict)
    validations: dict[tuple[str, str], _Validation] = field(default_factory=dict)
    grades: dict[str, _Grade] = field(default_factory=dict)
    sources: dict[object, Path] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def claim(self, key: object, path: Path, what: str) -> None:
        if key in self.sources:
            raise RepairIngestError(f"{path}: {what} {key!r} also in {self.sources[key]}")
        self.sources[key] = path


def _load_with_core(path: Path) -> None:
    """The full item model (``argusic.repair.items``): refusals in its words."""
    try:
        load_item(path)
    except Exception as err:  # its messages name the file and the field
        raise RepairIngestError(str(err)) from None


def read_batch(paths: Iterable[Path]) -> _Batch:
    """Parse and check every file; refuse the whole batch on the first bad one."""
    batch = _Batch()
    candidates = repair_files(paths)
    for path, named in candidates:
        try:
            doc = read_json_document(path, MAX_REPAIR_RECORD_BYTES, "repair record")
        except UnsafeDocument as err:
            raise RepairIngestError(str(err)) from None
        schema = doc.get("schema")
        if path.name.endswith(".validation.json"):
            v = parse_validation(path, doc)
            batch.claim(("validation", *v.key), path, "validation of")
            batch.validations[v.key] = v
        elif schema == ITEM_SCHEMA:
            _load_with_core(path)
            item = parse_item(path, doc)
            # the current file and its kept revision hold the same record: one row, if they agree
            if item.key in batch.items and batch.items[item.key].row == item.row:
                continue
            batch.claim(("item", *item.key), path, "item revision")
            batch.items[item.key] = item
        elif schema == GRADE_SCHEMA:
            g = parse_grade(path, doc)
            batch.claim(("grade", g.key), path, "grade_id")
            batch.grades[g.key] = g
        elif named:
            raise RepairIngestError(
                f"{path}: schema: {_shown(str(schema))} is not a repair record ({', '.join(SCHEMAS)})"
            )
        else:
            batch.skipped.append(str(path))
    if not (batch.items or batch.validations or batch.grades):
        where = ", ".join(str(p) for p, _ in candidates[:3]) or "the paths given"
        raise RepairIngestError(f"no repair records found (looked at {len(candidates)} JSON files: {where})")
    return batch


# ---------------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------------


def load_batch(con: duckdb.DuckDBPyConnection, batch: _Batch) -> None:
    """Replace the rows of every key in the batch, in the caller's transaction. A validation or
    grade must name an item revision that is loaded (already, or in this batch)."""
    known = set(batch.items)
    for key, where, path_of in (
        *[(v.key, "validation", ("validation", *v.key)) for v in batch.validations.values()],
        *[(g.item, "grade", ("grade", g.key)) for g in batch.grades.values()],
    ):
        if key in known:
            continue
        present = con.execute(
            "SELECT 1 FROM raw.repair_items WHERE item_id = ? AND revision = ?", list(key)
        ).fetchone()
        if present is None:
            raise RepairIngestError(
                f"{batch.sources[path_of]}: invalid repair {where}: item_id/revision: item {key[0]!r} "
                f"revision {key[1][:12]}… is not loaded (load its item record first, or in the same batch)"
            )
        known.add(key)
    for item in batch.items.values():
        con.execute("DELETE FROM raw.repair_items WHERE item_id = ? AND revision = ?", list(item.key))
        con.execute(f"INSERT INTO raw.repair_items VALUES ({', '.join('?' * ITEM_COLUMNS)})", list(item.row))
    for v in batch.validations.values():
        con.execute("DELETE FROM raw.repair_validations WHERE item_id = ? AND revision = ?", list(v.key))
        con.executemany(
            f"INSERT INTO raw.repair_validations VALUES ({', '.join('?' * VALIDATION_COLUMNS)})",
            [list(r) for r in v.rows],
        )
    for g in batch.grades.values():
        con.execute("DELETE FROM raw.repair_grades WHERE grade_id = ?", [g.key])
        con.execute(f"INSERT INTO raw.repair_grades VALUES ({', '.join('?' * GRADE_COLUMNS)})", list(g.row))


def ingest_repair(
    folder_or_paths: Path | str | Iterable[Path | str], db_path: Path | str | None = None
) -> RepairIngestResult:
    """Load the repair records under a folder (or the files and folders given) into the warehouse
    (``db_path``, ARGUSIC_WAREHOUSE by default), replacing the rows of the same keys, in one
    transaction under the warehouse's writer lock. Raises RepairIngestError (nothing loaded)."""
    if isinstance(folder_or_paths, (str, Path)):
        folder_or_paths = [folder_or_paths]
    batch = read_batch([Path(p) for p in folder_or_paths])
    path = Path(db_path) if db_path else warehouse_path()
    with writer_lock(path), connect(path) as con:
        migrate_raw(con)  # creates the repair tables too
        con.execute("BEGIN")
        try:
            load_batch(con, batch)
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    return batch_result(batch)


def batch_result(batch: _Batch) -> RepairIngestResult:
    """What a loaded batch holds, by kind."""
    return RepairIngestResult(
        items=len(batch.items),
        validations=len(batch.validations),
        validation_runs=sum(len(v.rows) for v in batch.validations.values()),
        grades=len(batch.grades),
        skipped=tuple(batch.skipped),
    )


def ingest_repair_task(paths: list[str], db_path: str | None = None) -> dict[str, int]:
    """The DAG's entry (argusic_items; a cycle loads its repair grades with its run records,
    ``argusic.warehouse.load_runs.ingest_cycle_records``): plain arguments in, counts out (XCom-safe)."""
    return ingest_repair([Path(p) for p in paths], db_path).counts()


__all__ = [
    "GRADE_SCHEMA",
    "ITEM_SCHEMA",
    "MAX_REPAIR_RECORD_BYTES",
    "VALIDATION_SCHEMA",
    "VERDICTS",
    "RepairIngestError",
    "RepairIngestResult",
    "ingest_repair",
    "ingest_repair_task",
    "read_batch",
]
