"""Disputes (METHODOLOGY.md §10): a maintainer disputes one attempt's result; a person reads its full
log and recording and rules whether our side (the environment) was at fault; if it was, the attempt
is redone and the record corrected with a note. The original evidence is never edited or deleted.

How a correction is named. A correction reruns the disputed attempt through the one attempt path
(`argusic.cycle.run.run_with_reruns`, the same as every planned attempt) as the attempt's **next run**
in its `.r<n>` chain: `<…>.a2` is corrected by `<…>.a2.r1`, `<…>.a2.r1` by `<…>.a2.r2`; its run
record's `rerun_of` names the disputed attempt (the record contract's own link). What tells it from
a rerun of an invalid attempt (our tooling failed, rerun at once and bounded) is what it reruns: an
invalid-rerun follows an invalid record; a correction follows a *valid* one, and it is named by a
ruling (decisions.dispute_rulings.rerun_attempt_id, linked to the dispute). The marts apply it only
then (int_attempt_corrections checks both), so the rerun counts in the original's place for sets,
verdicts and the board, and the original stays loaded, marked "corrected" with the dispute.

Only the attempt that counts can be disputed (the last record of its chain), and a dispute is ruled
once: to contest a ruling, file a new dispute.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from argusic.core.layout import publish_dir
from argusic.core.record import parse_attempt_id
from argusic.review.text import link, quoted
from argusic.warehouse import decisions
from argusic.warehouse.db import connect
from argusic.warehouse.decisions import DecisionError

ENVIRONMENT_AT_FAULT = "Environment at fault"
RESULT_STANDS = "Result stands"
OPTIONS = {ENVIRONMENT_AT_FAULT: "environment_at_fault", RESULT_STANDS: "result_stands"}


class DisputeError(DecisionError):
    """A dispute that cannot be filed, ruled or corrected as asked; the message says why."""


@dataclass(frozen=True)
class Dispute:
    dispute_id: str
    attempt_id: str
    claim: str
    contact: str
    filed_by: str
    filed_at: datetime
    ruling: str | None = None
    ruled_by: str | None = None
    ruled_at: datetime | None = None
    ruling_note: str | None = None
    rerun_attempt_id: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in d.items()}


def dispute_id_for(attempt_id: str, claim: str, contact: str) -> str:
    """A dispute's id from what was filed: filing the same dispute twice (a retried task, a double
    submit) is one dispute."""
    digest = hashlib.sha256("\0".join((attempt_id, claim.strip(), contact.strip())).encode()).hexdigest()
    return f"dispute-{digest[:16]}"


def _attempt_facts(con, attempt_id: str) -> dict | None:
    cur = con.execute(
        "SELECT s.attempt_id, s.cycle_id, s.agent_id, s.project_id, s.attempt_no, s.outcome, s.score, "
        "s.is_valid, s.invalid_reason, s.end_reason, s.final_state, s.served_log_uri, "
        "s.served_recording_uri, s.served_copy_withheld, s.log_sha256, s.recording_sha256 "
        "FROM marts.attempt_scores AS s WHERE s.attempt_id = ?",
        [attempt_id],
    )
    row = cur.fetchone()
    return dict(zip([d[0] for d in cur.description], row, strict=True)) if row else None


def attempt_facts(attempt_id: str, db_path: Path | None = None) -> dict | None:
    with connect(db_path, read_only=True) as con:
        return _attempt_facts(con, attempt_id)


def file(
    attempt_id: str,
    claim: str,
    contact: str,
    by: str,
    at: datetime,
    note: str = "",
    db_path: Path | None = None,
) -> str:
    """File a dispute of one attempt (decisions.disputes); returns its id. The attempt must be
    loaded and be the one that counts (no later run of it)."""
    try:
        parse_attempt_id(attempt_id)
    except ValueError as err:
        raise DisputeError(f"attempt: {err}") from None
    # deferred: the seal's reader pulls in the warehouse build (pandas), which the DAG files that
    # import this module's forms must not load when they are parsed
    from argusic.publication.sealing import PublicationBlocked, published_attempt

    with connect(db_path, read_only=True) as con:
        # a maintainer reads a private project's attempt under its label until the reveal
        try:
            attempt_id = published_attempt(con, attempt_id, publish_dir())
        except (LookupError, PublicationBlocked) as err:
            raise DisputeError(f"attempt {attempt_id!r}: {err}") from None
        facts = _attempt_facts(con, attempt_id)
        later = con.execute(
            "SELECT attempt_id FROM raw.run_records WHERE rerun_of = ?", [attempt_id]
        ).fetchone()
    if facts is None:
        raise DisputeError(f"attempt {attempt_id!r} is not in the warehouse (`argusic attempts`)")
    if later is not None:
        raise DisputeError(
            f"attempt {attempt_id!r} does not count: it was run again as {later[0]!r}; dispute that one"
        )
    dispute_id = dispute_id_for(attempt_id, claim, contact)
    decisions.record(
        "disputes",
        {
            "dispute_id": dispute_id,
            "attempt_id": attempt_id,
            "claim": claim,
            "contact": contact,
            "decided_by": by,
            "decided_at": at,
            "note": note or f"filed by {by}",
        },
        db_path,
    )
    return dispute_id


def _disputes(con, where: str = "", params: list | None = None) -> list[Dispute]:
    rows = con.execute(
        """
        WITH filed AS (
            SELECT * FROM decisions.disputes
            QUALIFY row_number() OVER (PARTITION BY dispute_id ORDER BY decided_at) = 1
        ), rulings AS (
            SELECT * FROM decisions.dispute_rulings
            QUALIFY row_number() OVER (PARTITION BY dispute_id ORDER BY decided_at, decided_by) = 1
        ), reruns AS (
            SELECT dispute_id, max(rerun_attempt_id) AS rerun_attempt_id FROM decisions.dispute_rulings
            GROUP BY dispute_id
        )
        SELECT f.dispute_id, f.attempt_id, f.claim, f.contact, f.decided_by, f.decided_at,
               r.ruling, r.decided_by, r.decided_at, r.note, x.rerun_attempt_id
        FROM filed AS f
        LEFT JOIN rulings AS r USING (dispute_id)
        LEFT JOIN reruns AS x USING (dispute_id)
        """
        + where
        + " ORDER BY f.decided_at, f.dispute_id",
        params or [],
    ).fetchall()
    return [Dispute(*row) for row in rows]


def listing(db_path: Path | None = None, open_only: bool = False) -> list[Dispute]:
    with connect(db_path, read_only=True) as con:
        return _disputes(con, "WHERE r.ruling IS NULL" if open_only else "")


def get(dispute_id: str, db_path: Path | None = None) -> Dispute:
    with connect(db_path, read_only=True) as con:
        found = _disputes(con, "WHERE f.dispute_id = ?", [dispute_id])
    if not found:
        raise DisputeError(f"no dispute {dispute_id!r} (`argusic dispute list`)")
    return found[0]


def subject_of(dispute: Dispute) -> str:
    return f"Dispute {dispute.dispute_id} of {dispute.attempt_id}"


def body_of(dispute: Dispute, facts: dict | None) -> str:
    """The ruling form's body: the claim and contact (quoted, as filed), the attempt as scored, and
    its served log and recording to read before ruling."""
    lines = [
        f"A dispute of attempt `{dispute.attempt_id}`, filed by {quoted(dispute.filed_by)} at "
        f"{dispute.filed_at:%Y-%m-%d %H:%M:%S} UTC.",
        "",
        f"- claim: {quoted(dispute.claim, 1000)}",
        f"- contact: {quoted(dispute.contact)}",
    ]
    if facts:
        outcome = (
            facts["outcome"] if facts["is_valid"] else f"invalid: {quoted(facts['invalid_reason'], 200)}"
        )
        score = "—" if facts["score"] is None else f"{facts['score']:.2f}"
        evidence = (
            "served copies withheld"
            if facts["served_copy_withheld"]
            else f"{link(facts['served_log_uri'], 'served log')} · "
            f"{link(facts['served_recording_uri'], 'served recording')}"
        )
        lines += [
            f"- agent `{facts['agent_id']}`, project `{facts['project_id']}`, cycle `{facts['cycle_id']}`, "
            f"attempt {facts['attempt_no']}: outcome **{outcome}**, score {score}, end reason "
            f"`{facts['end_reason']}`",
            f"- agent's final state: {quoted(facts['final_state'], 300)}",
            f"- evidence: {evidence} (raw log sha256 `{facts['log_sha256']}`)",
        ]
    lines += [
        "",
        "Read the full log and recording, then rule:",
        f"- **{ENVIRONMENT_AT_FAULT}**: our side stopped the agent; the attempt is rerun at once through "
        "the same attempt path, and the rerun counts in its place (the original stays, marked corrected).",
        f"- **{RESULT_STANDS}**: the result is the agent's; nothing changes.",
        "",
        "A note is required: it is published beside the original attempt when it is corrected.",
    ]
    return "\n".join(lines)


def rule(
    dispute_id: str, ruling: str, by: str, at: datetime, note: str, db_path: Path | None = None
) -> Dispute:
    """Record a person's ruling (environment_at_fault | result_stands). A dispute is ruled once."""
    ruling = OPTIONS.get(ruling, ruling)
    dispute = get(dispute_id, db_path)
    if dispute.ruling is not None and not (
        dispute.ruling == ruling and dispute.ruled_at == at and dispute.ruled_by == by
    ):
        raise DisputeError(
            f"dispute {dispute_id} was ruled {dispute.ruling} by {dispute.ruled_by} at {dispute.ruled_at}: "
            "a dispute is ruled once (file a new dispute to contest it)"
        )
    decisions.record(
        "dispute_rulings",
        {"dispute_id": dispute_id, "ruling": ruling, "decided_by": by, "decided_at": at, "note": note},
        db_path,
    )
    return get(dispute_id, db_path)
