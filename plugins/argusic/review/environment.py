"""Environment review (METHODOLOGY.md §8): a project every agent failed in a cycle is kept out of
the scores until a person, having read its attempts' logs and recordings, says whose fault it was.

`awaiting` lists the projects under review with no decision (marts.project_review, review_status
awaiting_decision) with their attempts; `form` is what the Airflow form shows for one of them;
`decide` records a decision (decisions.review_decisions: cycle, project, decision, who, when, why),
which marts.project_review reads at the next build.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from argusic.review.text import link, quoted
from argusic.warehouse import decisions
from argusic.warehouse.db import connect

# The form's options, in words; stored as the decisions table's values.
PROJECT_AT_FAULT = "Project at fault"
ENVIRONMENT_AT_FAULT = "Environment at fault"
OPTIONS = {PROJECT_AT_FAULT: "project_at_fault", ENVIRONMENT_AT_FAULT: "environment_at_fault"}
LISTED_ATTEMPTS = 30  # a form lists this many attempts (the count is always given)


@dataclass(frozen=True)
class Case:
    """One project under review in one cycle, with what a person needs to decide (JSON-able)."""

    cycle_id: str
    project_id: str
    attempts: list[dict]

    def to_dict(self) -> dict:
        return asdict(self)


ATTEMPTS_SQL = """
SELECT attempt_id, agent_id, attempt_no, outcome, end_reason, is_valid, invalid_reason, final_state,
       served_log_uri, served_recording_uri, served_copy_withheld
FROM marts.attempt_scores
WHERE cycle_id = ? AND project_id = ? AND purpose = 'board'
ORDER BY agent_id, attempt_no, attempt_id
"""


def awaiting(cycle_id: str | None = None, db_path: Path | None = None) -> list[Case]:
    """Projects under review with no decision yet, every cycle or one, in (cycle, project) order."""
    with connect(db_path, read_only=True) as con:
        projects = con.execute(
            "SELECT cycle_id, project_id FROM marts.project_review WHERE review_status = 'awaiting_decision'"
            + (" AND cycle_id = ?" if cycle_id else "")
            + " ORDER BY cycle_id, project_id",
            [cycle_id] if cycle_id else [],
        ).fetchall()
        cases = []
        for cycle, project in projects:
            cur = con.execute(ATTEMPTS_SQL, [cycle, project])
            columns = [d[0] for d in cur.description]
            cases.append(Case(cycle, project, [dict(zip(columns, r, strict=True)) for r in cur.fetchall()]))
    return cases


def reviews(cycle_id: str | None = None, db_path: Path | None = None) -> list[dict]:
    """Every project that is or was under review, with its status and the decision in force."""
    with connect(db_path, read_only=True) as con:
        cur = con.execute(
            "SELECT cycle_id, project_id, review_status, excluded_from_board, decided_by, decided_at, "
            "decision_note FROM marts.project_review WHERE under_review"
            + (" AND cycle_id = ?" if cycle_id else "")
            + " ORDER BY cycle_id, project_id",
            [cycle_id] if cycle_id else [],
        )
        columns = [d[0] for d in cur.description]
        return [dict(zip(columns, r, strict=True)) for r in cur.fetchall()]


def subject_of(case: Case) -> str:
    return f"Environment review: {case.project_id} (cycle {case.cycle_id})"


def body_of(case: Case) -> str:
    """The form's body (Markdown): every attempt with its agent, outcome, end reason and the agent's
    final state (quoted), and links to its served log and recording."""
    lines = [
        f"Every agent failed **`{case.project_id}`** in cycle `{case.cycle_id}`: its results are kept out "
        "of the scores until you decide. Read the logs and recordings, then choose:",
        "",
        f"- **{PROJECT_AT_FAULT}**: the project itself does not install or run as documented; its "
        "results count again.",
        f"- **{ENVIRONMENT_AT_FAULT}**: our environment (image, network, hardware) stopped the agents; "
        "its results stay out.",
        "",
        "A note saying why is required; it is recorded with your name and the time.",
        "",
        f"**{len(case.attempts)} attempt(s)**:",
        "",
    ]
    for a in case.attempts[:LISTED_ATTEMPTS]:
        evidence = (
            "served copies withheld"
            if a.get("served_copy_withheld")
            else f"{link(a.get('served_log_uri'), 'log')} · "
            f"{link(a.get('served_recording_uri'), 'recording')}"
        )
        outcome = a["outcome"] if a.get("is_valid") else f"invalid: {quoted(a.get('invalid_reason'), 120)}"
        lines.append(
            f"- `{a['attempt_id']}` — agent `{a['agent_id']}`, outcome **{outcome}**, end reason "
            f"`{a['end_reason']}`; final state {quoted(a.get('final_state'), 200)}; {evidence}"
        )
    if len(case.attempts) > LISTED_ATTEMPTS:
        lines.append(
            f"- … and {len(case.attempts) - LISTED_ATTEMPTS} more "
            f"(`argusic attempts --cycle {case.cycle_id}`)"
        )
    return "\n".join(lines)


def decide(
    cycle_id: str,
    project_id: str,
    decision: str,
    by: str,
    at: datetime,
    note: str,
    db_path: Path | None = None,
) -> bool:
    """Record a review decision (project_at_fault | environment_at_fault); the marts read it at the
    next build. DecisionError names what is missing or wrong (a note is required)."""
    decision = OPTIONS.get(decision, decision)
    return decisions.record(
        "review_decisions",
        {
            "cycle_id": cycle_id,
            "project_id": project_id,
            "decision": decision,
            "decided_by": by,
            "decided_at": at,
            "note": note,
        },
        db_path,
    )
