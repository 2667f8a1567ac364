"""The emergency stop as ops run it (``argusic stop`` / ``argusic resume``, the ``argusic_emergency_stop``
DAG): set the switch (``argusic.core.emergency``), delete the model keys it covers at the gateway, and
end this host's attempt containers it covers that their executors did not end in time.

How an attempt ends: its executor polls the switch every 2 s, kills its container, lands what exists
and writes a run record with ``end_reason`` ``emergency_stop`` and the stop's who, when and why. Every
host of a cluster reads the same switch from the runs store, so each ends its own attempts; this step
waits for this host's, then removes what is left (a container whose executor is gone: its attempt has
no record, like any killed worker's, and the maintenance sweep finds its debris).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from datetime import datetime

from argusic.attempts.keys import LiteLLMKeyBroker
from argusic.core.emergency import EmergencyStop, declare_stop, in_scope, lift_stop
from argusic.sandbox import executor

log = logging.getLogger("argusic.emergency")


@dataclass
class StopReport:
    """What one emergency stop did on this host."""

    stop: EmergencyStop
    keys_deleted: list[str] = field(default_factory=list)
    keys_configured: bool = False
    ended_by_executor: list[str] = field(default_factory=list)  # their executors recorded them
    removed: list[str] = field(default_factory=list)  # still running after the wait: removed here

    def as_dict(self) -> dict:
        return {
            "stop": self.stop.describe(),
            "keys_configured": self.keys_configured,
            "keys_deleted": self.keys_deleted,
            "ended_by_executor": self.ended_by_executor,
            "removed": self.removed,
        }


def delete_keys(cycle: str | None) -> tuple[bool, list[str]]:
    """Delete every per-run key of this installation the stop covers (all, or one cycle's), running
    or not: (gateway configured, aliases deleted)."""
    if not os.environ.get("LITELLM_BASE_URL"):
        return False, []
    broker = LiteLLMKeyBroker.from_env()
    keys = broker.list_attempt_keys()
    spared = {r.attempt_id for r in keys if r.attempt_id and not in_scope(r.attempt_id, cycle)}
    return True, [ref.alias for ref in broker.sweep(spared)]


def _running_containers(cycle: str | None) -> list:
    if not executor.docker_available():
        return []
    found = executor.installation_containers(executor.docker_client())
    return [c for c in found if in_scope(c.labels.get(executor.LABEL), cycle)]


def end_containers(cycle: str | None, wait_seconds: float) -> tuple[list[str], list[str]]:
    """Wait up to `wait_seconds` for this host's executors to end the attempts the stop covers (they
    land and record them), then remove what still runs: (ended by their executors, removed here)."""
    first = {c.name for c in _running_containers(cycle)}
    deadline = time.monotonic() + wait_seconds
    left = first
    while left and time.monotonic() < deadline:
        time.sleep(1.0)
        left = {c.name for c in _running_containers(cycle)}
    removed = []
    for container in _running_containers(cycle):
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed.append(container.name)
    return sorted(first - set(removed)), sorted(removed)


def emergency_stop(
    *, by: str, reason: str, at: datetime, cycle: str | None = None, wait_seconds: float = 30.0
) -> StopReport:
    """Stop every running attempt this installation has (or one cycle's), delete their keys and
    refuse new attempts until ``resume``. The switch is set first: nothing starts after this call
    begins, whatever fails later."""
    stop = declare_stop(by=by, reason=reason, at=at, cycle=cycle)
    report = StopReport(stop)
    report.keys_configured, report.keys_deleted = delete_keys(cycle)
    report.ended_by_executor, report.removed = end_containers(cycle, wait_seconds)
    # keys made in the moment between the first deletion and the last container's end
    if report.keys_configured:
        report.keys_deleted += [k for k in delete_keys(cycle)[1] if k not in report.keys_deleted]
    log.warning("emergency stop: %s", report.as_dict())
    return report


def resume(*, by: str, reason: str, at: datetime) -> EmergencyStop:
    """Lift the emergency stop: attempts may start again (those it ended are rerun like any attempt
    cut on our side)."""
    return lift_stop(by=by, reason=reason, at=at)
