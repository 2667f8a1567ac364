"""Hostile projects against the real containment (Docker, the reference harness, run_attempt).

Each fixture is a git repo made here whose README's run block does the hostile thing; the attempt
runs under a containment with small caps. What they try and what must happen:

- links out of /out (symbolic and hard, to a planted 0600 host file): refused with a reason naming
  the file -- the container's doing, so a measured failure (container_fault), never a rerun -- and
  the host file's bytes appear in no evidence, record or served copy;
- devices (mknod must fail), FIFOs and sockets in /out: refused by name, the landing never blocks;
- filling /workspace, /tmp, HOME and /out: writes stop at the caps with ENOSPC; the orchestrator's
  memory stays bounded while it lands what is there;
- fork bombs: bounded by the pids limit;
- privilege probes: uid 10001, no capability, no-new-privileges, setuid and sudo fail, the root
  filesystem is read-only, the watchdog (PID 1) cannot be killed or read;
- two installations on one daemon running the same attempt at the same time: neither touches the
  other's container;
- SIGKILL of the orchestrator at random points: nothing runs past budget + grace, and then no
  container, mount, loop device, image or scratch folder of ours remains.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import re
import signal
import stat
import subprocess
import sys
import time
import tracemalloc
import uuid
from pathlib import Path

import pytest
from argusic.attempts.run import run_attempt
from argusic.core.evidence import EvidenceStore
from argusic.core.layout import attempt_dir
from argusic.core.record import load_record_file
from argusic.core.settings import runner_image
from argusic.core.spec import AttemptSpec
from argusic.sandbox.containment import (
    HELPER_LOG_BYTES,
    INSTALLATION_LABEL,
    Containment,
    locked_container_options,
    loops_backed_by,
    mounts_under,
    sweep_debris,
)
from argusic.sandbox.executor import LABEL, DockerExecutor, container_name, docker_available
from argusic.sandbox.landing import LandingLimits
from test_executor import _git

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.skipif(not docker_available(), reason="no Docker daemon answers"),
    pytest.mark.skipif(os.geteuid() != 0, reason="size-capped areas are loop mounts: root only"),
]

MiB = 1024**2
GRACE = 3  # watchdog grace of these tests (orchestrator.toml's is 10 s)


def small_containment(**over) -> Containment:
    base = dataclasses.replace(
        Containment.from_config(),
        out_bytes=32 * MiB,
        work_bytes=64 * MiB,
        pids_limit=64,
        watchdog_grace_seconds=GRACE,
        landing=LandingLimits(max_file_bytes=64 * MiB, max_total_bytes=64 * MiB, max_entries=200),
    )
    return dataclasses.replace(base, **over)


def hostile_repo(tmp_path: Path, name: str, usage: list[str], files: dict[str, str] | None = None):
    """A bare repo whose README's run block is `usage`; returns (bare path, commit)."""
    work = tmp_path / f"src-{name}"
    work.mkdir()
    readme = f"# {name}\n\nA hostile fixture.\n\n## Usage\n\n```sh\n" + "\n".join(usage) + "\n```\n"
    (work / "README.md").write_text(readme)
    for rel, text in (files or {}).items():
        (work / rel).write_text(text)
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "hostile")
    bare = tmp_path / f"{name}.git"
    _git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    _git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    return bare, _git(work, "rev-parse", "HEAD").strip()


def spec_for(bare: Path, commit: str, name: str, budget: float) -> AttemptSpec:
    return AttemptSpec(
        cycle_id="hostile", agent_id="readme-runner", project_id=name, repo_url=str(bare), commit=commit,
        tier="standard", attempt_no=1, demo=True, budget_scale=budget / 5400,
    )  # fmt: skip


@pytest.fixture
def env(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Isolated settings and an installation of this test's own (its sweeps touch only its objects)."""
    monkeypatch.setenv("ARGUSIC_INSTALLATION", f"t-{uuid.uuid4().hex[:10]}")
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(isolated / "scratch"))
    return isolated


def attempt(env: Path, bare: Path, commit: str, name: str, budget: float = 60, **over):
    store = EvidenceStore((env / "evidence").as_uri())
    spec = spec_for(bare, commit, name, budget)
    path = run_attempt(spec, DockerExecutor(containment=small_containment(**over)), store, env / "runs")
    return load_record_file(path), attempt_dir(spec, env / "runs") / "out", store


def assert_no_debris(env: Path, installation: str) -> None:
    """Nothing of the installation is left once its reaper (handed the clean-up) has finished."""
    assert wait_for(lambda: _clean(env, installation), 20), _debris(env, installation)


