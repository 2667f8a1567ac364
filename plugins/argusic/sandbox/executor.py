"""Run one attempt's agent harness: in a Docker container (default) or a local temporary folder.

Both executors do the same steps: fetch only the pinned commit (no history), run the harness with an
output folder of its own, kill everything at the time budget, then land what it left (regular files
only, capped, links never followed: ``argusic.sandbox.landing``) into the attempt's ``out`` folder, with the
values to redact replaced on the way, and the project folder's files that match the task's artifact
globs into ``out/artifacts`` (``land_artifacts``). The Docker executor adds containment (README
"Threat model"): an unprivileged user, no capabilities, no-new-privileges, a read-only root
filesystem whose writable places are size-capped areas (``argusic.sandbox.containment``), networking off
unless configured, CPU / memory / pids limits, a watchdog as PID 1 that ends the container at budget
+ grace, a reaper that cleans up if we are killed, and names and labels that carry the installation
id. The local executor (no isolation, no caps) runs only when named, and only for a demo cycle
(``get_executor``); it is never chosen because a daemon does not answer. The record says which ran.

What runs after the fetch is a ``Launch`` made from the paths the harness sees (``HarnessPaths``):
by default the reference harness (``readme_runner.py`` with the driver's arguments); an external
agent's driver gives its own command (the agent CLI under the recorder), environment, read-only task
files (the rendered instructions) and image.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from argusic.core.emergency import StopPoller
from argusic.core.settings import PACKAGE_DIR, installation_id, orchestrator_config, runner_image
from argusic.harness.init import SEAL_PREFIX, drain_seal
from argusic.harness.seal import SEAL_FD, SEAL_MAX_BYTES
from argusic.sandbox.attempt_network import SECTION7, ensure_network
from argusic.sandbox.changes import land_changes
from argusic.sandbox.containment import (
    AGENT_GID,
    AGENT_HOME,
    AGENT_UID,
    AGENT_USER,
    INSTALLATION_LABEL,
    SCRATCH_LABEL,
    AttemptScratch,
    Containment,
    ContainmentError,
    Reaper,
    log_config,
    remove_container,
    sweep_once,
)
from argusic.sandbox.landing import (
    ARTIFACTS_FOLDER,
    LandingLimits,
    LandingReport,
    check_globs,
    land_matching,
    land_outputs,
)
from argusic.sandbox.launch import (
    DISPLAY_FILE,
    VIDEO_FILE,
    VIDEO_FPS,
    VIDEO_MAX_BYTES,
    AttemptCancelled,
    ExecutionResult,
    Executor,
    HarnessPaths,
    Launch,
    LaunchBuilder,
    StopKind,
    Watch,
    cancel_reason,
    cancel_requested,
)

log = logging.getLogger(__name__)

HARNESS_DIR = PACKAGE_DIR / "harness"
INIT_SCRIPT = PACKAGE_DIR / "harness" / "init.py"  # PID 1 of every attempt container (the watchdog)
FETCH_FAILED = 97  # exit code of the bootstrap when the pinned commit cannot be fetched
CONTAINER_HARNESS = "/opt/argusic/harness"
CONTAINER_INIT = "/opt/argusic/init.py"
CONTAINER_SOURCE = "/forge/source"
CONTAINER_OUT = "/out"
CONTAINER_WORKSPACE = "/workspace"
CONTAINER_PROJECT = "/workspace/project"
CONTAINER_TASK = "/opt/argusic/task"  # read-only task files (the rendered instructions)
# Agent config folders: fresh, outside /out, not under /tmp (Codex refuses helper binaries there).
CONTAINER_SCRATCH = "/var/lib/argusic-agent"
# The writable places of the read-only root: folders of the work area (one size cap for all).
WORK_MOUNTS = {
    "workspace": (CONTAINER_WORKSPACE, 0o755),
    "home": (AGENT_HOME, 0o755),
    "tmp": ("/tmp", 0o1777),
    "var-tmp": ("/var/tmp", 0o1777),
    "agent": (CONTAINER_SCRATCH, 0o755),
}
# The virtual display (methodology section 7, item 6): Xvfb on :99 at orchestrator.toml [display]
# size; the harness records what it found in /out/display.json (argusic.sandbox.launch.read_display).
DISPLAY_NUMBER = 99
DISPLAY_WAIT_SECONDS = 15
DISPLAY_SIZE_RE = re.compile(r"([0-9]{1,5})x([0-9]{1,5})x([0-9]{1,2})")
# The raw session video of the display (issue #30): ffmpeg's x11grab (Debian's, in the runner image)
# records :99 from just after Xvfb answers until the container ends, into /out/display.mkv, landed
# with the rest of /out (argusic.sandbox.landing) and checked on arrival (argusic.attempts.video).
# Bounded: VIDEO_FPS frames a second, at most VIDEO_MAX_BYTES (ffmpeg's -fs: it stops and closes the
# file there) and at most the budget in seconds (-t). H.264 in Matroska: a file cut by the container's
# end (SIGKILL) stays readable up to its last cluster, which is closed every VIDEO_CLUSTER_MS.
VIDEO_CLUSTER_MS = 1000
LABEL = "argusic.attempt_id"
DEADLINE_LABEL = "argusic.deadline"  # epoch seconds after which the container has no business running
ORPHAN_GRACE_SECONDS = 300
ORPHAN_GRACE_ENV = "ARGUSIC_ORPHAN_GRACE_SECONDS"


def orphan_grace_seconds() -> int:
    """How long past its deadline a container of ours may outlive its worker before the maintenance
    DAG removes it: ORPHAN_GRACE_SECONDS, or ARGUSIC_ORPHAN_GRACE_SECONDS (a whole number of seconds;
    the cluster test shortens it so as not to sit out five minutes)."""
    text = os.environ.get(ORPHAN_GRACE_ENV, "").strip()
    if not text:
        return ORPHAN_GRACE_SECONDS
    if not text.isdigit() or int(text) > 86_400:
        raise ValueError(f"{ORPHAN_GRACE_ENV}={text!r}: a whole number of seconds from 0 to 86400")
    return int(text)


def readme_runner_launch(harness_args: list[str]) -> LaunchBuilder:
    """The default: the reference harness with the driver's arguments."""

    def build(paths: HarnessPaths) -> Launch:
        return Launch(_harness_command(paths.harness, paths.project, paths.out, harness_args))

    return build


