"""Containment of attempts on the host side: the per-attempt scratch folder with its size-capped
areas, the reaper that cleans up when the orchestrator is killed, and the sweep of what a killed run
left behind. README "Threat model" says what this protects against and how.

Scratch folder. Every attempt gets ``<scratch_root>/<installation>--<random>--<attempt>/`` (mode
0700, root's), holding ``owner.json`` (who made it: process id and start time of the orchestrator
and of its reaper, the container's name), the read-only task files, and one sparse ext4 image per
writable area of the container (``out.img`` for /out, ``work.img`` for /workspace, HOME, /tmp,
/var/tmp and the agent's config folder), each loop-mounted (nosuid, nodev) on a folder beside it and
bind-mounted into the container. The image's size is the area's cap: a full area answers ENOSPC and
nothing else of the host fills. Nothing of an attempt lives in /tmp.

Reaper. A small detached process per attempt (its own session, so a Ctrl-C or a kill of our process
group misses it) holds the read end of a pipe whose write end only the orchestrator has. When the
orchestrator has removed the container and landed /out, it hands the clean-up over ("destroy"): the
reaper unmounts the areas, detaches their loop devices and deletes the folder off the attempt's path
(deleting a 16 GB sparse image alone takes ~0.1 s). When the pipe closes without that word (the
orchestrator died, SIGKILL included), the reaper first removes the container (if it carries our
installation's label) and kills the local harness's process group, then does the same.

Sweep. ``sweep_debris()`` (at the first attempt of every process, and in the maintenance DAG)
removes the scratch folders of this installation whose orchestrator and reaper are both gone (the
reaper killed too), with their mounts, loop devices and containers. Process identity is the pid plus
its start time in /proc, so a recycled pid is not taken for the owner; the scratch root must
therefore be local to the machine (and PID namespace) that runs the attempts.

Mounting needs root on the Docker host, in the mount namespace dockerd sees.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from argusic.core.settings import (
    PACKAGE_DIR,
    installation_id,
    orchestrator_config,
    package_index_env,
    scratch_root,
)
from argusic.sandbox.landing import LandingLimits

log = logging.getLogger(__name__)

# The unprivileged user attempts run as. Not 1000: on many hosts that is a real person's uid, and a
# process that escaped its container should own nothing of the host's.
AGENT_USER = "agent"
AGENT_UID = 10001
AGENT_GID = 10001
AGENT_HOME = "/home/agent"


# dockerd keeps what a container writes to its stdout and stderr in a log on the host's disk; a
# container (the project, the agent) that writes without end would fill it. A helper container whose
# output we read (render, judges) keeps one capped file; an attempt container keeps none.
HELPER_LOG_BYTES = 10 * 1024 * 1024
NO_LOG = {"type": "none", "config": {}}


def log_config(max_bytes: int | None) -> dict:
    """The docker SDK's ``log_config``: one json-file of at most `max_bytes` (what is written past it
    replaces it), or no log at all (None)."""
    if max_bytes is None:
        return dict(NO_LOG)
    if max_bytes < 1024 * 1024:
        raise ValueError(f"container log cap {max_bytes} bytes: at least 1 MiB")
    return {"type": "json-file", "config": {"max-size": f"{max_bytes // 1024}k", "max-file": "1"}}


def locked_container_options(
    *,
    tmpfs: dict[str, str],
    volumes: dict[str, dict[str, str]],
    working_dir: str,
    environment: dict[str, str],
    memory: int | str,
    pids: int,
    cpus: float,
    log_bytes: int | None = HELPER_LOG_BYTES,
) -> dict:
    """The docker SDK ``containers.run`` options every helper container shares (the render and the
    repair grader containers, the judges' replay): the images' unprivileged user, every capability
    dropped, no new privileges, a read-only root, no network, memory without swap, pid and CPU caps,
    and dockerd's log of the container capped at `log_bytes` (None: no log kept at all).
    Only the writable tmpfs areas, the mounts and the limits differ between them; one place keeps the
    lock the same everywhere."""
    return {
        "log_config": log_config(log_bytes),
        "user": f"{AGENT_UID}:{AGENT_GID}",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "read_only": True,
        "network_disabled": True,
        "network_mode": "none",
        "tmpfs": dict(tmpfs),
        "volumes": dict(volumes),
        "working_dir": working_dir,
        "environment": dict(environment),
        "mem_limit": memory,
        "memswap_limit": memory,
        "pids_limit": pids,
        "nano_cpus": int(cpus * 1e9),
    }


# Images with that user carry this label (scripts/build_runner_image.sh, Dockerfile); a runner tag
# without it is rebuilt.
LAYOUT_LABEL = "argusic.runner.layout"
# 3: Xvfb, Tk and x11-utils for desktop applications; 4: build tools, ffmpeg; 5: pip, venv, Node.js, npm
RUNNER_LAYOUT = "5"

INSTALLATION_LABEL = "argusic.installation"
# The scratch folder (its name) of the try that made a container. A retry of the same attempt makes a
# container of the same name: the clean-up of an earlier, killed try (its reaper, the sweep) removes a
# container only if it carries that try's own scratch name, never the retry's (issue 33: a lost
# worker's sweep, restarted, removed by name the retries running on the other worker).
SCRATCH_LABEL = "argusic.scratch"
NETWORK_ENV = "ARGUSIC_CONTAINER_NETWORK"
OWNER_FILE = "owner.json"
UNOWNED_AFTER_SECONDS = 120  # a folder without owner.json this old is debris (its maker died at once)


class ContainmentError(Exception):
    """An attempt's containment could not be set up: our tooling's failure (the attempt is invalid)."""


@dataclass(frozen=True)
class Containment:
    """What every attempt container gets (orchestrator.toml [container] and [landing])."""

    cpus: float
    memory: str
    pids_limit: int
    out_bytes: int
    work_bytes: int
    shm_bytes: int
    network: str
    watchdog_grace_seconds: int
    landing: LandingLimits
    # Package indexes the attempt is pointed at (variable, URL): only with a network to reach them
    package_indexes: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_config(cls, demo: bool = True) -> Containment:
        """The configured containment; the network a real cycle's attempts get (`demo` False), or a
        demo's, a scaled cycle's or a test's (the default: no network unless named)."""
        config = orchestrator_config()
        network = os.environ.get(NETWORK_ENV) or (
            config.container_demo_network if demo else config.container_network
        )
        indexes = tuple(sorted(package_index_env().items())) if network != "none" else ()
        return cls(
            cpus=config.container_cpus,
            memory=config.container_memory,
            pids_limit=config.container_pids_limit,
            out_bytes=config.container_out_bytes,
            work_bytes=config.container_work_bytes,
            shm_bytes=config.container_shm_bytes,
            network=network,
            watchdog_grace_seconds=config.watchdog_grace_seconds,
            landing=LandingLimits.from_config(),
            package_indexes=indexes,
        )


# ---------------------------------------------------------------------------------------------------
# Processes and mounts


def process_start(pid: int) -> str | None:
    """The start time of a process (clock ticks since boot, /proc/<pid>/stat field 22), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def process_alive(pid: object, start: object) -> bool:
    return isinstance(pid, int) and pid > 0 and start is not None and process_start(pid) == start


def _unescape_mount_path(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def mounts_under(folder: Path) -> list[Path]:
    """Mount points at or under `folder` (this process's mount namespace), deepest first."""
    base = str(folder)
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as info:
        for line in info:
            point = _unescape_mount_path(line.split()[4])
            if point == base or point.startswith(base + "/"):
                found.append(Path(point))
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def loops_backed_by(prefix: str) -> dict[str, str]:
    """Loop devices whose backing file path starts with `prefix`: {device: backing file}."""
    found = {}
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        with contextlib.suppress(OSError):
            path = backing.read_text().strip().removesuffix(" (deleted)")
            if path.startswith(prefix):
                found[f"/dev/{backing.parent.parent.name}"] = path
    return found


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        raise ContainmentError(f"{argv[0]}: {detail[0]}")


def destroy_scratch(folder: Path) -> list[str]:
    """Unmount every area under `folder`, detach its loop devices, delete it. Returns the problems
    met (never raises): whatever is left is the next sweep's."""
    problems: list[str] = []
    if not folder.exists():
        return problems
    try:
        for point in mounts_under(folder):
            try:
                _run(["umount", str(point)])
            except ContainmentError:
                try:  # busy (a container of a dead daemon still holds it): detach it now, freed later
                    _run(["umount", "--lazy", str(point)])
                except ContainmentError as err:
                    problems.append(f"umount {point}: {err}")
        for device in loops_backed_by(str(folder) + "/"):
            with contextlib.suppress(ContainmentError):  # gone already: mount's autoclear
                _run(["losetup", "--detach", device])
    except OSError as err:
        problems.append(f"{folder}: {err}")
    if mounts_under(folder):
        problems.append(f"{folder}: still mounted, not deleted")
        return problems
    shutil.rmtree(folder, ignore_errors=True)
    if folder.exists():
        problems.append(f"{folder}: could not be deleted")
    return problems


# ---------------------------------------------------------------------------------------------------
# The scratch folder of one attempt


class AttemptScratch:
    """One attempt's scratch folder (see the module's docstring)."""

    def __init__(self, path: Path, attempt_id: str, installation: str) -> None:
        self.path = path
        self.attempt_id = attempt_id
        self.installation = installation

    @classmethod
    def new(cls, attempt_id: str, root: Path | None = None) -> AttemptScratch:
        """Choose the folder (nothing on disk yet): the reaper starts before anything is made, so
        that a kill at any point leaves nothing it does not know about."""
        installation = installation_id()
        root = root or scratch_root()
        # Not named after the attempt: the container sees this path in its mount table, and must not
        # learn which agent, project or attempt it is (the owner file inside says, for the sweeps).
        path = root / f"{installation}--{secrets.token_hex(8)}"
        return cls(path, attempt_id, installation)

    def create(self, container: str | None = None, reaper: Reaper | None = None) -> AttemptScratch:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.mkdir(mode=0o700)
        self.write_owner(container, reaper.pid if reaper else None)
        return self

    def write_owner(self, container: str | None = None, reaper_pid: int | None = None) -> None:
        doc = {
            "installation": self.installation,
            "attempt_id": self.attempt_id,
            "pid": os.getpid(),
            "start": process_start(os.getpid()),
            "reaper_pid": reaper_pid,
            "reaper_start": process_start(reaper_pid) if reaper_pid else None,
            "container": container,
        }
        tmp = self.path / f".{OWNER_FILE}.tmp"
        tmp.write_text(json.dumps(doc))
        tmp.replace(self.path / OWNER_FILE)

    def task_dir(self, files: dict[str, str]) -> Path:
        """Read-only task files for the container (readable by the agent user)."""
        folder = self.path / "task"
        folder.mkdir(mode=0o755)
        for name, text in files.items():
            if "/" in name or name in ("", ".", ".."):
                raise ValueError(f"task file name must be a plain name: {name!r}")
            (folder / name).write_text(text, encoding="utf-8")
            (folder / name).chmod(0o644)
        return folder

    def plain_dir(self, name: str) -> Path:
        folder = self.path / name
        folder.mkdir(mode=0o755)
        return folder

    def area(
        self,
        name: str,
        size_bytes: int,
        *,
        subdirs: dict[str, int] | None = None,
        noexec: bool = False,
    ) -> Path:
        """A size-capped writable area: a sparse ext4 image of `size_bytes`, loop-mounted nosuid,
        nodev on <folder>/<name>, owned by the agent user; `subdirs` (name -> mode) made in it."""
        if os.geteuid() != 0:
            raise ContainmentError(
                "size-capped areas are loop-mounted ext4 images: the orchestrator must run as root"
            )
        image = self.path / f"{name}.img"
        point = self.path / name
        with open(image, "xb") as handle:
            handle.truncate(size_bytes)
        _run(
            [
                "mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal,^resize_inode",
                "-E", f"lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner={AGENT_UID}:{AGENT_GID}",
                str(image),
            ]
        )  # fmt: skip
        point.mkdir(mode=0o700)
        options = "loop,nosuid,nodev,noatime" + (",noexec" if noexec else "")
        _run(["mount", "-o", options, str(image), str(point)])
        with contextlib.suppress(OSError):
            (point / "lost+found").rmdir()
        for sub, mode in (subdirs or {}).items():
            folder = point / sub
            folder.mkdir()
            os.chown(folder, AGENT_UID, AGENT_GID)
            folder.chmod(mode)
        return point

    def destroy(self) -> list[str]:
        return destroy_scratch(self.path)


# ---------------------------------------------------------------------------------------------------
# The reaper


class Reaper:
    """The detached process that cleans up an attempt when the orchestrator dies (module docstring)."""

    def __init__(self, proc: subprocess.Popen | None) -> None:
        self._proc = proc
        self.watching: int | None = None  # the local harness's process group, while it runs

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @classmethod
    def start(cls, scratch: AttemptScratch, container: str | None) -> Reaper:
        """Start the reaper of `scratch` (before the folder exists) and of `container` (by name)."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_DIR.parent), env.get("PYTHONPATH")]))
        proc = subprocess.Popen(
            [sys.executable, "-m", "argusic.sandbox.containment", "reap", str(scratch.path), container or "-",
             scratch.installation],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env=env,
            start_new_session=True,
        )  # fmt: skip
        return cls(proc)

    def _say(self, line: str) -> None:
        if self._proc is None or self._proc.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self._proc.stdin.write(line.encode() + b"\n")
            self._proc.stdin.flush()

    def watch_group(self, pgid: int) -> None:
        """A local harness's process group: the reaper kills it if we die before it ends."""
        self.watching = pgid
        self._say(f"pgid {pgid}")

    def forget_group(self) -> None:
        self.watching = None
        self._say("pgid -")

    def hand_over(self) -> bool:
        """The attempt is over and its container gone: the reaper unmounts the areas and deletes the
        folder on its own, off the attempt's path, and exits (a kill of ours from here on changes
        nothing). False when the reaper is not there to do it (then the caller must)."""
        if self._proc is None or self._proc.poll() is not None:
            return False
        self._say("destroy")
        with contextlib.suppress(OSError, ValueError):
            self._proc.stdin.close()
        self._proc = None  # not waited for: subprocess reaps it at a later Popen or at exit
        return True


def remove_container(name: str, installation: str, client=None, scratch: str | None = None) -> bool:
    """Remove a container by name only when it carries our installation's label and, when `scratch`
    is given (a clean-up acting for one try), that try's scratch folder name: a container of the same
    name made by a later try of the attempt is not this try's to remove."""
    import docker  # deferred: the docker SDK is slow to import; only a clean-up that removes one needs it

    client = client or docker.from_env(timeout=30)
    try:
        container = client.containers.get(name)
    except docker.errors.NotFound:
        return False
    labels = container.labels or {}
    if labels.get(INSTALLATION_LABEL) != installation:
        return False
    made_by = labels.get(SCRATCH_LABEL)  # None: made before the label existed, by name as then
    if scratch is not None and made_by is not None and made_by != scratch:
        log.info("container %s belongs to another try (%s), not to %s: kept", name, made_by, scratch)
        return False
    with contextlib.suppress(docker.errors.NotFound):
        container.remove(force=True)
    return True


def _reap(folder: str, container: str, installation: str) -> int:
    said = sys.stdin.buffer.read().decode("utf-8", "replace").split("\n")  # until the pipe closes
    if "destroy" in said:  # the orchestrator finished the attempt and handed the clean-up over
        destroy_scratch(Path(folder))
        return 0
    pgid = None
    for line in said:
        if line.startswith("pgid "):
            value = line[5:].strip()
            pgid = int(value) if value.isdigit() else None
    if pgid:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    # Twice: a request the orchestrator had in flight (a container being started, an area being
    # mounted by its mount(8) child) may complete just after the first round.
    for round_ in range(2):
        if container != "-":
            for _ in range(3):  # the daemon may be busy; the container's own watchdog ends it anyway
                try:
                    remove_container(container, installation, scratch=Path(folder).name)
                    break
                except Exception:  # noqa: BLE001 - nobody to tell; the sweep retries
                    time.sleep(1)
        destroy_scratch(Path(folder))
        if round_ == 0:
            time.sleep(2)
    return 0


# ---------------------------------------------------------------------------------------------------
# The sweep


def _owner(folder: Path) -> dict | None:
    try:
        doc = json.loads((folder / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def sweep_debris(root: Path | None = None, *, docker_client=None) -> list[str]:
    """Remove what killed runs of this installation left: scratch folders whose orchestrator and
    reaper are both gone (their mounts, loop devices and containers with them). Returns the folders
    removed. Folders of other installations, and of live processes, are never touched."""
    installation = installation_id()
    root = root or scratch_root()
    if not root.is_dir():
        return []
    removed = []
    prefix = f"{installation}--"
    for folder in sorted(root.iterdir()):
        if not folder.name.startswith(prefix) or not folder.is_dir() or folder.is_symlink():
            continue
        owner = _owner(folder)
        if owner is None:
            with contextlib.suppress(OSError):
                if time.time() - folder.stat().st_mtime < UNOWNED_AFTER_SECONDS:
                    continue  # being created right now
            owner = {"installation": installation}
        if owner.get("installation") != installation:
            continue
        if process_alive(owner.get("pid"), owner.get("start")) or process_alive(
            owner.get("reaper_pid"), owner.get("reaper_start")
        ):
            continue
        container = owner.get("container")
        if isinstance(container, str) and container:
            try:
                remove_container(container, installation, docker_client, scratch=folder.name)
            except Exception as err:  # noqa: BLE001 - its mounts go anyway; the container's watchdog ends it
                log.warning("sweep: container %s not removed: %s", container, err)
        problems = destroy_scratch(folder)
        for problem in problems:
            log.warning("sweep: %s", problem)
        if not problems:
            removed.append(folder.name)
    # Loop devices whose folder is already gone (deleted before they were detached).
    for device, backing in loops_backed_by(str(root / prefix)).items():
        if not Path(backing).parent.exists():
            with contextlib.suppress(ContainmentError):
                _run(["losetup", "--detach", device])
    if removed:
        log.info("sweep: removed %d scratch folder(s) left by killed runs: %s", len(removed), removed)
    return removed


_swept_roots: set[str] = set()


def sweep_once() -> None:
    """The sweep, once per process and scratch root (executors call it before their first attempt)."""
    root = str(scratch_root())
    if root in _swept_roots:
        return
    _swept_roots.add(root)
    try:
        sweep_debris()
    except Exception as err:  # noqa: BLE001 - never stops an attempt; the maintenance DAG sweeps too
        log.warning("sweep of killed runs' debris failed: %s", err)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "reap":
        sys.exit(_reap(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.stderr.write("usage: python -m argusic.sandbox.containment reap FOLDER CONTAINER|- INSTALLATION\n")
    sys.exit(2)
