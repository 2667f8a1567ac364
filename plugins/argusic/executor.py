"""Run one attempt's agent harness: in a Docker container (default) or a local temporary folder.

Both executors do the same steps: fetch only the pinned commit (no history), run the harness with the
attempt's output folder, and kill everything at the time budget. The Docker executor adds isolation:
networking off, CPU / memory / pids limits, the container removed afterwards. The local executor is
for development where no engine can be had; the run record says which one ran.
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
from dataclasses import dataclass
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
    ) -> ExecutionResult: ...


def _bootstrap_script(source: str, project: str, commit: str, harness_cmd: list[str]) -> str:
    """Fetch exactly one commit, depth 1, then hand over to the agent harness."""
    q = shlex.quote
    return "\n".join(
        [
            "set -u",
            "git config --global --add safe.directory '*'",
            f"mkdir -p {q(project)} && cd {q(project)} && git init -q . "
            f"&& git fetch -q --depth 1 {q('file://' + source)} {q(commit)} "
            f"&& git -c advice.detachedHead=false checkout -q FETCH_HEAD || exit {FETCH_FAILED}",
            "exec " + " ".join(q(part) for part in harness_cmd),
        ]
    )


def _harness_command(harness_dir: str, project: str, out: str, harness_args: list[str]) -> list[str]:
    return ["python3", f"{harness_dir}/readme_runner.py", "--project", project, "--out", out, *harness_args]


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
    ) -> ExecutionResult:
        config = orchestrator_config()
        out_dir.mkdir(parents=True, exist_ok=True)
        harness_cmd = _harness_command(CONTAINER_HARNESS, CONTAINER_PROJECT, CONTAINER_OUT, harness_args)
        script = _bootstrap_script(CONTAINER_SOURCE, CONTAINER_PROJECT, commit, harness_cmd)
        name = container_name(attempt_id)
        self._remove_leftover(name)
        started = _now()
        container = None
        try:
            container = self.client.containers.run(
                self.image,
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
                },
                # The only way a model key reaches the agent: an environment variable.
                environment={"ARGUSIC_ATTEMPT_ID": attempt_id, **(env or {})},
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
            error = None
            if code == FETCH_FAILED:
                error = f"could not fetch pinned commit {commit} from {repo_path}"
            return ExecutionResult(self.name, started, ended, code, timed_out, error, self.image)
        except self._docker.errors.DockerException as err:
            return ExecutionResult(self.name, started, _now(), None, False, f"docker: {err}", self.image)
        finally:
            if container is not None:
                with contextlib.suppress(self._docker.errors.DockerException):
                    container.remove(force=True)

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
    ) -> ExecutionResult:
        out_dir.mkdir(parents=True, exist_ok=True)
        extra_env = env or {}
        with tempfile.TemporaryDirectory(prefix="argusic-local-") as tmp:
            project = Path(tmp) / "project"
            harness_cmd = _harness_command(
                str(HARNESS_DIR), str(project), str(out_dir.resolve()), harness_args
            )
            script = _bootstrap_script(str(Path(repo_path).resolve()), str(project), commit, harness_cmd)
            child_env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ARGUSIC_"))}
            child_env |= {"HOME": tmp, "ARGUSIC_ATTEMPT_ID": attempt_id, **extra_env}
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
        error = f"could not fetch pinned commit {commit} from {repo_path}" if code == FETCH_FAILED else None
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
