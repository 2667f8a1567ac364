"""Layer 3 of issue #14: a person reviews attempts of the review queue (marts.review_queue).

Every attempt is in the queue (issue #31, seed 004): the selection rules decide the order (selected
attempts first, `is_selected`), not whether a person can review it. `awaiting` lists the queue's
attempts with no review in force, selected ones first (or only those, or the ones named);
`body_of` is what the Airflow form shows of one (every fact the task's review definition `shows`,
generated `*.review.json`, the judges' reading and links to the served log and recording); `decide`
records a review (decisions.judging_reviews: look 0..2, promote | reject, optionally the person's own
code_structure and logic_correctness 0..2, who, when, why), through the same function for the CLI
and the form.

A person's promote/reject is the final decision whether the attempt counts as a result
(marts.judging_results: the person's decision when present, else the layers' provisional one; shown
on the public run page). It never changes a score, a verdict, a rate or the board
(marts.judging_review_divergence compares it with the judges; a guard test keeps it out of scores).
No Airflow import here (argusic.orchestration.forms holds the form).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path

from argusic.core.record import ATTEMPT_ID_RE
from argusic.core.tasks import TaskDefinitionError, task_for
from argusic.judging.render import SHOT_NAMES
from argusic.repair.labels import blind_attempt_id, load_labels
from argusic.review.text import link, quoted
from argusic.warehouse import decisions
from argusic.warehouse.db import connect

# The form's options (the decision), in words; stored as the decisions table's values.
PROMOTE = "Promote"
REJECT = "Reject"
OPTIONS = {PROMOTE: "promote", REJECT: "reject"}
CRITERIA = ("code_structure", "logic_correctness")  # the judged criteria the person may score too
NOTE_MAX = 2000  # the review definition's note (generated *.review.json: max_length)
LISTED_PAGES = 10  # a form lists this many rendered pages (the count is always given)
QUEUE_COLUMNS = (
    "attempt_id", "cycle_id", "purpose", "agent_id", "project_id", "attempt_no", "task_id",
    "task_revision", "reasons", "is_selected", "review_status", "end_reason", "is_valid", "outcome", "score",
    "repair_verdict", "provisional_result", "duration_seconds", "input_tokens", "output_tokens",
    "cost_usd", "served_log_uri", "served_recording_uri", "served_copy_withheld", "final_state",
    "has_artifact_or_patch", "needles_score", "needles_status", "rendering_score", "rendering_status",
    "rendering_pages", "agent_logic_score", "agent_logic_status", "judges", "valid_judges",
    "judges_status", "code_structure_median", "logic_correctness_median", "judges_total",
    "judges_total_max", "judges_disagree", "disputes",
)  # fmt: skip


EVERYTHING_SHOWN = (
    "outcome", "needles", "rendering", "agent_logic", "screenshots", "duration_seconds",
    "input_tokens", "output_tokens", "cost_usd", "log", "recording", "patch", "grade",
)  # fmt: skip


class ReviewError(ValueError):
    """A review that cannot be recorded as asked (the message says why)."""


@dataclass(frozen=True)
class Item:
    """One attempt awaiting a person's review, with what the form shows (JSON-able)."""

    facts: dict

    @property
    def attempt_id(self) -> str:
        return self.facts["attempt_id"]

    @property
    def blinded(self) -> bool:
        """A repair attempt's patch is reviewed blind (issue #31, seed 001): marts.review_queue shows
        its agent as its label (repair/labels.toml) and its attempt id with the label in the agent's
        place, and links no session log or recording (they name the model); the form adds nothing
        that names it."""
        return self.facts.get("purpose") == "repair"

    @property
    def shown_agent(self) -> str:
        """The agent as the queue shows it (a repair attempt's label: the mart blinds it)."""
        return self.facts["agent_id"]

    @property
    def shown_id(self) -> str:
        """The attempt id as the queue shows it (blinded for a repair attempt by the mart);
        :func:`decide` maps it back to the raw id it records the review under."""
        return self.attempt_id

    @property
    def attempt_label(self) -> str:
        """Short and unique within a project and cycle: agent (its label, for a repair attempt),
        purpose and attempt number."""
        f = self.facts
        return f"{self.shown_agent} {f['purpose']} #{f['attempt_no']}"

    def to_dict(self) -> dict:
        return asdict(self)


def _rows(con, sql: str, params: list) -> list[dict]:
    cur = con.execute(sql, params)
    columns = [d[0] for d in cur.description]
    return [dict(zip(columns, r, strict=True)) for r in cur.fetchall()]


