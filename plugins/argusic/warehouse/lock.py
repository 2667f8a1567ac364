"""Waiting for the warehouse instead of crashing: one writer at a time, readers that wait for it.

DuckDB lets one process open a file read-write, or any number of processes open it read-only, never
both at once; a second opener gets `IO Error: Could not set lock on file …` at once. Our commands
therefore meet at a lock file beside the warehouse (`<warehouse>.lock`, flock):

- a writer (`ingest`, `build`, publication) takes it exclusively and writes who it is into it: pid,
  command and start time (and host);
- a reader (`board`, `audit`, …) takes it shared just while it opens its read-only connection, so it
  never races a writer's open; its connection then holds DuckDB's own shared lock.

Whoever finds the lock taken waits, says once whom it waits for (`waiting for the warehouse writer:
pid 1234 (argusic ingest runs/…) since 12:03:04 UTC`), and gives up after `ARGUSIC_LOCK_TIMEOUT`
seconds (default 300) with `WarehouseBusy`. A DuckDB lock held outside ours (an analyst's connection)
is waited for the same way: DuckDB's message names the holding pid, and the notice says to close it.
Each wait (for the lock file, for another process's DuckDB connection) has its own timeout.

The lock file is opened without truncation and released by the kernel when its holder dies: a killed
writer never leaves the warehouse locked.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

log = logging.getLogger(__name__)

LOCK_TIMEOUT_ENV = "ARGUSIC_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 300.0
POLL_SECONDS = 0.2
_HOLDER_BYTES = 4096
_DUCKDB_CONFLICT = re.compile(r"Conflicting lock is held in (?P<program>.*?) \(PID (?P<pid>\d+)\)")


class WarehouseBusy(RuntimeError):
    """Gave up waiting for another process to let go of the warehouse; the message says who."""


def lock_timeout() -> float:
    """ARGUSIC_LOCK_TIMEOUT: seconds a command waits for the warehouse before giving up (default 300)."""
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_LOCK_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{LOCK_TIMEOUT_ENV}={raw!r}: expected a number of seconds") from None
    if value < 0 or value != value:
        raise ValueError(f"{LOCK_TIMEOUT_ENV}={raw!r}: expected a number of seconds >= 0")
    return value


def lock_path(db_path: Path) -> Path:
    return db_path.with_suffix(db_path.suffix + ".lock")


@dataclass(frozen=True)
class Holder:
    """Who holds the writer lock, as written into the lock file by the holder itself."""

    pid: int
    command: str
    since: str  # ISO-8601 UTC
    host: str

    def describe(self) -> str:
        try:
            moment = datetime.fromisoformat(self.since.replace("Z", "+00:00")).astimezone(UTC)
            when = moment.strftime("%H:%M:%S UTC")
            if moment.date() != datetime.now(UTC).date():
                when = moment.strftime("%Y-%m-%d %H:%M:%S UTC")
        except ValueError:
            when = self.since
        where = "" if self.host == socket.gethostname() else f" on host {self.host}"
        return f"pid {self.pid} ({self.command}){where} since {when}"


def _command_line(argv: list[str]) -> str:
    """How a process was started, short enough for a message: `argusic ingest runs/2026-12` for a
    console script, `python -m argusic.cli board`, `hold.py …` for a script run by Python."""
    if not argv:
        return "?"
    words = [Path(argv[0]).name, *argv[1:]]
    if words[0].startswith("python") and len(words) > 1:
        if words[1] == "-m" and len(words) > 2:
            words = ["python", *words[1:]]
        elif not words[1].startswith("-"):  # python <script> …: the script says what runs
            words = [Path(words[1]).name, *words[2:]]
        else:
            words = ["python", *words[1:]]
    text = " ".join(" ".join(words).split())
    return text if len(text) <= 120 else text[:119] + "…"


def this_process() -> Holder:
    return Holder(
        pid=os.getpid(),
        command=_command_line(getattr(sys, "orig_argv", None) or sys.argv),
        since=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        host=socket.gethostname(),
    )


def read_holder(fd: int) -> Holder | None:
    """The holder written in the lock file (None when nobody wrote one, or it is not ours)."""
    try:
        data = json.loads(os.pread(fd, _HOLDER_BYTES, 0).decode("utf-8"))
        return Holder(int(data["pid"]), str(data["command"]), str(data["since"]), str(data["host"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_holder(fd: int) -> None:
    holder = this_process()
    text = json.dumps(
        {"pid": holder.pid, "command": holder.command, "since": holder.since, "host": holder.host}
    )
    os.ftruncate(fd, 0)
    os.pwrite(fd, (text + "\n").encode()[:_HOLDER_BYTES], 0)


# Lock files this process holds, by path, with the thread holding each: a reader in the thread that
# holds the writer lock (validation inside a build) must not wait for itself.
_held: dict[str, int] = {}
_held_guard = threading.Lock()


def _key(path: Path) -> str:
    return str(path.resolve())


def holds_writer_lock(db_path: Path) -> bool:
    """True when the calling thread holds the writer lock of `db_path`."""
    with _held_guard:
        return _held.get(_key(lock_path(db_path))) == threading.get_ident()


def _open_lock_file(path: Path, writable: bool = True) -> int:
    flags = os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags | (os.O_RDWR if writable else os.O_RDONLY), 0o644)


def _wait_for_flock(fd: int, mode: int, path: Path, deadline: float, timeout: float) -> None:
    """flock(fd, mode), waiting (with a notice naming the holder) until `deadline`."""
    last = None
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        holder = read_holder(fd)
        who = holder.describe() if holder else "an Argusic process that has not written its name yet"
        if who != last:
            log.warning("waiting for the warehouse writer: %s", who)
            last = who
        if time.monotonic() >= deadline:
            raise WarehouseBusy(
                f"gave up after {timeout:g} s waiting for the warehouse writer: {who} still holds "
                f"{path}; run again once it has finished (or set {LOCK_TIMEOUT_ENV} to wait longer)"
            )
        time.sleep(POLL_SECONDS)


@contextmanager
def writer_lock(db_path: Path, timeout: float | None = None) -> Iterator[None]:
    """One writer at a time on the DuckDB file (loads and builds are serialised).

    Waits for another writer (saying whom for), up to `timeout` (ARGUSIC_LOCK_TIMEOUT by default),
    then raises WarehouseBusy. The lock is not re-entrant: a thread that already holds it is refused
    at once rather than left waiting for itself."""
    db_path = Path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    path = lock_path(db_path)
    key = _key(path)
    with _held_guard:
        if _held.get(key) == threading.get_ident():
            raise RuntimeError(f"this thread already holds the writer lock {path} (it is not re-entrant)")
    wait = lock_timeout() if timeout is None else timeout
    fd = _open_lock_file(path)
    try:
        _wait_for_flock(fd, fcntl.LOCK_EX, path, time.monotonic() + wait, wait)
        _write_holder(fd)
        with _held_guard:
            _held[key] = threading.get_ident()
        try:
            yield
        finally:
            with _held_guard:
                _held.pop(key, None)
            os.ftruncate(fd, 0)  # nobody holds it: a reader must not name a writer that has left
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def _reader_gate(db_path: Path, deadline: float, timeout: float) -> Iterator[None]:
    """Shared hold on the lock file while a reader opens its connection: it waits for a writer."""
    if holds_writer_lock(db_path):
        yield
        return
    path = lock_path(db_path)
    try:
        fd = _open_lock_file(path)
    except PermissionError:
        try:  # a read-only folder (an analyst's account): wait on the file if it is there at all
            fd = _open_lock_file(path, writable=False)
        except OSError:
            fd = None
    except OSError:
        fd = None
    if fd is None:  # no lock file to meet at: DuckDB's own lock (waited for below) still protects
        yield
        return
    try:
        _wait_for_flock(fd, fcntl.LOCK_SH, path, deadline, timeout)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class DuckDBConflict:
    """Another process holds DuckDB's own lock on the file (named by DuckDB's message)."""

    pid: int | None
    program: str

    def describe(self) -> str:
        if self.pid is None:
            return "another process"
        return f"pid {self.pid} ({_process_command(self.pid) or self.program})"


def _process_command(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    argv = [part.decode(errors="replace") for part in raw.split(b"\0") if part]
    return _command_line(argv) if argv else None


def duckdb_conflict(err: BaseException) -> DuckDBConflict | None:
    """The holder named by a DuckDB "Could not set lock" error (None for any other error)."""
    message = str(err)
    if not isinstance(err, duckdb.Error) or "Could not set lock" not in message:
        return None
    match = _DUCKDB_CONFLICT.search(message)
    if match is None:
        return DuckDBConflict(None, "unknown")
    return DuckDBConflict(int(match["pid"]), match["program"])


def conflict_advice(conflict: DuckDBConflict, read_only: bool) -> str:
    who = conflict.describe()
    if read_only:
        return (
            f"{who} has the warehouse open for writing outside Argusic's writer lock: close that "
            "connection (analysts read the analyst copy instead: `argusic sql`)"
        )
    return (
        f"{who} has the warehouse open outside Argusic's writer lock (a read-only connection keeps "
        "writers out too): close that connection (analysts read the analyst copy instead: `argusic sql`)"
    )


def open_duckdb(db_path: Path, read_only: bool = False, timeout: float | None = None):
    """A DuckDB connection to `db_path`, waiting for other processes rather than failing at once.

    Read-only: waits for our writer lock (unless this thread holds it) and for any process that
    holds DuckDB's lock for writing. Read-write (callers hold `writer_lock`): waits for any process
    with the file open, e.g. an analyst's connection. Gives up with WarehouseBusy after `timeout`
    (ARGUSIC_LOCK_TIMEOUT by default)."""
    db_path = Path(db_path)
    wait = lock_timeout() if timeout is None else timeout
    deadline = time.monotonic() + wait
    last = None
    while True:
        try:
            if read_only:
                with _reader_gate(db_path, deadline, wait):
                    return duckdb.connect(str(db_path), read_only=True)
            return duckdb.connect(str(db_path))
        except duckdb.Error as err:
            conflict = duckdb_conflict(err)
            if conflict is None:
                raise
        advice = conflict_advice(conflict, read_only)
        if advice != last:
            log.warning("waiting for the warehouse: %s", advice)
            last = advice
        if time.monotonic() >= deadline:
            raise WarehouseBusy(
                f"gave up after {wait:g} s waiting for the warehouse {db_path}: {advice}, then run again "
                f"(or set {LOCK_TIMEOUT_ENV} to wait longer)"
            )
        time.sleep(POLL_SECONDS)


__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "LOCK_TIMEOUT_ENV",
    "Holder",
    "WarehouseBusy",
    "duckdb_conflict",
    "holds_writer_lock",
    "lock_path",
    "lock_timeout",
    "open_duckdb",
    "writer_lock",
]
