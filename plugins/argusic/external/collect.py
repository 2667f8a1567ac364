"""Shared collector helpers: read a session log that may be cut anywhere, keep every number with its
status, validate the agent's report, and build the run-record parts.

Statuses (DESIGN.md, "모르는 값은 모른다고 적는다"):

- ``measured``: one number copied as is from the harness's log (e.g. ``total_cost_usd``);
- ``derived``: computed by us from other values (a sum of several counters, a count of events);
- ``unavailable``: the log does not say, so the value is null. A missing number is never 0.

A count taken from a log that was cut short is a lower bound: it stays ``derived`` and the run is
marked partial; a count of 0 from a cut log says nothing and is ``unavailable`` instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from argusic.core.record import Report
from argusic.core.settings import orchestrator_config
from argusic.external.model_settings import comparison_grade, model_settings

Status = Literal["measured", "derived", "unavailable"]
EndState = Literal["completed", "error", "truncated"]
Category = Literal["read", "search", "edit", "exec", "other"]
USAGE_FIELDS = ("input_tokens", "output_tokens", "model_calls", "cost_usd", "duration_seconds")


@dataclass(frozen=True)
class Measure:
    """A number with its provenance; ``note`` says where it came from (kept out of the record)."""

    value: float | None
    status: Status
    note: str

    def __post_init__(self) -> None:
        if (self.status == "unavailable") != (self.value is None):
            raise ValueError(f"status {self.status!r} with value {self.value!r}")

    def as_record(self) -> dict:
        return {"value": self.value, "status": self.status}


def measured(value: float, note: str) -> Measure:
    return Measure(value, "measured", note)


def derived(value: float, note: str) -> Measure:
    return Measure(value, "derived", note)


def unavailable(note: str) -> Measure:
    return Measure(None, "unavailable", note)


def total_of(parts: list[tuple[str, Any]], what: str) -> Measure:
    """Add counters the log states. One counter: measured; several: derived; none: unavailable.

    Parts whose value is missing or not a number are left out (and named in the note); if every
    part is missing, the total is unavailable, never 0.
    """
    present = [(name, v) for name, v in parts if _is_number(v)]
    missing = [name for name, v in parts if not _is_number(v)]
    if not present:
        return unavailable(f"{what}: not in the log ({', '.join(missing) or 'no counters'})")
    value = sum(v for _, v in present)
    value = int(value) if all(isinstance(v, int) for _, v in present) else value
    note = f"{what}: " + " + ".join(name for name, _ in present)
    if missing:
        note += f" (absent: {', '.join(missing)})"
    return measured(value, note) if len(present) == 1 and not missing else derived(value, note)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class ToolCall:
    """One tool call in order: the harness's own name, a common category, its target, its outcome."""

    name: str
    category: Category
    target: str | None
    arguments: Mapping[str, Any]
    ok: bool | None  # None: the log never says how it ended (e.g. cut before the result)
    call_id: str | None = None


MAX_LINE_BYTES = 16 * 1024**2  # a session line longer than this is counted and named, never held
REPORT_MAX_BYTES = 1024**2  # the agent's report is seven short fields


@dataclass
class JsonlRead:
    events: list[dict] = field(default_factory=list)  # filled by read_jsonl only (iter_jsonl streams)
    lines_total: int = 0
    lines_unparsable: int = 0
    truncated_tail: bool = False  # the last line has no newline and does not parse: cut mid-line
    problems: list[str] = field(default_factory=list)
    events_seen: int = 0


def _skip_rest_of_line(handle) -> int:
    """Read past the rest of an over-long line; its length without the newline."""
    skipped = 0
    while piece := handle.readline(1 << 20):
        if piece.endswith(b"\n"):
            return skipped + len(piece) - 1
        skipped += len(piece)
    return skipped


def iter_jsonl(path: Path, out: JsonlRead) -> Iterator[dict]:
    """Stream a JSON Lines session log line by line, in bounded memory (a line over MAX_LINE_BYTES is
    skipped, counted and named); never raises on content. Lines that are not a JSON object are
    counted and named (line number and first characters) in `out`; objects are yielded in order."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        out.problems.append(f"session log missing: {path}")
        return
    with handle:
        number = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            newline = raw.endswith(b"\n")
            if not newline and len(raw) > MAX_LINE_BYTES:
                size = len(raw) + _skip_rest_of_line(handle)
                out.lines_total += 1
                out.lines_unparsable += 1
                out.problems.append(f"line {number}: {size} bytes, over {MAX_LINE_BYTES}: not parsed")
                continue
            line = (raw[:-1] if newline else raw).decode("utf-8", errors="replace")
            if not line.strip():
                continue  # blank lines are not events and not damage
            out.lines_total += 1
            try:
                event = json.loads(line)
            except json.JSONDecodeError as err:
                event = None
                reason = f"not JSON ({err.msg})"
            else:
                reason = "not a JSON object"
            if isinstance(event, dict):
                out.events_seen += 1
                yield event
                continue
            out.lines_unparsable += 1
            if not newline:  # only the last line can lack its newline
                out.truncated_tail = True
                out.problems.append(f"line {number}: cut mid-line ({len(line)} characters, no newline)")
            else:
                out.problems.append(f"line {number}: {reason}: {line[:60]!r}")


def read_jsonl(path: Path) -> JsonlRead:
    """The whole log at once (small logs, tests); collectors stream with ``iter_jsonl``."""
    out = JsonlRead()
    out.events = list(iter_jsonl(path, out))
    return out


def read_report(path: Path | None) -> tuple[dict | None, str | None]:
    """The agent's report (7 fields, argusic.core.record.Report) or None with the reason."""
    if path is None:
        return None, "no report path given"
    try:
        with open(path, "rb") as handle:
            raw = handle.read(REPORT_MAX_BYTES + 1)
    except FileNotFoundError:
        return None, f"report missing: {path.name} was not written"
    except OSError as err:
        return None, f"report unreadable: {err}"
    if len(raw) > REPORT_MAX_BYTES:
        return None, f"report unreadable: {path.name} is over {REPORT_MAX_BYTES} bytes"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return None, f"report unreadable: {err}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        return None, f"report is not JSON: {err.msg} at line {err.lineno}"
    try:
        return Report.model_validate(data).model_dump(), None
    except ValidationError as err:
        fields = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(document)'}: {e['msg']}" for e in err.errors()
        )
        return None, f"report invalid: {fields}"