# The queue's order: attempts a selection rule selected first, then a stable order of the rest.
QUEUE_ORDER = "is_selected DESC, cycle_id, project_id, agent_id, purpose, attempt_no, attempt_id"


def queue(
    cycle_id: str | None = None,
    status: str | None = None,
    db_path: Path | None = None,
    *,
    selected_only: bool = False,
    attempt_ids: list[str] | None = None,
) -> list[dict]:
    """Rows of marts.review_queue (every cycle or one; every status or one; every attempt, or the
    selected ones only, or the ones named), selected attempts first, then in a stable order."""
    where, params = [], []
    if cycle_id:
        where.append("cycle_id = ?")
        params.append(cycle_id)
    if status:
        where.append("review_status = ?")
        params.append(status)
    if selected_only:
        where.append("is_selected")
    if attempt_ids is not None:
        where.append("list_contains(?, attempt_id)")
        params.append(list(attempt_ids))
    sql = (
        f"SELECT {', '.join(QUEUE_COLUMNS)}, look, decision, decided_by, decided_at FROM marts.review_queue"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + f" ORDER BY {QUEUE_ORDER}"
    )
    with connect(db_path, read_only=True) as con:
        return _rows(con, sql, params)


def awaiting(
    cycle_id: str | None = None,
    db_path: Path | None = None,
    *,
    selected_only: bool = False,
    attempt_ids: list[str] | None = None,
) -> list[Item]:
    """The queue's attempts with no review in force, selected ones first (``selected_only``: those
    only; ``attempt_ids``: the ones named, selected or not). ReviewError names an attempt asked for
    that is not in the queue."""
    rows = queue(cycle_id, "awaiting", db_path, selected_only=selected_only, attempt_ids=attempt_ids)
    if attempt_ids:
        missing = sorted(set(attempt_ids) - {r["attempt_id"] for r in rows})
        if missing:
            raise ReviewError(
                f"not awaiting a review{f' in cycle {cycle_id}' if cycle_id else ''}: {', '.join(missing)} "
                "(unknown, reviewed already, or of another cycle: `argusic judging queue`)"
            )
    return [Item({c: _jsonable(r[c]) for c in QUEUE_COLUMNS}) for r in rows]


def _jsonable(value: object) -> object:
    """A warehouse value as XCom can carry it (Decimal cost → float; JSON text stays text)."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def subject_of(item: Item) -> str:
    f = item.facts
    return f"Judging review: {f['project_id']} · {item.attempt_label} (cycle {f['cycle_id']})"


def _hint(facts: dict, name: str) -> str:
    status = facts.get(f"{name}_status")
    score = facts.get(f"{name}_score")
    if status == "measured":
        return f"{score:g}"
    return f"— ({status or 'no hints'})"


def _number(value: object, unit: str = "", digits: int = 0) -> str:
    if value is None:
        return "unknown"
    return f"{float(value):,.{digits}f}{unit}"


def _pages(facts: dict) -> list[str]:
    """Rendered pages with their outcome and the screenshots' names (render/pageNN-<moment>.png, as
    argusic.judging.render saves them; the hint keeps their sha256)."""
    try:
        pages = json.loads(facts.get("rendering_pages") or "[]")
    except (TypeError, ValueError):
        return ["- pages: unreadable"]
    if not isinstance(pages, list):
        return []
    lines = []
    for index, page in enumerate(pages[:LISTED_PAGES]):
        if not isinstance(page, dict):
            continue
        shots = [
            f"`render/page{index:02d}-{name}.png` ({str(sha)[:12]})"
            for name, sha in zip(SHOT_NAMES, page.get("screenshots") or [], strict=False)
        ]
        lines.append(
            f"- page {quoted(page.get('path'), 120)}: {quoted(page.get('outcome'), 40)}; screenshots: "
            + (", ".join(shots) or "none")
        )
    if len(pages) > LISTED_PAGES:
        lines.append(f"- … and {len(pages) - LISTED_PAGES} more pages")
    return lines


def shows(facts: dict) -> tuple[str, ...]:
    """What the task's review definition says the form shows (generated `<task>.review.json`)."""
    try:
        return tuple(task_for(facts["purpose"], facts["project_id"]).review["shows"])
    except (TaskDefinitionError, KeyError, ValueError):
        return EVERYTHING_SHOWN  # an unknown purpose: show everything rather than hide a fact