def every_stored_byte(env: Path) -> bytes:
    """Every byte of every file under the evidence store, the runs and the scratch root. The reaper may
    be deleting a scratch folder meanwhile (off the attempt's path): what vanishes is skipped. Links
    are never followed: the attacker's own links may still sit in its scratch area, but none may
    appear among the evidence or the runs."""
    found = []
    for root in (env / "evidence", env / "runs", env / "scratch"):
        for folder, _, names in os.walk(root):
            for name in names:
                path = Path(folder, name)
                if path.is_symlink():
                    assert root.name == "scratch", f"a link among what we keep: {path}"
                    continue
                with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                    if stat.S_ISREG(path.lstat().st_mode):  # never open a FIFO the attacker left
                        found.append(path.read_bytes())
    return b"".join(found)


def recording_text(store: EvidenceStore, record) -> str:
    return store.read(record.evidence.recording.uri).decode("utf-8", "replace")


# -- links, devices, FIFOs ---------------------------------------------------------------------------


def test_links_out_of_out_never_bring_a_host_file_into_evidence(env, tmp_path):
    secret = tmp_path / "host-only" / "credentials.txt"
    secret.parent.mkdir()
    planted = f"HOST-SECRET-{uuid.uuid4().hex}"
    secret.write_text(planted + "\n")
    secret.chmod(0o600)
    bare, commit = hostile_repo(
        tmp_path,
        "links",
        [
            f"ln -sf {secret} /out/log.txt",  # the attack: the raw log becomes a host file
            f"ln -s {secret} /out/planted.txt",
            f"ln -s ../../../../../..{secret} /out/relative.txt",
            f"ln -s {secret.parent} /out/folder",
            f"ln {secret} /out/hard.txt || echo 'hard link to a host path: refused'",
            "ln /etc/passwd /out/passwd.txt || echo 'hard link across file systems: refused'",
            "echo mine > /out/mine.txt && ln /out/mine.txt /out/mine-again.txt",
            f"cat {secret} || echo 'host file not visible'",
        ],
    )
    record, landed, store = attempt(env, bare, commit, "links")
    assert record.invalid_reason is None  # not our tooling's failure: no rerun to veto a result with
    assert record.container_fault == (
        "evidence refused: folder is a symbolic link; log.txt is a symbolic link; "
        "mine-again.txt has 2 hard links (and 3 more)"  # mine.txt, planted.txt, relative.txt
    )
    assert record.evidence.log is None  # the refused log is never read, let alone stored
    shown = recording_text(store, record)
    assert "hard link across file systems: refused" in shown and "host file not visible" in shown
    # display.json: the bootstrap's record of the virtual display (runner image layout 3);
    # changes.patch: the project's changes, computed on the host against our copy of the commit;
    # display.mkv: the raw session video of the virtual display (issue #30), there when the attempt
    # lasted long enough for ffmpeg to open it (this one may end within a second)
    landed_names = sorted(p.name for p in landed.iterdir() if p.name != "display.mkv")
    assert landed_names == ["changes.patch", "display.json", "harness.json", "recording.cast", "report.json"]
    assert not any(planted.encode() in p.read_bytes() for p in landed.iterdir())
    assert planted.encode() not in every_stored_byte(env)


def test_devices_fifos_and_sockets_in_out_are_refused_by_name(env, tmp_path):
    bare, commit = hostile_repo(
        tmp_path,
        "specials",
        [
            "mknod /out/null c 1 3 || echo 'mknod in /out: refused'",
            "mknod /workspace/null c 1 3 || echo 'mknod in /workspace: refused'",
            "mkfifo /out/pipe",
            "python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('/out/sock')\"",
        ],
    )
    record, _, store = attempt(env, bare, commit, "specials")
    assert record.invalid_reason is None
    assert record.container_fault == "evidence refused: pipe is a FIFO; sock is a socket"
    shown = recording_text(store, record)
    assert "Operation not permitted" in shown
    assert "mknod in /out: refused" in shown and "mknod in /workspace: refused" in shown
    assert record.evidence.log is not None  # the rest landed


# -- disk, processes, privileges ---------------------------------------------------------------------

FILL = r"""
import json, os, sys
path, keep = sys.argv[1], sys.argv[2] == "keep"
written, error = 0, None
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
block = b"\xa5" * (1 << 20)
try:
    while written < (1 << 30):
        written += os.write(fd, block)
except OSError as err:
    error = err.strerror
os.close(fd)
if keep:  # leave it nearly full, with room for the harness to finish its log
    os.truncate(path, max(0, written - (4 << 20)))
else:
    os.unlink(path)
print("FILL " + json.dumps({"path": path, "written": written, "error": error}))
"""


