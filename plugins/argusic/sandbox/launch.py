"""The launch contract between an executor and what runs in the container: where things are as the
harness sees them (HarnessPaths), what to run (Launch, LaunchBuilder), what comes back (ExecutionResult),
the Executor protocol, and the display file the harness leaves in /out. Attempts build launches from
these without importing an executor."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from argusic.core.record import Display


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
