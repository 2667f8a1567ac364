"""Hints and change similarity in the warehouse's raw layer (issue #14, seed 004, Layer 1).

Two tables, both beside the run records and never read by a model that feeds a score, a verdict or
the board (a guard test checks it: tests/warehouse/test_judging_warehouse.py):

``raw.attempt_hints``
    One row per (attempt_id, task_revision): the hints document ``argusic.hints/1`` that
    ``argusic.judging.hints.write_hints`` leaves as ``<attempt_dir>/hints.json``, every top-level
    field flattened, its lists and pages as JSON text, with ``loaded_at``. Keyed and idempotent: the
    same document loaded again changes nothing; a changed document of the same key replaces the row
    (hints are recomputed, e.g. after a renderer fix, while run records are write-once).
``raw.change_similarity``
    One row per pair of repair attempts of one group (same agent, project, repair item revision and
    environment) whose patches both change at least one non-test line: rapidfuzz's normalized Indel
    similarity of the two sequences of non-test changed lines (METHOD; docs/judging.md). Computed
    here in Python, once per pair (patches are write-once evidence, so a pair's similarity never
    changes), and summarised per group by dbt (marts.change_similarity).

Documents are hostile input (computed from what an agent left behind): read with a size cap
(MAX_HINTS_BYTES), never through a link, strict UTF-8 and strict JSON, then checked by a strict
pydantic model (``HintsDocument``: extra fields forbidden, caps on every list and text). A refusal
names the file and the field, and loads nothing of the batch.

``raw.judge_verdicts`` (Layer 2, model judges)
    One row per (attempt_id, judge_id, task_revision, evidence_sha256): the judgement documents
    ``argusic.judgement/1`` that ``argusic.judging.judges`` leaves as ``<attempt_dir>/judging/
    <judge_id>.json``, loaded beside the record like the hints (same caps and strictness; scores and
    quotes as JSON text). Advisory: never read by a model feeding a score, a verdict or the board.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Annotated, Any, Literal

import duckdb
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator
from rapidfuzz.distance import Indel

from argusic.core.evidence import open_store
from argusic.core.record import ATTEMPT_ID_RE, CONDITION_PATTERN, ID_PART_RE, parse_attempt_id
from argusic.core.safe_io import UnsafeDocument, read_json_document
from argusic.repair.paths import is_test_path
from argusic.warehouse.schema import HINTS_COLUMNS, JUDGE_VERDICT_COLUMNS, migrate_judging

log = logging.getLogger(__name__)

HINTS_SCHEMA = "argusic.hints/1"
HINTS_FILE = "hints.json"
# A hints document holds three small verdicts, a page list and a step list; 1 MiB is far above any
# honest one (200 pages x 20 console messages x 500 characters is ~2 MB only in theory: pages are
# capped at MAX_PAGES below, which keeps an honest document well under it).
MAX_HINTS_BYTES = 1 << 20
MAX_PAGES = 200
MAX_CONSOLE_ERRORS = 20  # the renderer's cap (contract: 20 messages x 500 characters)
MAX_CONSOLE_ERROR_CHARS = 500
MAX_SCREENSHOTS = 3  # load, +1 s, +3 s
MAX_NEEDLES = 500
MAX_STEPS = 10_000
MAX_DETAIL_CHARS = 4096
MAX_PATH_CHARS = 1024

# Change similarity: the method's name is stored with every pair, so a changed method is a new row,
# never a silent change of an old number.
METHOD = "indel_nontest_lines/1"
# The grader's own cap on a patch (argusic.repair.grader.MAX_PATCH_BYTES): nothing larger was graded.
MAX_PATCH_BYTES = 8 * 1024 * 1024


JUDGEMENT_SCHEMA = "argusic.judgement/1"
JUDGING_DIR = "judging"
MAX_JUDGEMENT_BYTES = 1 << 20
MAX_JUDGEMENTS_PER_ATTEMPT = 32


class HintsIngestError(ValueError):
    """The batch was refused; nothing of it was loaded. The message names the file and the field."""


# ---------------------------------------------------------------------------------------------------
# The document (contract14 section 2), checked strictly
# ---------------------------------------------------------------------------------------------------

Status = Literal["measured", "not_applicable", "unavailable"]
Step = Literal["read", "search", "edit", "exec", "install", "test", "report"]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
IdPart = Annotated[str, StringConstraints(pattern=ID_PART_RE.pattern)]
NeedleId = Annotated[str, StringConstraints(min_length=1, max_length=128)]
Detail = Annotated[str, StringConstraints(max_length=MAX_DETAIL_CHARS)]
ALLOWED_SCORES = (0.0, 0.5, 1.0)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class _Hint(_Strict):
    score: float | None
    status: Status
    detail: Detail | None = None

    @model_validator(mode="after")
    def _score_agrees_with_status(self) -> _Hint:
        if self.status == "measured":
            if self.score not in ALLOWED_SCORES:
                raise ValueError(f"score: {self.score!r}: a measured hint scores exactly 1, 0.5 or 0")
        elif self.score is not None:
            raise ValueError(f"score: {self.score!r}: a hint that is {self.status} has a null score")
        return self


class NeedlesHint(_Hint):
    found: list[NeedleId] = Field(max_length=MAX_NEEDLES)
    missing: list[NeedleId] = Field(max_length=MAX_NEEDLES)
    sources: list[Literal["log", "report", "artifacts"]] = Field(max_length=3)


class PageHint(_Strict):
    path: Annotated[str, StringConstraints(min_length=1, max_length=MAX_PATH_CHARS)]
    outcome: Literal["clean", "console_errors", "not_rendered", "timeout"]
    console_errors: list[Annotated[str, StringConstraints(max_length=MAX_CONSOLE_ERROR_CHARS)]] = Field(
        max_length=MAX_CONSOLE_ERRORS
    )
    screenshots: list[Sha256] = Field(max_length=MAX_SCREENSHOTS)
    detail: Detail | None = None


class RenderingHint(_Hint):
    pages: list[PageHint] = Field(max_length=MAX_PAGES)


class AgentLogicHint(_Hint):
    succeeded: bool | None = None
    in_order: bool | None = None
    required: list[Step] = Field(max_length=100)
    steps: list[Step] = Field(max_length=MAX_STEPS)
    source: Annotated[str, StringConstraints(max_length=128)] | None = None


class ChangesHint(_Strict):
    """Not a scored hint: the fingerprint of the install-and-run attempt's changes patch."""

    status: Status
    sha256: Sha256 | None = None
    bytes: Annotated[int, Field(ge=0, le=MAX_PATCH_BYTES)] | None = None
    files: Annotated[int, Field(ge=0)] | None = None
    detail: Detail | None = None


