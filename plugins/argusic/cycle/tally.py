"""A cycle's tally: how each attempt ended (pass, fail, timeout, invalid: the rubric's outcomes, read
from the records), and whether the cycle may go on to the warehouse."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from argusic.core.record import RecordError, RecordFile, RunRecord
from argusic.core.settings import runs_dir
from argusic.core.spec import MAP_LABEL_MAX


class CycleFailed(RuntimeError):
    """A cycle that must not be published: nothing planned, or no valid attempt."""


# The rubric's outcomes (marts.attempt_scores.outcome; pass_full and pass_mock are both a pass), in the
# order ops read them: what went wrong first.
FAIL, TIMEOUT, INVALID, PASS = "fail", "timeout", "invalid", "pass"
OUTCOMES = (FAIL, TIMEOUT, INVALID, PASS)
# The edition from which a claim earns only what the harness observed (issue #25), and the one from
# which a container's cut is the container's doing: int_attempt_scores.sql, int_attempts_validated.sql.
_EVIDENCE_EDITION = 1007
_CONTAINER_FAULT_EDITION = 1006


@dataclass
class CycleTally:
    """The planned attempts of a run and how each ended (its last record, reruns included)."""

    planned: int = 0
    valid: int = 0
    invalid: int = 0
    passes: int = 0  # valid attempts whose record reads as a pass (the warehouse decides the outcome)
    failed: int = 0  # valid attempts that did not pass: a measured failure (timeouts apart)
    timed_out: int = 0  # valid attempts stopped at their time budget (a measured failure too)
    cut_by_container: int = 0  # valid attempts the container cut short (a measured failure, #25)
    invalid_reasons: Counter = field(default_factory=Counter)
    container_faults: Counter = field(default_factory=Counter)

    def add(self, record) -> None:
        self.planned += 1
        outcome = outcome_of(record)
        if record.invalid_reason is None:
            self.valid += 1
            self.passes += int(outcome == PASS)
            self.failed += int(outcome == FAIL)
            self.timed_out += int(outcome == TIMEOUT)
            if record.container_fault is not None:
                self.cut_by_container += 1
                self.container_faults[_reason_kind(record.container_fault)] += 1
        else:
            self.invalid += 1
            self.invalid_reasons[_reason_kind(record.invalid_reason)] += 1

    def counts(self) -> dict[str, int]:
        """The run's attempts by outcome, what went wrong first (each counted once, by its last record)."""
        return {FAIL: self.failed, TIMEOUT: self.timed_out, INVALID: self.invalid, PASS: self.passes}

    def summary(self) -> str:
        """One line for people: `9 attempts: 3 pass · 4 fail · 1 timeout · 1 invalid`."""
        parts = [f"{self.passes} pass", f"{self.failed} fail", f"{self.timed_out} timeout",
                 f"{self.invalid} invalid"]  # fmt: skip
        return f"{self.planned} attempt{'s' if self.planned != 1 else ''}: " + " · ".join(parts)


def _edition_code(version: str | None) -> int | None:
    """`1.7` -> 1007, as the warehouse compares editions; None when it does not read as one."""
    major, _, minor = (version or "").partition(".")
    return int(major) * 1000 + int(minor) if major.isdigit() and minor.isdigit() else None


def outcome_of(record) -> str:
    """How the rubric will class a board or verdict attempt, read from its record alone: invalid (our
    tooling failed), timeout, fail (cut short in its container, no complete report, not installed,
    not run, not verified, or -- from edition 1.7 -- a claim the harness's observation did not show),
    else pass. marts.attempt_scores decides at `build` (points and score too); this reading is for
    labels, tallies and progress lines, never for a score."""
    if record.invalid_reason is not None:
        return INVALID
    if record.end_reason == "timeout":
        return TIMEOUT
    edition = _edition_code(record.methodology_version)
    if record.container_fault is not None and (edition is None or edition >= _CONTAINER_FAULT_EDITION):
        return FAIL
    report = record.report
    if _rejected_report(record):
        return FAIL
    claimed = bool(
        record.end_reason == "completed"
        and report is not None
        and report.install_ok
        and report.ran_ok
        and report.test_depth in ("tier1_real", "tier2_mock")
    )
    if not claimed:
        return FAIL
    return PASS if claim_shown(record) else FAIL


