"""Run one attempt's agent harness: in a Docker container (default) or a local temporary folder.

Both executors do the same steps: fetch only the pinned commit (no history), run the harness with the
attempt's output folder, and kill everything at the time budget. The Docker executor adds isolation:
networking off, CPU / memory / pids limits, the container removed afterwards. The local executor is
for development where no engine can be had; the run record says which one ran.

What runs after the fetch is a ``Launch`` made from the paths the harness sees (``HarnessPaths``):
by default the reference harness (``readme_runner.py`` with the driver's arguments); an external
agent's driver gives its own command (the agent CLI under the recorder), environment, read-only task
files (the rendered instructions) and image.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from argusic.settings import PACKAGE_DIR, orchestrator_config, runner_image

HARNESS_DIR = PACKAGE_DIR / "harness"
FETCH_FAILED = 97  # exit code of the bootstrap when the pinned commit cannot be fetched
CONTAINER_HARNESS = "/opt/argusic/harness"
CONTAINER_SOURCE = "/forge/source"
CONTAINER_OUT = "/out"
CONTAINER_PROJECT = "/workspace/project"
CONTAINER_TASK = "/opt/argusic/task"  # read-only task files (the rendered instructions)
# Agent config folders: fresh, outside /out, not under /tmp (Codex refuses helper binaries there).
CONTAINER_SCRATCH = "/var/lib/argusic-agent"
LABEL = "argusic.attempt_id"
DEADLINE_LABEL = "argusic.deadline"  # epoch seconds after which the container has no business running
ORPHAN_GRACE_SECONDS = 300


@dataclass(frozen=True)
class ExecutionResult:
    executor: str
    started_at: datetime
    ended_at: datetime
    exit_code: int | None
    timed_out: bool
    error: str | None  # our tooling failed (daemon lost, fetch failed, …): the attempt is invalid
    image: str | None = None


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


def readme_runner_launch(harness_args: list[str]) -> LaunchBuilder:
    """The default: the reference harness with the driver's arguments."""

    def build(paths: HarnessPaths) -> Launch:
        return Launch(_harness_command(paths.harness, paths.project, paths.out, harness_args))

    return build


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
    ) -> ExecutionResult: ...


def _bootstrap_script(source: str, project: str, commit: str, harness_cmd: list[str]) -> str:
    """Fetch exactly one commit, depth 1, then hand over to the agent harness."""
    q = shlex.quote
    return "\n".join(
        [
            "set -u",
            'mkdir -p -- "${HOME:-/root}" 2>/dev/null',  # an agent's HOME may not exist yet
            "git config --global --add safe.directory '*'",
            f"mkdir -p {q(project)} && cd {q(project)} && git init -q . "
            f"&& git fetch -q --depth 1 {q('file://' + source)} {q(commit)} "
            f"&& git -c advice.detachedHead=false checkout -q FETCH_HEAD || exit {FETCH_FAILED}",
            "exec " + " ".join(q(part) for part in harness_cmd),
        ]
    )


def _harness_command(harness_dir: str, project: str, out: str, harness_args: list[str]) -> list[str]:
    return ["python3", f"{harness_dir}/readme_runner.py", "--project", project, "--out", out, *harness_args]


def _fetch_error(code: int | None, commit: str, repo_path: Path) -> str | None:
    """The bootstrap's own exit code for a pinned commit it could not fetch: our tooling's failure."""
    return f"could not fetch pinned commit {commit} from {repo_path}" if code == FETCH_FAILED else None


def _write_task_files(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"task file name must be a plain name: {name!r}")
        (folder / name).write_text(text, encoding="utf-8")


def _now() -> datetime:
    return datetime.now(UTC)


def container_name(attempt_id: str) -> str:
    return "argusic-" + re.sub(r"[^A-Za-z0-9_.-]", "-", attempt_id)[:200]