class CheckResult(_Strict):
    """One of seed 002's deterministic checks on the attempt (argusic.judging.hints.checks_hint),
    under the condition the attempt ran under; loaded as part of ``hints_json`` and read by
    stg_attempt_checks."""

    id: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
    type: Literal["output_exact_match", "tool_calls"]
    condition: Annotated[str, StringConstraints(pattern=CONDITION_PATTERN)]
    status: Literal["pass", "fail", "not_applicable", "unavailable"]
    detail: Annotated[str, StringConstraints(max_length=2000)] | None
    observed: Annotated[int, Field(ge=0)] | None = None


class HintsDocument(_Strict):
    """``argusic.hints/1``: what the warehouse needs of it, checked strictly (the JSON Schema in
    plugins/argusic/schemas/hints-1.schema.json is the published contract)."""

    schema_: Literal["argusic.hints/1"] = Field(alias="schema")
    attempt_id: Annotated[str, StringConstraints(pattern=ATTEMPT_ID_RE.pattern)]
    cycle_id: IdPart
    agent_id: IdPart
    project_id: IdPart
    purpose: Literal["board", "verdict", "repair"]
    task_id: Literal["install_and_run", "repair"]
    task_version: Annotated[str, StringConstraints(min_length=1, max_length=32)]
    task_revision: Sha256
    needles: NeedlesHint
    rendering: RenderingHint
    agent_logic: AgentLogicHint
    changes: ChangesHint | None = None  # absent in documents written before changes were collected
    # seed 002's checks (issue #31): absent when the task defines none
    checks: list[CheckResult] | None = Field(default=None, max_length=128)

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _ids_agree(self) -> HintsDocument:
        parts = parse_attempt_id(self.attempt_id)
        for name in ("cycle_id", "purpose", "agent_id", "project_id"):
            if parts[name] != getattr(self, name):
                raise ValueError(
                    f"attempt_id: {self.attempt_id!r} says {name} {parts[name]!r} but the document's "
                    f"{name} is {getattr(self, name)!r}"
                )
        expected_task = "repair" if self.purpose == "repair" else "install_and_run"
        if self.task_id != expected_task:
            raise ValueError(f"task_id: {self.task_id!r} is not the task of purpose {self.purpose!r}")
        return self