def body_of(item: Item) -> str:
    """The form's body (Markdown): why it was selected, every fact the review definition shows, the
    judges' reading, links to the served log and recording. Text written by others is quoted."""
    f = item.facts
    wanted = set(shows(f))
    lines = [
        f"Attempt `{item.shown_id}` — project **`{f['project_id']}`**, agent `{item.shown_agent}`, "
        f"{f['purpose']} attempt #{f['attempt_no']}, cycle `{f['cycle_id']}`.",
        "",
        (
            f"**Selected for review**: {f['reasons']}."
            if f.get("reasons")
            else "**Not selected by a rule** (every attempt can be reviewed; selected ones come first)."
        )
        + " Your Promote/Reject decides whether the attempt counts as a result (else the provisional "
        "result does); it never changes the attempt's score, the board or a rate.",
        "",
        f"- provisional result: **{f.get('provisional_result') or 'none yet'}**",
    ]
    if "outcome" in wanted:
        outcome = f.get("outcome") or f.get("repair_verdict") or "none"
        score = f" (score {f['score']:g})" if f.get("score") is not None else ""
        lines.append(f"- outcome: **{outcome}**{score}; end reason `{f.get('end_reason')}`")
    if "grade" in wanted:
        lines.append(f"- grade: **{f.get('repair_verdict') or 'not graded'}**")
    if "patch" in wanted:
        lines.append(f"- patch: {'changes code' if f.get('has_artifact_or_patch') else 'none or empty'}")
    if "duration_seconds" in wanted:
        lines.append(f"- duration: {_number(f.get('duration_seconds'), ' s')}")
    if wanted & {"input_tokens", "output_tokens"}:
        lines.append(f"- tokens: {_number(f.get('input_tokens'))} in, {_number(f.get('output_tokens'))} out")
    if "cost_usd" in wanted:
        cost = f.get("cost_usd")
        lines.append(f"- cost: {'unknown' if cost is None else f'${float(cost):.4f}'} (from tokens)")
    hints = [(n, n.replace("_", " ")) for n in ("needles", "rendering", "agent_logic") if n in wanted]
    if hints:
        lines.append("- hints (Layer 1): " + ", ".join(f"{label} {_hint(f, n)}" for n, label in hints))
    medians = ", ".join(f"{c} {_number(f.get(f'{c}_median'), digits=1)}" for c in CRITERIA)
    lines.append(
        f"- judges (Layer 2): {f.get('valid_judges', 0)} valid of {f.get('judges', 0)} "
        f"({f.get('judges_status')}); medians {medians}; total "
        f"{_number(f.get('judges_total'), digits=1)} of {f.get('judges_total_max', 4)}"
        + ("; **the judges disagree**" if f.get("judges_disagree") else "")
    )
    if f.get("disputes"):
        lines.append(f"- disputes filed: {f['disputes']} (`argusic dispute list`)")
    if item.blinded:
        lines.append("- evidence: session log and recording not linked (they name the model: reviewed blind)")
    elif "log" in wanted or "recording" in wanted:
        served = (
            f"{link(f.get('served_log_uri'), 'log')} · {link(f.get('served_recording_uri'), 'recording')}"
        )
        evidence = "served copies withheld" if f.get("served_copy_withheld") else served
        lines.append(f"- evidence: {evidence}")
    if item.blinded:  # the agent's own words may name it
        lines.append("- final state: not shown (the agent's own words may name it: reviewed blind)")
    else:
        lines.append(f"- final state: {quoted(f.get('final_state'), 200)}")
    if "screenshots" in wanted or "rendering" in wanted:
        pages = _pages(f)
        if pages:
            lines += ["", "Rendered pages:", "", *pages]
    lines += ["", ANSWER]
    return "\n".join(lines)


ANSWER = (
    "Answer: **look** 0..2 (required), then **Promote** or **Reject**; optionally your own "
    "code_structure and logic_correctness (0..2) and a note. Recorded with your name and the time."
)


def raw_attempt_id(attempt_id: str, db_path: Path | None = None) -> str:
    """The raw layer's id of an attempt as the queue shows it (issue #31: a repair attempt's shown id
    carries its agent's label, argusic.repair.labels.blind_attempt_id, as the marts compute it):
    reviews are recorded under the raw id. Any other id is returned as it is."""
    match = ATTEMPT_ID_RE.fullmatch(attempt_id)
    if match is None or match["purpose"] != "repair":
        return attempt_id
    with connect(db_path, read_only=True) as con:
        candidates = [
            r[0]
            for r in con.execute(
                "SELECT attempt_id FROM raw.run_records WHERE purpose = 'repair' AND cycle_id = ?",
                [match["cycle_id"]],
            ).fetchall()
        ]
    if attempt_id in candidates:
        return attempt_id
    labels = load_labels()
    return next((c for c in candidates if blind_attempt_id(c, labels) == attempt_id), attempt_id)