def display_size(size: str) -> str:
    """orchestrator.toml [display] size, checked: WIDTHxHEIGHTxDEPTH (what Xvfb's -screen takes)."""
    match = DISPLAY_SIZE_RE.fullmatch(size)
    limits = (16384, 16384, 32)  # what argusic.core.record.Display accepts
    if not match or not all(0 < int(n) <= top for n, top in zip(match.groups(), limits, strict=True)):
        raise ValueError(f"[display] size {size!r}: expected WIDTHxHEIGHTxDEPTH, e.g. 1280x800x24")
    return size


def _video_command(display: str, size: str, out: str, seconds: int) -> str:
    """ffmpeg recording `display` into out/VIDEO_FILE: VIDEO_FPS, no pointer drawn, at most
    `seconds` and VIDEO_MAX_BYTES, never overwriting a file already there (-n), reading no input."""
    q = shlex.quote
    width, height, _depth = display_size(size).split("x")
    return (
        f"ffmpeg -nostdin -hide_banner -loglevel error -n -f x11grab -draw_mouse 0 "
        f"-framerate {VIDEO_FPS} -video_size {width}x{height} -i {display} -t {int(seconds)} "
        f"-c:v libx264 -preset ultrafast -tune zerolatency -crf 32 -pix_fmt yuv420p -g {VIDEO_FPS * 10} "
        f"-fs {VIDEO_MAX_BYTES} -flush_packets 1 -f matroska -cluster_time_limit {VIDEO_CLUSTER_MS} "
        f"{q(out + '/' + VIDEO_FILE)}"
    )


def _display_lines(size: str, harness_dir: str, out: str, video_seconds: int | None = None) -> list[str]:
    """Start Xvfb on DISPLAY_NUMBER, wait until it answers a real X11 connection, record it in
    out/display.json and export DISPLAY for the agent; without Xvfb, or if it never answers, the
    attempt runs without a display (and no file). Xvfb's socket and lock live in /tmp (writable);
    `-nolisten tcp`: no network listener (the container has no network anyway). With
    `video_seconds`, and ffmpeg in the image, the display is also recorded (_video_command) in the
    background, before the agent starts, with the seal descriptor closed for it."""
    q = shlex.quote
    display = f":{DISPLAY_NUMBER}"
    video = []
    if video_seconds is not None:
        video = [
            '  if [ -n "${DISPLAY:-}" ] && command -v ffmpeg >/dev/null 2>&1; then',
            f"    {_video_command(display, size, out, video_seconds)} </dev/null "
            f">/tmp/.argusic-video.log 2>&1 {SEAL_FD}>&- &",
            "  fi",
        ]
    return [
        "if command -v Xvfb >/dev/null 2>&1; then",
        f"  Xvfb {display} -screen 0 {q(display_size(size))} -nolisten tcp -noreset "
        f"</dev/null >/tmp/.argusic-xvfb.log 2>&1 {SEAL_FD}>&- &",
        f"  python3 -I -S {q(harness_dir + '/xdisplay.py')} wait {display} "
        f"--timeout {DISPLAY_WAIT_SECONDS} --write {q(out + '/' + DISPLAY_FILE)} >/dev/null {SEAL_FD}>&- "
        f"&& export DISPLAY={display}",
        *video,
        "fi",
    ]


