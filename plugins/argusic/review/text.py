"""Text for the forms people answer: hostile values (an agent's final state, a claim) made safe to
show in Airflow's Markdown body, and the answer of a human-in-the-loop form read back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from argusic.attempts.live_log import clean_line
from argusic.core.evidence_links import evidence_view_url
from argusic.warehouse.decisions import DecisionError

SHOWN_MAX = 300


def quoted(value: object, limit: int = SHOWN_MAX) -> str:
    """A value written by someone else, as inline code: one line, no backticks, no controls (bidi
    controls shown as their escapes: `clean_line`), cut short. Inside a code span Markdown neither links nor
    formats, so nothing in it can act."""
    text = clean_line(" ".join(str(value if value is not None else "").split()), limit) or "—"
    return "`" + text.replace("`", "'") + "`"


def link(uri: str | None, label: str) -> str:
    """An evidence link. A served copy in this installation's store links the evidence viewer when
    one is configured (ARGUSIC_VIEWER_URL: the log's text, or the attempt's page where the recording
    plays; `argusic.core.evidence_links`); an http(s) URI (the public evidence base) links itself;
    anything else (a file:// or s3:// store with no viewer) is shown as text to copy, never followed."""
    if not uri:
        return f"{label}: none"
    target = evidence_view_url(uri) or uri
    if target.startswith(("https://", "http://")) and not any(c in target for c in " ()<>[]`\n"):
        return f"[{label}]({target})"
    return f"{label}: {quoted(uri, 500)}"


@dataclass(frozen=True)
class Answer:
    """A person's answer to a form: the option chosen, their note, who (the responding user) and
    when (the time Airflow recorded the response, UTC)."""

    choice: str
    note: str
    by: str
    at: datetime


def answer_of(result: Mapping, note_field: str = "note") -> Answer:
    """Read a human-in-the-loop result (the operator's return value / resume event:
    chosen_options, params_input, responded_by_user, responded_at). DecisionError when a part is
    missing: nothing is recorded from half an answer."""
    options = result.get("chosen_options") or []
    if len(options) != 1:
        raise DecisionError(f"a form answer chooses exactly one option, got {options!r}")
    params = result.get("params_input") or {}
    user = result.get("responded_by_user") or {}
    by = str(user.get("name") or user.get("id") or "").strip() if isinstance(user, Mapping) else ""
    at = result.get("responded_at")
    if isinstance(at, str):
        at = datetime.fromisoformat(at)
    if not isinstance(at, datetime):
        raise DecisionError("the form answer has no response time")
    if at.tzinfo is not None:
        at = at.astimezone(UTC).replace(tzinfo=None)
    return Answer(choice=str(options[0]), note=str(params.get(note_field) or "").strip(), by=by, at=at)
