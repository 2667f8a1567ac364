#!/usr/bin/env python3
"""readme-runner: the deterministic reference agent. No model calls; standard library only.

    python3 readme_runner.py --project DIR --out DIR [--no-recovery] [--command-timeout SECONDS]

It reads the project's README as a careful engineer would (readme_parser.py: which commands install,
which run, which are output, other systems' routes or the reader's own files), runs each README code
block as one shell script (stopping at its first failing command, the error the recovery moves see),
then verifies by decoding the output files the README's verification section names (or, failing
that, the ones a "verify with a mock" section names, against the mock it starts). Everything runs
under the terminal recorder: DIR/recording.cast (asciicast v2, each command at its prompt) and
DIR/log.txt. The report goes to DIR/report.json and a step-by-step account to DIR/harness.json. The
rules are documented in README.md next to this file.

Exit status: 0 whenever a report was written, whatever the project did; 2 on bad usage; 3 when the
harness itself broke (no report then).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field

if __package__:
    from . import decode as _decode  # noqa: F401 - the decoder runs as a script; imported for packaging
    from .readme_parser import Checkout, Plan, find_readme, parse_readme
    from .recorder import Control, Recorder, RunResult
    from .xdisplay import XError, top_level_windows, wait_for
else:  # run as a script from the (read-only) harness directory
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from readme_parser import Checkout, Plan, find_readme, parse_readme  # type: ignore[no-redef]
    from recorder import Control, Recorder, RunResult  # type: ignore[no-redef]
    from xdisplay import XError, top_level_windows, wait_for  # type: ignore[no-redef]

HARNESS_NAME = "readme-runner"
HARNESS_VERSION = "2.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))

DEFAULT_COMMAND_TIMEOUT = 1800.0
PORT_WAIT_SECONDS = 20.0
MAX_MOVES_PER_STEP = 3
MAX_README_BYTES = 2_000_000  # a README larger than this is read up to here
SCRIPT_ARG_LIMIT = 100_000  # Linux caps one argument at 128 KiB
# Desktop applications (methodology section 7, item 6: "ran" means the main process started on the
# virtual display and stayed up, or answered a version or help command; nothing is clicked). A run
# command that shows a new top-level window on the display and is still running with that window
# shown GUI_UP_SECONDS later ran; the harness then stops it (SIGTERM, SIGKILL after GUI_STOP_GRACE)
# and goes on. 10 s: long past a toolkit's start-up (a Tk window maps in well under a second), so a
# program that crashes on its first event loop turns is not counted, and short next to any budget.
GUI_UP_SECONDS = 10.0
GUI_POLL_SECONDS = 0.5
GUI_STOP_GRACE = 2.0

__all__ = ["HARNESS_NAME", "HARNESS_VERSION", "Plan", "find_readme", "main", "parse_readme", "session"]

# ---------------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------------

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
ENV_EXAMPLES = (".env.example", ".env.sample", ".env.dist", ".env.template", "env.example")
ENV_HINT_RE = re.compile(
    r"(?i)not set|missing|undefined|unset|required|keyerror|environment variable|no value for"
)
ENV_NAME_RE = re.compile(r"\b([A-Z][A-Z0-9_]{2,})\b")
PERMISSION_RE = re.compile(r"([^\s:'\"`]+): Permission denied")
NOFILE_RES = [
    re.compile(r"No such file or directory: '([^']+)'"),
    re.compile(r"([^\s:'\"`]+): No such file or directory"),
    re.compile(r"cannot create ([^\s:'\"`]+): Directory nonexistent"),
    re.compile(r"can't create ([^\s:'\"`]+)"),
]
PYTHON_MISSING_RE = re.compile(r"\bpython: (command )?not found|'python': No such file or directory")
SUDO_MISSING_RE = re.compile(r"\bsudo: (command )?not found|'sudo': No such file or directory")
SUDO_SHIM = """#!/bin/sh
# readme-runner's sudo: the harness already runs as root, so the command runs as it is.
while [ $# -gt 0 ]; do
  case "$1" in
    -u|-g|-C|-D|-h|-p|-r|-t|-U) shift 2 ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