def _bootstrap_script(
    source: str,
    project: str,
    commit: str,
    harness_cmd: list[str],
    display: tuple[str, str, str] | None = None,
    video_seconds: int | None = None,
) -> str:
    """Fetch exactly one commit, depth 1, then hand over to the agent harness. With `display`
    (size, harness folder, out folder), first start the virtual display (_display_lines), recorded
    for at most `video_seconds` when given.
    The seal descriptor (SEAL_FD, from init.py) reaches the harness alone: every command before
    the harness closes it for itself."""
    q = shlex.quote
    return "\n".join(
        [
            "set -u",
            'mkdir -p -- "${HOME:-/root}" 2>/dev/null',  # an agent's HOME may not exist yet
            *(_display_lines(*display, video_seconds=video_seconds) if display else []),
            f"git config --global --add safe.directory '*' {SEAL_FD}>&-",
            f"{{ mkdir -p {q(project)} && cd {q(project)} && git init -q . "
            f"&& git fetch -q --depth 1 {q('file://' + source)} {q(commit)} "
            f"&& git -c advice.detachedHead=false checkout -q FETCH_HEAD; }} {SEAL_FD}>&- "
            f"|| exit {FETCH_FAILED}",
            "exec " + " ".join(q(part) for part in harness_cmd),
        ]
    )


SEAL_LOG_BYTES = 1024 * 1024  # the container log's cap (log_config's least): one seal line is < 61 KiB


def read_seal(output: bytes, prefixed: bool = True) -> bytes | None:
    """The seal line in what PID 1 wrote (the container's standard output), or in what came through
    the pipe itself (`prefixed` False); None when there is none or it is over SEAL_MAX_BYTES."""
    if prefixed:
        lines = [line for line in output.split(b"\n") if line.startswith(SEAL_PREFIX)]
        if len(lines) != 1:  # PID 1 writes one; none, or more than one, is no seal
            return None
        line = lines[0][len(SEAL_PREFIX) :]
    else:
        line = output.split(b"\n", 1)[0]
    return line if line and len(line) <= SEAL_MAX_BYTES else None


def installation_containers(client, *, all_states: bool = False) -> list:
    """This installation's attempt containers on the engine `client` talks to (running ones, or in
    any state); other installations' are never listed."""
    mine = {"label": [LABEL, f"{INSTALLATION_LABEL}={installation_id()}"]}
    return client.containers.list(all=all_states, filters=mine)


def ended_from_outside(emergency: StopPoller) -> tuple[StopKind, str] | None:
    """Whether a running attempt is to end now, and why: an emergency stop that covers it, or a
    cancel of this process (another thread's Ctrl-C or SIGTERM). Both executors poll it."""
    if (stop := emergency()) is not None:
        return "emergency_stop", stop.describe()
    if (why := cancel_requested()) is not None:
        return "cancelled", why
    return None


def _harness_command(harness_dir: str, project: str, out: str, harness_args: list[str]) -> list[str]:
    return ["python3", f"{harness_dir}/readme_runner.py", "--project", project, "--out", out, *harness_args]


def single_commit_source(repo_path: Path, commit: str, dest: Path, timeout: float = 600) -> str | None:
    """Make `dest` a bare repository holding the pinned commit alone (depth 1): what an attempt
    container may fetch from. Binding the repository itself would show the agent every other commit
    of the project, a later fix included. Returns None, or why the commit could not be copied."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(dest.parent),  # no user configuration, no prompts
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }
    source = "file://" + str(Path(repo_path).resolve())
    steps = [
        ["git", "init", "-q", "--bare", str(dest)],
        ["git", "-C", str(dest), "fetch", "-q", "--no-tags", "--depth", "1", source, commit],
        ["git", "-C", str(dest), "update-ref", "refs/heads/pinned", commit],
    ]
    for argv in steps:
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"could not copy pinned commit {commit} from {repo_path}: git took over {timeout:.0f} s"
        if done.returncode != 0:
            detail = (done.stderr.strip().splitlines() or ["no message"])[-1][:300]
            return f"could not fetch pinned commit {commit} from {repo_path}: {detail}"
    return None


def _fetch_error(code: int | None, commit: str, repo_path: Path) -> str | None:
    """The bootstrap's own exit code for a pinned commit it could not fetch: our tooling's failure."""
    return f"could not fetch pinned commit {commit} from {repo_path}" if code == FETCH_FAILED else None


def _now() -> datetime:
    return datetime.now(UTC)


def container_name(attempt_id: str, installation: str | None = None) -> str:
    """argusic-<installation>-<attempt>: two installations on one daemon never share a name."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "-", attempt_id)
    return f"argusic-{installation or installation_id()}-{safe}"[:200]