class JudgeQuote(_Strict):
    criterion: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
    file: Annotated[str, StringConstraints(min_length=1, max_length=1024)]
    quote: Annotated[str, StringConstraints(min_length=8, max_length=500)]


class JudgementDocument(_Strict):
    """``argusic.judgement/1`` (written by ``argusic.judging.judges.write_judgement``), checked strictly."""

    schema_: Literal["argusic.judgement/1"] = Field(alias="schema")
    attempt_id: Annotated[str, StringConstraints(pattern=ATTEMPT_ID_RE.pattern)]
    cycle_id: IdPart
    task_id: Literal["install_and_run", "repair"]
    task_revision: Sha256
    judge_id: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
    harness: Literal["claude-code", "codex"]
    model: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    evidence_sha256: Sha256
    session_sha256: Sha256 | None
    status: Literal["valid", "refused", "no_verdict"]
    reason: Annotated[str, StringConstraints(max_length=1000)] | None
    scores: dict[
        Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")],
        Annotated[int, Field(ge=0, le=2)],
    ] = Field(max_length=8)
    quotes: list[JudgeQuote] = Field(max_length=20)
    summary: Annotated[str, StringConstraints(max_length=2000)]
    replayed: bool

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _consistent(self) -> JudgementDocument:
        if parse_attempt_id(self.attempt_id)["cycle_id"] != self.cycle_id:
            raise ValueError(f"cycle_id: {self.cycle_id!r} is not the cycle of {self.attempt_id!r}")
        if (self.status == "valid") != (self.reason is None):
            wanted = "no reason" if self.status == "valid" else "a reason"
            raise ValueError(f"reason: a {self.status} judgement has {wanted}")
        if self.status == "valid" and not self.scores:
            raise ValueError("scores: a valid judgement has its scores")
        return self


def _describe(err: ValidationError, path: Path, what: str = "hints document") -> str:
    problems = []
    for e in err.errors()[:5]:
        where = ".".join(str(p) for p in e["loc"]) or "(document)"
        problems.append(f"{where}: {e['msg']}")
    more = f" (and {err.error_count() - 5} more)" if err.error_count() > 5 else ""
    return f"{path}: invalid {what}: " + "; ".join(problems) + more


def _read_document(path: Path, cap: int, schema: str, model_class: Any, what: str) -> tuple[Any, str, str]:
    """(strict model, canonical JSON, sha256 of that canonical JSON) of one JSON document beside a
    record; HintsIngestError naming the file and the field otherwise. Read at most ``cap`` bytes,
    never through a link; the ``schema`` field checked first."""
    try:
        doc = read_json_document(path, cap, what)
    except UnsafeDocument as err:
        raise HintsIngestError(str(err)) from None
    if doc.get("schema") != schema:
        shown = repr(doc.get("schema"))[:80]
        raise HintsIngestError(f"{path}: invalid {what}: schema: {shown} is not {schema!r}")
    try:
        model = model_class.model_validate(doc)
    except ValidationError as err:
        raise HintsIngestError(_describe(err, path, what)) from None
    canonical = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return model, canonical, hashlib.sha256(canonical.encode()).hexdigest()


