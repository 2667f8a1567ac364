"""What an attempt task tells: its log's last lines and its label in the UI (board, verdict and repair
attempts)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from argusic.attempts.live_log import clean_line
from argusic.core.evidence_links import attempt_view_url, evidence_view_url
from argusic.core.layout import GRADE_FILE
from argusic.core.record import RecordFile
from argusic.core.safe_io import Unreadable, read_capped
from argusic.core.spec import MAP_LABEL_MAX, AttemptSpec, read_spec


@dataclass(frozen=True)
class AttemptStory:
    """How one planned attempt ended, for people: `label` is shown in the grid and the mapped-instance
    list (the rendered map index), `lines` end the task's log, `invalid` decides the task's state
    (skipped: measured nothing that counts; the records are kept and loaded)."""

    label: str
    lines: list[str]
    invalid: bool


def _text(value: str | None, limit: int = 300) -> str:
    """An agent-written text as it may be shown in a log line (hostile: escapes and controls out)."""
    return clean_line(" ".join((value or "").split()), limit) or "—"


def _result_words(record) -> str:
    """The end of an attempt in words, from the record's facts alone: the rubric (dbt) decides the
    outcome, points and score at build; these words never claim them."""
    if record.invalid_reason is not None:
        return "INVALID: " + _text(record.invalid_reason, 90)
    if record.container_fault is not None and record.end_reason != "timeout":
        return "✗ cut short in its container: " + _text(record.container_fault, 90)
    if record.end_reason == "timeout":
        budget = record.effective_budget_seconds or record.budget_seconds
        return f"✗ timeout at {budget} s"
    report = record.report
    if record.end_reason != "completed" or report is None:
        return f"✗ {record.end_reason}"
    if not report.install_ok:
        return "✗ install failed"
    if not report.ran_ok:
        return "✗ installed, did not run"
    if report.test_depth == "tier1_real":
        return "✓ ran, verified for real"
    if report.test_depth == "tier2_mock":
        return "✓ ran, verified with mocks"
    return "✗ ran, not verified"


def attempt_story(spec_path: str | Path, record_paths: list[str]) -> AttemptStory:
    """story_of, for a caller that holds only the spec's and the records' paths: reads each once."""
    return story_of(read_spec(spec_path), [RecordFile.load(p) for p in record_paths])


def story_of(spec: AttemptSpec, measured: Sequence[RecordFile]) -> AttemptStory:
    """The closing lines of an attempt task's log and its label, from its run records (reruns
    included), as the task measured them (nothing is read again): end state, validity, the agent's
    report, the evidence, and where outcome, points and score are (decided by the rubric in dbt at
    `build`, listed in `publish`'s log)."""
    records = [m.record for m in measured]
    last = records[-1]
    words = _result_words(last)
    repair_lines: list[str] = []
    if last.repair is not None:  # a repair attempt: its result is its grade, not a report
        words, repair_lines = repair_story(last, measured[-1].path)
    lines = [f"── {last.attempt_id}: {words}"]
    budget = f"budget {last.budget_seconds} s"
    if last.demo and last.effective_budget_seconds:
        budget += f", scaled to {last.effective_budget_seconds} s (demo)"
    seconds = (last.ended_at - last.started_at).total_seconds()
    lines.append(
        f"   final state: {last.end_reason} after {seconds:.1f} s ({budget}), executor {last.executor}"
    )
    if last.invalid_reason is not None:
        lines.append(
            f"   invalid (our tooling failed; not scored, kept with its reason): {_text(last.invalid_reason)}"
        )
    if last.container_fault is not None:
        lines.append(
            "   cut short in its container (the agent's or the project's doing; a measured failure, "
            f"0 points, no rerun): {_text(last.container_fault)}"
        )
    for earlier in records[:-1]:
        lines.append(f"   rerun of {earlier.attempt_id}: it was invalid: {_text(earlier.invalid_reason)}")
    if last.report is not None:
        r = last.report
        yes = {True: "yes", False: "no"}
        lines.append(
            f"   agent's report: installed {yes[r.install_ok]}, ran {yes[r.ran_ok]}, "
            f"test depth {r.test_depth}, errors fixed {r.errors_fixed} of {r.errors_encountered}"
        )
        lines.append(f"   verified how: {_text(r.verified_how)}")
        lines.append(f"   agent's final state: {_text(r.final_state)}")
    elif last.end_reason == "timeout" and last.repair is None:
        lines.append("   agent's report: none (a timeout scores 0 in every category, whatever was written)")
    lines.extend(repair_lines)
    if last.repair is None:
        lines.append(
            "   outcome, points and score: decided by the rubric (dbt: marts.attempt_scores) at `build`; "
            f"listed in this run's `publish` log, `argusic attempts --cycle {last.cycle_id}` and "
            f"published/{last.cycle_id}/attempts.json"
        )
    shown = last.presentation
    if shown is not None and shown.withheld:
        lines.append(f"   served copy withheld: {_text(shown.withheld_reason)}")
    # the evidence viewer's links when one is configured (ARGUSIC_VIEWER_URL), else the store's URIs
    if shown is not None and not shown.withheld and (page := attempt_view_url(last.attempt_id)):
        lines.append(f"   attempt page:     {page}")
    if shown is not None and shown.log is not None:
        lines.append(f"   served log:       {evidence_view_url(shown.log.uri) or shown.log.uri}")
    if shown is not None and shown.recording is not None:
        lines.append(f"   served recording: {evidence_view_url(shown.recording.uri) or shown.recording.uri}")
    for kind in ("log", "recording", "report"):
        ref = getattr(last.evidence, kind)
        lines.append(f"   raw {kind}: " + (f"sha256 {ref.sha256} ({ref.bytes} bytes)" if ref else "none"))
    lines.append(f"   run record: {measured[-1].path}")
    label = f"{spec.label} · {words}"[:MAP_LABEL_MAX]
    return AttemptStory(label=label, lines=lines, invalid=last.invalid_reason is not None)


def repair_story(record, record_path: Path) -> tuple[str, list[str]]:
    """The words (the task's label) and closing log lines of a repair attempt: its item, patch and
    grade. The grade is read from the attempt's folder (size-capped; what it says is shown cleaned)."""
    block = record.repair
    lines = [f"   item: {block.item_id} ({block.track} track), revision {block.item_revision[:12]}"]
    if block.limit_hit:
        lines.append(f"   limit hit: {block.limit_hit} (fixed before the results; the patch is graded)")
    patch = block.patch
    lines.append(f"   patch: {patch.bytes} bytes, sha256 {patch.sha256}" if patch else "   patch: none")
    verdict = None
    try:
        grade = json.loads(read_capped(record_path.parent / GRADE_FILE, 4 << 20)) if block.grade else None
    except (Unreadable, ValueError):
        grade = None
    if isinstance(grade, dict) and isinstance(grade.get("verdict"), str):
        verdict = _text(grade["verdict"], 40)
        failing = grade.get("failing_tests") if isinstance(grade.get("failing_tests"), list) else []
        lines.append(
            f"   grade: {verdict}"
            + (f", failing: {_text(' '.join(map(str, failing[:10])))}" if failing else "")
        )
    elif block.grade:
        lines.append(f"   grade: sha256 {block.grade.sha256} (in the evidence store)")
    else:
        lines.append("   grade: none (not graded)")
    lines.append("   rates per agent and track: dbt marts repair_runs / repair_rates at `build`")
    if record.invalid_reason is not None:
        return _result_words(record), lines
    return (f"graded {verdict}" if verdict else _result_words(record)), lines