def _log_landing(attempt_id: str, landing: LandingReport) -> None:
    log.info(
        "%s: landed %d file(s), %d bytes%s%s",
        attempt_id, len(landing.files), landing.bytes,
        f", {landing.redacted} redaction(s)" if landing.redacted else "",
        f"; {landing.refusal}" if landing.refusal else "",
    )  # fmt: skip


_SHOWN_ARTIFACT_REFUSALS = 20  # warnings naming a refused artifact each; the rest are counted


def land_artifacts(
    attempt_id: str,
    project: Path,
    out_dir: Path,
    globs: Sequence[str],
    limits: LandingLimits,
    redactions: Sequence[tuple[bytes, bytes]] = (),
) -> LandingReport:
    """Land the project folder's files matching `globs` into `out_dir/artifacts` (``land_matching``),
    once the attempt's processes are gone. That folder holds those files only: one the harness wrote
    into /out under that name (landed with the rest of /out just before) is removed first, so nothing
    downstream takes the agent's /out for the project's artifacts. Refusals are logged, a warning
    naming each (the first few, then a count), and do not make the attempt invalid."""
    dest = out_dir / ARTIFACTS_FOLDER
    if os.path.lexists(dest):
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)  # our own landed copy: folders and regular files only
        else:
            dest.unlink()
        log.warning("%s: out/%s written by the harness removed: the name is the artifacts'", attempt_id,
                    ARTIFACTS_FOLDER)  # fmt: skip
    report = land_matching(project, dest, globs, limits, redactions)
    if globs:
        log.info(
            "%s: landed %d artifact file(s), %d bytes, matching %s%s",
            attempt_id, len(report.files), report.bytes, ", ".join(globs),
            f"; {len(report.refused)} refused" if report.refused else "",
        )  # fmt: skip
    for refusal in report.refused[:_SHOWN_ARTIFACT_REFUSALS]:
        log.warning("%s: artifact refused: %s", attempt_id, refusal)
    if len(report.refused) > _SHOWN_ARTIFACT_REFUSALS:
        more = len(report.refused) - _SHOWN_ARTIFACT_REFUSALS
        log.warning("%s: %d more artifact(s) refused", attempt_id, more)
    return report