def test_disk_filling_stops_at_the_caps_and_landing_memory_stays_bounded(env, tmp_path):
    bare, commit = hostile_repo(
        tmp_path,
        "filler",
        [
            "python3 fill.py /workspace/fill.bin drop",
            "python3 fill.py /tmp/fill.bin drop",
            "python3 fill.py /home/agent/fill.bin drop",
            "python3 fill.py /var/tmp/fill.bin drop",
            "python3 fill.py /out/fill.bin keep",
            "python3 fill.py /fill.bin drop || echo 'root filesystem: refused'",
        ],
        {"fill.py": FILL},
    )
    tracemalloc.start()
    try:
        record, landed, _ = attempt(env, bare, commit, "filler")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    log = (landed / "log.txt").read_text()
    fills = {
        f["path"]: f for f in (json.loads(x.split("FILL ", 1)[1]) for x in log.splitlines() if "FILL {" in x)
    }
    for place in ("/workspace/fill.bin", "/tmp/fill.bin", "/home/agent/fill.bin", "/var/tmp/fill.bin"):
        assert fills[place]["error"] == "No space left on device" and fills[place]["written"] <= 64 * MiB
    assert fills["/out/fill.bin"]["error"] == "No space left on device"
    assert 16 * MiB < fills["/out/fill.bin"]["written"] <= 32 * MiB
    assert "Read-only file system" in log
    # What /out held was landed (a ~28 MiB file) with a bounded peak of Python allocations.
    assert (landed / "fill.bin").stat().st_size > 16 * MiB
    assert peak < 16 * MiB, f"peak {peak / MiB:.1f} MiB"
    assert record.invalid_reason is None, record.invalid_reason
    assert_no_debris(env, os.environ["ARGUSIC_INSTALLATION"])


FORKS = r"""
import json, os, signal, time
children, error = [], None
for _ in range(1000):
    try:
        pid = os.fork()
    except OSError as err:
        error = err.strerror
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.kill(pid, signal.SIGKILL)
for pid in children:
    os.waitpid(pid, 0)
print("FORKS " + json.dumps({"forked": len(children), "error": error}))
"""


def test_fork_bombs_are_bounded_by_the_pids_limit(env, tmp_path):
    bare, commit = hostile_repo(
        tmp_path,
        "forker",
        ["python3 forks.py", "timeout 5 bash -c ':(){ :|:& };:' || true", "echo after the bomb"],
        {"forks.py": FORKS},
    )
    record, landed, _ = attempt(env, bare, commit, "forker", budget=45)
    log = (landed / "log.txt").read_text()
    forks = json.loads(log.split("FORKS ", 1)[1].splitlines()[0])
    assert forks["error"] == "Resource temporarily unavailable" and forks["forked"] < 64
    assert record.attempt_id == spec_for(bare, commit, "forker", 45).attempt_id  # recorded, whatever the end
    assert_no_debris(env, os.environ["ARGUSIC_INSTALLATION"])


PROBE = r"""
import json, os, socket, subprocess
facts = {"ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid()], "groups": os.getgroups()}
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
    facts[key] = status[key].strip()
def run(cmd):
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=20)
    return [p.returncode, (p.stdout + p.stderr).strip()[-300:]]
def attempt(fn):
    try:
        return ["done", repr(fn())]
    except Exception as err:
        return ["refused", f"{type(err).__name__}: {err}"]
facts["su"] = run("su -c id root")
facts["sudo"] = run("sudo id")
facts["setuid_mount"] = run("mount -t tmpfs none /mnt")
facts["unshare_user_ns"] = run("unshare --user --map-root-user id")
facts["mknod"] = run("mknod /tmp/null c 1 3")
facts["setuid0"] = attempt(lambda: os.setuid(0))
facts["chown_to_root"] = attempt(lambda: (open("/tmp/mine", "w").close(), os.chown("/tmp/mine", 0, 0)))
facts["write_root"] = attempt(lambda: open("/probe", "w"))
facts["write_etc"] = attempt(lambda: open("/etc/probe", "w"))
facts["write_usr"] = attempt(lambda: open("/usr/local/bin/probe", "w"))
facts["write_harness"] = attempt(lambda: open("/opt/argusic/harness/probe", "w"))
facts["read_init_environ"] = attempt(lambda: open("/proc/1/environ").read())
facts["read_init_mem"] = attempt(lambda: open("/proc/1/mem", "rb").read(1))
facts["kill_init"] = run("kill -KILL 1; kill -TERM 1; kill -STOP 1; sleep 1; grep State /proc/1/status")
facts["network"] = attempt(lambda: socket.create_connection(("1.1.1.1", 53), timeout=2))
# What an install or a mock service needs still works, without any capability:
facts["bind_port_80"] = attempt(lambda: socket.create_server(("127.0.0.1", 80)).close())
def exec_from(folder):
    path = os.path.join(folder, "tool.sh")
    with open(path, "w") as f:
        f.write("#!/bin/sh\necho ran from " + folder + "\n")
    os.chmod(path, 0o755)
    return run(path)
facts["exec_home"] = exec_from(os.path.expanduser("~"))
facts["exec_tmp"] = exec_from("/tmp")
facts["exec_out"] = exec_from("/out")
facts["mountinfo"] = [l.split(" - ")[0].split()[4] + " " + l.split(" - ")[0].split()[5]
                      for l in open("/proc/self/mountinfo") if " /out " in l or " /workspace " in l]
with open("/out/probe.json", "w") as f:
    json.dump(facts, f)
"""


