"""The launch contract between an executor and what runs in the container: where things are as the
harness sees them (HarnessPaths), what to run (Launch, LaunchBuilder), what comes back (ExecutionResult),
the Executor protocol, and the display file the harness leaves in /out. Attempts build launches from
these without importing an executor."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from argusic.core.record import Display

StopKind = Literal["cancelled", "emergency_stop"]


class AttemptCancelled(BaseException):
    """The process running an attempt was told to stop it (SIGTERM: a cancel; see ``sigterm_cancels``).

    A BaseException, like KeyboardInterrupt, so that ``except Exception`` in the attempt body does not
    swallow a cancel. Executors catch it (and KeyboardInterrupt) while the container runs, end it, land
    what exists and return a result marked ``stopped="cancelled"``; the caller writes the run record
    and raises it again.
    """


_cancel_lock = threading.Lock()
_cancel_reason: list[str] = []  # set once: every attempt the process runs in that scope ends
_handlers: list[Callable] = []  # the sigterm_cancels scopes open in the main thread, innermost last


def request_cancel(reason: str) -> None:
    """Cancel every attempt this process is running, in whichever thread: their executors end them
    at their next poll, land what exists and record them as cancelled (the CLI's Ctrl-C, SIGTERM)."""
    with _cancel_lock:
        if not _cancel_reason:
            _cancel_reason.append(reason)


def cancel_requested() -> str | None:
    """Why this process's attempts are being cancelled, or None."""
    return _cancel_reason[0] if _cancel_reason else None


def clear_cancel() -> None:
    """Forget a cancel (a process that goes on after one: tests)."""
    with _cancel_lock:
        _cancel_reason.clear()


@contextlib.contextmanager
def sigterm_cancels() -> Iterator[None]:
    """In the main thread: SIGTERM cancels this process's attempts (``request_cancel``, for those in
    other threads) and raises AttemptCancelled here (after any previous Python handler runs, e.g.
    Airflow's, which calls the task's on_kill)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: Any) -> None:
        why = f"signal {signum} (SIGTERM) to the process running it"
        request_cancel(f"cancelled: {why}")
        if callable(previous):
            previous(signum, frame)  # a handler that raises its own exception unwinds as well: fine
        raise AttemptCancelled(why)

    signal.signal(signal.SIGTERM, handler)
    _handlers.append(handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        _handlers.pop()
        if not _handlers:  # the outermost scope has ended: the cancel was handled where it belonged
            clear_cancel()


def cancel_reason(err: BaseException) -> str:
    """What a cancelled attempt's record says about the interruption."""
    if isinstance(err, KeyboardInterrupt):
        return "cancelled: interrupted (SIGINT, Ctrl-C) in the process running it"
    return f"cancelled: {err}" if str(err) else "cancelled"


@dataclass(frozen=True)
class ExecutionResult:
    executor: str
    started_at: datetime
    ended_at: datetime
    exit_code: int | None
    timed_out: bool
    error: str | None  # our tooling failed (daemon lost, fetch failed, …): the attempt is invalid
    image: str | None = None
    refused: str | None = None  # "evidence refused: log.txt is a symbolic link": the attempt is invalid
    # Artifacts landed in out/artifacts (relative paths) and those refused (one sentence each, logged;
    # hints' input, not evidence: they never make the attempt invalid).
    artifacts: tuple[str, ...] = ()
    artifacts_refused: tuple[str, ...] = ()
    # The harness's seal (argusic.harness.seal): whether this executor gave it a channel, the line
    # that came through it (None: nothing came), and the sha256 of each landed /out file as it was
    # before redaction (argusic.attempts.sealing compares the two).
    seal_channel: bool = False
    seal_line: bytes | None = None
    landed_sha256: Mapping[str, str] | None = None
    # Ended from outside before it finished: cancelled (SIGTERM, Ctrl-C, the task cleared or marked)
    # or an emergency stop; `stop_reason` says who and why. What existed was landed all the same.
    stopped: StopKind | None = None
    stop_reason: str | None = None
    # When the budget clock started (the container or process started) and when what it ran ended
    # (exited or killed): the agent's time; the rest of started_at .. ended_at is our overhead.
    # None: it never started (a failure of ours before it could).
    agent_started_at: datetime | None = None
    agent_ended_at: datetime | None = None


@dataclass(frozen=True)
class HarnessPaths:
    """Where things are as the harness sees them (container paths, or local ones)."""

    harness: str  # the reference harness and recorder (read-only)
    project: str  # the checkout of the pinned commit
    out: str  # the attempt's output folder (evidence)
    task: str  # read-only task files written from Launch.files
    scratch: str  # a fresh folder outside `out` for agent configuration (never evidence)


@dataclass(frozen=True)
class Launch:
    """What to run after the fetch: its argv, extra environment and read-only task files."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # name -> text, written under HarnessPaths.task

    def __repr__(self) -> str:  # the environment may carry a key: never shown
        return f"Launch(argv={self.argv!r}, env=<{len(self.env)} variables>, files={sorted(self.files)})"


LaunchBuilder = Callable[[HarnessPaths], Launch]


# Called with the host folder the attempt writes its evidence to, once it runs; returns the function
# that stops watching, called once the attempt's processes are gone (before its output is landed and
# the folder removed). argusic.attempts.live_log shows the growing log.txt in the task log through it.
Watch = Callable[[Path], Callable[[], None]]


class Executor(Protocol):
    name: str

    def run(
        self,
        *,
        attempt_id: str,
        repo_path: Path,
        commit: str,
        harness_args: list[str],
        out_dir: Path,
        budget_seconds: float,
        env: dict[str, str] | None = None,
        launch: LaunchBuilder | None = None,
        image: str | None = None,
        redactions: Sequence[tuple[bytes, bytes]] = (),
        watch: Watch | None = None,
        artifacts: Sequence[str] = (),
        changes: bool = False,
    ) -> ExecutionResult: ...


DISPLAY_FILE = "display.json"  # written into /out by the harness when it found the display running
# The raw session video of the display (issue #30): written into /out by ffmpeg's x11grab, started
# by the bootstrap (argusic.sandbox.executor._video_command), checked on arrival (argusic.attempts.video).
VIDEO_FILE = "display.mkv"
VIDEO_FPS = 2
VIDEO_MAX_BYTES = 64 * 1024**2  # ffmpeg's -fs: it stops and closes the file there


DISPLAY_MAX_BYTES = 4096


def read_display(out_dir: Path) -> Display | None:
    """The display the harness found (``/out/display.json``), or None: absent, or not a display
    document (the file comes out of the container: capped, never followed, validated)."""
    try:
        fd = os.open(Path(out_dir) / DISPLAY_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(DISPLAY_MAX_BYTES + 1)
    if len(data) > DISPLAY_MAX_BYTES:
        return None
    try:
        return Display.model_validate_json(data)
    except ValidationError:
        return None
