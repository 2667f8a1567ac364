"""Run a cycle's planned attempts: each with its bounded reruns and its Layer 1 hints, resumable by
attempt id (a record measured before, here or on another host, is not measured again). The DAGs'
attempt tasks and `argusic cycle run` call the same functions."""

from __future__ import annotations

import logging
from pathlib import Path

from argusic.attempts.common import existing_record, share_record
from argusic.attempts.keys import KeyBroker
from argusic.attempts.run import max_reruns_for, measure_attempt
from argusic.core.evidence import EvidenceStore
from argusic.core.record import RecordError, RecordFile, load_record_file
from argusic.core.runs_store import RunsStoreError, key_of_local, pull, push
from argusic.core.spec import AttemptSpec, read_spec
from argusic.judging.hints import hints_for_attempt, store_hint_evidence
from argusic.sandbox.launch import Executor

log = logging.getLogger(__name__)


# --- a cycle's outcome, before anything is loaded or published ---------------------------------------


def compute_hints_quietly(
    measured: RecordFile, base_dir: Path | None = None, store: EvidenceStore | None = None
) -> Path | None:
    """The attempt's Layer 1 hints (argusic.judging.hints) beside its record, shared like the record,
    and their screenshots in the evidence store (by content address, for the served page and the
    review queue). Hints are never part of a score: a failure to compute them is logged and never
    fails the attempt (`argusic hints compute` computes them again)."""
    record_path = measured.path
    try:
        hints = hints_for_attempt(record_path.parent, record=measured.record)
        store_hint_evidence(record_path.parent, store or EvidenceStore())
        if base_dir is None:
            push(hints)
        return hints
    except Exception as err:  # noqa: BLE001 - a hint is advice; the attempt's measurement stands
        log.warning("%s: hints not computed: %s: %s", record_path.parent.name, type(err).__name__, err)
        return None


def run_with_reruns(
    spec: AttemptSpec,
    executor: Executor | None = None,
    store: EvidenceStore | None = None,
    base_dir: Path | None = None,
    broker: KeyBroker | None = None,
    live_log: bool = False,
) -> list[Path]:
    """measure_with_reruns, for a caller that wants only the records' paths."""
    return [m.path for m in measure_with_reruns(spec, executor, store, base_dir, broker, live_log)]


def measure_with_reruns(
    spec: AttemptSpec,
    executor: Executor | None = None,
    store: EvidenceStore | None = None,
    base_dir: Path | None = None,
    broker: KeyBroker | None = None,
    live_log: bool = False,
) -> list[RecordFile]:
    """Run an attempt; rerun it (bounded) while its record is invalid. Returns every record made,
    parsed once (with its path)."""
    made = []
    max_reruns = max_reruns_for(spec)
    current = spec
    while True:
        existing_record(current, base_dir)  # on a cluster: measured on another host before? pulled here
        measured = measure_attempt(current, executor, store, base_dir, broker, live_log=live_log)
        path, record = measured.path, measured.record
        share_record(path, base_dir)
        made.append(measured)
        compute_hints_quietly(measured, base_dir, store)
        if record.invalid_reason is None:
            log.info("%s: %s (record %s)", current.label, record.end_reason, path)
            return made
        if current.rerun_no >= max_reruns:
            log.warning("%s: invalid after %d rerun(s): %s", current.label, max_reruns, record.invalid_reason)
            return made
        log.warning("%s: invalid (%s); rerunning", current.label, record.invalid_reason)
        current = current.rerun()


def run_planned_attempt(spec_path: str | Path, executor=None, live_log: bool = False) -> list[str]:
    """Run one planned attempt (with its bounded reruns); returns every run record path it made.

    Idempotent by attempt_id: a retry of the task finds the record and does not measure again.
    `executor`: the CLI's choice; the DAG leaves it to ARGUSIC_EXECUTOR (default docker, never
    inferred from a daemon's answer; local only for a demo cycle).
    `live_log`: show the attempt's own log, masked, in the task log while it runs (the DAG does).
    """
    return [str(p) for p in run_with_reruns(read_spec(spec_path), executor, live_log=live_log)]


def measure_planned_attempt(spec: AttemptSpec, executor=None, live_log: bool = False) -> list[RecordFile]:
    """run_planned_attempt for a task that read the spec already: the records, parsed once."""
    return measure_with_reruns(spec, executor, live_log=live_log)


def measured_records(spec: AttemptSpec) -> list[str] | None:
    """The run records of an attempt measured before (reruns included) when nothing is left to do for
    it (its last record is valid, or invalid after the bounded reruns); None when it is still to run
    or to resume."""
    chain: list[str] = []
    current = spec
    while (path := existing_record(current)) is not None:
        chain.append(str(path))
        current = current.rerun()
    if not chain:
        return None
    try:
        last = load_record_file(Path(chain[-1]))
    except (OSError, RecordError):
        return None  # damaged: running it again measures it again
    done = last.invalid_reason is None or current.rerun_no > max_reruns_for(spec)
    return chain if done else None


def pull_hints(record_path: Path) -> None:
    """On a cluster, the attempt's hints.json (computed on the host that ran it) beside its pulled
    record, so ingest loads it; none is fine (hints are advice, `argusic hints compute` makes them)."""
    try:
        pull(key_of_local(Path(record_path).parent / "hints.json"))
    except (RunsStoreError, OSError, ValueError) as err:
        logging.getLogger("argusic.hints").warning(
            "%s: hints not pulled: %s", Path(record_path).parent.name, err
        )


def records_of_plan(spec_paths: list[str]) -> tuple[list[str], list[str]]:
    """Every run record of the planned attempts (reruns included), and the labels of the attempts that
    have none (their task failed before measuring). Ingest reads the plan, not the attempt tasks'
    return values: an attempt task whose measurement is invalid is skipped and returns nothing."""
    found: list[str] = []
    missing: list[str] = []
    for spec_path in spec_paths:
        spec = read_spec(spec_path)
        current = spec
        while (path := existing_record(current)) is not None:
            found.append(str(path))
            pull_hints(path)
            current = current.rerun()
        if current is spec:
            missing.append(spec.label)
    return found, missing