def test_privilege_probes_find_nothing(env, tmp_path):
    bare, commit = hostile_repo(tmp_path, "prober", ["python3 probe.py"], {"probe.py": PROBE})
    record, landed, _ = attempt(env, bare, commit, "prober")
    facts = json.loads((landed / "probe.json").read_text())
    assert facts["ids"] == [10001] * 4 and set(facts["groups"]) <= {10001}
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert facts[cap] == "0000000000000000", (cap, facts[cap])
    assert facts["NoNewPrivs"] == "1" and facts["Seccomp"] == "2"
    assert facts["su"][0] != 0 and facts["sudo"][0] != 0 and facts["setuid_mount"][0] != 0
    assert facts["unshare_user_ns"][0] != 0 and facts["mknod"][0] != 0
    assert "Operation not permitted" in facts["mknod"][1]
    for key in ("setuid0", "chown_to_root", "read_init_environ", "read_init_mem", "network"):
        assert facts[key][0] == "refused", (key, facts[key])
    for key in ("write_root", "write_etc", "write_usr", "write_harness"):
        assert facts[key][0] == "refused" and "Read-only file system" in facts[key][1], (key, facts[key])
    assert facts["bind_port_80"][0] == "done"  # Docker sets ip_unprivileged_port_start=0 in the netns
    assert facts["exec_home"] == [0, "ran from /home/agent"] and facts["exec_tmp"] == [0, "ran from /tmp"]
    assert facts["exec_out"][0] != 0 and "Permission denied" in facts["exec_out"][1]  # /out is noexec
    assert "State:\tS" in facts["kill_init"][1] or "State:\tR" in facts["kill_init"][1]  # still there
    assert sorted(facts["mountinfo"]) == [
        "/out rw,nosuid,nodev,noexec,noatime",
        "/workspace rw,nosuid,nodev,noatime",
    ]
    assert record.invalid_reason is None and record.end_reason == "completed"


BLIND_PROBE = r"""
import glob, json, os
seen = {"environ": dict(os.environ), "cmdlines": [], "mountinfo": open("/proc/self/mountinfo").read()}
for path in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        seen["cmdlines"].append(open(path, "rb").read().replace(b"\0", b" ").decode("utf-8", "replace"))
    except OSError:
        seen["cmdlines"].append("unreadable " + path)
with open("/etc/hostname") as f:
    seen["hostname"] = f.read()
json.dump(seen, open("/out/seen.json", "w"))
print(json.dumps(seen))
"""


def test_the_container_cannot_tell_which_attempt_it_is(env, tmp_path):
    """Issue #25: a project that knows who measures it can target one agent. Nothing inside names the
    agent, the project label, the attempt or the rerun -- environment, every process's command line,
    the mount table, the host name -- and the recording is titled on the host once landed."""
    bare, commit = hostile_repo(tmp_path, "blind", ["python3 probe.py"], {"probe.py": BLIND_PROBE})
    store = EvidenceStore((env / "evidence").as_uri())
    spec = spec_for(bare, commit, "blind", 60)
    path = run_attempt(spec, DockerExecutor(containment=small_containment()), store, env / "runs")
    record = load_record_file(path)
    seen_text = (attempt_dir(spec, env / "runs") / "out" / "seen.json").read_text()
    seen = json.loads(seen_text)
    assert seen["cmdlines"], "the probe saw no process"
    inside = seen_text + store.read(record.evidence.log.uri).decode("utf-8", "replace")
    header, _, events = recording_text(store, record).partition("\n")
    inside += events
    for tell in (spec.attempt_id, spec.label, "attempt 1", "ARGUSIC_ATTEMPT_ID", spec.cycle_id):
        assert tell not in inside, f"the container could read {tell!r}"
    assert "ARGUSIC_ATTEMPT_ID" not in seen["environ"], sorted(seen["environ"])
    # set outside, before the fingerprint: the agent's neutral identity, the project, the attempt
    assert re.fullmatch(r"Argusic agent A-[0-9a-f]{6} / blind / attempt 1", json.loads(header)["title"])
    assert record.invalid_reason is None and record.container_fault is None