def _rejected_report(record) -> bool:
    """A report claiming more errors fixed than encountered: rejected, a measured failure (from edition
    1.6; before it the pipeline marked such an attempt invalid)."""
    report = record.report
    return report is not None and report.errors_fixed > report.errors_encountered


def claim_shown(record) -> bool:
    """Whether the harness's observation shows the installed, ran and verified an agent claims (from
    edition 1.7 a claim earns only what was observed; before it, the claim was the reading)."""
    edition = _edition_code(record.methodology_version)
    if edition is None or edition < _EVIDENCE_EDITION:
        return True
    seen = getattr(record, "observed", None)
    return bool(seen is not None and seen.install_ok and seen.ran_ok and seen.verified)


def record_passes(record) -> bool:
    """What the rubric will call pass_full or pass_mock (marts.attempt_scores decides; this is for
    progress lines only): outcome_of reads it as a pass."""
    return outcome_of(record) == PASS


def _reason_kind(reason: str) -> str:
    """Group reasons that differ only by ids, paths or numbers."""
    reason = re.sub(r"[0-9a-f]{40}", "<commit>", reason)
    return reason if len(reason) <= 200 else reason[:197] + "..."


_RERUN = re.compile(r"\.r\d+$")


def read_run_records(record_paths: Iterable[str | Path | RecordFile]) -> list[RecordFile]:
    """Each run record parsed once (one given parsed already is kept as it is); CycleFailed names one
    that cannot be read."""
    loaded = []
    for path in record_paths:
        if isinstance(path, RecordFile):
            loaded.append(path)
            continue
        try:
            loaded.append(RecordFile.load(path))
        except (OSError, RecordError) as err:
            raise CycleFailed(f"{path}: unreadable run record: {err}") from None
    return loaded


def tally_records(record_paths: Iterable[str | Path | RecordFile]) -> CycleTally:
    """Each planned attempt counted once, by its last record (the highest rerun)."""
    return tally_of(r.record for r in read_run_records(record_paths))


def tally_of(records: Iterable[RunRecord]) -> CycleTally:
    """tally_records of records parsed before."""
    last: dict[str, tuple[int, object]] = {}
    for record in records:
        base = _RERUN.sub("", record.attempt_id)
        rerun = int(record.attempt_id.rsplit(".r", 1)[1]) if _RERUN.search(record.attempt_id) else 0
        if base not in last or rerun >= last[base][0]:
            last[base] = (rerun, record)
    tally = CycleTally()
    for _rerun, record in last.values():
        tally.add(record)
    return tally


# --- at a glance: the attempts' labels and the run's tally in the Airflow UI (issue #29) ---------------

_MARKS = {PASS: "✓ PASS: ", FAIL: "✗ FAIL: ", TIMEOUT: "✗ TIMEOUT ", INVALID: "INVALID: "}


def glance_label(spec_label: str, story_label: str, record) -> str:
    """An ended attempt's label (its task's rendered map index): `agent / project / attempt N`, then its
    outcome in capitals, then the story's words (argusic.attempts.story):
    `… · ✓ PASS: ran, verified for real`, `… · ✗ FAIL: install failed`, `… · ✗ TIMEOUT at 15 s`,
    `… · INVALID: executor error …`. A claim the harness did not observe is a FAIL that says so. A
    repair attempt (graded apart, not by the rubric) keeps the story's label."""
    words = story_label.removeprefix(f"{spec_label} · ")
    if record.repair is not None:
        return story_label
    outcome = outcome_of(record)
    detail = words.removeprefix("✓ ").removeprefix("✗ ").removeprefix("INVALID: ")
    if outcome == TIMEOUT:
        detail = detail.removeprefix("timeout ")
    elif outcome == FAIL and words.startswith("✓"):  # a claimed pass the rubric will not count
        why = "not shown by the harness's observation"
        if _rejected_report(record):
            why = "report rejected, more errors fixed than encountered"
        detail = f"{why} (claimed: {detail})"
    return f"{spec_label} · {_MARKS[outcome]}{detail}"[:MAP_LABEL_MAX]


@dataclass(frozen=True)
class AttemptGlance:
    """One planned attempt as the tally lists it: its outcome (None: no run record, or unreadable)
    and its label."""

    outcome: str | None
    label: str


