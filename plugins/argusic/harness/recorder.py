"""Terminal recorder for the reference harness: asciicast v2 plus a plain-text log.

Pure standard library (the attempt container has python3 and nothing else). Every command runs in a
fresh bash on a pseudo-terminal; everything it prints becomes `[t, "o", data]` events in the
recording and lines in the log. Both files are flushed after every write, so a container killed at
its budget still leaves a valid (partial) recording and log.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

if __package__:
    from .seal import RunningDigest, SealChannel, not_dumpable
    from .xdisplay import seal_video
else:  # run as a script from the harness directory
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from seal import RunningDigest, SealChannel, not_dumpable  # type: ignore[no-redef]
    from xdisplay import seal_video  # type: ignore[no-redef]

SEALED_AGENT_FILES = ("report.json", "session.jsonl")  # argusic.external.layout's names
DEFAULT_WIDTH = 120
DEFAULT_HEIGHT = 40
# Terminal control sequences in what a command printed (colours, cursor moves, window titles): taken
# out where the output is read back (its last line, the error a recovery move looks for).
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


@dataclass
class RunResult:
    command: str
    exit_code: int
    timed_out: bool
    output: str
    duration: float

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Control:
    """A channel through which a running script announces each of its steps.

    The script writes one line to `step_fd` before a step and waits for a line on `ack_fd`; the
    recorder first writes out everything the previous step printed, then calls
    `on_step(line, output_chars_so_far)` (which shows the next command at its prompt), then answers.
    Each announced step restarts the timeout, so `timeout` bounds one step, not the whole script.
    `on_tick(pid)`, when given, is called about every 50 ms while the script runs, with its pid (the
    reference harness watches the display through it).
    """

    def __init__(
        self, on_step: Callable[[str, int], None], on_tick: Callable[[int], None] | None = None
    ) -> None:
        self.on_step = on_step
        self.on_tick = on_tick
        self._read, self.step_fd = os.pipe()
        self.ack_fd, self._answer = os.pipe()

    def child_fds(self) -> tuple[int, int]:
        return (self.step_fd, self.ack_fd)

    def close_child_ends(self) -> None:
        for fd in (self.step_fd, self.ack_fd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def close(self) -> None:
        self.close_child_ends()
        for fd in (self._read, self._answer):
            with contextlib.suppress(OSError):
                os.close(fd)


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


class Recorder:
    """One recording session: an asciicast v2 file and a log, both append-only and flushed."""

    def __init__(
        self,
        cast_path: str,
        log_path: str,
        width: int = DEFAULT_WIDTH,
        height: int = DEFAULT_HEIGHT,
        title: str | None = None,
    ) -> None:
        self.width = width
        self.height = height
        self._start = time.monotonic()
        self._last_t = 0.0
        self._cast = open(cast_path, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the session
        self._log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115
        # what this session wrote, byte for byte: the seal compares the landed files with it
        self.cast_digest = RunningDigest()
        self.log_digest = RunningDigest()
        header = {
            "version": 2,
            "width": width,
            "height": height,
            "timestamp": int(time.time()),
            "env": {"SHELL": "/bin/bash", "TERM": "xterm-256color"},
        }
        if title:
            header["title"] = title
        self._write_cast(json.dumps(header) + "\n")
        self._log_at_line_start = True

    # -- low-level writers -------------------------------------------------------------------------
    def _elapsed(self) -> float:
        t = round(time.monotonic() - self._start, 6)
        if t < self._last_t:  # never go backwards, whatever the clock does
            t = self._last_t
        self._last_t = t
        return t

    def _write_cast(self, line: str) -> None:
        self._cast.write(line)
        self._cast.flush()
        self.cast_digest.add(line)

    def event(self, data: str) -> None:
        """One output event in the recording (not in the log)."""
        if not data:
            return
        self._write_cast(json.dumps([self._elapsed(), "o", data], ensure_ascii=False) + "\n")

    def _log_raw(self, text: str) -> None:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if not text:
            return
        self._log.write(text)
        self._log_at_line_start = text.endswith("\n")
        self._log.flush()
        self.log_digest.add(text)

    def log_line(self, text: str) -> None:
        """A timestamped line in the log only."""
        if not self._log_at_line_start:
            self._log_raw("\n")
        self._log_raw(f"[{_utc_now()}] {text}\n")

    def note(self, text: str) -> None:
        """A harness note: timestamped in the log, shown as a comment line in the recording."""
        self.log_line(text)
        self.event(f"\x1b[2m# {text}\x1b[0m\r\n")

    def prompt(self, command: str, cwd_label: str = "") -> None:
        """Show the command as typed at a prompt (recording) and as a step line (log)."""
        shown = command.replace("\n", "\r\n> ")
        self.event(f"\x1b[1m{cwd_label}$ \x1b[0m{shown}\r\n")

    def output(self, data: str) -> None:
        self.event(data)
        self._log_raw(data)

    # -- running commands --------------------------------------------------------------------------
    def run(
        self,
        argv: list[str],
        cwd: str,
        env: dict[str, str],
        timeout: float,
        kill_grace: float = 2.0,
        control: Control | None = None,
    ) -> tuple[int, bool, str, float]:
        """Run argv on a pty, recording its output. Returns (exit_code, timed_out, output, seconds).

        stdin is /dev/null: a command waiting for keyboard input gets end-of-file instead of hanging.
        The command runs in its own session; on timeout the whole process group gets SIGTERM, then
        SIGKILL after `kill_grace` seconds. Processes left in the group when the command ends are
        terminated as well. With a `control` channel the timeout applies to each announced step.
        """
        master, slave = pty.openpty()
        with contextlib.suppress(OSError):
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", self.height, self.width, 0, 0))
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=slave,
                stderr=slave,
                start_new_session=True,
                close_fds=True,
                pass_fds=control.child_fds() if control else (),
            )
        except OSError as exc:
            os.close(slave)
            os.close(master)
            message = f"cannot start {argv[0]}: {exc}\r\n"
            self.output(message)
            return 127, False, message, 0.0
        os.close(slave)
        if control:
            control.close_child_ends()
        ctl_open = control is not None
        ctl_buf = b""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        chunks: list[str] = []
        timed_out = False
        deadline = started + timeout

        def pump(wait: float, use_master: bool = True) -> bool:
            """Read what is available; False on end of file of the terminal."""
            nonlocal ctl_open, ctl_buf, deadline
            watched = ([master] if use_master else []) + ([control._read] if control and ctl_open else [])
            if not watched:
                time.sleep(wait)
                return use_master
            ready, _, _ = select.select(watched, [], [], wait)
            if not ready:
                return use_master
            if control and ctl_open and control._read in ready:
                # Everything the previous step printed goes out before the next step's prompt.
                while use_master and select.select([master], [], [], 0)[0]:
                    if not _read_master():
                        use_master = False
                try:
                    data = os.read(control._read, 4096)
                except OSError:
                    data = b""
                if not data:
                    ctl_open = False
                ctl_buf += data
                while b"\n" in ctl_buf:
                    line, ctl_buf = ctl_buf.split(b"\n", 1)
                    control.on_step(line.decode("utf-8", "replace"), sum(len(c) for c in chunks))
                    deadline = time.monotonic() + timeout
                    with contextlib.suppress(OSError):
                        os.write(control._answer, b"\n")
                # `ready` is stale now: the drain above may have emptied the terminal, and a blocking
                # read of an empty terminal would wait for a script that waits for our answer.
                if not (use_master and master in ready and select.select([master], [], [], 0)[0]):
                    return use_master
            return _read_master()

        def _read_master() -> bool:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                return False
            if not data:
                return False
            text = decoder.decode(data)
            if text:
                chunks.append(text)
                self.output(text)
            return True

        open_ = True
        while True:
            open_ = pump(0.05, open_)
            if proc.poll() is not None:
                break
            if control and control.on_tick:
                control.on_tick(proc.pid)
            if time.monotonic() >= deadline:
                timed_out = True
                _signal_group(proc.pid, signal.SIGTERM)
                grace_end = time.monotonic() + kill_grace
                while proc.poll() is None and time.monotonic() < grace_end:
                    if open_:
                        open_ = pump(0.05)
                    else:
                        time.sleep(0.05)
                if proc.poll() is None:
                    _signal_group(proc.pid, signal.SIGKILL)
                    proc.wait()
                break
        # Drain what the command printed before it ended; don't wait for background writers.
        drain_end = time.monotonic() + 1.0
        while open_ and time.monotonic() < drain_end:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                break
            open_ = pump(0)
        tail = decoder.decode(b"", final=True)
        if tail:
            chunks.append(tail)
            self.output(tail)
        _signal_group(proc.pid, signal.SIGTERM)  # leftovers of the command's own group
        os.close(master)
        if control:
            control.close()
        code = proc.returncode
        if code is None:
            code = -1
        if code < 0:
            code = 128 - code
        return code, timed_out, "".join(chunks), time.monotonic() - started

    def close(self) -> None:
        for f in (self._cast, self._log):
            with contextlib.suppress(Exception):
                f.flush()
                f.close()

    def seal_files(self, channel: SealChannel) -> None:
        """Put this session's two files in the seal, as they were written (call after close)."""
        channel.file_digest("recording.cast", self.cast_digest)
        channel.file_digest("log.txt", self.log_digest)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def main(argv: list[str] | None = None) -> int:
    """Record one command: ``python3 recorder.py --out DIR [--title T] -- COMMAND [ARG...]``.

    Writes DIR/recording.cast and DIR/log.txt (the command's terminal output, stdout and stderr
    together) and exits with the command's status. Used to run an external agent CLI under the same
    recorder as the reference harness; the command inherits this process's environment and folder.
    Given the seal descriptor (seal.py), it seals its two files as written and the agent's report
    and session log as they are when the command ended; exit 3 when that seal cannot be sent.
    """
    parser = argparse.ArgumentParser(prog="recorder.py", description=main.__doc__)
    parser.add_argument("--out", required=True, help="folder for recording.cast and log.txt")
    parser.add_argument("--title", default=None)
    parser.add_argument("--timeout", type=float, default=float("inf"), help="seconds (default: none)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (after --)")
    not_dumpable()  # before anything the agent runs exists
    channel = SealChannel.take()
    os.makedirs(args.out, exist_ok=True)
    recorder = Recorder(
        os.path.join(args.out, "recording.cast"), os.path.join(args.out, "log.txt"), title=args.title
    )
    try:
        recorder.note(f"recorder: start {command[0]}")
        code, timed_out, _, seconds = recorder.run(command, os.getcwd(), dict(os.environ), args.timeout)
        recorder.note(f"recorder: exit {code}{' (timed out)' if timed_out else ''} after {seconds:.1f} s")
    finally:
        recorder.close()
    recorder.seal_files(channel)
    for name in SEALED_AGENT_FILES:  # written by the agent's CLI: sealed as they are now
        channel.file_as_it_is(name, os.path.join(args.out, name))
    seal_video(channel, os.path.abspath(args.out))  # the display's video, stopped and sealed as it is
    try:
        channel.send(exit_code=code)
    except OSError as err:
        sys.stderr.write(f"recorder: the seal could not be sent: {err}\n")
        return 3
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