@dataclass
class CollectedRun:
    """What a collector made of one session log (and the agent's report)."""

    harness: str
    harness_version: str | None
    usage: dict[str, Measure]
    model_requested: str | None
    model_responded: str | None
    end_state: EndState
    end_detail: str | None
    final_text: str | None
    tool_calls: list[ToolCall]
    lines_total: int
    lines_unparsable: int
    truncated_tail: bool
    problems: list[str]
    report: dict | None
    report_problem: str | None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [name for name in USAGE_FIELDS if name not in self.usage]
        if missing:
            raise ValueError(f"usage lacks {missing}")

    @property
    def partial(self) -> bool:
        """The log does not hold the whole session: counts from it are lower bounds."""
        return self.end_state == "truncated" or self.lines_unparsable > 0


def count_measure(count: int, what: str, partial: bool) -> Measure:
    """A count of events we made ourselves: derived; from a cut log a lower bound, and 0 from a cut
    log is unavailable (the events may be in the part that is missing)."""
    if partial and count == 0:
        return unavailable(f"{what}: none seen, but the log is incomplete")
    note = f"{what}: counted from the log"
    if partial:
        note += " (lower bound: the log is incomplete)"
    return derived(count, note)


READ_TOOLS = {"read", "notebookread", "view", "read_file", "view_image"}
SEARCH_TOOLS = {"grep", "glob", "ls", "websearch", "webfetch", "web_search", "toolsearch", "search"}
EDIT_TOOLS = {"edit", "multiedit", "write", "notebookedit", "apply_patch", "file_change"}
EXEC_TOOLS = {"bash", "bashoutput", "killshell", "killbash", "monitor", "command_execution", "shell"}


def categorize(name: str) -> Category:
    """Common category of a tool by its harness name (case-insensitive); unknown tools are other."""
    key = name.lower()
    if key in READ_TOOLS:
        return "read"
    if key in SEARCH_TOOLS:
        return "search"
    if key in EDIT_TOOLS:
        return "edit"
    if key in EXEC_TOOLS:
        return "exec"
    return "other"


def record_parts(
    run: CollectedRun,
    *,
    key_kind: Literal["per_run", "shared", "none"],
    key_limit_usd: float | None = None,
    harness_version: str | None = None,
    wall_seconds: float | None = None,
    argv: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> dict:
    """The ``usage``, ``model``, ``harness``, ``key`` and ``report`` parts of a run record.

    ``argv`` and ``env`` are the agent's own command and environment as the harness launched it:
    the model settings are read from them and from the session (``argusic.external.model_settings``),
    with the comparison grade (issue #31, seed 002).

    ``wall_seconds`` is the attempt's wall time measured by our executor; it fills
    ``duration_seconds`` only when the harness's log states no duration (status measured: we
    measured it). ``key_limit_usd`` defaults to the orchestrator's per-run limit for per-run keys.
    """
    usage = {name: run.usage[name].as_record() for name in USAGE_FIELDS}
    if usage["duration_seconds"]["status"] == "unavailable" and wall_seconds is not None:
        usage["duration_seconds"] = {"value": round(float(wall_seconds), 3), "status": "measured"}
    if key_kind == "per_run" and key_limit_usd is None:
        key_limit_usd = orchestrator_config().per_run_key_limit_usd
    grade, basis = comparison_grade(run.harness, run, run.model_requested)
    harness = {"name": run.harness, "version": harness_version or run.harness_version or "unknown"}
    if grade is not None:
        harness |= {"grade": grade, "grade_basis": basis}
    return {
        "usage": usage,
        "model": {
            "requested": run.model_requested,
            "responded": run.model_responded,
            "settings": model_settings(run.harness, run, argv, env),
        },
        "harness": harness,
        "key": {"kind": key_kind, "limit_usd": key_limit_usd if key_kind == "per_run" else None},
        "report": run.report,
    }


def most_common(values: Iterable[str]) -> str | None:
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    if not counts:
        return None
    return max(counts, key=lambda v: counts[v])  # ties: the first seen (dicts keep insertion order)


def shell_script(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"