class DockerExecutor:
    name = "docker"

    def __init__(
        self,
        image: str | None = None,
        network: str | None = None,
        containment: Containment | None = None,
        artifact_limits: LandingLimits | None = None,
    ) -> None:
        import requests  # deferred: the docker SDK's transport, loaded with it

        import docker  # deferred: the docker SDK is slow to import; only the docker executor needs it

        # Connected when an attempt runs, not here: a daemon that does not answer fails that attempt
        # (our fault: invalid, rerun), never the choice of executor.
        self._client = None
        self.image = image or runner_image()
        self.containment = containment or Containment.from_config()
        # Host-side only (after the container is gone): not part of the environment pin.
        self.artifact_limits = artifact_limits or LandingLimits.artifacts_from_config()
        self.network = network or self.containment.network  # "none", or a Docker network's name
        # The virtual display every attempt gets (None: none is started)
        self.display_size: str | None = display_size(orchestrator_config().display_size)
        # Its raw session video (issue #30; VIDEO_FILE), recorded whenever the display runs
        self.record_display = True
        self._docker = docker
        self._requests = requests
        sweep_once()  # what killed runs of this installation left behind

    @property
    def client(self):
        """The Docker client, connected on first use; DaemonUnreachable when the daemon does not answer."""
        if self._client is None:
            self._client = docker_client()
        return self._client

    def _network_mode(self, client) -> str:
        """The Docker network mode of this executor's attempts: "none", the section-7 network (made
        with its firewall first: argusic.sandbox.attempt_network), or the network the operator named."""
        if self.network == SECTION7:
            return ensure_network(client).name
        return self.network

    def host_config(
        self,
        name: str,
        labels: dict[str, str],
        areas: dict[str, Path],
        task_dir: Path,
        source: Path,
        network: str | None = None,
    ) -> dict:
        """Every setting of an attempt container (README "Threat model" explains each)."""
        c = self.containment
        volumes = {
            str(HARNESS_DIR): {"bind": CONTAINER_HARNESS, "mode": "ro"},
            str(INIT_SCRIPT): {"bind": CONTAINER_INIT, "mode": "ro"},
            str(Path(source).resolve()): {"bind": CONTAINER_SOURCE, "mode": "ro"},  # the pinned commit only
            str(task_dir): {"bind": CONTAINER_TASK, "mode": "ro"},
            str(areas["out"]): {"bind": CONTAINER_OUT, "mode": "rw"},
        }
        for sub, (target, _mode) in WORK_MOUNTS.items():
            volumes[str(areas["work"] / sub)] = {"bind": target, "mode": "rw"}
        return {
            "name": name,
            "labels": labels,
            "user": f"{AGENT_UID}:{AGENT_GID}",
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "read_only": True,
            "volumes": volumes,
            "shm_size": c.shm_bytes,
            "network_disabled": (network or self.network) == "none",
            "network_mode": network or self.network,
            "nano_cpus": int(c.cpus * 1e9),
            "mem_limit": c.memory,
            "memswap_limit": c.memory,
            "pids_limit": c.pids_limit,
            "working_dir": CONTAINER_WORKSPACE,
            # The container's standard output is PID 1's alone (init.py: every other process has
            # /dev/null there, and PID 1 and the harness are non-dumpable): it carries the harness's
            # seal and nothing else. Capped all the same, so no write can fill the host's disk.
            "log_config": log_config(SEAL_LOG_BYTES),
        }

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
    ) -> ExecutionResult:
        artifacts = check_globs(artifacts)  # a bad glob is refused before anything starts
        c = self.containment
        image = image or self.image
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = HarnessPaths(
            CONTAINER_HARNESS, CONTAINER_PROJECT, CONTAINER_OUT, CONTAINER_TASK, CONTAINER_SCRATCH
        )
        how = (launch or readme_runner_launch(harness_args))(paths)
        display = (self.display_size, CONTAINER_HARNESS, CONTAINER_OUT) if self.display_size else None
        video_seconds = max(1, math.ceil(budget_seconds)) if self.record_display else None
        script = _bootstrap_script(
            CONTAINER_SOURCE, CONTAINER_PROJECT, commit, how.argv, display, video_seconds
        )
        installation = installation_id()
        name = container_name(attempt_id, installation)
        started = _now()
        container = scratch = reaper = stop_watching = client = None
        try:
            client = self.client  # DaemonUnreachable: this attempt fails as ours, nothing runs elsewhere
            # a container of this name left by a crashed earlier try of this attempt (ours only): by
            # name on purpose, whichever try made it
            remove_container(name, installation, client)
            scratch = AttemptScratch.new(attempt_id)
            reaper = Reaper.start(scratch, container=name)
            scratch.create(container=name, reaper=reaper)
            network = self._network_mode(client)  # ContainmentError: ours, before anything starts
            task_dir = scratch.task_dir(how.files)
            source = scratch.plain_dir("source")
            if problem := single_commit_source(repo_path, commit, source):
                return ExecutionResult(self.name, started, _now(), None, False, problem, image)
            work_dirs = {sub: mode for sub, (_, mode) in WORK_MOUNTS.items()}
            with ThreadPoolExecutor(2) as pool:  # mkfs and mount of both areas side by side
                out_area = pool.submit(scratch.area, "out", c.out_bytes, noexec=True)
                work_area = pool.submit(scratch.area, "work", c.work_bytes, subdirs=work_dirs)
                areas = {"out": out_area.result(), "work": work_area.result()}
            now = time.time()
            labels = {
                LABEL: attempt_id,
                INSTALLATION_LABEL: installation,
                SCRATCH_LABEL: scratch.path.name,  # this try's: its clean-up never removes a retry's
                DEADLINE_LABEL: str(int(now + budget_seconds)),
            }
            watchdog_at = f"{now + budget_seconds + c.watchdog_grace_seconds:.3f}"
            command = ["python3", "-I", "-S", CONTAINER_INIT, watchdog_at, "--", "bash", "-c", script]
            container = client.containers.run(
                image,
                command,
                detach=True,
                # The only way a model key reaches the agent: an environment variable.
                environment={
                    "HOME": AGENT_HOME,
                    "USER": AGENT_USER,
                    "TMPDIR": "/tmp",
                    # no attempt id, agent or project: the container is not told who is measuring it
                    **dict(c.package_indexes),  # the operator's package mirrors, pinned with the cycle
                    **(env or {}),
                    **how.env,
                },
                **self.host_config(name, labels, areas, task_dir, source, network),
            )
            agent_started = _now()  # the budget clock starts with the container
            stop_watching = watch(areas["out"]) if watch else None
            deadline = time.monotonic() + budget_seconds
            timed_out, stopped, stop_reason = False, None, None
            emergency = StopPoller(attempt_id)
            try:
                while True:
                    container.reload()
                    if container.status in ("exited", "dead"):
                        break
                    if (ended_by := ended_from_outside(emergency)) is not None:
                        container.kill()
                        stopped, stop_reason = ended_by
                        break
                    if time.monotonic() >= deadline:
                        container.kill()
                        timed_out = True
                        break
                    time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
            except (AttemptCancelled, KeyboardInterrupt) as err:  # what exists is landed and recorded
                with contextlib.suppress(self._docker.errors.DockerException):
                    container.kill()
                stopped, stop_reason = "cancelled", cancel_reason(err)
                log.warning("%s: %s; ending its container and landing what it left", attempt_id, stop_reason)
            agent_ended = _now()
            result = container.wait(timeout=60)
            ended = _now()
            seal_line = None if timed_out or stopped else read_seal(container.logs(stdout=True, stderr=False))
            container.remove(force=True)  # every process of the attempt is gone before we read /out
            container = None
            if stop_watching is not None:
                stop_watching()
            landing = land_outputs(areas["out"], out_dir, c.landing, redactions)
            _log_landing(attempt_id, landing)
            project = areas["work"] / "workspace" / Path(CONTAINER_PROJECT).relative_to(CONTAINER_WORKSPACE)
            found = land_artifacts(attempt_id, project, out_dir, artifacts, self.artifact_limits, redactions)
            if changes:  # against the single-commit copy we made, never the agent's .git
                land_changes(attempt_id, source, commit, project, out_dir, redactions)
            code = None if timed_out or stopped else int(result.get("StatusCode", -1))
            error = _fetch_error(code, commit, repo_path)
            return ExecutionResult(
                self.name, started, ended, code, timed_out, error, image, landing.refusal,
                tuple(found.files), tuple(found.refused),
                seal_channel=True, seal_line=seal_line, landed_sha256=dict(landing.raw_sha256),
                stopped=stopped, stop_reason=stop_reason,
                agent_started_at=agent_started, agent_ended_at=min(agent_ended, ended),
            )  # fmt: skip
        except ContainmentError as err:
            return ExecutionResult(self.name, started, _now(), None, False, f"containment: {err}", image)
        except DaemonUnreachable as err:
            return ExecutionResult(self.name, started, _now(), None, False, str(err), image)
        except self._docker.errors.DockerException as err:
            return ExecutionResult(self.name, started, _now(), None, False, f"docker: {err}", image)
        except self._requests.exceptions.ConnectionError as err:  # the daemon went away mid-attempt
            return ExecutionResult(self.name, started, _now(), None, False, daemon_down(err), image)
        finally:
            with contextlib.suppress(self._docker.errors.DockerException, self._requests.RequestException):
                if container is not None:
                    container.remove(force=True)
                elif scratch is not None and client is not None:  # created, never started: no handle
                    remove_container(name, installation, client, scratch=scratch.path.name)
            if stop_watching is not None:
                stop_watching()  # idempotent; before the areas are removed
            if scratch is not None and not (reaper is not None and reaper.hand_over()):
                for problem in scratch.destroy():
                    log.warning("%s: clean-up: %s (left to the sweep)", attempt_id, problem)

    def remove_orphans(
        self,
        running_attempt_ids: set[str] | None = None,
        now_epoch: float | None = None,
        attempt_prefix: str = "",
    ) -> list[str]:
        """Remove this installation's containers left by crashed workers: those whose attempt is not
        among the running ones (when that set is known), or that outlived their budget by the grace
        period. Only attempts whose id starts with `attempt_prefix` (e.g. a cycle id) are considered;
        containers of other installations are never touched."""
        removed = []
        grace = orphan_grace_seconds()
        for container in installation_containers(self.client, all_states=True):
            attempt_id = container.labels.get(LABEL, "")
            if not attempt_id.startswith(attempt_prefix):
                continue
            deadline = float(container.labels.get(DEADLINE_LABEL, "inf"))
            not_running = running_attempt_ids is not None and attempt_id not in running_attempt_ids
            expired = now_epoch is not None and now_epoch > deadline + grace
            if not_running or expired:
                with contextlib.suppress(self._docker.errors.NotFound):
                    container.remove(force=True)
                removed.append(container.name)
        return removed