def task_revision_of(attempt_id: str, db_path: Path | None = None) -> str:
    """The task revision a review of the attempt is recorded under: the queue's (its newest hints),
    else the current definition of its task (argusic.core.tasks)."""
    with connect(db_path, read_only=True) as con:
        row = con.execute(
            "SELECT r.purpose, r.project_id, q.task_revision FROM raw.run_records r "
            "LEFT JOIN marts.review_queue q ON q.attempt_id = r.attempt_id WHERE r.attempt_id = ?",
            [attempt_id],
        ).fetchone()
    if row is None:
        raise ReviewError(f"attempt {attempt_id!r} is not in the warehouse (`argusic attempts`)")
    purpose, project_id, revision = row
    return revision or task_for(purpose, project_id).revision


def decide(
    attempt_id: str,
    look: object,
    decision: str,
    by: str,
    at: datetime,
    note: str = "",
    *,
    code_structure: object = None,
    logic_correctness: object = None,
    task_revision: str | None = None,
    db_path: Path | None = None,
) -> bool:
    """Record a person's review (decisions.judging_reviews); the marts read it at the next build.
    True when new, False when the same (attempt, time) was already recorded. DecisionError names
    every problem (look and decision required, scores 0..2); ReviewError for an unknown attempt.
    A repair attempt's shown (blinded) id is recorded under its raw id (:func:`raw_attempt_id`)."""
    attempt_id = raw_attempt_id(attempt_id, db_path)
    revision = task_revision or task_revision_of(attempt_id, db_path)
    return decisions.record(
        "judging_reviews",
        {
            "attempt_id": attempt_id,
            "task_revision": revision,
            "look": look,
            "decision": OPTIONS.get(decision, decision),
            "code_structure": code_structure,
            "logic_correctness": logic_correctness,
            "decided_by": by,
            "decided_at": at,
            "note": note,
        },
        db_path,
    )


# -- the bulk judging review: one form for a queue, each item still its own recorded decision --------

BULK_MAX = 20  # items per bulk form; the rest wait for the next run (a form is read top to bottom)
LATER = "later"  # an item the person leaves for later: nothing recorded, it stays in the queue
BULK_CHOICES = {
    f"{decision}:{look}": f"{option}, look {look} ({words})"
    for option, decision in OPTIONS.items()
    for look, words in ((2, "good"), (1, "acceptable"), (0, "poor"))
} | {LATER: "Leave for later (nothing recorded)"}


def bulk_key(n: int) -> str:
    """The bulk form's field of item n (1-based): its decision and look in one choice."""
    return f"item_{n:02d}"


def bulk_note_key(n: int) -> str:
    return f"item_{n:02d}_note"


def bulk_choice(value: object) -> tuple[str, int] | None:
    """(decision, look) of a bulk form's choice ("promote:2"); None for "later". DecisionError for
    anything else (an answer sent through the REST API skips the form's choice list)."""
    if value == LATER:
        return None
    if isinstance(value, str) and value in BULK_CHOICES:
        decision, _, look = value.partition(":")
        return decision, int(look)
    raise decisions.DecisionError(
        f"not a choice of the bulk form: {value!r} (one of {', '.join(BULK_CHOICES)})"
    )


def bulk_body(items: list[Item], left: int = 0) -> str:
    """The bulk form's body: every item's own body under its number, in the order of the fields."""
    parts = [
        f"**{len(items)} attempt(s) to review.** For each, choose *Promote* or *Reject* with a look "
        "(0 poor, 1 acceptable, 2 good), or *Leave for later*; a note per item is optional. Each "
        "choice is recorded as its own review (who, when, why) when you press **Record**."
    ]
    if left:
        parts.append(f"{left} more attempt(s) wait in the queue for the next run of this form.")
    for n, item in enumerate(items, 1):
        facts = body_of(item).removesuffix("\n\n" + ANSWER)  # the bulk form's own fields answer
        parts += ["", "---", "", f"#### Item {n}: {quoted(subject_of(item))}", "", facts]
    return "\n".join(parts)