@dataclass
class PlanTally:
    """A run's planned attempts at a glance: the tally of their last records, and what has none."""

    tally: CycleTally
    glances: list[AttemptGlance]

    @property
    def unrecorded(self) -> int:
        return sum(1 for g in self.glances if g.outcome is None)

    def summary(self) -> str:
        """`9 attempts: 3 pass · 4 fail · 1 timeout · 1 invalid` (`· 1 without a record` when any)."""
        planned = len(self.glances)
        line = self.tally.summary().split(": ", 1)[1]
        missing = f" · {self.unrecorded} without a record" if self.unrecorded else ""
        return f"{planned} attempt{'s' if planned != 1 else ''}: {line}{missing}"

    def counts(self) -> dict[str, int]:
        return {"planned": len(self.glances), **self.tally.counts(), "without_record": self.unrecorded}

    def lines(self) -> list[str]:
        """The summary, then every attempt grouped by outcome, what went wrong first (passes last)."""
        lines = [self.summary()]
        for outcome in (*OUTCOMES[:3], None, PASS):
            group = [g.label for g in self.glances if g.outcome == outcome]
            if group:
                name = outcome.upper() if outcome else "WITHOUT A RECORD"
                lines.append(f"{name} ({len(group)}):")
                lines.extend(f"   {label}" for label in group)
        return lines


def tally_plan(spec_paths: Iterable[str | Path]) -> PlanTally:
    """Every planned attempt of a run by its last record (reruns included; on a cluster pulled from the
    runs store), for people: never raises on a missing or unreadable record (it is listed as such)."""
    # deferred: the attempt path's modules (keys, containers) load only where a tally is taken
    from argusic.attempts.common import existing_record
    from argusic.attempts.story import story_of
    from argusic.core.spec import read_spec

    glances: list[AttemptGlance] = []
    tally = CycleTally()  # each planned attempt once, by its last record
    for spec_path in spec_paths:
        spec = read_spec(spec_path)
        measured: list[RecordFile] = []
        current = spec
        try:
            while (path := existing_record(current)) is not None:
                measured.append(RecordFile.load(path))
                current = current.rerun()
        except (OSError, RecordError) as err:
            unreadable = f"{spec.label} · run record unreadable: {err}"
            glances.append(AttemptGlance(None, unreadable[:MAP_LABEL_MAX]))
            continue
        if not measured:
            glances.append(AttemptGlance(None, f"{spec.label} · no run record (its task did not measure it)"))
            continue
        last = measured[-1].record
        tally.add(last)
        story = story_of(spec, measured)
        glances.append(AttemptGlance(outcome_of(last), glance_label(spec.label, story.label, last)))
    return PlanTally(tally, glances)


def require_valid_attempts(cycle_id: str, record_paths: Sequence[str | Path | RecordFile]) -> CycleTally:
    """Refuse to load or publish a cycle run that measured nothing valid, or whose every attempt was
    cut short inside its container (CycleFailed says why)."""
    if not record_paths:
        raise CycleFailed(
            f"cycle {cycle_id}: no attempt was run (the plan was empty): nothing loaded, nothing published"
        )
    tally = tally_records(record_paths)
    if tally.valid == 0:
        reasons = "; ".join(f"{n} × {why}" for why, n in tally.invalid_reasons.most_common(5))
        raise CycleFailed(
            f"cycle {cycle_id}: all {tally.planned} attempt(s) are invalid (our tooling failed, even "
            f"after reruns): {reasons}. Nothing loaded, nothing published; the records and evidence "
            f"are kept under {runs_dir() / cycle_id}. Fix the cause, then run a new cycle id."
        )
    if tally.cut_by_container == tally.planned:
        # A project can cut only its own attempts; every attempt of the run cut at once points at
        # what they all share -- our harness -- so nothing is published as the agents' failure.
        faults = "; ".join(f"{n} × {why}" for why, n in tally.container_faults.most_common(5))
        raise CycleFailed(
            f"cycle {cycle_id}: all {tally.planned} attempt(s) were cut short inside their containers "
            f"({faults}): a project can cut only its own attempts, so all of them at once points at "
            f"our harness. Nothing loaded, nothing published; the records and evidence are kept "
            f"under {runs_dir() / cycle_id}. Fix the cause, then run a new cycle id."
        )
    return tally