class LocalExecutor:
    """No isolation: demo cycles only, and only when named (ARGUSIC_EXECUTOR=local). The harness works in the
    attempt's scratch folder (never /tmp); what it leaves is landed like the Docker executor's."""

    name = "local"

    def __init__(
        self, landing: LandingLimits | None = None, artifact_limits: LandingLimits | None = None
    ) -> None:
        self.landing = landing
        self.artifact_limits = artifact_limits
        sweep_once()

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
        redactions: Sequence[tuple[bytes, bytes]] = (),
        watch: Watch | None = None,
        artifacts: Sequence[str] = (),
        changes: bool = False,
    ) -> ExecutionResult:
        artifacts = check_globs(artifacts)  # a bad glob is refused before anything starts
        out_dir.mkdir(parents=True, exist_ok=True)
        extra_env = env or {}
        stop_watching = None
        scratch = AttemptScratch.new(attempt_id)
        reaper = Reaper.start(scratch, container=None)
        try:
            scratch.create(reaper=reaper)
            tmp = scratch.path
            project = tmp / "project"
            raw_out = scratch.plain_dir("out")
            paths = HarnessPaths(str(HARNESS_DIR), str(project), str(raw_out), f"{tmp}/task", f"{tmp}/agent")
            how = (launch or readme_runner_launch(harness_args))(paths)
            scratch.task_dir(how.files)
            home, tmpdir = scratch.plain_dir("home"), scratch.plain_dir("tmp")
            script = _bootstrap_script(str(Path(repo_path).resolve()), str(project), commit, how.argv)
            child_env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ARGUSIC_"))}
            child_env |= {"HOME": str(home), "TMPDIR": str(tmpdir), "ARGUSIC_ATTEMPT_ID": attempt_id}
            child_env |= {**extra_env, **how.env}
            started = _now()
            # The harness waits at a gate until the reaper knows its process group: an orchestrator
            # killed between the two would otherwise leave it running with no one to kill it.
            gate_read, gate_write = os.pipe()
            seal_read, seal_write = os.pipe()  # the harness's seal, as init.py gives it in a container
            if seal_write == SEAL_FD:  # `7>&7 7>&-` below would close it: give it another number
                moved = os.dup(seal_write)
                os.close(seal_write)
                seal_write = moved
            os.set_blocking(seal_read, False)
            try:
                gate = (
                    f'IFS= read -r go <&{gate_read} && [ "$go" = go ] || exit 1\n'
                    f"exec {gate_read}<&- {SEAL_FD}>&{seal_write} {seal_write}>&-\n"
                )
                proc = subprocess.Popen(
                    ["bash", "-c", gate + script],
                    cwd=tmp,
                    env=child_env,
                    start_new_session=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    pass_fds=(gate_read, seal_write),
                )
            except BaseException:
                os.close(gate_write)
                os.close(seal_read)
                raise
            finally:
                os.close(gate_read)
                os.close(seal_write)
            try:
                reaper.watch_group(proc.pid)
                os.write(gate_write, b"go\n")
            finally:
                os.close(gate_write)
            stop_watching = watch(raw_out) if watch else None
            agent_started = _now()  # the budget clock starts with the harness's process
            code, timed_out, stopped, stop_reason = self._wait(proc, attempt_id, budget_seconds)
            agent_ended = _now()
            with contextlib.suppress(ProcessLookupError):  # what the harness left running goes too
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            reaper.forget_group()
            ended = _now()
            drained = drain_seal(seal_read)
            seal_line = None if timed_out or stopped else read_seal(drained, prefixed=False)
            os.close(seal_read)
            if stop_watching is not None:
                stop_watching()
            landing = land_outputs(raw_out, out_dir, self.landing or LandingLimits.from_config(), redactions)
            _log_landing(attempt_id, landing)
            artifact_limits = self.artifact_limits or LandingLimits.artifacts_from_config()
            found = land_artifacts(attempt_id, project, out_dir, artifacts, artifact_limits, redactions)
            if changes:  # against our mirror, never the agent's .git
                land_changes(attempt_id, Path(repo_path), commit, project, out_dir, redactions)
        finally:
            with contextlib.suppress(ProcessLookupError):  # an exception while it ran: it goes too
                if reaper.watching:
                    os.killpg(reaper.watching, signal.SIGKILL)
            if stop_watching is not None:
                stop_watching()
            if not reaper.hand_over():
                for problem in scratch.destroy():
                    log.warning("%s: clean-up: %s (left to the sweep)", attempt_id, problem)
        error = _fetch_error(code, commit, repo_path)
        return ExecutionResult(
            self.name, started, ended, code, timed_out, error, None, landing.refusal,
            tuple(found.files), tuple(found.refused),
            seal_channel=True, seal_line=seal_line, landed_sha256=dict(landing.raw_sha256),
            stopped=stopped, stop_reason=stop_reason,
            agent_started_at=agent_started, agent_ended_at=agent_ended,
        )  # fmt: skip

    @staticmethod
    def _wait(
        proc: subprocess.Popen, attempt_id: str, budget_seconds: float
    ) -> tuple[int | None, bool, StopKind | None, str | None]:
        """(exit code, timed out, stopped as, why) of the harness's process group, which is killed on
        a timeout, an emergency stop or a cancel (SIGTERM, Ctrl-C) so that what it wrote is landed."""
        deadline = time.monotonic() + budget_seconds
        emergency = StopPoller(attempt_id)
        try:
            while True:
                try:
                    code = proc.wait(timeout=max(0.0, min(0.5, deadline - time.monotonic())))
                    return code, False, None, None
                except subprocess.TimeoutExpired:
                    pass
                if (ended_by := ended_from_outside(emergency)) is not None:
                    return None, False, *ended_by
                if time.monotonic() >= deadline:
                    return None, True, None, None
        except (AttemptCancelled, KeyboardInterrupt) as err:
            why = cancel_reason(err)
            log.warning("%s: %s; ending its processes and landing what they left", attempt_id, why)
            return None, False, "cancelled", why


