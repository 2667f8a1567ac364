"""Layer 3 of the paired patch review (issue #31, seed 001): a person re-checks every bug a model judge
reported, opening the patch and the base code: *Confirmed*, *Not a bug* or *Cannot tell*, with a
required note; recorded in decisions.paired_bug_checks (who, when, why), the latest per bug in force
(marts.paired_review counts them).

``awaiting`` lists the loaded bugs (raw.paired_bugs) no person has re-checked; ``body_of`` is what the
Airflow form shows of one (the pair, the side, the judge's quote and description, where the pair's
context folder is); ``decide`` records a re-check, the same for the form and the shell. The person
sees P and Q, never a label or a model name. No Airflow import here (argusic.orchestration.paired_forms
holds the form).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from argusic.review.text import quoted
from argusic.warehouse import decisions
from argusic.warehouse.db import connect

# The form's options, in words; stored as the decisions table's values.
OPTIONS = {"Confirmed": "confirmed", "Not a bug": "not_a_bug", "Cannot tell": "cannot_tell"}
BUG_COLUMNS = ("bug_id", "pair_id", "item_id", "judge_id", "side", "file", "quote", "description")


class ReviewError(ValueError):
    """A re-check that cannot be recorded as asked (the message says why)."""


@dataclass(frozen=True)
class Bug:
    facts: dict

    @property
    def bug_id(self) -> str:
        return self.facts["bug_id"]

    @property
    def label(self) -> str:
        """What the form list shows: the item, the side and the judge (no label of the patch)."""
        f = self.facts
        return f"{f['item_id']} · {f['side']} · {f['judge_id']}"


def awaiting(pair_id: str | None = None, db_path: Path | None = None) -> list[Bug]:
    """Reported bugs with no re-check recorded (every pair's, or one pair's), in a stable order."""
    where = "WHERE c.bug_id IS NULL" + (" AND b.pair_id = ?" if pair_id else "")
    sql = f"""
        SELECT b.bug_id, b.pair_id, j.item_id, b.judge_id, b.side, b.file, b.quote, b.description
        FROM raw.paired_bugs b
        JOIN (SELECT DISTINCT pair_id, item_id FROM raw.paired_judgements) j ON j.pair_id = b.pair_id
        LEFT JOIN (SELECT DISTINCT bug_id FROM decisions.paired_bug_checks) c ON c.bug_id = b.bug_id
        {where}
        ORDER BY b.pair_id, b.side, b.judge_id, b.bug_id
    """
    with connect(db_path, read_only=True) as con:
        rows = con.execute(sql, [pair_id] if pair_id else []).fetchall()
    return [Bug(dict(zip(BUG_COLUMNS, r, strict=True))) for r in rows]


def subject_of(bug: Bug) -> str:
    return f"Paired review bug: {bug.label}"


def body_of(bug: Bug, root: Path | None = None) -> str:
    """The form's body (Markdown): the pair, the side, the judge's quote and description (text written
    by a model: quoted), and the context folder to open (patches, gold patch, base code)."""
    from argusic.warehouse.load_paired import pairs_dir  # deferred: pydantic stays out of DAG parsing

    f = bug.facts
    context = Path(root or pairs_dir()) / f["pair_id"] / "context"
    where = (
        f"the pair's context folder `{context}` ({f['side']}.patch, gold.patch, base/)"
        if context.is_dir()
        else "the item's base code and the patch (the context folder is not on this host)"
    )
    return "\n".join(
        [
            f"Bug reported by judge `{f['judge_id']}` in patch **{f['side']}** of pair `{f['pair_id']}` "
            f"(item `{f['item_id']}`).",
            "",
            f"- the judge's quote from `{f['file']}`: {quoted(f['quote'], 500)}",
            f"- what the judge says goes wrong: {quoted(f['description'], 1000)}",
            f"- open {where}",
            "",
            "Is it a real bug of the patch's behaviour? Answer **Confirmed**, **Not a bug** or "
            "**Cannot tell**, with a note saying why (required). Recorded with your name and the time; "
            "it never changes a grade or a score.",
        ]
    )


def pair_of(bug_id: str, db_path: Path | None = None) -> str:
    with connect(db_path, read_only=True) as con:
        row = con.execute("SELECT pair_id FROM raw.paired_bugs WHERE bug_id = ?", [bug_id]).fetchone()
    if row is None:
        raise ReviewError(f"bug {bug_id!r} is not in the warehouse (load the paired reviews first)")
    return row[0]


def decide(
    bug_id: str, finding: str, by: str, at: datetime, note: str, *, pair_id: str | None = None,
    db_path: Path | None = None,
) -> bool:  # fmt: skip
    """Record a person's re-check (decisions.paired_bug_checks); True when new, False when the same
    (bug, time) was already recorded. DecisionError names every problem (finding from its list,
    who and why required); ReviewError for a bug not loaded."""
    known = pair_of(bug_id, db_path)
    if pair_id is not None and pair_id != known:
        raise ReviewError(f"bug {bug_id!r} is of pair {known!r}, not {pair_id!r}")
    return decisions.record(
        "paired_bug_checks",
        {"pair_id": known, "bug_id": bug_id, "finding": OPTIONS.get(finding, finding),
         "decided_by": by, "decided_at": at, "note": note},
        db_path,
    )  # fmt: skip


__all__ = ["OPTIONS", "Bug", "ReviewError", "awaiting", "body_of", "decide", "subject_of"]
