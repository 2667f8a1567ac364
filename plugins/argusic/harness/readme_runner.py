#!/usr/bin/env python3
"""readme-runner: the deterministic reference agent. No model calls; standard library only.

    python3 readme_runner.py --project DIR --out DIR [--no-recovery] [--command-timeout SECONDS]

It reads the project's README, runs its install commands, then its run/test commands, then verifies
by decoding the output files the README's verification section names (or, failing that, the ones a
"verify with a mock" section names, against the mock it starts). Everything runs under the terminal
recorder: DIR/recording.cast (asciicast v2) and DIR/log.txt. The report goes to DIR/report.json and a
step-by-step account to DIR/harness.json. The parsing rules and recovery moves are documented in
README.md next to this file.

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
    from . import decode as _decode
    from .recorder import Recorder, RunResult
else:  # run as a script from the (read-only) harness directory
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import decode as _decode  # type: ignore[no-redef]
    from recorder import Recorder, RunResult  # type: ignore[no-redef]

HARNESS_NAME = "readme-runner"
HARNESS_VERSION = "1.0.0"
HERE = os.path.dirname(os.path.abspath(__file__))

DEFAULT_COMMAND_TIMEOUT = 1800.0
PORT_WAIT_SECONDS = 20.0
MAX_MOVES_PER_STEP = 3
README_NAMES = ("README.md", "README.markdown", "readme.md", "Readme.md", "README")

# ---------------------------------------------------------------------------------------------------
# README parsing
# ---------------------------------------------------------------------------------------------------

SHELL_LANGS = {"sh", "bash", "shell", "console", "shell-session", "shellsession", "zsh", "terminal"}
PROMPT_LANGS = {"console", "shell-session", "shellsession", "terminal"}

# Checked in this order; the first that matches a heading gives its category.
CATEGORY_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("mock", re.compile(r"\bmock")),
    ("verify", re.compile(r"\bverif|\bvalidat|\bcheck(ing)? the (output|result)")),
    (
        "install",
        re.compile(
            r"\binstall|\bset ?-?up\b|\bbuild|\bcompil|\brequirements\b|\bprerequisites\b"
            r"|\bdependencies\b|\bconfigur"
        ),
    ),
    (
        "run",
        re.compile(
            r"\busage\b|\brun|\btest|\bquick ?-?start|\bgetting started\b"
            r"|\bexamples?\b|\bdemo\b|\bhow to use\b"
        ),
    ),
]

ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$")
SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)\s*$")
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)")
CODE_SPAN_RE = re.compile(r"`([^`\s]+)`")
PORT_RES = [re.compile(r"(?:127\.0\.0\.1|localhost):(\d{2,5})\b"), re.compile(r"--port[= ](\d{2,5})\b")]
BACKGROUND_RE = re.compile(r"(?<![&|])&\s*$")


def classify_heading(title: str) -> str | None:
    t = title.lower()
    for category, pattern in CATEGORY_RULES:
        if pattern.search(t):
            return category
    return None


@dataclass
class Plan:
    install: list[str] = field(default_factory=list)
    run: list[str] = field(default_factory=list)
    verify: list[str] = field(default_factory=list)
    verify_artifacts: list[str] = field(default_factory=list)
    mock: list[str] = field(default_factory=list)
    mock_artifacts: list[str] = field(default_factory=list)
    mock_ports: list[int] = field(default_factory=list)


def block_commands(lang: str, lines: list[str]) -> list[str]:
    """Commands of one fenced block, in order (see README.md, "Commands")."""
    prompt_only = lang in PROMPT_LANGS
    commands: list[str] = []
    current: list[str] | None = None
    for raw in lines:
        line = raw.rstrip()
        if current is not None:  # continuation of a line that ended with a backslash
            current.append(line)
            if not line.endswith("\\"):
                commands.append("\n".join(current))
                current = None
            continue
        stripped = line.strip()
        if stripped.startswith("$ ") or stripped == "$":
            stripped = stripped[1:].strip()
        elif prompt_only:
            continue  # console blocks: lines without a prompt are output
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current = [stripped]
        else:
            commands.append(stripped)
    if current:
        commands.append("\n".join(current).rstrip("\\").rstrip())
    return commands


def _artifacts(text: str) -> list[str]:
    found = []
    for span in CODE_SPAN_RE.findall(text):
        if span.startswith("-") or "://" in span or "$" in span:
            continue
        if _decode.decoder_for(span) is None:
            continue
        if span not in found:
            found.append(span)
    return found


def parse_readme(text: str) -> Plan:
    """Split a README into install, run, verify and mock steps (rules in README.md)."""
    plan = Plan()
    lines = text.splitlines()
    stack: list[tuple[int, str | None]] = []  # (level, own category) of the open headings
    fence: tuple[str, str, list[str]] | None = None  # (marker, lang, lines)
    prose: dict[str, list[str]] = {"verify": [], "mock": []}

    def category() -> str | None:
        for _level, cat in reversed(stack):
            if cat:
                return cat
        return None

    def open_heading(level: int, title: str) -> None:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, classify_heading(title)))

    i = 0
    while i < len(lines):
        line = lines[i]
        if fence is not None:
            marker, lang, body = fence
            if line.strip().startswith(marker[0] * len(marker)) and not line.strip().strip(marker[0]):
                cat = category()
                if lang in SHELL_LANGS and cat:
                    cmds = block_commands(lang, body)
                    getattr(plan, cat).extend(cmds)
                    if cat == "mock":
                        prose["mock"].append("\n".join(cmds))
                fence = None
            else:
                body.append(line)
            i += 1
            continue
        m = FENCE_RE.match(line)
        if m:
            fence = (m.group(1), m.group(2).lower().lstrip("{.").rstrip("}"), [])
            i += 1
            continue
        m = ATX_RE.match(line)
        if m and (m.group(2) is not None or line.strip().strip("#") == ""):
            open_heading(len(m.group(1)), m.group(2) or "")
            i += 1
            continue
        if (
            line.strip()
            and i + 1 < len(lines)
            and SETEXT_RE.match(lines[i + 1])
            and not line.startswith("    ")
        ):
            level = 1 if lines[i + 1].strip().startswith("=") else 2
            open_heading(level, line.strip())
            i += 2
            continue
        cat = category()
        if cat in prose:
            prose[cat].append(line)
        i += 1

    plan.verify_artifacts = _artifacts("\n".join(prose["verify"]))
    plan.mock_artifacts = _artifacts("\n".join(prose["mock"]))
    ports: list[int] = []
    for pattern in PORT_RES:
        for p in pattern.findall("\n".join(prose["mock"] + plan.mock)):
            if int(p) not in ports and 0 < int(p) < 65536:
                ports.append(int(p))
    plan.mock_ports = ports
    return plan


def find_readme(project: str) -> str | None:
    for name in README_NAMES:
        path = os.path.join(project, name)
        if os.path.isfile(path):
            return path
    return None


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
STATE_SKIP = {"PWD", "OLDPWD", "SHLVL", "_"}


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
        self.errors_encountered = 0
        self.errors_fixed = 0
        self.steps: list[Step] = []
        self.moves_applied: list[str] = []
        self.background: list[tuple[subprocess.Popen, str, str]] = []
        self.state_dir = tempfile.mkdtemp(prefix="argusic-harness-")

    # -- low level ---------------------------------------------------------------------------------
    def _label(self) -> str:
        rel = os.path.relpath(self.cwd, self.project)
        return "" if rel == "." else rel + " "

    def _exec_foreground(self, command: str, show: str | None = None) -> RunResult:
        env_out = os.path.join(self.state_dir, "env")
        cwd_out = os.path.join(self.state_dir, "cwd")
        for path in (env_out, cwd_out):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        wrapper = (
            'trap \'__argusic_rc=$?; env -0 > "$ARGUSIC_ENV_OUT" 2>/dev/null; '
            'pwd > "$ARGUSIC_CWD_OUT" 2>/dev/null; exit $__argusic_rc\' EXIT; ' + command
        )
        env = dict(self.env, ARGUSIC_ENV_OUT=env_out, ARGUSIC_CWD_OUT=cwd_out)
        self.rec.prompt(show or command, self._label())
        if not os.path.isdir(self.cwd):
            self.cwd = self.project
        code, timed_out, output, seconds = self.rec.run(["bash", "-c", wrapper], self.cwd, env, self.timeout)
        self._load_state(env_out, cwd_out)
        return RunResult(command, code, timed_out, output, seconds)

    def _load_state(self, env_out: str, cwd_out: str) -> None:
        """Carry `cd`, `export` and `source` over to the next command, like one shell session."""
        try:
            with open(env_out, "rb") as f:
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
            with open(cwd_out, encoding="utf-8") as f:
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

    def execute(self, command: str, ports: list[int] | None = None) -> RunResult:
        if BACKGROUND_RE.search(command):
            return self._exec_background(command, ports or [])
        return self._exec_foreground(command)

    # -- steps and recovery ------------------------------------------------------------------------
    def step(
        self, phase: str, command: str, ports: list[int] | None = None, recoverable: bool = True
    ) -> Step:
        self.rec.log_line(f"STEP {phase}: {command}")
        res = self.execute(command, ports)
        step = Step(
            phase,
            command,
            res.exit_code,
            res.timed_out,
            round(res.duration, 3),
            last_line(res.output),
            res.ok,
        )
        self.steps.append(step)
        if res.ok:
            self.rec.log_line(f"STEP {phase} ok ({res.duration:.1f} s)")
            return step
        self.errors_encountered += 1
        if res.timed_out:
            self.rec.note(f"killed after {self.timeout:g} s (--command-timeout); counted as an error")
        else:
            self.rec.note(f"step failed with exit code {res.exit_code}; counted as an error")
        if res.timed_out or not self.recovery or not recoverable:
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
            res = self.execute(command, ports)
            step.exit_code, step.timed_out = res.exit_code, res.timed_out
            step.seconds = round(step.seconds + res.duration, 3)
            step.last_output = last_line(res.output)
            if res.ok:
                step.ok = step.recovered = True
                self.errors_fixed += 1
                self.rec.note("the step succeeded after the recovery move; error fixed")
                return step
            if res.timed_out:
                self.rec.note(f"killed after {self.timeout:g} s (--command-timeout)")
                break
            self.rec.note(f"still failing with exit code {res.exit_code}")
        if not tried:
            self.rec.note("no recovery move applies")
        return step

    def pick_move(self, command: str, output: str, tried: set[str]) -> tuple[str, str] | None:
        """Apply the first recovery move that fits; return (name, what was done) or None."""
        text = ANSI_RE.sub("", output)
        for name, move in (
            ("chmod", self._move_chmod),
            ("python3", self._move_python),
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
        self.env["PATH"] = shims + os.pathsep + self.env.get("PATH", "")
        return f"`python` not found: put a `python` -> {python3} link first on PATH"

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
            step = self.step(phase, command, recoverable=False)
        finally:
            self.cwd = saved
        return step.ok, command, step.last_output


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
    with open(readme, encoding="utf-8", errors="replace") as f:
        plan = parse_readme(f.read())
    details["plan"] = asdict(plan)
    rec.note(
        f"{os.path.basename(readme)}: {_count(len(plan.install), 'install command')}, "
        f"{_count(len(plan.run), 'run command')}, {_count(len(plan.verify), 'verify command')} "
        f"naming {_count(len(plan.verify_artifacts), 'output file')}, "
        f"{_count(len(plan.mock), 'mock command')} naming {_count(len(plan.mock_artifacts), 'output file')}"
    )

    def recovery_clause() -> str:
        if not runner.errors_encountered:
            return ""
        moves = "; ".join(runner.moves_applied)
        return (
            f" ({_count(runner.errors_encountered, 'error')} encountered, {runner.errors_fixed} fixed"
            + (f" by: {moves}" if moves and runner.errors_fixed else "")
            + ")"
        )

    try:
        # Install.
        failed = _first_failure(runner, "install", plan.install)
        if failed:
            report["final_state"] = (
                f"The install command `{failed.command}` {_failure(failed, timeout)}, so nothing was run"
                + recovery_clause()
                + "."
            )
            return _finish(report, details, runner)
        report["install_ok"] = True
        installed = (
            f"Installed with {_count(len(plan.install), 'command')}"
            if plan.install
            else "The README names no install command"
        )

        # Run.
        if not plan.run:
            rec.note("the README names no run or test command")
            report["final_state"] = f"{installed}, and it names no run or test command, so nothing was run."
            return _finish(report, details, runner)
        failed = _first_failure(runner, "run", plan.run)
        if failed:
            report["final_state"] = (
                f"{installed}, but the run command `{failed.command}` {_failure(failed, timeout)}"
                + recovery_clause()
                + "."
            )
            return _finish(report, details, runner)
        report["ran_ok"] = True
        ran = f"{installed} and ran {_count(len(plan.run), 'command')} successfully"

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
        report["final_state"] = f"{ran}, but nothing was decoded: {why_not}" + recovery_clause() + "."
        return _finish(report, details, runner)
    finally:
        runner.stop_background()
        shutil.rmtree(runner.state_dir, ignore_errors=True)


def _verify(
    runner: Runner, phase: str, commands: list[str], artifacts: list[str], ports: list[int]
) -> tuple[bool, str, str]:
    """Run a verification section and decode its files: (ok, proof, why not)."""
    for command in commands:
        step = runner.step(phase, command, ports)
        if not step.ok:
            return False, "", f"the {phase} command `{command}` {_failure(step, runner.timeout)}"
    if not artifacts:
        return False, "", f"the README's {phase} section names no output file to decode"
    proofs = []
    for artifact in artifacts:
        ok, command, returned = runner.decode_step(phase, artifact)
        if not ok:
            return False, "", f"`{command}` returned: {returned or 'nothing'}"
        proofs.append(f"`{command}` returned: {returned}")
    return True, "; ".join(proofs), ""


def _first_failure(runner, phase: str, commands: list[str]):
    """Run a phase's commands in order; the first step that failed (after recovery), or None."""
    for command in commands:
        step = runner.step(phase, command)
        if not step.ok:
            return step
    return None


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
        title=f"{HARNESS_NAME} {HARNESS_VERSION} on {os.path.basename(project)}",
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