EXECUTOR_ENV = "ARGUSIC_EXECUTOR"
EXECUTOR_NAMES = ("docker", "local")
DEFAULT_EXECUTOR = "docker"
DOCKER_DEFAULT_HOST = "unix:///var/run/docker.sock"


class DaemonUnreachable(RuntimeError):
    """The Docker daemon did not answer: our side failed, never the attempt's. The attempt it was to
    run is recorded invalid ("executor error: ...") and rerun; nothing runs on the host instead."""


class ExecutorRefused(ValueError):
    """An executor name that is not one, or the local executor for a cycle that is not a demo."""


def daemon_down(err: object) -> str:
    """What an attempt's record says when the daemon does not answer, and how to fix it."""
    host = os.environ.get("DOCKER_HOST") or DOCKER_DEFAULT_HOST
    return (
        f"the Docker daemon did not answer at {host} ({err}); start dockerd (or point DOCKER_HOST at "
        "a running one) and run the attempt again: it never falls back to the host"
    )


def docker_client(timeout: int = 60):
    """A Docker client that has reached the daemon (docker.from_env asks its API version);
    DaemonUnreachable when it does not answer."""
    import docker  # deferred: the docker SDK is slow to import; only the docker executor needs it

    try:
        return docker.from_env(timeout=timeout)
    except docker.errors.DockerException as err:
        raise DaemonUnreachable(daemon_down(err)) from None


