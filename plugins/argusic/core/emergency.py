"""The emergency stop: one switch per installation that ends every running attempt on every host.

``argusic stop --reason WHY`` (or the ``argusic_emergency_stop`` DAG) declares it; every executor
polls it while an attempt runs (``StopPoller``) and, when it covers the attempt, kills the container,
lands the evidence that exists and hands back an ``emergency_stop`` ending: the attempt gets a run
record like any other, with the reason. While it is in force no attempt starts
(``refuse_if_stopped``). ``argusic resume --reason WHY`` lifts it.

Where it lives: ``<runs>/control/emergency_stop.json`` on this host, and the same key in the runs store
on a cluster (``argusic.core.runs_store``), so every host sees one switch. The file is never
deleted, only replaced: ``{"active": false, ...}`` after a resume, so the latest decision is always
on record, and every decision is also kept write-once under ``control/decisions/`` (who, when, why).

The file is read as hostile input (size capped, fields checked); a switch that exists but cannot be
read counts as a stop in force (nothing fails open), naming the problem.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from argusic.core import runs_store
from argusic.core.safe_io import write_atomic
from argusic.core.settings import installation_id, runs_dir

log = logging.getLogger("argusic.emergency")

STOP_KEY = "control/emergency_stop.json"
DECISIONS_PREFIX = "control/decisions"
MAX_STOP_BYTES = 16 << 10
MAX_REASON_CHARS = 2000
_CYCLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_PERSON = re.compile(r"[^\x00-\x1f\x7f]{1,200}")


class EmergencyStopError(ValueError):
    """A stop or resume that cannot be recorded as asked (no reason, a bad cycle id, nothing to lift)."""


class EmergencyStopInForce(RuntimeError):
    """An attempt was asked to start while an emergency stop covers it."""


def in_scope(attempt_id: str | None, cycle: str | None) -> bool:
    """Whether a stop of `cycle` (None: every cycle) covers the attempt: its id's first part is the
    cycle's id (a cycle id that is a prefix of another's is not)."""
    return attempt_id is not None and (cycle is None or attempt_id.split(".", 1)[0] == cycle)


@dataclass(frozen=True)
class EmergencyStop:
    """The switch as last set: active or not, by whom, when (UTC, ISO 8601) and why; `cycle` None
    means every cycle of this installation."""

    active: bool
    by: str
    at: str
    reason: str
    cycle: str | None = None
    installation: str = ""

    def covers(self, attempt_id: str) -> bool:
        """Whether this stop, in force, ends the attempt."""
        return self.active and in_scope(attempt_id, self.cycle)

    def describe(self) -> str:
        scope = f"cycle {self.cycle}" if self.cycle else "every cycle"
        return f"emergency stop ({scope}) by {self.by} at {self.at}: {self.reason}"


def _checked_reason(reason: str) -> str:
    text = " ".join((reason or "").split())
    if not text:
        raise EmergencyStopError("a reason is required: say why (it is recorded and published)")
    if len(text) > MAX_REASON_CHARS:
        raise EmergencyStopError(f"the reason is {len(text)} characters; at most {MAX_REASON_CHARS}")
    return text


def _checked_person(by: str) -> str:
    if not _PERSON.fullmatch(by or ""):
        raise EmergencyStopError(f"who decided must be named (1-200 printable characters), got {by!r}")
    return by


def _checked_cycle(cycle: str | None) -> str | None:
    if cycle is not None and not _CYCLE.fullmatch(cycle):
        raise EmergencyStopError(f"cycle id {cycle[:80]!r} is not a cycle id (letters, digits, - and _)")
    return cycle


def _parse(data: bytes, where: str) -> EmergencyStop:
    """The switch from its bytes; a file that is not one is a stop in force that names the problem."""
    problem = None
    try:
        if len(data) > MAX_STOP_BYTES:
            raise ValueError(f"{len(data)} bytes, over {MAX_STOP_BYTES}")
        doc = json.loads(data)
        if not isinstance(doc, dict) or not isinstance(doc.get("active"), bool):
            raise ValueError("not an object with a boolean 'active'")
        cycle = doc.get("cycle")
        fields = {k: doc.get(k) for k in ("by", "at", "reason")}
        if not all(isinstance(v, str) and v for v in fields.values()):
            raise ValueError("'by', 'at' and 'reason' must be non-empty strings")
        if cycle is not None and not (isinstance(cycle, str) and _CYCLE.fullmatch(cycle)):
            raise ValueError("'cycle' is not a cycle id")
        return EmergencyStop(
            active=doc["active"], cycle=cycle, installation=str(doc.get("installation", ""))[:200],
            **{k: v[:MAX_REASON_CHARS] for k, v in fields.items()},
        )  # fmt: skip
    except (ValueError, UnicodeDecodeError) as err:
        problem = str(err)
    return EmergencyStop(True, "argusic", "unknown", f"the stop switch {where} is unreadable ({problem})")


def _local_path() -> Path:
    return runs_dir() / STOP_KEY


def current_stop() -> EmergencyStop | None:
    """The switch as last set (from the runs store on a cluster), or None when never set."""
    path = _local_path()
    try:
        found = runs_store.pull(STOP_KEY)
    except runs_store.RunsStoreError as err:  # the store refused it: a stop in force, named
        return EmergencyStop(True, "argusic", "unknown", f"the stop switch could not be read: {err}")
    if found is None:
        return None
    try:
        with open(found, "rb") as handle:
            data = handle.read(MAX_STOP_BYTES + 1)
    except OSError as err:
        return EmergencyStop(True, "argusic", "unknown", f"the stop switch {path} is unreadable: {err}")
    return _parse(data, str(path))


def stop_in_force(attempt_id: str) -> EmergencyStop | None:
    """The stop that covers this attempt now, or None."""
    stop = current_stop()
    return stop if stop is not None and stop.covers(attempt_id) else None


def refuse_if_stopped(attempt_id: str) -> None:
    """Before an attempt starts: EmergencyStopInForce when a stop covers it (nothing is written)."""
    if (stop := stop_in_force(attempt_id)) is not None:
        raise EmergencyStopInForce(
            f"{attempt_id} not started: {stop.describe()}; `argusic resume --reason ...` lifts it"
        )


def _record(stop: EmergencyStop, action: str) -> None:
    """Set the switch (here and in the store) and keep the decision, write-once."""
    data = json.dumps(asdict(stop), indent=2, sort_keys=True).encode() + b"\n"
    stamp = re.sub(r"[^0-9A-Za-z]", "", stop.at)[:32] or "unknown"
    decision = runs_dir() / DECISIONS_PREFIX / f"{stamp}-{action}.json"
    if not decision.exists():
        write_atomic(decision, data)
        runs_store.push(decision, write_once=True)
    write_atomic(_local_path(), data)
    runs_store.push(_local_path())


def declare_stop(*, by: str, reason: str, at: datetime, cycle: str | None = None) -> EmergencyStop:
    """Set the emergency stop (every cycle, or one). Idempotent for the same decision."""
    stop = EmergencyStop(
        active=True, by=_checked_person(by), at=at.isoformat(), reason=_checked_reason(reason),
        cycle=_checked_cycle(cycle), installation=installation_id(),
    )  # fmt: skip
    _record(stop, "stop")
    log.warning("%s", stop.describe())
    return stop


def lift_stop(*, by: str, reason: str, at: datetime) -> EmergencyStop:
    """Lift the emergency stop; EmergencyStopError when none is in force."""
    held = current_stop()
    if held is None or not held.active:
        raise EmergencyStopError("no emergency stop is in force: nothing to resume")
    lifted = EmergencyStop(
        active=False, by=_checked_person(by), at=at.isoformat(), reason=_checked_reason(reason),
        cycle=held.cycle, installation=installation_id(),
    )  # fmt: skip
    _record(lifted, "resume")
    log.warning("emergency stop lifted by %s at %s: %s", lifted.by, lifted.at, lifted.reason)
    return lifted


class StopPoller:
    """What an executor asks while an attempt runs: the stop that covers it, read at most once every
    `every` seconds (a store read per poll of the container would be too many).

    A read that fails (the runs store unreachable) is retried at the next poll; reads failing for
    `unreadable_after` seconds in a row count as a stop in force that names the problem: an
    installation whose switch nobody can read cannot be stopped either, so it does not go on running
    attempts (nothing fails open). One blip does not end an attempt."""

    def __init__(self, attempt_id: str, every: float = 2.0, unreadable_after: float = 120.0) -> None:
        self.attempt_id = attempt_id
        self.every = every
        self.unreadable_after = unreadable_after
        self._next = 0.0
        self._failing_since: float | None = None
        self._found: EmergencyStop | None = None

    def __call__(self) -> EmergencyStop | None:
        if self._found is None and time.monotonic() >= self._next:
            now = time.monotonic()
            self._next = now + self.every
            try:
                self._found = stop_in_force(self.attempt_id)
                self._failing_since = None
            except Exception as err:  # noqa: BLE001 - a failed poll is retried, up to the limit
                log.warning("%s: the stop switch was not read: %s", self.attempt_id, err)
                if self._failing_since is None:
                    self._failing_since = now
                if now - self._failing_since >= self.unreadable_after:
                    self._found = EmergencyStop(
                        True, "argusic", "unknown",
                        f"the stop switch could not be read for {int(now - self._failing_since)} s "
                        f"(last error: {str(err)[:300]}); an attempt nobody could stop is not run on",
                    )  # fmt: skip
        return self._found
