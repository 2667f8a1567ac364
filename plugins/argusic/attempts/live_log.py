"""An attempt's own log, shown in the orchestrator's log while the attempt runs (the Airflow task log).

The file is written by the project and the agent under test: hostile output. What is shown is the
**masked form**, line by line, never the raw bytes:

1. read from the attempt's live output folder by its file name, opened without following links
   (``O_NOFOLLOW``, ``O_NONBLOCK``, through the folder's descriptor) and only while it is a regular
   file with one link; re-opened at every poll (no descriptor is held on the size-capped area, so its
   clean-up never waits for us); at most ``max_bytes`` in all, ``CHUNK`` per poll;
2. the attempt's per-run key is replaced by the same ``StreamRedactor`` the landing uses, so a key
   cut by a read boundary is still found: the raw key never reaches a log line;
3. the complete lines of a poll are masked together by the served copy's masking (``mask_text``:
   the per-run key and every shared key in all their forms, detect-secrets' token formats, private
   key bodies, vendor banners); a batch that cannot be shown clean is replaced by a notice;
4. terminal escapes and control characters are removed (a ``\\r`` progress line shows its last
   state), bidi controls shown as their escapes, and each line is cut to ``max_line`` characters.

While the attempt runs, a line ``[argusic] elapsed 1 min 20 s of 15 min budget`` every
``progress_every`` seconds (10 by default) shows that it is alive and how far it is in its budget,
whether or not it writes anything; after a long quiet period a "still running" notice says so too.

Why masked rather than only stripped: the task log is read by operators, not the public, but it is
kept by Airflow's log store outside the evidence store's guarantees; the per-run key is live while
the attempt runs. A secret split over two polls' batches is found only by the served copy, which is
what is published; the live view is a convenience and says so at its end.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from argusic.core.safe_io import visible_bidi
from argusic.sandbox.landing import StreamRedactor

log = logging.getLogger("argusic.live")

CHUNK = 64 * 1024
MAX_LINE_BYTES = 64 * 1024  # a line longer than this is shown cut, the rest of it skipped
LOG_NAME = "log.txt"
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), other two-byte ESC sequences, then any other
# C0/C1 control character except tab.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")

Emit = Callable[[str], None]


def clean_line(text: str, max_line: int = 400) -> str:
    """One line as it may be shown: terminal escapes and control characters removed (a line redrawn
    with carriage returns shows its last state), bidi controls shown as their escapes, cut to
    `max_line` characters (the escapes counted)."""
    text = _ESCAPES.sub("", text)
    if "\r" in text:
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    text = visible_bidi(_CONTROLS.sub("", text.replace("\t", "    ")).rstrip())
    if len(text) > max_line:
        text = f"{text[:max_line]}… ({len(text) - max_line} more characters)"
    return text


def span(seconds: float) -> str:
    """A duration as a person reads it: `45 s`, `1 min 20 s`, `15 min`."""
    whole = max(0, int(seconds))
    minutes, rest = divmod(whole, 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def elapsed_line(elapsed: float, budget_seconds: float | None) -> str:
    """`elapsed 1 min 20 s of 15 min budget` (no budget: `elapsed 1 min 20 s`); past the budget it says
    that the attempt is being stopped (the executor ends it at its budget)."""
    if not budget_seconds:
        return f"elapsed {span(elapsed)}"
    line = f"elapsed {span(elapsed)} of {span(budget_seconds)} budget"
    return f"{line}: over budget, being stopped" if elapsed > budget_seconds else line


class LiveLog:
    """Tail one attempt's log as it grows and emit its lines, masked (see the module's docstring).

    `watch(out_dir)` starts a poller thread and returns `stop`, which reads what is left and waits for
    the thread; the executor calls it once the attempt's processes are gone, before the output area
    is landed and removed."""

    def __init__(
        self,
        emit: Emit | None = None,
        *,
        redactions: Sequence[tuple[bytes, bytes]] = (),
        secrets: Sequence[str] = (),
        name: str = LOG_NAME,
        interval: float = 1.0,
        max_bytes: int = 4 * 1024**2,
        max_lines: int = 5000,
        max_line: int = 400,
        quiet_notice_every: float = 300.0,
        budget_seconds: float | None = None,
        progress_every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.emit = emit or (lambda line: log.info("%s", line))
        self.redactor = StreamRedactor(redactions)
        self.secrets = [*secrets, *(v.decode("utf-8", "replace") for v, _ in redactions if v)]
        self.name = name
        self.interval = interval
        self.max_bytes = max_bytes
        self.max_lines = max_lines
        self.max_line = max_line
        self.quiet_notice_every = quiet_notice_every
        self.budget_seconds = budget_seconds
        self.progress_every = progress_every
        self.clock = clock
        self.read_bytes = 0
        self.shown_lines = 0
        self.withheld_batches = 0
        self._offset = 0
        self._identity: tuple[int, int] | None = None
        self._pending = b""
        self._skipping = False
        self._later: list[str] = []
        self._done = False  # capped, or the file became something we do not read
        self._out: Path | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._started = 0.0
        self._last_news = 0.0
        self._next_progress = 0.0

    # -- the executor's side ------------------------------------------------------------------------

    def watch(self, out_dir: Path) -> Callable[[], None]:
        self._out = Path(out_dir)
        self._started = self._last_news = self.clock()
        self._next_progress = self._started + self.progress_every
        self._thread = threading.Thread(target=self._run, name="argusic-live-log", daemon=True)
        self._thread.start()
        stopped = False

        def stop() -> None:
            nonlocal stopped
            if stopped:
                return
            stopped = True
            self._stop.set()
            if self._thread is not None:
                self._thread.join(timeout=30)
            with self._lock:
                self._poll(final=True)

        return stop

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                self._poll(final=False)
                self._progress()
                self._quiet_notice()

    # -- reading ------------------------------------------------------------------------------------

    def _note(self, text: str) -> None:
        self.emit(f"[argusic] {text}")

    def _progress(self) -> None:
        """Every `progress_every` seconds (on the multiples, no drift): how long the attempt has run,
        against its budget."""
        now = self.clock()
        if self.progress_every > 0 and now >= self._next_progress:
            while self._next_progress <= now:
                self._next_progress += self.progress_every
            self._note(elapsed_line(now - self._started, self.budget_seconds))

    def _quiet_notice(self) -> None:
        now = self.clock()
        if self.quiet_notice_every and now - self._last_news >= self.quiet_notice_every:
            self._last_news = now
            ran = (now - self._started) / 60
            budget = f" of its {self.budget_seconds / 60:.0f} min budget" if self.budget_seconds else ""
            self._note(f"still running: {ran:.0f} min{budget}, no new log line since the last one shown")

    def _read_new(self) -> bytes:
        """New bytes of the log since the last read; b"" when there are none or it cannot be read."""
        if self._out is None or self._done:
            return b""
        try:
            folder = os.open(self._out, _OPEN_DIR)
        except OSError:
            return b""  # not there yet, or already gone
        try:
            try:
                fd = os.open(self.name, _OPEN_FILE, dir_fd=folder)
            except FileNotFoundError:
                return b""
            except OSError as err:  # ELOOP: a symbolic link; ENXIO: a FIFO with no writer...
                self._refuse(f"{self.name} cannot be opened without following links ({err.strerror})")
                return b""
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                    kind = "not a regular file" if not stat.S_ISREG(st.st_mode) else "hard-linked"
                    self._refuse(f"{self.name} is {kind}")
                    return b""
                identity = (st.st_dev, st.st_ino)
                if self._identity is not None and identity != self._identity:
                    self._note(
                        f"{self.name} was replaced by another file: showing the new one from its start"
                    )
                    self._offset = 0
                elif st.st_size < self._offset:
                    self._note(f"{self.name} was truncated: showing it again from its start")
                    self._offset = 0
                self._identity = identity
                room = self.max_bytes - self.read_bytes
                want = min(CHUNK, room, max(0, st.st_size - self._offset))
                if want <= 0:
                    if room <= 0:
                        self._cap(f"{self.max_bytes // 1024**2} MiB")
                    return b""
                data = os.pread(fd, want, self._offset)
            finally:
                os.close(fd)
        finally:
            os.close(folder)
        self._offset += len(data)
        self.read_bytes += len(data)
        return data

    def _refuse(self, why: str) -> None:
        self._done = True
        self._later.append(f"live log stopped: {why}; the landing refuses it too (the attempt will say so)")

    def _cap(self, what: str) -> None:
        if not self._done:
            self._done = True
            self._later.append(f"live log stopped at {what}; the whole log is in the attempt's evidence")

    def _poll(self, final: bool) -> None:
        for _ in range(64 if final else 4):  # bounded work per poll; the rest comes at the next one
            data = self._read_new()
            if data:
                self._pending += self.redactor.feed(data)
            if not data or self._done:
                break
        if final:
            self._pending += self.redactor.flush()
        lines = self._pending.split(b"\n")
        self._pending = lines.pop()
        if self._skipping:  # the rest of an over-long line, whose beginning was shown
            if lines:
                lines.pop(0)
                self._skipping = False
            else:
                self._pending = b""
        if not self._skipping and len(self._pending) > MAX_LINE_BYTES:
            # A line without end: its beginning is shown (cut to max_line), the rest up to its end is
            # dropped, never shown as lines of its own (a key cut there would be a fragment).
            lines.append(self._pending[: self.max_line * 4])
            self._pending = b""
            self._skipping = True
        if final and self._pending:
            lines.append(self._pending)
            self._pending = b""
        if lines:
            self._show(lines)
        for note in self._later:  # after the lines read before it
            self._note(note)
        self._later.clear()

    def _show(self, raw_lines: list[bytes]) -> None:
        # deferred: masking imports numpy (slow); story and review import this module for clean_line only
        from argusic.masking import MaskingError, mask_text

        text = b"\n".join(raw_lines).decode("utf-8", "replace")
        try:
            masked, _stats = mask_text(text, self.secrets)
        except MaskingError:
            self.withheld_batches += 1
            self._note(f"{len(raw_lines)} line(s) not shown: they cannot be shown free of credentials")
            return
        for line in masked.split("\n"):
            if self.shown_lines >= self.max_lines:
                self._cap(f"{self.max_lines} lines")
                return
            shown = clean_line(line, self.max_line)
            if shown:
                self.emit(f"│ {shown}")
                self.shown_lines += 1
                self._last_news = self.clock()