def docker_available() -> bool:
    """Whether a Docker daemon answers a ping within 3 s: for maintenance and test skips only. It
    never chooses an executor (executor_name)."""
    try:
        import docker  # deferred: the docker SDK is slow to import (and may be missing: then False)

        docker.from_env(timeout=3).ping()
        return True
    except Exception:
        return False


def executor_name(name: str | None = None) -> str:
    """The executor the configuration names: `name`, else ARGUSIC_EXECUTOR, else docker. Never
    inferred from whether a daemon answers: a stopped daemon must fail attempts, not move them onto
    the host (issue 25)."""
    choice = (name or os.environ.get(EXECUTOR_ENV, "")).strip() or DEFAULT_EXECUTOR
    if choice not in EXECUTOR_NAMES:
        raise ExecutorRefused(f"{EXECUTOR_ENV}={choice!r}: expected 'docker' or 'local'")
    return choice


def check_executor_allowed(name: str, demo: bool) -> None:
    """ExecutorRefused for the local executor outside a demo cycle: it runs the project's README on
    this host, as this user, with no isolation and the orchestrator's environment."""
    if name == "local" and not demo:
        raise ExecutorRefused(
            "the local executor runs the project on this host with no isolation: it is for demo cycles "
            "only, and this cycle is not a demo. Use the docker executor (start dockerd if it is not "
            f"running), or run a demo cycle with {EXECUTOR_ENV}=local"
        )


def get_executor(name: str | None = None, *, demo: bool = False) -> Executor:
    """The executor `name` or ARGUSIC_EXECUTOR names (default docker), for a cycle that is a demo or
    not: the local executor only when named, and only for a demo (ExecutorRefused otherwise). The
    Docker executor is returned even when no daemon answers now: its attempts then fail as ours."""
    choice = executor_name(name)
    check_executor_allowed(choice, demo)
    if choice == "docker":  # a real cycle's network (section 7) or a demo's (none)
        return DockerExecutor(containment=Containment.from_config(demo=demo))
    if shutil.which("git") is None:
        raise RuntimeError("the local executor needs git on PATH")
    return LocalExecutor()