FORGER = r"""
import json, os, signal, sys, time

def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])

harness = parent_of(os.getppid())  # forge.py <- the block's bash <- the harness
reach = {}
try:
    os.fstat(7)
    reach["own_fd_7"] = "open"
except OSError as err:
    reach["own_fd_7"] = err.strerror
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    for fd in ("1", "7"):
        path = f"/proc/{pid}/fd/{fd}"
        if pid in (os.getpid(), os.getppid()):
            continue  # our own terminal
        try:
            with open(path, "wb") as f:
                f.write(b"argusic-seal {\"seal\": 1, \"files\": {}}\n")
            reach[path] = "written to " + os.readlink(path)
        except FileNotFoundError:
            pass
        except OSError as err:
            reach[path] = err.strerror
reach["harness"] = harness
print("REACH " + json.dumps(reach), flush=True)

if os.fork() == 0:  # a detached forger outlives this command
    os.setsid()
    if os.fork() == 0:
        forged = {"install_ok": True, "ran_ok": True, "errors_encountered": 0, "errors_fixed": 0,
                  "test_depth": "tier1_real", "verified_how": "trust me", "final_state": "All good."}
        deadline = time.time() + 50
        while time.time() < deadline:
            try:
                with open("/out/report.json") as f:
                    real = f.read()
            except OSError:
                time.sleep(0.001)
                continue
            if '"trust me"' in real:
                break
            os.kill(harness, signal.SIGSTOP)  # the harness holds still while its report is replaced
            with open("/out/report.json.new", "w") as f:
                json.dump(forged, f)
            os.replace("/out/report.json.new", "/out/report.json")
            os.kill(harness, signal.SIGCONT)
            break
        os._exit(0)
    os._exit(0)
sys.exit(1)  # the run fails: the real report says so
"""


def test_a_report_forged_after_the_harness_wrote_it_is_a_finding_and_the_sealed_one_counts(env, tmp_path):
    """Issue #25: a detached process of the project replaces /out/report.json once the harness has
    written it (holding the harness still with SIGSTOP meanwhile). The harness sealed its report
    through PID 1, which nothing inside can write: the record keeps the sealed report (the run
    failed), the forged one stays beside it as report.landed.json, the seal names the change. And
    nothing inside reaches the channel: descriptor 7 is open in no process the project can read,
    and neither PID 1's nor the harness's descriptors can be opened through /proc."""
    bare, commit = hostile_repo(tmp_path, "forger", ["python3 forge.py"], {"forge.py": FORGER})
    record, landed, store = attempt(env, bare, commit, "forger")
    log_text = store.read(record.evidence.log.uri).decode("utf-8", "replace")
    reach = json.loads(log_text.split("REACH ", 1)[1].splitlines()[0])
    harness = reach.pop("harness")
    assert reach.pop("own_fd_7") == "Bad file descriptor"
    assert reach, "the probe saw no other process"
    # what can be written at all is /dev/null or the display's own files (Xvfb's log; since edition 8
    # the display recorder's log and its video in /out, which the agent's user can write anyway: the
    # video's limits are in docs/attempts.md): never a pipe or socket
    written = {path: how for path, how in reach.items() if how.startswith("written")}
    display_files = ("/dev/null", "/tmp/.argusic-xvfb.log", "/tmp/.argusic-video.log", "/out/display.mkv")
    assert all(how in {f"written to {f}" for f in display_files} for how in written.values()), reach
    for path in ("/proc/1/fd/1", "/proc/1/fd/7", f"/proc/{harness}/fd/1", f"/proc/{harness}/fd/7"):
        assert reach.get(path) == "Permission denied", (path, reach.get(path))
    forged = json.loads((landed / "report.landed.json").read_text())
    assert forged["verified_how"] == "trust me"  # the forgery is kept, beside the record's report
    assert record.seal.status == "altered" and record.seal.altered == ["report.json"]
    assert record.seal.report_replaced
    assert (record.report.ran_ok, record.report.test_depth) == (False, "tier3_none")
    assert json.loads((landed / "report.json").read_text())["ran_ok"] is False
    assert json.loads(store.read(record.evidence.report.uri))["ran_ok"] is False
    observed = record.observed
    assert (observed.source, observed.ran_ok, observed.verified) == ("harness", False, False)
    assert record.invalid_reason is None and record.container_fault is None


def test_an_untouched_attempt_lands_exactly_what_the_harness_sealed(env, tmp_path):
    """The seal's other side: an attempt nobody tampered with lands intact, its observation is the
    harness's, and the container's log held nothing but PID 1's seal line (no other process
    writes there)."""
    bare, commit = hostile_repo(tmp_path, "plain", ["echo hello > made.txt", "cat made.txt"])
    record, _, _ = attempt(env, bare, commit, "plain")
    assert record.seal.status == "intact" and record.seal.altered == []
    assert record.observed.source == "harness" and record.observed.ran_ok is True
    assert record.invalid_reason is None and record.container_fault is None


# -- the watchdog, two installations, SIGKILL ----------------------------------------------------------

