"""Recovery moves: what the harness may change after a failed command before it runs it again. Stdlib only.

README.md next to this file, "Errors and recovery moves": the first move that fits the failed
command's output, each at most once per step: chmod +x a project file, a `python` -> python3 link,
a `sudo` that runs its command (already root), a virtual environment first on PATH when Python is
externally managed (PEP 668), the variables of an env example file, mkdir -p a missing folder
inside the project. `RecoveryMoves` is a part of the block runner (block_runner.py):
the moves change its environment (`env`, `overrides`) and look at its folders.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess

if __package__:
    from .recorder import ANSI_RE
else:  # run as a script from the harness directory
    from recorder import ANSI_RE  # type: ignore[no-redef]

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
# Python's system site is not ours to install into: PEP 668's refusal, or setuptools (`setup.py
# install`) or pip finding it read-only or not writable (the agent is not root, the root read-only)
EXTERNALLY_MANAGED_RE = re.compile(
    r"externally-managed-environment"
    r"|can't create or remove files in install directory"
    r"|\[Errno (?:13|30)\] [^\n]*: '/usr/(?:local/)?lib/python3"
)
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


class RecoveryMoves:
    """The moves, applied to the block runner's state (block_runner.Runner)."""

    project: str
    cwd: str
    env: dict[str, str]
    overrides: dict[str, str]  # set by recovery moves; win over the saved shell state
    state_dir: str

    def pick_move(self, command: str, output: str, tried: set[str]) -> tuple[str, str] | None:
        """Apply the first recovery move that fits; return (name, what was done) or None."""
        text = ANSI_RE.sub("", output)
        for name, move in (
            ("chmod", self._move_chmod),
            ("python3", self._move_python),
            ("sudo", self._move_sudo),
            ("venv", self._move_venv),
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

    def _move_venv(self, command: str, output: str) -> str | None:
        if not EXTERNALLY_MANAGED_RE.search(output):
            return None
        python3 = shutil.which("python3", path=self.env.get("PATH"))
        if not python3:
            return None
        venv = os.path.join(self.state_dir, "venv")
        bin_dir = os.path.join(venv, "bin")
        if not os.path.exists(os.path.join(bin_dir, "python")):
            made = subprocess.run(
                [python3, "-m", "venv", venv], capture_output=True, timeout=300, env=self.env, check=False
            )
            if made.returncode != 0:
                return None
        if not self.env.get("PATH", "").startswith(bin_dir):
            self.env["PATH"] = bin_dir + os.pathsep + self.env.get("PATH", "")
        self.env["VIRTUAL_ENV"] = venv
        self.overrides["PATH"] = self.env["PATH"]
        self.overrides["VIRTUAL_ENV"] = venv
        return (
            f"Python's system site is not writable (PEP 668): made a virtual environment ({venv}), "
            "first on PATH"
        )

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
