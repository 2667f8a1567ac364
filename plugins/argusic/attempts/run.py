"""Run one attempt: the dispatch between an install-and-run attempt (board, verdict) and a repair
attempt, and how many automatic reruns an invalid one gets."""

from __future__ import annotations

import logging
from pathlib import Path

from argusic.attempts.common import share_record
from argusic.attempts.install_run import run_install_attempt
from argusic.attempts.keys import KeyBroker
from argusic.attempts.repair_run import repair_limits, run_repair_attempt
from argusic.core.emergency import EmergencyStopInForce, refuse_if_stopped
from argusic.core.evidence import EvidenceStore
from argusic.core.layout import RECORD_FILE, attempt_dir
from argusic.core.record import RecordFile
from argusic.core.settings import orchestrator_config
from argusic.core.spec import AttemptSpec
from argusic.sandbox.launch import AttemptCancelled, Executor, sigterm_cancels

log = logging.getLogger(__name__)


def measure_attempt(
    spec: AttemptSpec,
    executor: Executor | None = None,
    store: EvidenceStore | None = None,
    base_dir: Path | None = None,
    broker: KeyBroker | None = None,
    live_log: bool = False,
) -> RecordFile:
    """Run one attempt (unless its record exists already) and return its run record, parsed once,
    with its path: what the task's next steps (reruns, hints, story) read instead of the file.

    `live_log`: show the attempt's own log, masked, in this process's log while it runs
    (``argusic.attempts.live_log``; the Airflow task does, the CLI's progress bar does not).

    An agent routed through our gateway gets a key made for this attempt alone, deleted when the
    container is gone whatever the ending; if the key cannot be made, KeyUnavailable is raised and the
    attempt does not start (the task is retried; never a shared-key fallback).

    A repair attempt (purpose `repair`) takes its own path (``argusic.attempts.repair_run``): a fresh
    working copy of the item's base, the item's prompt, the patch collected and graded."""
    # a record on file is returned as it is (never measured again), even one of a stopped attempt
    on_file = (attempt_dir(spec, base_dir) / RECORD_FILE).is_file()
    if not on_file:
        refuse_if_stopped(spec.attempt_id)  # EmergencyStopInForce: nothing starts, nothing is written
    with sigterm_cancels():  # whatever the agent's key: a cancel lands what exists and is recorded
        if spec.purpose == "repair":
            measured = run_repair_attempt(spec, executor, store, base_dir, broker, live_log=live_log)
        else:
            measured = run_install_attempt(spec, executor, store, base_dir, broker, live_log=live_log)
    return measured if on_file else _stop_here_if_stopped(measured, base_dir)


def _stop_here_if_stopped(measured: RecordFile, base_dir: Path | None) -> RecordFile:
    """An attempt ended from outside is on record (shared with the cluster first); then the cancel
    goes on up (AttemptCancelled) and an emergency stop stops the caller too (EmergencyStopInForce):
    no rerun, no next attempt, until an operator resumes."""
    record = measured.record
    if record.end_reason not in ("cancelled", "emergency_stop"):
        return measured
    share_record(measured.path, base_dir)
    log.warning("%s: %s; its run record: %s", record.attempt_id, record.invalid_reason, measured.path)
    if record.end_reason == "cancelled":
        raise AttemptCancelled(record.invalid_reason or "cancelled")
    raise EmergencyStopInForce(f"{record.attempt_id} ended: {record.invalid_reason}")


def run_attempt(
    spec: AttemptSpec,
    executor: Executor | None = None,
    store: EvidenceStore | None = None,
    base_dir: Path | None = None,
    broker: KeyBroker | None = None,
    live_log: bool = False,
) -> Path:
    """measure_attempt, for a caller that wants only the run record's path (it reads nothing more)."""
    return measure_attempt(spec, executor, store, base_dir, broker, live_log).path


def max_reruns_for(spec: AttemptSpec) -> int:
    """Bounded automatic reruns of an invalid attempt: [attempts] max_reruns, and for a repair attempt
    [repair] max_reruns (the seed: infrastructure failures are retried once)."""
    if spec.purpose == "repair":
        return repair_limits().max_reruns
    return orchestrator_config().max_reruns
