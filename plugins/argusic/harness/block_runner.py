"""Running README blocks: each block one bash script in one shell session, step by step. Stdlib only.

README.md next to this file, "Running": a block runs as one script on the recorder's terminal,
each command announced at its prompt, stopping at its first failing command (`set -e` at the top
level); the environment, folder, variables and functions carry over to the next script; a command
ending with `&` starts in the background and its ports are waited for. A failed command is an error;
a recovery move (recovery_moves.py) may fix it, and the script runs again from that command. Every
command is a `Step`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

if __package__:
    from .desktop_watch import GuiRun, GuiWatch, desktop_words, display_available
    from .recorder import ANSI_RE, Control, Recorder, RunResult
    from .recovery_moves import RecoveryMoves
else:  # run as a script from the harness directory
    from desktop_watch import GuiRun, GuiWatch, desktop_words, display_available  # type: ignore[no-redef]
    from recorder import ANSI_RE, Control, Recorder, RunResult  # type: ignore[no-redef]
    from recovery_moves import RecoveryMoves  # type: ignore[no-redef]

HERE = os.path.dirname(os.path.abspath(__file__))

PORT_WAIT_SECONDS = 20.0
MAX_MOVES_PER_STEP = 3
SCRIPT_ARG_LIMIT = 100_000  # Linux caps one argument at 128 KiB
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
class ScriptRun:
    """One block script: which commands started (index, output offset, time) and how it ended."""

    started: list[tuple[int, int, float]]
    exit_code: int
    timed_out: bool
    output: str
    ended_at: float
    ended_by: int | None  # the command that ended the script (from the EXIT trap), if known
    desktop: dict[int, GuiRun] = field(default_factory=dict)  # commands that ran as desktop apps


class Runner(RecoveryMoves):
    """Runs a README's blocks in one shell session and counts the errors encountered and fixed."""

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
            self.rec.note(f"recovery move {name}: {description}; retrying from `{one_line(command)}`")
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
                    desktop=desktop_words(run.desktop[index]) if index in run.desktop else "",
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


def _offset_of(run: ScriptRun, index: int) -> int:
    for i, offset, _ in run.started:
        if i == index:
            return offset
    return 0


def one_line(command: str) -> str:
    one = " ".join(command.split())
    return one if len(one) <= 80 else one[:77] + "..."


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
