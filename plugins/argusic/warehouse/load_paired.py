"""Paired patch reviews in the warehouse's raw layer (issue #31; ``argusic.judging.paired``).

``raw.paired_judgements``
    One row per (pair_id, judge_id) of a review document ``argusic.paired_review/1``
    (``<pairs_dir>/<pair_id>/review.json``): the pair (item, revision, each side's label and patch id,
    the P/Q draw's seed and number), the context's sha256 and the judge's judgement (status, reason,
    scores per side and criterion and quotes as JSON text, summary).
``raw.paired_bugs``
    One row per bug a valid judgement reported (bug_id, side, the quote, what goes wrong), which a
    person re-checks (decisions.paired_bug_checks, ``argusic.review.paired``).

Documents are read like the other judgements (``argusic.warehouse.load_judging``): a size cap, never
through a link, strict JSON, then a strict pydantic model (extra fields forbidden) that re-checks
what the writer guarantees (six criteria, integers 1..5 on valid judgements, sides P and Q). A refusal
names the file and the field and loads nothing of the batch. A document loaded again with the same
content changes nothing; a changed document of the same pair replaces the pair's rows.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

import duckdb
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from argusic.core.settings import runs_dir, warehouse_path
from argusic.warehouse.db import connect
from argusic.warehouse.load_judging import HintsIngestError, _read_document
from argusic.warehouse.lock import writer_lock
from argusic.warehouse.schema import PAIRED_BUG_COLUMNS, PAIRED_JUDGEMENT_COLUMNS, migrate_raw

REVIEW_SCHEMA = (
    "argusic.paired_review/1"  # argusic.judging.paired.REVIEW_SCHEMA (a layer below: not imported)
)
REVIEW_FILE = "review.json"
MAX_REVIEW_BYTES = 2 * 1024 * 1024
MAX_PAIRS = 10_000
CRITERIA = ("correctness", "change_scope", "consistency", "simplicity", "tidiness", "overall")

Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,200}$")]
Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Text = Annotated[str, StringConstraints(max_length=4000)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class SideDoc(_Strict):
    label: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    patch_id: Id
    patch_sha256: Hex
    verdict: str | None


class DrawDoc(_Strict):
    seed: Hex
    drawn: Annotated[float, Field(ge=0, lt=1)]
    rule: Text


class JudgementDoc(_Strict):
    judge_id: Id
    harness: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    model: Annotated[str, StringConstraints(min_length=1, max_length=300)]
    session_sha256: Hex | None
    status: Literal["valid", "refused", "no_verdict"]
    reason: Text | None
    scores: dict[Literal["P", "Q"], dict[str, Annotated[int, Field(ge=1, le=5)]]]
    quotes: list[dict[str, str]] = Field(max_length=40)
    bugs: list[dict[str, str]] = Field(max_length=20)
    summary: Text

    @model_validator(mode="after")
    def _consistent(self) -> JudgementDoc:
        if (self.status == "valid") == (self.reason is not None):
            raise ValueError(
                f"reason: a {self.status} judgement has {'no' if self.status == 'valid' else 'a'} reason"
            )
        if self.status == "valid":
            for side in ("P", "Q"):
                if sorted(self.scores.get(side, {})) != sorted(CRITERIA):
                    raise ValueError(f"scores.{side}: a valid judgement scores the six criteria")
        elif self.scores or self.bugs:
            raise ValueError("scores: a judgement that is not valid keeps no scores and no bugs")
        return self


class BugDoc(_Strict):
    bug_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")]
    judge_id: Id
    side: Literal["P", "Q"]
    file: Annotated[str, StringConstraints(max_length=1024)]
    quote: Annotated[str, StringConstraints(max_length=500)]
    description: Text


class ReviewDoc(_Strict):
    schema_: Literal["argusic.paired_review/1"] = Field(alias="schema")
    pair_id: Id
    item_id: Id
    revision: Hex
    project_id: Id
    track: Literal["basic", "spec"]
    sides: dict[Literal["P", "Q"], SideDoc]
    draw: DrawDoc
    context_sha256: Hex
    criteria: list[str]
    judgements: list[JudgementDoc] = Field(min_length=1, max_length=20)
    medians: dict[Literal["P", "Q"], dict[str, float | int | None]]
    bugs: list[BugDoc] = Field(max_length=400)

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _consistent(self) -> ReviewDoc:
        if set(self.sides) != {"P", "Q"} or self.criteria != list(CRITERIA):
            raise ValueError("sides and criteria: P and Q, the six criteria in their order")
        if self.sides["P"].patch_id == self.sides["Q"].patch_id:
            raise ValueError("sides: P and Q are the same patch")
        judges = [j.judge_id for j in self.judgements]
        if len(set(judges)) != len(judges):
            raise ValueError("judgements: a judge twice")
        valid = {j.judge_id for j in self.judgements if j.status == "valid"}
        if any(b.judge_id not in valid for b in self.bugs):
            raise ValueError("bugs: a bug of a judge whose judgement is not valid")
        return self


def read_review_document(path: Path) -> tuple[ReviewDoc, str, str]:
    """(document, canonical JSON, its sha256) of one review file; HintsIngestError naming the file and
    the field otherwise."""
    return _read_document(Path(path), MAX_REVIEW_BYTES, REVIEW_SCHEMA, ReviewDoc, "paired review")


def pairs_dir() -> Path:
    """Where review documents are written: ``<ARGUSIC_RUNS_DIR>/paired``."""
    return runs_dir() / "paired"


def review_files(root: Path) -> list[Path]:
    """Every ``<root>/<pair_id>/review.json`` (links refused, never followed)."""
    root = Path(root)
    if not root.is_dir():
        return []
    if root.is_symlink():
        raise HintsIngestError(f"{root}: is a symbolic link; reviews are read without following links")
    found = []
    for folder in sorted(root.iterdir()):
        candidate = folder / REVIEW_FILE
        try:
            mode = os.lstat(candidate).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISLNK(os.lstat(folder).st_mode) or stat.S_ISLNK(mode):
            raise HintsIngestError(
                f"{candidate}: is a symbolic link; reviews are read without following links"
            )
        if stat.S_ISREG(mode):
            found.append(candidate)
    if len(found) > MAX_PAIRS:
        raise HintsIngestError(f"{root}: over {MAX_PAIRS} paired reviews")
    return found


def load_paired_reviews(con: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> int:
    """Load review documents in the caller's transaction; the number of pairs written (new or
    changed). Every file is checked before anything is written."""
    migrate_raw(con)
    checked: dict[str, tuple[Path, ReviewDoc, str]] = {}
    for path in paths:
        doc, _canonical, sha = read_review_document(Path(path))
        if Path(path).parent.name != doc.pair_id:
            raise HintsIngestError(
                f"{path}: invalid paired review: pair_id: {doc.pair_id!r} is not its folder's name"
            )
        if doc.pair_id in checked and checked[doc.pair_id][2] != sha:
            raise HintsIngestError(
                f"{path}: pair {doc.pair_id}: also in {checked[doc.pair_id][0]} with other content"
            )
        checked[doc.pair_id] = (Path(path), doc, sha)
    loaded_at = datetime.now(UTC).replace(tzinfo=None)
    written = 0
    for pair_id, (_path, doc, sha) in checked.items():
        present = con.execute(
            "SELECT DISTINCT review_sha256 FROM raw.paired_judgements WHERE pair_id = ?", [pair_id]
        ).fetchall()
        if present == [(sha,)]:
            continue
        con.execute("DELETE FROM raw.paired_judgements WHERE pair_id = ?", [pair_id])
        con.execute("DELETE FROM raw.paired_bugs WHERE pair_id = ?", [pair_id])
        p, q = doc.sides["P"], doc.sides["Q"]
        for j in doc.judgements:
            row = (
                doc.pair_id, doc.item_id, doc.revision, doc.project_id, p.label, q.label, p.patch_id,
                q.patch_id, doc.draw.seed, doc.draw.drawn, doc.context_sha256, j.judge_id, j.harness,
                j.model, j.session_sha256, j.status, j.reason, json.dumps(j.scores, sort_keys=True),
                json.dumps(j.quotes, ensure_ascii=False), j.summary, sha, loaded_at,
            )  # fmt: skip
            assert len(row) == PAIRED_JUDGEMENT_COLUMNS
            con.execute(f"INSERT INTO raw.paired_judgements VALUES ({', '.join('?' * len(row))})", list(row))
        for b in doc.bugs:
            row = (b.bug_id, doc.pair_id, b.judge_id, b.side, b.file, b.quote, b.description, loaded_at)
            assert len(row) == PAIRED_BUG_COLUMNS
            con.execute(f"INSERT INTO raw.paired_bugs VALUES ({', '.join('?' * len(row))})", list(row))
        written += 1
    return written


def ingest_paired(paths: Iterable[Path | str] | None = None, db_path: Path | str | None = None) -> int:
    """Load the review documents (the files given, else every one under ``pairs_dir()``) under the
    warehouse's writer lock, in one transaction; the pairs written. HintsIngestError: nothing loaded."""
    files = [Path(p) for p in paths] if paths is not None else review_files(pairs_dir())
    path = Path(db_path) if db_path else warehouse_path()
    with writer_lock(path), connect(path) as con:
        migrate_raw(con)
        con.execute("BEGIN")
        try:
            written = load_paired_reviews(con, files)
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    return written


__all__ = [
    "ReviewDoc",
    "ingest_paired",
    "load_paired_reviews",
    "pairs_dir",
    "read_review_document",
    "review_files",
]