DRIVER = r"""
import dataclasses, json, sys
from pathlib import Path
from argusic.core.spec import AttemptSpec
from argusic.attempts.run import run_attempt
from argusic.sandbox.containment import Containment
from argusic.core.evidence import EvidenceStore
from argusic.sandbox.executor import DockerExecutor
from argusic.sandbox.landing import LandingLimits

spec = AttemptSpec.model_validate_json(sys.argv[1])
base = Path(sys.argv[2])
c = Containment.from_config()
c = dataclasses.replace(c, out_bytes=32 << 20, work_bytes=64 << 20, pids_limit=64,
                        watchdog_grace_seconds=int(sys.argv[3]))
store = EvidenceStore((base / "evidence").as_uri())
print(run_attempt(spec, DockerExecutor(containment=c), store, base / "runs"))
"""


def start_driver(tmp_path: Path, env: Path, installation: str, spec: AttemptSpec) -> subprocess.Popen:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    child_env = dict(os.environ, ARGUSIC_INSTALLATION=installation, ARGUSIC_SCRATCH_DIR=str(env / "scratch"))
    return subprocess.Popen(
        [sys.executable, str(driver), spec.model_dump_json(), str(env / installation), str(GRACE)],
        env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def containers_of(installation: str, running_only: bool = False) -> list:
    import docker

    found = docker.from_env().containers.list(
        all=not running_only, filters={"label": f"{INSTALLATION_LABEL}={installation}"}
    )
    return found


def wait_for(predicate, timeout: float, step: float = 0.2):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def test_two_installations_on_one_daemon_never_touch_each_other(env, tmp_path, monkeypatch):
    bare, commit = hostile_repo(tmp_path, "sleeper", ["sleep 8", "echo done sleeping"])
    spec = spec_for(bare, commit, "sleeper", budget=60)
    one, two = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    first = start_driver(tmp_path, env, one, spec)
    assert wait_for(lambda: containers_of(one, running_only=True), 30), first.communicate()
    second = start_driver(tmp_path, env, two, spec)  # the same attempt id, another installation
    try:
        assert wait_for(lambda: containers_of(two, running_only=True), 30), second.communicate()
        names = {c.name for c in containers_of(one) + containers_of(two)}
        assert names == {container_name(spec.attempt_id, one), container_name(spec.attempt_id, two)}
        # A third installation's clean-ups, run now, see neither.
        monkeypatch.setenv("ARGUSIC_INSTALLATION", f"c-{uuid.uuid4().hex[:8]}")
        assert DockerExecutor().remove_orphans(running_attempt_ids=set(), now_epoch=time.time() + 10**6) == []
        assert sweep_debris(env / "scratch") == []
        assert containers_of(one, running_only=True) and containers_of(two, running_only=True)
    finally:
        outs = [p.communicate(timeout=120) for p in (first, second)]
    for (stdout, stderr), installation in zip(outs, (one, two), strict=True):
        record = load_record_file(Path(stdout.strip().splitlines()[-1]))
        assert (record.end_reason, record.invalid_reason) == ("completed", None), (
            installation,
            stderr[-2000:],
        )
        assert containers_of(installation) == []


def test_an_emergency_stop_and_a_cancel_end_real_attempts_and_leave_their_records(env, tmp_path):
    """Issue 26, every run on record: an attempt running in Docker is ended by an emergency stop (its
    executor polls the switch) and another by SIGTERM to its process (a task cleared in Airflow); each
    lands the log it has and gets a run record with its reason; no container or debris is left."""
    from datetime import UTC, datetime

    from argusic.core.emergency import lift_stop
    from argusic.ops.emergency import emergency_stop

    bare, commit = hostile_repo(tmp_path, "worker", ["echo started working", "sleep 300"])
    installation = os.environ["ARGUSIC_INSTALLATION"]
    spec = spec_for(bare, commit, "worker", budget=300)
    store = EvidenceStore((env / "evidence").as_uri())
    ended: list[BaseException] = []

    def run() -> None:
        try:
            run_attempt(spec, DockerExecutor(containment=small_containment()), store, env / "runs")
        except BaseException as err:  # noqa: BLE001 - the stop is the test's subject
            ended.append(err)

    import threading

    worker = threading.Thread(target=run)
    worker.start()
    assert wait_for(lambda: containers_of(installation, running_only=True), 60)
    time.sleep(3)  # the harness at work
    at = datetime(2026, 12, 3, 1, 30, tzinfo=UTC)
    report = emergency_stop(by="ops-carol", reason="incident 12", at=at, cycle="hostile", wait_seconds=30)
    worker.join(60)
    assert not worker.is_alive() and type(ended[0]).__name__ == "EmergencyStopInForce", ended
    assert report.ended_by_executor == [container_name(spec.attempt_id, installation)]
    assert report.removed == []
    record = load_record_file(attempt_dir(spec, env / "runs") / "run_record.json")
    assert record.end_reason == "emergency_stop"
    assert "by ops-carol at 2026-12-03T01:30:00+00:00: incident 12" in record.invalid_reason
    assert record.evidence.log is not None and b"started working" in store.read(record.evidence.log.uri)
    assert record.evidence.recording is not None and record.report is None
    assert_no_debris(env, installation)
    lift_stop(by="ops-carol", reason="incident 12 closed", at=at)

    # a cancel: SIGTERM to the process running the attempt, as Airflow sends it to a cleared task
    other = f"c-{uuid.uuid4().hex[:8]}"
    cancelled_spec = spec_for(bare, commit, "worker2", budget=300)
    proc = start_driver(tmp_path, env, other, cancelled_spec)
    assert wait_for(lambda: containers_of(other, running_only=True), 60), proc.communicate()
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "AttemptCancelled" in stderr, stderr[-2000:]
    record = load_record_file(attempt_dir(cancelled_spec, env / other / "runs") / "run_record.json")
    assert record.end_reason == "cancelled" and "signal 15 (SIGTERM)" in record.invalid_reason
    other_store = EvidenceStore((env / other / "evidence").as_uri())
    assert b"started working" in other_store.read(record.evidence.log.uri)
    assert wait_for(lambda: not containers_of(other), 20)
    assert_no_debris(env, other)


@pytest.mark.parametrize("seed", [11, 23, 37, 41])
def test_sigkill_at_a_random_point_leaves_nothing_running_or_behind(env, tmp_path, seed):
    """The orchestrator is killed with SIGKILL at a random moment (setting up, running, landing);
    its reaper removes the container and the areas at once; nothing runs past budget + grace."""
    budget = 6.0
    bare, commit = hostile_repo(tmp_path, "hang", ["sleep 600"])
    spec = spec_for(bare, commit, "hang", budget)
    installation = f"k-{uuid.uuid4().hex[:8]}"
    delay = random.Random(seed).uniform(0.3, budget + 4)
    proc = start_driver(tmp_path, env, installation, spec)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    nothing_running = wait_for(lambda: not containers_of(installation, running_only=True),
                               _past_budget_and_grace(installation))  # fmt: skip
    assert nothing_running, f"seed {seed}: killed after {delay:.2f} s, a container runs past budget + grace"
    gone = wait_for(lambda: _clean(env, installation), 30)
    assert gone, f"seed {seed}: killed after {delay:.2f} s: debris {_debris(env, installation)}"


def test_sigkill_of_orchestrator_and_reaper_the_watchdog_ends_the_container(env, tmp_path, monkeypatch):
    """Both killed: the container's own PID 1 ends it at budget + grace; the sweep then removes
    its mounts, loop devices, images and the container."""
    budget = 6.0
    bare, commit = hostile_repo(tmp_path, "hang", ["sleep 600"])
    spec = spec_for(bare, commit, "hang", budget)
    installation = f"w-{uuid.uuid4().hex[:8]}"
    proc = start_driver(tmp_path, env, installation, spec)
    assert wait_for(lambda: containers_of(installation, running_only=True), 30), proc.communicate()
    (owner,) = [json.loads(p.read_text()) for p in (env / "scratch").glob(f"{installation}--*/owner.json")]
    os.kill(owner["reaper_pid"], signal.SIGKILL)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert containers_of(installation, running_only=True)  # nobody of ours is left to stop it...
    stopped = wait_for(lambda: not containers_of(installation, running_only=True),
                       _past_budget_and_grace(installation))  # fmt: skip
    assert stopped, "the watchdog did not end the container at budget + grace"
    (container,) = containers_of(installation)
    assert container.attrs["State"]["ExitCode"] == 124  # the watchdog's own status
    assert mounts_under(env / "scratch")  # ...and its areas are still mounted until the sweep
    monkeypatch.setenv("ARGUSIC_INSTALLATION", installation)
    assert len(sweep_debris(env / "scratch")) == 1
    assert _clean(env, installation), _debris(env, installation)


def _past_budget_and_grace(installation: str, slack: float = 2.0) -> float:
    """Seconds from now until the latest container of the installation is past its budget (its
    deadline label) plus the watchdog's grace, plus a little slack for Docker to notice."""
    deadlines = [float(c.labels["argusic.deadline"]) for c in containers_of(installation)]
    if not deadlines:
        return 5.0  # none yet: a start request in flight when we were killed is given a moment
    return max(0.0, max(deadlines) + GRACE + slack - time.time())


def _debris(env: Path, installation: str) -> dict:
    scratch = env / "scratch"
    return {
        "containers": [c.name for c in containers_of(installation)],
        "mounts": [str(m) for m in mounts_under(scratch)],
        "loops": loops_backed_by(str(scratch)),
        "folders": [p.name for p in scratch.glob(f"{installation}--*")],
    }


def _clean(env: Path, installation: str) -> bool:
    return not any(_debris(env, installation).values())


def test_labels_and_names_carry_the_installation(env, tmp_path):
    import docker

    bare, commit = hostile_repo(tmp_path, "quick", ["sleep 2"])
    spec = spec_for(bare, commit, "quick", 60)
    installation = os.environ["ARGUSIC_INSTALLATION"]
    seen = {}

    def look():
        for c in docker.from_env().containers.list(filters={"label": f"{LABEL}={spec.attempt_id}"}):
            seen[c.name] = c.labels
        return seen

    import threading

    watcher = threading.Thread(target=lambda: wait_for(look, 30))
    watcher.start()
    attempt(env, bare, commit, "quick")
    watcher.join()
    assert list(seen) == [f"argusic-{installation}-{spec.attempt_id}"]
    assert seen[f"argusic-{installation}-{spec.attempt_id}"][INSTALLATION_LABEL] == installation
    # the try's own scratch folder, so that its clean-up can tell its container from a retry's
    assert seen[f"argusic-{installation}-{spec.attempt_id}"]["argusic.scratch"].startswith(
        f"{installation}--"
    )
    assert_no_debris(env, installation)


def test_the_clean_up_of_a_killed_try_never_removes_a_retrys_container_of_the_same_name(env) -> None:
    """Issue 33: a worker is lost mid-attempt; the attempt is retried on another worker under the same
    container name; then the lost worker is started again and its first attempt sweeps the killed
    try's scratch folder. The sweep removes the folder, and the container of that name only if it is
    the killed try's own: the retry's, running elsewhere, is kept (it was removed by name, and the
    retry was recorded invalid and rerun)."""
    from argusic.core.settings import runner_image
    from argusic.sandbox.containment import OWNER_FILE, SCRATCH_LABEL, AttemptScratch

    import docker

    installation = os.environ["ARGUSIC_INSTALLATION"]
    attempt_id = "lost.board.readme-runner.banner-sh.a1"
    name = container_name(attempt_id, installation)
    killed = AttemptScratch.new(attempt_id, env / "scratch").create(container=name)
    owner = json.loads((killed.path / OWNER_FILE).read_text())
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid names no process of that start time any more: the owner is gone
    owner.update(pid=dead.pid, start="0", reaper_pid=None, reaper_start=None)
    (killed.path / OWNER_FILE).write_text(json.dumps(owner))
    client = docker.from_env()
    labels = {LABEL: attempt_id, INSTALLATION_LABEL: installation, SCRATCH_LABEL: f"{installation}--retry"}
    retry = client.containers.run(
        runner_image(), ["sleep", "60"], name=name, labels=labels, detach=True, network_disabled=True
    )
    try:
        assert sweep_debris(env / "scratch") == [killed.path.name]
        retry.reload()
        assert retry.status == "running", "the sweep removed the retry's container"
        # the killed try's own container (its scratch name on it) is still removed by its sweep
        retry.remove(force=True)
        killed = AttemptScratch.new(attempt_id, env / "scratch").create(container=name)
        (killed.path / OWNER_FILE).write_text(json.dumps(owner | {"container": name}))
        own = client.containers.run(
            runner_image(), ["sleep", "60"], name=name, detach=True, network_disabled=True,
            labels=labels | {SCRATCH_LABEL: killed.path.name},
        )  # fmt: skip
        assert sweep_debris(env / "scratch") == [killed.path.name]
        with pytest.raises(docker.errors.NotFound):
            own.reload()
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            client.containers.get(name).remove(force=True)


def test_helper_containers_keep_a_capped_log_or_none():
    """dockerd's log of a helper container (render, judge, repair grader) as the Docker API shows it:
    one json-file capped at HELPER_LOG_BYTES by default, none where nothing reads it."""
    import docker

    client = docker.from_env()
    capped = {"Type": "json-file", "Config": {"max-file": "1", "max-size": f"{HELPER_LOG_BYTES // 1024}k"}}
    for log_bytes, expected in ((HELPER_LOG_BYTES, capped), (None, {"Type": "none", "Config": {}})):
        options = locked_container_options(
            tmpfs={"/tmp": "rw,size=1m"}, volumes={}, working_dir="/tmp", environment={}, memory="64m",
            pids=16, cpus=0.5, log_bytes=log_bytes,
        )  # fmt: skip
        container = client.containers.create(
            runner_image(), ["true"], name=f"argusic-logtest-{uuid.uuid4().hex[:8]}", **options
        )
        try:
            assert container.attrs["HostConfig"]["LogConfig"] == expected
        finally:
            container.remove(force=True)
    default = locked_container_options(
        tmpfs={}, volumes={}, working_dir="/tmp", environment={}, memory="64m", pids=16, cpus=0.5
    )
    assert default["log_config"]["config"] == {"max-size": f"{HELPER_LOG_BYTES // 1024}k", "max-file": "1"}
    with pytest.raises(ValueError, match="at least 1 MiB"):
        locked_container_options(
            tmpfs={}, volumes={}, working_dir="/tmp", environment={}, memory="64m", pids=16, cpus=0.5,
            log_bytes=4096,
        )  # fmt: skip