class DockerExecutor:
    name = "docker"

    def __init__(self, image: str | None = None, network: bool = False) -> None:
        import docker  # imported here: no daemon connection at module import

        self.client = docker.from_env()
        self.image = image or runner_image()
        self.network = network
        self._docker = docker

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
    ) -> ExecutionResult:
        config = orchestrator_config()
        image = image or self.image
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = HarnessPaths(
            CONTAINER_HARNESS, CONTAINER_PROJECT, CONTAINER_OUT, CONTAINER_TASK, CONTAINER_SCRATCH
        )
        how = (launch or readme_runner_launch(harness_args))(paths)
        script = _bootstrap_script(CONTAINER_SOURCE, CONTAINER_PROJECT, commit, how.argv)
        name = container_name(attempt_id)
        self._remove_leftover(name)
        task_dir = Path(tempfile.mkdtemp(prefix="argusic-task-"))
        started = _now()
        container = None
        try:
            _write_task_files(task_dir, how.files)
            task_dir.chmod(0o755)
            container = self.client.containers.run(
                image,
                ["bash", "-c", script],
                name=name,
                detach=True,
                network_disabled=not self.network,
                network_mode=None if self.network else "none",
                nano_cpus=int(config.container_cpus * 1e9),
                mem_limit=config.container_memory,
                memswap_limit=config.container_memory,
                pids_limit=config.container_pids_limit,
                labels={LABEL: attempt_id, DEADLINE_LABEL: str(int(started.timestamp() + budget_seconds))},
                volumes={
                    str(HARNESS_DIR): {"bind": CONTAINER_HARNESS, "mode": "ro"},
                    str(Path(repo_path).resolve()): {"bind": CONTAINER_SOURCE, "mode": "ro"},
                    str(out_dir.resolve()): {"bind": CONTAINER_OUT, "mode": "rw"},
                    str(task_dir): {"bind": CONTAINER_TASK, "mode": "ro"},
                },
                # The only way a model key reaches the agent: an environment variable.
                environment={"ARGUSIC_ATTEMPT_ID": attempt_id, **(env or {}), **how.env},
            )
            deadline = time.monotonic() + budget_seconds
            timed_out = False
            while True:
                container.reload()
                if container.status in ("exited", "dead"):
                    break
                if time.monotonic() >= deadline:
                    container.kill()
                    timed_out = True
                    break
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
            result = container.wait(timeout=60)
            ended = _now()
            code = None if timed_out else int(result.get("StatusCode", -1))
            error = _fetch_error(code, commit, repo_path)
            return ExecutionResult(self.name, started, ended, code, timed_out, error, image)
        except self._docker.errors.DockerException as err:
            return ExecutionResult(self.name, started, _now(), None, False, f"docker: {err}", image)
        finally:
            if container is not None:
                with contextlib.suppress(self._docker.errors.DockerException):
                    container.remove(force=True)
            shutil.rmtree(task_dir, ignore_errors=True)

    def _remove_leftover(self, name: str) -> None:
        """A container of the same name left by a crashed earlier try of this attempt."""
        with contextlib.suppress(self._docker.errors.NotFound):
            self.client.containers.get(name).remove(force=True)

    def remove_orphans(
        self,
        running_attempt_ids: set[str] | None = None,
        now_epoch: float | None = None,
        attempt_prefix: str = "",
    ) -> list[str]:
        """Remove Argusic containers left by crashed workers: those whose attempt is not among the
        running ones (when that set is known), or that outlived their budget by the grace period.
        Only attempts whose id starts with `attempt_prefix` (e.g. a cycle id) are considered."""
        removed = []
        for container in self.client.containers.list(all=True, filters={"label": LABEL}):
            attempt_id = container.labels.get(LABEL, "")
            if not attempt_id.startswith(attempt_prefix):
                continue
            deadline = float(container.labels.get(DEADLINE_LABEL, "inf"))
            not_running = running_attempt_ids is not None and attempt_id not in running_attempt_ids
            expired = now_epoch is not None and now_epoch > deadline + ORPHAN_GRACE_SECONDS
            if not_running or expired:
                container.remove(force=True)
                removed.append(container.name)
        return removed


class LocalExecutor:
    """No isolation: development only, where no Docker engine can be had."""

    name = "local"

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
        image: str | None = None,  # no images here: the host's tools run (development only)
    ) -> ExecutionResult:
        out_dir.mkdir(parents=True, exist_ok=True)
        extra_env = env or {}
        with tempfile.TemporaryDirectory(prefix="argusic-local-") as tmp:
            project = Path(tmp) / "project"
            paths = HarnessPaths(
                str(HARNESS_DIR), str(project), str(out_dir.resolve()), f"{tmp}/task", f"{tmp}/agent-config"
            )
            how = (launch or readme_runner_launch(harness_args))(paths)
            _write_task_files(Path(paths.task), how.files)
            script = _bootstrap_script(str(Path(repo_path).resolve()), str(project), commit, how.argv)
            child_env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ARGUSIC_"))}
            child_env |= {"HOME": tmp, "ARGUSIC_ATTEMPT_ID": attempt_id, **extra_env, **how.env}
            started = _now()
            proc = subprocess.Popen(
                ["bash", "-c", script],
                cwd=tmp,
                env=child_env,
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            timed_out = False
            try:
                code: int | None = proc.wait(timeout=budget_seconds)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code, timed_out = None, True
            ended = _now()
        error = _fetch_error(code, commit, repo_path)
        return ExecutionResult(self.name, started, ended, code, timed_out, error, None)


def docker_available() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
        return True
    except Exception:
        return False


def get_executor(name: str | None = None) -> Executor:
    """ARGUSIC_EXECUTOR: docker | local; default docker when a daemon answers."""
    choice = name or os.environ.get("ARGUSIC_EXECUTOR") or ("docker" if docker_available() else "local")
    if choice == "docker":
        return DockerExecutor()
    if choice == "local":
        if shutil.which("git") is None:
            raise RuntimeError("the local executor needs git on PATH")
        return LocalExecutor()
    raise ValueError(f"ARGUSIC_EXECUTOR={choice!r}: expected 'docker' or 'local'")
