"""A cycle's tally: which attempts passed, and whether the cycle may go on to the warehouse."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from argusic.core.record import RecordError, RecordFile, RunRecord
from argusic.core.settings import runs_dir


class CycleFailed(RuntimeError):
    """A cycle that must not be published: nothing planned, or no valid attempt."""


@dataclass
class CycleTally:
    """The planned attempts of a run and how each ended (its last record, reruns included)."""

    planned: int = 0
    valid: int = 0
    invalid: int = 0
    passes: int = 0  # valid attempts whose report shows a pass (the warehouse decides the outcome)
    cut_by_container: int = 0  # valid attempts the container cut short (a measured failure, #25)
    invalid_reasons: Counter = field(default_factory=Counter)
    container_faults: Counter = field(default_factory=Counter)

    def add(self, record) -> None:
        self.planned += 1
        if record.invalid_reason is None:
            self.valid += 1
            self.passes += int(record_passes(record))
            if record.container_fault is not None:
                self.cut_by_container += 1
                self.container_faults[_reason_kind(record.container_fault)] += 1
        else:
            self.invalid += 1
            self.invalid_reasons[_reason_kind(record.invalid_reason)] += 1


def record_passes(record) -> bool:
    """What the rubric will call pass_full or pass_mock (marts.attempt_scores decides; this is for
    progress lines only): valid, completed, installed, ran, verified for real or with mocks."""
    report = record.report
    return bool(
        record.invalid_reason is None
        and record.container_fault is None
        and record.end_reason == "completed"
        and report is not None
        and report.install_ok
        and report.ran_ok
        and report.test_depth in ("tier1_real", "tier2_mock")
    )


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