def read_hints_document(path: Path) -> tuple[HintsDocument, str, str]:
    """(document, canonical JSON, sha256 of that canonical JSON) of one hints file; HintsIngestError
    naming the file and the field otherwise. Read at most MAX_HINTS_BYTES, never through a link."""
    return _read_document(path, MAX_HINTS_BYTES, HINTS_SCHEMA, HintsDocument, "hints document")


def _row(doc: HintsDocument, canonical: str, sha: str, loaded_at: datetime) -> tuple:
    n, r, a = doc.needles, doc.rendering, doc.agent_logic
    return (
        doc.attempt_id, doc.task_revision, doc.cycle_id, doc.purpose, doc.agent_id, doc.project_id,
        doc.task_id, doc.task_version,
        n.score, n.status, json.dumps(n.found), json.dumps(n.missing), json.dumps(n.sources), n.detail,
        r.score, r.status, json.dumps([p.model_dump() for p in r.pages], ensure_ascii=False), r.detail,
        a.score, a.status, a.succeeded, a.in_order, json.dumps(a.required), json.dumps(a.steps),
        a.source, a.detail,
        sha, canonical, loaded_at,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------------


def hints_files(record_paths: Iterable[Path]) -> list[Path]:
    """The ``hints.json`` beside each run record (``<attempt_dir>/run_record.json``), when present as
    a regular file; a link there is refused (never followed)."""
    found: dict[Path, None] = {}
    for record in record_paths:
        candidate = Path(record).parent / HINTS_FILE
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise HintsIngestError(f"{candidate}: is a symbolic link; hints are read without following links")
        if stat.S_ISREG(info.st_mode):
            found[candidate] = None
    return list(found)


def load_hints(
    con: duckdb.DuckDBPyConnection, paths: Sequence[Path], attempt_of: dict[Path, str] | None = None
) -> int:
    """Load hints documents into raw.attempt_hints, in the caller's transaction; the number of rows
    written (new or changed). Keyed by (attempt_id, task_revision): a document already loaded with
    the same content is left alone, one with changed content replaces its row. Every file is checked
    before anything is written; a bad one raises HintsIngestError naming the file and the field.
    ``attempt_of`` (path -> attempt_id of the run record beside it) refuses a document about
    another attempt than the record it lies beside."""
    migrate_judging(con)
    checked: dict[tuple[str, str], tuple[Path, tuple]] = {}
    loaded_at = datetime.now(UTC).replace(tzinfo=None)
    for path in paths:
        doc, canonical, sha = read_hints_document(Path(path))
        expected = (attempt_of or {}).get(Path(path))
        if expected is not None and doc.attempt_id != expected:
            raise HintsIngestError(
                f"{path}: invalid hints document: attempt_id: {doc.attempt_id!r} but it lies beside the "
                f"run record of {expected!r}"
            )
        key = (doc.attempt_id, doc.task_revision)
        if key in checked:
            other, row = checked[key]
            if row[-3] != sha:
                raise HintsIngestError(
                    f"{path}: attempt_id {key[0]!r} task_revision {key[1][:12]}…: also in {other} "
                    "with different content"
                )
            continue
        checked[key] = (Path(path), _row(doc, canonical, sha, loaded_at))
    written = 0
    for key, (_path, row) in checked.items():
        present = con.execute(
            "SELECT hints_sha256 FROM raw.attempt_hints WHERE attempt_id = ? AND task_revision = ?", list(key)
        ).fetchone()
        if present is not None and present[0] == row[-3]:
            continue
        con.execute("DELETE FROM raw.attempt_hints WHERE attempt_id = ? AND task_revision = ?", list(key))
        con.execute(f"INSERT INTO raw.attempt_hints VALUES ({', '.join('?' * HINTS_COLUMNS)})", list(row))
        written += 1
    return written


# ---------------------------------------------------------------------------------------------------
# Judgements of model judges (Layer 2)
# ---------------------------------------------------------------------------------------------------


def read_judgement_document(path: Path) -> tuple[JudgementDocument, str, str]:
    """(document, canonical JSON, its sha256) of one judgement file; HintsIngestError naming the file
    and the field otherwise. Read at most MAX_JUDGEMENT_BYTES, never through a link."""
    read = _read_document(path, MAX_JUDGEMENT_BYTES, JUDGEMENT_SCHEMA, JudgementDocument, "judgement")
    model, canonical, sha = read
    if Path(path).stem != model.judge_id:
        raise HintsIngestError(
            f"{path}: invalid judgement: judge_id: {model.judge_id!r} is not the file's name"
        )
    return model, canonical, sha


def judgement_files(record_paths: Iterable[Path]) -> dict[Path, Path]:
    """The ``judging/*.json`` beside each run record (``<attempt_dir>/run_record.json``) -> that
    record's path; a link (the folder or a file) is refused, never followed."""
    found: dict[Path, Path] = {}
    for record in record_paths:
        folder = Path(record).parent / JUDGING_DIR
        try:
            info = os.lstat(folder)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise HintsIngestError(
                f"{folder}: is a symbolic link; judgements are read without following links"
            )
        if not stat.S_ISDIR(info.st_mode):
            continue
        candidates = sorted(
            p for p in folder.iterdir() if p.name.endswith(".json") and not p.name.startswith(".")
        )
        if len(candidates) > MAX_JUDGEMENTS_PER_ATTEMPT:
            raise HintsIngestError(f"{folder}: over {MAX_JUDGEMENTS_PER_ATTEMPT} judgement files")
        for candidate in candidates:
            mode = os.lstat(candidate).st_mode
            if stat.S_ISLNK(mode):
                raise HintsIngestError(
                    f"{candidate}: is a symbolic link; judgements are read without following links"
                )
            if stat.S_ISREG(mode):
                found[candidate] = Path(record)
    return found


def load_judgements(
    con: duckdb.DuckDBPyConnection, paths: Sequence[Path], attempt_of: dict[Path, str] | None = None
) -> int:
    """Load judgement documents into raw.judge_verdicts, in the caller's transaction; the number of
    rows written (new or changed). Keyed by (attempt_id, judge_id, task_revision, evidence_sha256):
    the same content again changes nothing, changed content replaces the row. Every file is checked
    before anything is written; ``attempt_of`` (path -> attempt_id of the record it lies beside)
    refuses a judgement about another attempt."""
    migrate_judging(con)
    checked: dict[tuple[str, str, str, str], tuple[Path, tuple]] = {}
    loaded_at = datetime.now(UTC).replace(tzinfo=None)
    for path in paths:
        doc, canonical, sha = read_judgement_document(Path(path))
        expected = (attempt_of or {}).get(Path(path))
        if expected is not None and doc.attempt_id != expected:
            raise HintsIngestError(
                f"{path}: invalid judgement: attempt_id: {doc.attempt_id!r} but it lies beside the run "
                f"record of {expected!r}"
            )
        key = (doc.attempt_id, doc.judge_id, doc.task_revision, doc.evidence_sha256)
        row = (
            doc.attempt_id, doc.cycle_id, doc.task_id, doc.task_revision, doc.judge_id, doc.harness,
            doc.model, doc.evidence_sha256, doc.session_sha256, doc.status, doc.reason,
            json.dumps(doc.scores, sort_keys=True), json.dumps([q.model_dump() for q in doc.quotes],
            ensure_ascii=False), doc.summary, doc.replayed, sha, loaded_at,
        )  # fmt: skip
        if key in checked and checked[key][1][-2] != sha:
            raise HintsIngestError(
                f"{path}: judgement {key[:2]}: also in {checked[key][0]} with different content"
            )
        checked[key] = (Path(path), row)
    written = 0
    where = "attempt_id = ? AND judge_id = ? AND task_revision = ? AND evidence_sha256 = ?"
    for key, (_path, row) in checked.items():
        present = con.execute(
            f"SELECT judgement_sha256 FROM raw.judge_verdicts WHERE {where}", list(key)
        ).fetchone()
        if present is not None and present[0] == row[-2]:
            continue
        con.execute(f"DELETE FROM raw.judge_verdicts WHERE {where}", list(key))
        con.execute(
            f"INSERT INTO raw.judge_verdicts VALUES ({', '.join('?' * JUDGE_VERDICT_COLUMNS)})", list(row)
        )
        written += 1
    return written


# ---------------------------------------------------------------------------------------------------
# Change similarity of repair attempts' patches
# ---------------------------------------------------------------------------------------------------

_DIFF_HEADER = re.compile(r"^diff --git a/(?P<a>.*) b/(?P<b>.*)$")


def nontest_changed_lines(patch: bytes, extra_test_globs: Sequence[str] = ()) -> list[str]:
    """The changed lines of a unified git diff, in order, with their ``+``/``-`` sign, leaving out
    every file that is a test file by ``argusic.repair.paths.is_test_path`` (the grader drops those
    from an agent's patch too) and binary hunks. Text is decoded as UTF-8 with replacement."""
    lines: list[str] = []
    path: str | None = None
    in_hunk = False
    for raw in patch.decode("utf-8", errors="replace").splitlines():
        if raw.startswith("diff --git "):
            match = _DIFF_HEADER.match(raw)
            path = match.group("b") if match else raw[len("diff --git ") :]
            in_hunk = False
            continue
        if raw.startswith("+++ ") and not in_hunk:
            target = raw[4:]
            if target.startswith("b/"):
                path = target[2:]
            continue
        if raw.startswith("@@"):
            in_hunk = True
            continue
        if not in_hunk or not raw or raw[0] not in "+-":
            continue
        if path is not None and is_test_path(path, extra_test_globs):
            continue
        lines.append(raw)
    return lines


def similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """rapidfuzz's normalized Indel similarity of two line sequences: 1 − (lines inserted or
    deleted to turn one into the other) / (len(a) + len(b)); 1.0 exactly when they are equal."""
    return float(Indel.normalized_similarity(list(a), list(b)))


_PATCH_ATTEMPTS_SQL = """
SELECT attempt_id, agent_id, project_id,
       json_extract_string(record_json, '$.repair.item_id') AS item_id,
       json_extract_string(record_json, '$.repair.item_revision') AS item_revision,
       coalesce(harness_edition, '') || '|' || coalesce(scaffold_sha256, '') || '|'
           || coalesce(image_digest, '') || '|' || coalesce(instructions_sha256, '') AS environment,
       json_extract_string(record_json, '$.repair.patch.uri') AS patch_uri,
       json_extract_string(record_json, '$.repair.patch.sha256') AS patch_sha256,
       try_cast(json_extract(record_json, '$.repair.patch.bytes') AS BIGINT) AS patch_bytes
FROM raw.run_records
WHERE purpose = 'repair'
  AND json_extract_string(record_json, '$.repair.patch.uri') IS NOT NULL
  AND try_cast(json_extract(record_json, '$.repair.patch.bytes') AS BIGINT) > 0
ORDER BY attempt_id
"""

# Install-and-run attempts: the changes patch the executor landed (argusic.sandbox.changes), named by the
# newest hints document of the attempt and stored in the evidence store under its sha256.
_CHANGES_ATTEMPTS_SQL = """
WITH newest AS (
    SELECT attempt_id, hints_json
    FROM raw.attempt_hints
    QUALIFY row_number() OVER (PARTITION BY attempt_id ORDER BY loaded_at DESC, task_revision) = 1
)
SELECT r.attempt_id, r.agent_id, r.project_id, NULL AS item_id, NULL AS item_revision,
       coalesce(r.harness_edition, '') || '|' || coalesce(r.scaffold_sha256, '') || '|'
           || coalesce(r.image_digest, '') || '|' || coalesce(r.instructions_sha256, '') AS environment,
       NULL AS patch_uri,
       json_extract_string(newest.hints_json, '$.changes.sha256') AS patch_sha256,
       try_cast(json_extract(newest.hints_json, '$.changes.bytes') AS BIGINT) AS patch_bytes
FROM raw.run_records AS r
INNER JOIN newest ON newest.attempt_id = r.attempt_id
WHERE r.purpose IN ('board', 'verdict')
  AND json_extract_string(newest.hints_json, '$.changes.sha256') IS NOT NULL
  AND try_cast(json_extract(newest.hints_json, '$.changes.bytes') AS BIGINT) > 0
ORDER BY r.attempt_id
"""


def _read_patch(store: Any, uri: str, sha256: str, size: int) -> bytes | None:
    """A stored patch, or None (logged) when it is over the cap, missing or not what its record says."""
    if size > MAX_PATCH_BYTES:
        log.warning("%s: patch of %d bytes is over %d: not compared", uri, size, MAX_PATCH_BYTES)
        return None
    try:
        # at most one byte past the recorded size: a stored object larger than its record is refused
        # without reading it all (EvidenceStore.read would)
        with store._open_stored(uri) as handle:
            data = handle.read(size + 1)
    except Exception as err:  # a missing object is the audit's finding, not a reason to refuse ingest
        log.warning("%s: patch unreadable (%s): not compared", uri, err)
        return None
    if len(data) != size or hashlib.sha256(data).hexdigest() != sha256:
        log.warning("%s: patch does not match its record's fingerprint: not compared", uri)
        return None
    return data


def compute_change_similarity(con: duckdb.DuckDBPyConnection, store_url: str | None = None) -> int:
    """Add to raw.change_similarity every pair of loaded attempts of one group not yet compared by
    METHOD whose patches both have at least one non-test changed line; the number of pairs added.
    Groups: repair attempts by (agent, project, item revision, environment), with the patch of their
    record; install-and-run attempts by (agent, project, environment), with the changes patch their
    hints name (argusic.sandbox.changes). Patches are read from the evidence
    store (``store_url``, ARGUSIC_EVIDENCE_URL by default) and checked against their fingerprints."""
    migrate_judging(con)
    rows = con.execute(_PATCH_ATTEMPTS_SQL).fetchall() + con.execute(_CHANGES_ATTEMPTS_SQL).fetchall()
    groups: dict[tuple, list[tuple]] = {}
    for attempt_id, agent, project, item, revision, environment, uri, sha, size in rows:
        group = (agent, project, item, revision, environment)
        groups.setdefault(group, []).append((attempt_id, uri, sha, size))
    done = {
        (a, b)
        for a, b in con.execute(
            "SELECT attempt_a, attempt_b FROM raw.change_similarity WHERE method = ?", [METHOD]
        ).fetchall()
    }
    store = None
    lines_of: dict[str, list[str] | None] = {}
    added = 0
    for members in groups.values():
        for (a, *ref_a), (b, *ref_b) in combinations(sorted(members), 2):
            if (a, b) in done:
                continue
            if store is None:
                store = open_store(store_url)
            for attempt_id, (uri, sha, size) in ((a, ref_a), (b, ref_b)):
                if attempt_id not in lines_of:
                    uri = uri or store.uri_for(store.key_for(sha))  # a changes patch: by content address
                    patch = _read_patch(store, uri, sha, size)
                    lines_of[attempt_id] = None if patch is None else nontest_changed_lines(patch)
            la, lb = lines_of[a], lines_of[b]
            if not la or not lb:  # unreadable, or no non-test line changed: nothing to compare
                continue
            con.execute(
                "INSERT INTO raw.change_similarity VALUES (?, ?, ?, ?, ?)",
                [a, b, METHOD, similarity(la, lb), la == lb],
            )
            added += 1
    return added


__all__ = [
    "HINTS_FILE",
    "HINTS_SCHEMA",
    "MAX_HINTS_BYTES",
    "METHOD",
    "HintsDocument",
    "HintsIngestError",
    "JudgementDocument",
    "compute_change_similarity",
    "hints_files",
    "judgement_files",
    "load_judgements",
    "load_hints",
    "nontest_changed_lines",
    "read_hints_document",
    "read_judgement_document",
    "similarity",
]