exec "$@"
"""
BACKGROUND_RE = re.compile(r"(?<![&|])&\s*$")
STATE_SKIP = {"PWD", "OLDPWD", "SHLVL", "_"}

# Shell variables a script must not save and restore (bash's own, read-only or per-process).
_SHELL_OWN = (
    "BASH*|EUID|PPID|UID|SHELLOPTS|FUNCNAME|GROUPS|LINENO|RANDOM|SECONDS|SRANDOM|EPOCHREALTIME"
    "|EPOCHSECONDS|PIPESTATUS|HISTCMD|DIRSTACK|_|OPTIND|OPTARG|OPTERR|PWD|OLDPWD|SHLVL|IFS|PS1|PS2"
    "|PS4|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|COLUMNS|LINES|COMP_*|READLINE_*|HIST*|MAILCHECK"
    "|ARGUSIC_*|__argusic_*"
)
# Before the block: restore the functions and variables the previous scripts left. After (EXIT
# trap): save them with the environment and folder, and record which command ended the script.
_PRELUDE = r"""__argusic_save() {
  __argusic_rc=$?
  trap - EXIT
  {
    env -0 > "$ARGUSIC_STATE/env"
    pwd > "$ARGUSIC_STATE/cwd"
    for __argusic_f in $(compgen -A function); do
      case "$__argusic_f" in __argusic_*) ;; *) declare -f "$__argusic_f" ;; esac
    done > "$ARGUSIC_STATE/functions"
    for __argusic_v in $(compgen -v); do
      case "$__argusic_v" in SHELL_OWN) ;; *) declare -p "$__argusic_v" ;; esac
    done > "$ARGUSIC_STATE/vars"
  } 2>/dev/null
  printf '%s %s\n' "${__argusic_at:--1}" "$__argusic_rc" > "$ARGUSIC_STATE/status"
  exit "$__argusic_rc"
}
trap __argusic_save EXIT
[ -r "$ARGUSIC_STATE/functions" ] && . "$ARGUSIC_STATE/functions" 2>/dev/null
[ -r "$ARGUSIC_STATE/vars" ] && . "$ARGUSIC_STATE/vars" 2>/dev/null
[ -r "$ARGUSIC_STATE/overrides" ] && . "$ARGUSIC_STATE/overrides" 2>/dev/null
true
""".replace("SHELL_OWN", _SHELL_OWN)


def last_line(output: str) -> str:
    for line in reversed(ANSI_RE.sub("", output).replace("\r", "\n").split("\n")):
        if line.strip():
            line = " ".join(line.split())
            return line if len(line) <= 200 else line[:197] + "..."
    return ""


@dataclass
class Step:
    phase: str
    command: str
    exit_code: int
    timed_out: bool
    seconds: float
    last_output: str
    ok: bool
    recovery: list[str] = field(default_factory=list)
    recovered: bool = False
    block: int = 0  # which README block it belongs to (its first line in the README)
    desktop: str = ""  # a desktop application: what was seen on the display (then stopped by us)


@dataclass
class GuiRun:
    """A run command seen running as a desktop application."""

    command: str
    index: int  # its place in the script
    window: str  # the window's title (WM_NAME), possibly empty
    seconds: float  # how long its window was seen with the main process up
    display: str


def _descendants(root: int) -> list[int]:
    """Every process below `root` (not root itself), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("latin-1")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


class GuiWatch:
    """Watches the display while a run script's command runs (Control.on_tick): a command whose new
    top-level window is still shown, with the command still running, GUI_UP_SECONDS after it first
    appeared is a desktop application that ran. Its processes are then stopped and a flag file tells
    the script to count the command as succeeded. Reads the display only: nothing is clicked."""

    def __init__(self, display: str, state_dir: str, rec: Recorder) -> None:
        self.display = display
        self.state_dir = state_dir
        self.rec = rec
        self.runs: list[GuiRun] = []
        self.command: str | None = None

    def start(self, index: int, command: str) -> None:
        """A new command of the script starts: the windows already there are not its own."""
        self.index, self.command = index, command
        self.before = set(self._windows())
        self.seen_at: float | None = None
        self.window = ""
        self.stopping: tuple[float, list[int]] | None = None
        self.next_poll = time.monotonic() + GUI_POLL_SECONDS

    def _windows(self) -> dict:
        try:
            return top_level_windows(self.display)
        except (XError, OSError):
            return {}

    def tick(self, script_pid: int) -> None:
        now = time.monotonic()
        if self.command is None or now < self.next_poll:
            return
        self.next_poll = now + GUI_POLL_SECONDS
        if self.stopping is not None:
            since, pids = self.stopping
            if now - since >= GUI_STOP_GRACE:
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                self.command = None
            return
        new = [w for wid, w in self._windows().items() if wid not in self.before]
        if not new:
            self.seen_at = None  # no window of its own (yet, or any more)
            return
        if self.seen_at is None:
            self.seen_at, self.window = now, new[0].name
            self.rec.log_line(f"DISPLAY: a window appeared on {self.display}: {self.window!r}")
            return
        up = now - self.seen_at
        pids = _descendants(script_pid)
        if up < GUI_UP_SECONDS or not pids:
            return
        with open(os.path.join(self.state_dir, f"gui-{self.index}"), "w", encoding="utf-8"):
            pass
        self.runs.append(GuiRun(self.command, self.index, self.window, round(up, 1), self.display))
        self.rec.note(
            f"a desktop application: its window {self.window!r} has been on {self.display} for "
            f"{up:.0f} s with its main process up; it ran (nothing clicked); stopping it"
        )
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        self.stopping = (now, pids)


def display_available() -> str | None:
    """The virtual display the harness was given (DISPLAY, answering a real X11 connection)."""
    display = os.environ.get("DISPLAY", "")
    if not display:
        return None
    try:
        return display if wait_for(display, 2.0) is not None else None
    except XError:
        return None


@dataclass
class ScriptRun:
    """One block script: which commands started (index, output offset, time) and how it ended."""

    started: list[tuple[int, int, float]]
    exit_code: int
    timed_out: bool
    output: str
    ended_at: float
    ended_by: int | None  # the command that ended the script (from the EXIT trap), if known
    desktop: dict[int, GuiRun] = field(default_factory=dict)  # commands that ran as desktop apps


class Runner:
    def __init__(self, project: str, out: str, recovery: bool, command_timeout: float, rec: Recorder) -> None:
        self.project = project
        self.out = out
        self.recovery = recovery
        self.timeout = command_timeout
        self.rec = rec
        self.cwd = project
        self.env = dict(os.environ)
        self.env.setdefault("TERM", "xterm-256color")
        self.env["PAGER"] = "cat"
        self.env["GIT_PAGER"] = "cat"
        self.overrides: dict[str, str] = {}  # set by recovery moves; win over the saved shell state
        self.errors_encountered = 0
        self.errors_fixed = 0
        self.steps: list[Step] = []
        self.moves_applied: list[str] = []
        self.background: list[tuple[subprocess.Popen, str, str]] = []
        self.state_dir = tempfile.mkdtemp(prefix="argusic-harness-")
        self.display = display_available()
        self.gui = GuiWatch(self.display, self.state_dir, rec) if self.display else None

    # -- low level ---------------------------------------------------------------------------------
    def _label(self, cwd: str | None = None) -> str:
        rel = os.path.relpath(cwd or self.cwd, self.project)
        return "" if rel == "." else rel + " "

    def _script(self, commands: list[str], fds: tuple[int, int]) -> str:
        """The block as one bash script: each command announced, then run; stop at the first failure."""
        step_fd, ack_fd = fds
        parts = [_PRELUDE]
        for i, command in enumerate(commands):
            parts.append(
                f"__argusic_at={i}\n"
                f"printf '%s\\t%s\\n' {i} \"$PWD\" >&{step_fd}; IFS= read -r __argusic_ack <&{ack_fd}\n"
                f"{{\n{command}\n}} {step_fd}>&- {ack_fd}>&-\n"
                # a desktop application stopped by the harness after it ran (GuiWatch) succeeded
                f'__argusic_rc=$?; [ ! -e "$ARGUSIC_STATE/gui-{i}" ] || __argusic_rc=0\n'
                f'[ "$__argusic_rc" -eq 0 ] || exit "$__argusic_rc"\n'
            )
        parts.append("__argusic_at=-1\n")
        return "".join(parts)

    def _run_script(self, phase: str, commands: list[str]) -> ScriptRun:
        """Run commands as one bash script on the recorder's terminal; each is shown at its prompt."""
        started: list[tuple[int, int, float]] = []
        for name in ("status", *(f"gui-{i}" for i in range(len(commands)))):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(self.state_dir, name))
        gui = self.gui if phase == "run" else None  # only run commands can be desktop applications

        def on_step(line: str, offset: int) -> None:
            index_text, _, cwd = line.partition("\t")
            try:
                index = int(index_text)
            except ValueError:
                return
            if not 0 <= index < len(commands):
                return
            started.append((index, offset, time.monotonic()))
            self.rec.log_line(f"STEP {phase}: {commands[index]}")
            self.rec.prompt(commands[index], self._label(cwd or None))
            if gui is not None:
                gui.start(index, commands[index])

        control = Control(on_step, gui.tick if gui is not None else None)
        script = self._script(commands, control.child_fds())
        self._write_overrides()
        env = dict(self.env, ARGUSIC_STATE=self.state_dir)
        if not os.path.isdir(self.cwd):
            self.cwd = self.project
        if len(script.encode()) < SCRIPT_ARG_LIMIT:
            argv = ["bash", "-c", script, "bash"]  # errors read "bash: line N: ...", as at a prompt
        else:  # too long for one argument: from a file
            script_path = os.path.join(self.state_dir, "block.sh")
            with open(script_path, "w", encoding="utf-8") as f:
                f.write(script)
            argv = ["bash", script_path]
        gui_runs = len(gui.runs) if gui is not None else 0
        code, timed_out, output, _seconds = self.rec.run(argv, self.cwd, env, self.timeout, control=control)
        ended_at = time.monotonic()
        desktop = {}
        if gui is not None:
            gui.command = None
            desktop = {r.index: r for r in gui.runs[gui_runs:]}
        ended_by = None
        try:
            with open(os.path.join(self.state_dir, "status"), encoding="utf-8") as f:
                at, _, _rc = f.read().strip().partition(" ")
            ended_by = int(at)
        except (OSError, ValueError):
            pass
        self._load_state()
        return ScriptRun(started, code, timed_out, output, ended_at, ended_by, desktop)

    def _write_overrides(self) -> None:
        path = os.path.join(self.state_dir, "overrides")
        with open(path, "w", encoding="utf-8") as f:
            for key, value in self.overrides.items():
                f.write(f"export {key}={shlex.quote(value)}\n")

    def _load_state(self) -> None:
        """Carry the environment and folder over to background commands and the next script."""
        try:
            with open(os.path.join(self.state_dir, "env"), "rb") as f:
                blob = f.read()
        except OSError:
            blob = b""
        if blob:
            env = {}
            for item in blob.split(b"\0"):
                key, sep, value = item.decode("utf-8", "replace").partition("=")
                if sep and key not in STATE_SKIP and not key.startswith("ARGUSIC_"):
                    env[key] = value
            if env:
                self.env = env
        try:
            with open(os.path.join(self.state_dir, "cwd"), encoding="utf-8") as f:
                cwd = f.read().strip()
        except OSError:
            cwd = ""
        if cwd and os.path.isdir(cwd):
            self.cwd = cwd

    def _exec_background(self, command: str, ports: list[int]) -> RunResult:
        bare = BACKGROUND_RE.sub("", command).rstrip()
        n = len(self.background) + 1
        log_path = os.path.join(self.out, f"background-{n}.log")
        self.rec.prompt(command, self._label())
        started = time.monotonic()
        with open(log_path, "wb") as logf:
            proc = subprocess.Popen(
                ["bash", "-c", bare],
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.background.append((proc, command, log_path))
        wanted = [p for p in ports if str(p) in bare] or ports
        self.rec.note(
            f"started in the background as pid {proc.pid} (output in {os.path.basename(log_path)})"
            + (f"; waiting for 127.0.0.1:{', '.join(map(str, wanted))}" if wanted else "")
        )
        deadline = time.monotonic() + (PORT_WAIT_SECONDS if wanted else 1.0)
        pending = list(wanted)
        while True:
            if proc.poll() is not None:
                output = _read_text(log_path)
                self.rec.output(output.replace("\n", "\r\n"))
                code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
                self.rec.note(f"background command ended early with exit code {code}")
                return RunResult(command, code or 1, False, output, time.monotonic() - started)
            pending = [p for p in pending if not _port_open(p)]
            if not pending and (wanted or time.monotonic() >= deadline):
                if wanted:
                    self.rec.note(f"127.0.0.1:{', '.join(map(str, wanted))} accepts connections")
                return RunResult(command, 0, False, "", time.monotonic() - started)
            if time.monotonic() >= deadline:
                listening = ", ".join(map(str, pending))
                output = f"nothing listens on 127.0.0.1:{listening} after {PORT_WAIT_SECONDS:.0f} s"
                self.rec.note(output)
                return RunResult(
                    command, 1, False, _read_text(log_path) + "\n" + output, time.monotonic() - started
                )
            time.sleep(0.1)

    def stop_background(self) -> None:
        for proc, command, log_path in self.background:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                self.rec.note(f"stopped background command `{command}` (pid {proc.pid})")
            output = _read_text(log_path)
            if output.strip():
                self.rec.note(f"output of background command `{command}`:")
                self.rec.output(output.replace("\r\n", "\n").replace("\n", "\r\n"))
        self.background = []

    # -- steps and recovery ------------------------------------------------------------------------
    def run_block(
        self,
        phase: str,
        commands: list[str],
        ports: list[int] | None = None,
        recoverable: bool = True,
        block: int = 0,
    ) -> Step | None:
        """Run one README block; the step that still fails after recovery, or None when all succeeded.

        Consecutive commands run as one script (README.md, "Running"). A command ending with `&` starts
        in the background on its own. When a command fails, the recovery moves look at its output and
        the script is run again from that command, with the shell state it left.
        """
        pos = 0
        pending: Step | None = None  # a failed step being recovered
        tried: set[str] = set()
        while pos < len(commands):
            if BACKGROUND_RE.search(commands[pos]):
                step = self._background_step(phase, commands[pos], ports or [], recoverable, block)
                if not step.ok:
                    return step
                pos += 1
                continue
            end = pos
            while end < len(commands) and not BACKGROUND_RE.search(commands[end]):
                end += 1
            run = self._run_script(phase, commands[pos:end])
            steps = self._steps_of(phase, commands[pos:end], run, block)
            failed_at: int | None = None
            for k, step in enumerate(steps):
                if k == 0 and pending is not None:
                    # The failing command, run again after a recovery move.
                    pending.exit_code, pending.timed_out = step.exit_code, step.timed_out
                    pending.seconds = round(pending.seconds + step.seconds, 3)
                    pending.last_output = step.last_output
                    if step.ok:
                        pending.ok = pending.recovered = True
                        self.errors_fixed += 1
                        self.rec.note("the command succeeded after the recovery move; error fixed")
                        pending, tried = None, set()
                        continue
                    failed_at = k
                    self.rec.note(
                        f"killed after {self.timeout:g} s (--command-timeout)"
                        if step.timed_out
                        else f"still failing with exit code {step.exit_code}"
                    )
                    break
                self.steps.append(step)
                if not step.ok:
                    failed_at = k
                    pending, tried = step, set()
                    self.errors_encountered += 1
                    self.rec.note(
                        f"killed after {self.timeout:g} s (--command-timeout); counted as an error"
                        if step.timed_out
                        else f"step failed with exit code {step.exit_code}; counted as an error"
                    )
                    if end - pos > k + 1:
                        self.rec.note(f"the rest of this block ({end - pos - k - 1} more) did not run")
                    break
            if failed_at is None:
                if len(steps) < end - pos:
                    # A command ended the shell (`exit 0`); the block goes on with the next one.
                    pos += max(1, len(steps))
                else:
                    pos = end
                continue
            assert pending is not None
            command = commands[pos + failed_at]
            if pending.timed_out or not self.recovery or not recoverable or len(tried) >= MAX_MOVES_PER_STEP:
                if not tried and not pending.timed_out and self.recovery and recoverable:
                    self.rec.note("no recovery move applies")
                return pending
            output = run.output[_offset_of(run, failed_at) :]
            move = self.pick_move(command, output, tried)
            if move is None:
                if not tried:
                    self.rec.note("no recovery move applies")
                return pending
            name, description = move
            tried.add(name)
            pending.recovery.append(f"{name}: {description}")
            self.moves_applied.append(description)
            self.rec.note(f"recovery move {name}: {description}; retrying from `{_one_line(command)}`")
            pos = pos + failed_at
        return None

    def _steps_of(self, phase: str, commands: list[str], run: ScriptRun, block: int) -> list[Step]:
        """One Step per command the script started, from the control messages and the exit status."""
        steps: list[Step] = []
        order = sorted(run.started)
        for n, (index, offset, t0) in enumerate(order):
            last = n == len(order) - 1
            end_offset = order[n + 1][1] if not last else len(run.output)
            t1 = order[n + 1][2] if not last else run.ended_at
            text = run.output[offset:end_offset]
            if not last:
                code, timed_out = 0, False
            elif run.timed_out:
                code, timed_out = run.exit_code, True
            elif index == len(commands) - 1 or run.exit_code != 0:
                code, timed_out = run.exit_code, False
            else:
                code, timed_out = 0, False  # ended the shell itself (exit 0): done, the rest goes on
            steps.append(
                Step(
                    phase,
                    commands[index],
                    code,
                    timed_out,
                    round(t1 - t0, 3),
                    last_line(text),
                    code == 0 and not timed_out,
                    block=block,
                    desktop=_desktop_words(run.desktop[index]) if index in run.desktop else "",
                )  # fmt: skip
            )
        if not order and commands:
            # The script never reached its first command (bash itself failed): say so.
            steps.append(
                Step(
                    phase,
                    commands[0],
                    run.exit_code or 1,
                    run.timed_out,
                    0.0,
                    last_line(run.output),
                    False,
                    block=block,
                )  # fmt: skip
            )
        return steps

    def _background_step(
        self, phase: str, command: str, ports: list[int], recoverable: bool, block: int
    ) -> Step:
        self.rec.log_line(f"STEP {phase}: {command}")
        res = self._exec_background(command, ports)
        step = Step(
            phase,
            command,
            res.exit_code,
            res.timed_out,
            round(res.duration, 3),
            last_line(res.output),
            res.ok,
        )
        step.block = block
        self.steps.append(step)
        if res.ok:
            return step
        self.errors_encountered += 1
        self.rec.note(f"step failed with exit code {res.exit_code}; counted as an error")
        if not self.recovery or not recoverable:
            return step
        tried: set[str] = set()
        for _ in range(MAX_MOVES_PER_STEP):
            move = self.pick_move(command, res.output, tried)
            if move is None:
                break
            name, description = move
            tried.add(name)
            step.recovery.append(f"{name}: {description}")
            self.moves_applied.append(description)
            self.rec.note(f"recovery move {name}: {description}; retrying")
            self.rec.log_line(f"STEP {phase}: {command}")
            res = self._exec_background(command, ports)
            step.exit_code, step.seconds = res.exit_code, round(step.seconds + res.duration, 3)
            step.last_output = last_line(res.output)
            if res.ok:
                step.ok = step.recovered = True
                self.errors_fixed += 1
                self.rec.note("the step succeeded after the recovery move; error fixed")
                return step
        if not tried:
            self.rec.note("no recovery move applies")
        return step

    def pick_move(self, command: str, output: str, tried: set[str]) -> tuple[str, str] | None:
        """Apply the first recovery move that fits; return (name, what was done) or None."""
        text = ANSI_RE.sub("", output)
        for name, move in (
            ("chmod", self._move_chmod),
            ("python3", self._move_python),
            ("sudo", self._move_sudo),
            ("dotenv", self._move_dotenv),
            ("mkdir", self._move_mkdir),
        ):
            if name in tried:
                continue
            done = move(command, text)
            if done:
                return name, done
        return None

    def _inside(self, path: str) -> str | None:
        full = os.path.realpath(os.path.join(self.cwd, path))
        root = os.path.realpath(self.project)
        return full if full == root or full.startswith(root + os.sep) else None

    def _move_chmod(self, command: str, output: str) -> str | None:
        if "Permission denied" not in output:
            return None
        candidates = PERMISSION_RE.findall(output)
        with contextlib.suppress(ValueError):
            candidates += [t for t in shlex.split(command) if "/" in t]
        fixed = []
        for cand in candidates:
            full = self._inside(cand)
            if full and os.path.isfile(full) and not os.access(full, os.X_OK):
                mode = os.stat(full).st_mode
                os.chmod(full, mode | ((mode & 0o444) >> 2) | 0o100)
                rel = os.path.relpath(full, self.project)
                if rel not in fixed:
                    fixed.append(rel)
        return ("chmod +x " + " ".join(fixed)) if fixed else None

    def _move_python(self, command: str, output: str) -> str | None:
        if not PYTHON_MISSING_RE.search(output):
            return None
        python3 = shutil.which("python3", path=self.env.get("PATH"))
        if not python3:
            return None
        shims = os.path.join(self.state_dir, "shims")
        os.makedirs(shims, exist_ok=True)
        link = os.path.join(shims, "python")
        if not os.path.lexists(link):
            os.symlink(python3, link)
        if not self.env.get("PATH", "").startswith(shims):
            self.env["PATH"] = shims + os.pathsep + self.env.get("PATH", "")
        self.overrides["PATH"] = self.env["PATH"]
        return f"`python` not found: put a `python` -> {python3} link first on PATH"

    def _move_sudo(self, command: str, output: str) -> str | None:
        if not SUDO_MISSING_RE.search(output) or os.geteuid() != 0:
            return None
        shims = os.path.join(self.state_dir, "shims")
        os.makedirs(shims, exist_ok=True)
        path = os.path.join(shims, "sudo")
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8") as f:
                f.write(SUDO_SHIM)
            os.chmod(path, 0o755)
        if not self.env.get("PATH", "").startswith(shims):
            self.env["PATH"] = shims + os.pathsep + self.env.get("PATH", "")
        self.overrides["PATH"] = self.env["PATH"]
        return "`sudo` not found and already root: put a `sudo` that runs its command first on PATH"

    def _move_dotenv(self, command: str, output: str) -> str | None:
        if not ENV_HINT_RE.search(output):
            return None
        names = set(ENV_NAME_RE.findall(output))
        for base in dict.fromkeys((self.cwd, self.project)):
            for example in ENV_EXAMPLES:
                src = os.path.join(base, example)
                if not os.path.isfile(src):
                    continue
                values = _parse_env_file(src)
                if not names & set(values):
                    continue
                dotenv = os.path.join(base, ".env")
                done = []
                if not os.path.exists(dotenv):
                    shutil.copyfile(src, dotenv)
                    done.append(f"copied {example} to .env")
                else:
                    values = _parse_env_file(dotenv) or values
                exported = [k for k in values if k not in self.env]
                for k in exported:
                    self.env[k] = values[k]
                    self.overrides[k] = values[k]
                if exported:
                    done.append("exported " + ", ".join(exported))
                if done:
                    return " and ".join(done)
        return None

    def _move_mkdir(self, command: str, output: str) -> str | None:
        made = []
        for pattern in NOFILE_RES:
            for cand in pattern.findall(output):
                full = self._inside(cand)
                if not full or os.path.exists(full):
                    continue
                parent = os.path.dirname(full)
                if parent and not os.path.exists(parent) and self._inside(parent):
                    os.makedirs(parent, exist_ok=True)
                    made.append(os.path.relpath(parent, self.project))
        return ("mkdir -p " + " ".join(dict.fromkeys(made))) if made else None

    # -- verification ------------------------------------------------------------------------------
    def decode_step(self, phase: str, artifact: str) -> tuple[bool, str, str]:
        """Decode one named output file; returns (ok, exact command, what it returned)."""
        argv = [sys.executable, os.path.join(HERE, "decode.py"), artifact]
        command = " ".join(shlex.quote(a) for a in argv)
        saved = self.cwd
        self.cwd = self.project  # artifact paths are relative to the project root
        try:
            failed = self.run_block(phase, [command], recoverable=False)
        finally:
            self.cwd = saved
        return failed is None, command, self.steps[-1].last_output


def _desktop_words(gui: GuiRun) -> str:
    window = f"window {gui.window!r}" if gui.window else "a window"
    return (
        f"its main process started on display {gui.display} and stayed up for {gui.seconds:g} s with "
        f"{window} shown, then the harness stopped it; nothing was clicked"
    )


def _offset_of(run: ScriptRun, index: int) -> int:
    for i, offset, _ in run.started:
        if i == index:
            return offset
    return 0


def _one_line(command: str) -> str:
    one = " ".join(command.split())
    return one if len(one) <= 80 else one[:77] + "..."


def _parse_env_file(path: str) -> dict[str, str]:
    values: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("export "):
                    line = line[7:].strip()
                key, sep, value = line.partition("=")
                key = key.strip()
                if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                    value = value.strip()
                    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                        value = value[1:-1]
                    values[key] = value
    except OSError:
        pass
    return values


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------------
# The session
# ---------------------------------------------------------------------------------------------------


def _failure(step: Step, timeout: float) -> str:
    if step.timed_out:
        return f"was killed after {timeout:g} s without finishing"
    tail = f' (last output: "{step.last_output}")' if step.last_output else ""
    return f"exited with code {step.exit_code}{tail}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _read_readme(path: str) -> str:
    with open(path, "rb") as f:
        data = f.read(MAX_README_BYTES)
    return data.decode("utf-8", "replace")


def session(project: str, out: str, recovery: bool, timeout: float, rec: Recorder) -> dict:
    runner = Runner(project, out, recovery, timeout, rec)
    rec.note(
        f"{HARNESS_NAME} {HARNESS_VERSION}: recovery {'on' if recovery else 'off'}, "
        f"command timeout {timeout:g} s, project {project}"
    )
    report = {
        "install_ok": False,
        "ran_ok": False,
        "errors_encountered": 0,
        "errors_fixed": 0,
        "test_depth": "tier3_none",
        "verified_how": "not verified",
        "final_state": "",
    }
    details: dict = {"harness": {"name": HARNESS_NAME, "version": HARNESS_VERSION}, "recovery": recovery}
    readme = find_readme(project)
    if readme is None:
        rec.note("no README found")
        report["final_state"] = "No README was found in the project, so nothing was installed or run."
        shutil.rmtree(runner.state_dir, ignore_errors=True)
        return _finish(report, details, runner)
    plan = parse_readme(_read_readme(readme), os.path.basename(readme), Checkout.from_dir(project))
    details["readme"] = os.path.basename(readme)
    details["plan"] = asdict(plan)
    blocks = {phase: _count(len(plan.phase_blocks(phase)), "block") for phase in ("install", "run")}
    rec.note(
        f"{os.path.basename(readme)} ({plan.format}): "
        f"{_count(len(plan.install), 'install command')} in {blocks['install']}"
        + (f" (route: {plan.install_route})" if plan.install_route else "")
        + f", {_count(len(plan.run), 'run command')} in {blocks['run']}, "
        f"{_count(len(plan.verify), 'verify command')} naming {_count(len(plan.verify_artifacts), 'file')}, "
        f"{_count(len(plan.mock), 'mock command')} naming {_count(len(plan.mock_artifacts), 'file')}"
    )
    for note in plan.notes:
        rec.log_line(f"README: {note}")

    def recovery_clause() -> str:
        if not runner.errors_encountered:
            return ""
        moves = "; ".join(runner.moves_applied)
        return (
            f" ({_count(runner.errors_encountered, 'error')} encountered, {runner.errors_fixed} fixed"
            + (f" by: {moves}" if moves and runner.errors_fixed else "")
            + ")"
        )

    def run_phase(phase: str) -> Step | None:
        for block in plan.phase_blocks(phase):
            failed = runner.run_block(phase, block.commands, block=block.line)
            if failed:
                return failed
        return None

    try:
        # Install: claimed only when install commands ran and succeeded (or, below, when nothing
        # needed installing and a run proved the project usable).
        failed = run_phase("install")
        if failed:
            report["final_state"] = (
                f"The install command `{_one_line(failed.command)}` {_failure(failed, timeout)}, "
                "so nothing was run" + recovery_clause() + "."
            )
            return _finish(report, details, runner)
        installed = f"Installed with {_count(len(plan.install), 'command')}" if plan.install else ""

        # Run.
        if not plan.run:
            rec.note("the README names no run or test command that can run here")
            if plan.install:
                report["install_ok"] = True
                report["final_state"] = (
                    f"{installed}; the README names no run or test command that can run here, "
                    "so nothing was run" + recovery_clause() + "."
                )
            else:
                report["final_state"] = (
                    "The README names no install, run or test command that can run here, "
                    "so nothing was installed or run."
                )
            return _finish(report, details, runner)
        failed = run_phase("run")
        if failed:
            report["install_ok"] = bool(plan.install)
            report["final_state"] = (
                (
                    f"{installed}, but the run command "
                    if plan.install
                    else "The README names no install command and its run command "
                )  # fmt: skip
                + f"`{_one_line(failed.command)}` {_failure(failed, timeout)}"
                + recovery_clause()
                + "."
            )
            return _finish(report, details, runner)
        report["install_ok"] = True  # installed, or nothing needed installing: the run just proved it
        report["ran_ok"] = True
        ran = (
            f"{installed} and ran {_count(len(plan.run), 'command')} successfully"
            if plan.install
            else f"Nothing needed installing: the README names no install command and its "
            f"{_count(len(plan.run), 'run command')} succeeded"
        )
        desktop = [s for s in runner.steps if s.phase == "run" and s.desktop]
        if desktop:  # what "ran" means for a desktop application (methodology section 7, item 6)
            for d in desktop:
                ran += f" (`{_one_line(d.command)}` is a desktop application: {d.desktop})"

        # Verify for real, then with the mock the README offers.
        why_not = "the README names no output file to decode"
        if plan.verify or plan.verify_artifacts:
            ok, returned, why_not = _verify(runner, "verify", plan.verify, plan.verify_artifacts, [])
            if ok:
                report["test_depth"] = "tier1_real"
                report["verified_how"] = returned
                report["final_state"] = f"{ran}; {returned}" + recovery_clause() + "."
                return _finish(report, details, runner)
        if plan.mock or plan.mock_artifacts:
            ok, returned, why_mock = _verify(runner, "mock", plan.mock, plan.mock_artifacts, plan.mock_ports)
            runner.stop_background()
            if ok:
                mocks = [c for c in plan.mock if BACKGROUND_RE.search(c)]
                with_mock = (
                    f"with the local mock started by `{mocks[0]}`, " if mocks else "in the mock setup, "
                )
                report["test_depth"] = "tier2_mock"
                report["verified_how"] = with_mock + returned
                report["final_state"] = f"{ran}; {with_mock}{returned}" + recovery_clause() + "."
                return _finish(report, details, runner)
            why_not = why_mock if why_not.startswith("the README names no") else f"{why_not}; {why_mock}"
        report["verified_how"] = f"not verified: {why_not}"
        if desktop:  # seen running is not verified: only a decoding is (section 16)
            report["verified_how"] += (
                f"; the desktop application `{_one_line(desktop[0].command)}` was only seen running "
                f"(its main process up on {runner.display} for {GUI_UP_SECONDS:g} s), nothing was decoded"
            )
        report["final_state"] = f"{ran}, but nothing was decoded: {why_not}" + recovery_clause() + "."
        return _finish(report, details, runner)
    finally:
        runner.stop_background()
        shutil.rmtree(runner.state_dir, ignore_errors=True)


def _verify(
    runner: Runner, phase: str, commands: list[str], artifacts: list[str], ports: list[int]
) -> tuple[bool, str, str]:
    """Run a verification section and decode its files: (ok, proof, why not)."""
    if commands:
        failed = runner.run_block(phase, commands, ports)
        if failed:
            return (
                False,
                "",
                f"the {phase} command `{_one_line(failed.command)}` {_failure(failed, runner.timeout)}",
            )
    if not artifacts:
        return False, "", f"the README's {phase} section names no output file to decode"
    proofs = []
    for artifact in artifacts:
        ok, command, returned = runner.decode_step(phase, artifact)
        if not ok:
            return False, "", f"`{command}` returned: {returned or 'nothing'}"
        proofs.append(f"`{command}` returned: {returned}")
    return True, "; ".join(proofs), ""


def _finish(report: dict, details: dict, runner: Runner) -> dict:
    report["errors_encountered"] = runner.errors_encountered
    report["errors_fixed"] = runner.errors_fixed
    details["steps"] = [asdict(s) for s in runner.steps]
    details["report"] = report
    report["_details"] = details
    return report


def _write_json(path: str, value: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="readme_runner.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", required=True, help="the project checkout (writable)")
    parser.add_argument("--out", required=True, help="where recording.cast, log.txt and report.json go")
    parser.add_argument(
        "--no-recovery", action="store_true", help="apply no recovery move (readme-runner-norecover)"
    )
    parser.add_argument(
        "--command-timeout",
        type=float,
        default=DEFAULT_COMMAND_TIMEOUT,
        help="seconds before one command is killed and counted as an error "
        f"(default {DEFAULT_COMMAND_TIMEOUT:g})",
    )
    parser.add_argument(
        "--title",
        default=None,
        help="the recording's title; the orchestrator passes '<agent> / <project> / attempt N' "
        "(default: readme-runner / <project folder>)",
    )
    args = parser.parse_args(argv)
    if args.command_timeout <= 0:
        parser.error("--command-timeout must be positive")
    project = os.path.abspath(args.project)
    out = os.path.abspath(args.out)
    if not os.path.isdir(project):
        parser.error(f"--project {project} is not a directory")
    os.makedirs(out, exist_ok=True)
    rec = Recorder(
        os.path.join(out, "recording.cast"),
        os.path.join(out, "log.txt"),
        title=args.title or f"{HARNESS_NAME} / {os.path.basename(project)}",
    )
    try:
        report = session(project, out, not args.no_recovery, args.command_timeout, rec)
        details = report.pop("_details")
        _write_json(os.path.join(out, "harness.json"), details)
        _write_json(os.path.join(out, "report.json"), report)
        rec.note(f"report written: {json.dumps(report, ensure_ascii=False)}")
        return 0
    except Exception:  # the harness itself broke: say so, write no report
        text = traceback.format_exc()
        with contextlib.suppress(Exception):
            rec.note("HARNESS ERROR, no report written")
            rec.output(text.replace("\n", "\r\n"))
        sys.stderr.write(text)
        return 3
    finally:
        rec.close()


if __name__ == "__main__":
    sys.exit(main())
