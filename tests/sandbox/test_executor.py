"""Executors: pinned commit only, limits, network off, killed at the budget, container removed.

A stand-in harness (a small script in place of readme_runner.py) reports what it sees from inside,
so these tests exercise the executor, not the agent.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from argusic.sandbox import executor as executor_mod
from argusic.sandbox.executor import DockerExecutor, LocalExecutor, docker_available

PROBE = r"""
import json, os, socket, subprocess, sys, time
args = sys.argv[1:]
project = args[args.index("--project") + 1]
out = args[args.index("--out") + 1]
mode = open(os.path.join(project, "MODE")).read().strip()
facts = {"args": args}
facts["commits"] = subprocess.run(["git", "-C", project, "rev-list", "--count", "HEAD"],
                                  capture_output=True, text=True).stdout.strip()
facts["head"] = subprocess.run(["git", "-C", project, "rev-parse", "HEAD"],
                               capture_output=True, text=True).stdout.strip()
try:
    socket.create_connection(("1.1.1.1", 53), timeout=1).close()
    facts["network"] = "reachable"
except OSError as err:
    facts["network"] = f"unreachable: {err.__class__.__name__}"
# cgroup v2 file first, then v1 (Debian's dockerd may run either).
for name, paths in (("pids_max", ["/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"]),
                    ("memory_max", ["/sys/fs/cgroup/memory.max",
                                    "/sys/fs/cgroup/memory/memory.limit_in_bytes"]),
                    ("cpu_quota", ["/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"])):
    facts[name] = None
    for path in paths:
        try:
            facts[name] = open(path).read().split()[0]
            break
        except OSError:
            pass
if mode == "artifact":  # a page in the project folder, a link named like one, a forged /out/artifacts
    os.makedirs(os.path.join(project, "site"))
    with open(os.path.join(project, "site", "index.html"), "w") as page:
        page.write("<html><body>made in the attempt</body></html>")
    os.symlink("/etc/passwd", os.path.join(project, "leak.html"))
    os.makedirs(os.path.join(out, "artifacts"))
    with open(os.path.join(out, "artifacts", "forged.html"), "w") as forged:
        forged.write("not from the project")
    with open(os.path.join(project, "MODE"), "a") as changed:  # the agent's change to a tracked file
        changed.write("fixed by the agent\n")
    with open(os.path.join(out, "changes.patch"), "w") as forged:
        forged.write("forged changes")
if mode == "flood":  # 32 MiB into the harness's stdout: dockerd's log of the container, on the host
    chunk = b"x" * (1 << 20)
    for _ in range(32):
        os.write(1, chunk)
    open(os.path.join(out, "flooded"), "w").close()
with open(os.path.join(out, "log.txt"), "w") as log:
    log.write("started\n"); log.flush()
    if mode == "hang":
        while True:
            log.write("still working\n"); log.flush(); time.sleep(0.2)
with open(os.path.join(out, "facts.json"), "w") as f:
    json.dump(facts, f)
sys.exit(3 if mode == "crash" else 0)
"""


def _git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid", "HOME": str(cwd), "PATH": "/usr/bin:/bin",
    }  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def probe_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    harness = tmp_path / "harness"
    harness.mkdir()
    (harness / "readme_runner.py").write_text(PROBE)
    monkeypatch.setattr(executor_mod, "HARNESS_DIR", harness)
    return harness


def make_repo(tmp_path: Path, mode: str) -> tuple[Path, str]:
    """A bare repo with two commits; the pinned one is the second."""
    work = tmp_path / f"src-{mode}"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    (work / "MODE").write_text("old\n")
    _git(work, "add", "."), _git(work, "commit", "-qm", "first")
    (work / "MODE").write_text(mode + "\n")
    _git(work, "commit", "-qam", "second")
    bare = tmp_path / f"{mode}.git"
    _git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    _git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    return bare, _git(work, "rev-parse", "HEAD").strip()


needs_docker = pytest.mark.skipif(not docker_available(), reason="no Docker daemon answers")


def _executors():
    return [
        pytest.param("local", id="local"),
        pytest.param("docker", id="docker", marks=[pytest.mark.docker, pytest.mark.slow, needs_docker]),
    ]


def _make(name: str):
    return DockerExecutor() if name == "docker" else LocalExecutor()


@pytest.mark.parametrize("name", _executors())
def test_fetches_only_the_pinned_commit(name, tmp_path, probe_harness):
    repo, commit = make_repo(tmp_path, "ok")
    result = _make(name).run(
        attempt_id="t.ok", repo_path=repo, commit=commit, harness_args=["--x"], out_dir=tmp_path / "out",
        budget_seconds=60,
    )  # fmt: skip
    assert (result.exit_code, result.timed_out, result.error) == (0, False, None)
    assert result.executor == name
    facts = json.loads((tmp_path / "out" / "facts.json").read_text())
    assert facts["head"] == commit and facts["commits"] == "1"  # no history
    assert facts["args"][-1] == "--x"


@pytest.mark.parametrize("name", _executors())
def test_killed_at_budget_keeps_evidence_so_far(name, tmp_path, probe_harness):
    repo, commit = make_repo(tmp_path, "hang")
    result = _make(name).run(
        attempt_id="t.hang", repo_path=repo, commit=commit, harness_args=[], out_dir=tmp_path / "out",
        budget_seconds=3,
    )  # fmt: skip
    assert result.timed_out and result.exit_code is None and result.error is None
    assert 2.5 <= (result.ended_at - result.started_at).total_seconds() < 30
    # issue 29: the agent's time is the budget clock's, within the wall time; the rest is our overhead
    agent = (result.agent_ended_at - result.agent_started_at).total_seconds()
    assert result.started_at <= result.agent_started_at <= result.agent_ended_at <= result.ended_at
    assert 3 <= agent < 3 + 2  # killed at the 3 s budget (polled every 0.2 s)
    log = (tmp_path / "out" / "log.txt").read_text()
    assert log.startswith("started\n") and "still working" in log


@pytest.mark.parametrize("name", _executors())
def test_unfetchable_commit_is_our_tooling_error(name, tmp_path, probe_harness):
    repo, _ = make_repo(tmp_path, "ok")
    result = _make(name).run(
        attempt_id="t.bad", repo_path=repo, commit="f" * 40, harness_args=[], out_dir=tmp_path / "out",
        budget_seconds=60,
    )  # fmt: skip
    assert result.error and "could not fetch pinned commit" in result.error, result


@pytest.mark.docker
@pytest.mark.slow
@needs_docker
def test_docker_isolation_limits_and_cleanup(tmp_path, probe_harness):
    import docker

    repo, commit = make_repo(tmp_path, "crash")
    runner = DockerExecutor()
    result = runner.run(
        attempt_id="t.iso", repo_path=repo, commit=commit, harness_args=[], out_dir=tmp_path / "out",
        budget_seconds=60,
    )  # fmt: skip
    assert result.exit_code == 3 and not result.timed_out
    facts = json.loads((tmp_path / "out" / "facts.json").read_text())
    assert facts["network"].startswith("unreachable")
    assert facts["pids_max"] == "512"
    assert facts["memory_max"] == str(2 * 1024**3)
    assert facts["cpu_quota"] == "100000"  # 1 CPU per 100 ms period
    client = docker.from_env()
    assert client.containers.list(all=True, filters={"label": "argusic.attempt_id=t.iso"}) == []


@pytest.mark.docker
@pytest.mark.slow
@needs_docker
def test_orphaned_containers_are_removed_ours_only(tmp_path):
    from argusic.core.settings import installation_id

    runner = DockerExecutor()
    ours, theirs = installation_id(), "someone-else"

    def start(attempt: str, deadline: str, installation: str):
        labels = {
            "argusic.attempt_id": attempt,
            "argusic.deadline": deadline,
            "argusic.installation": installation,
        }
        return runner.client.containers.run(
            runner.image, ["sleep", "300"], detach=True, labels=labels, network_mode="none"
        )

    orphan, live = start("t.orphan", "1000", ours), start("t.live", "5000", ours)
    foreign = start("t.orphan", "1000", theirs)  # same attempt id, another installation's
    try:
        # Past its deadline + grace: removed; within its budget: kept.
        assert runner.remove_orphans(now_epoch=1400, attempt_prefix="t.") == [orphan.name]
        assert runner.client.containers.get(live.name).status == "running"
        # A crashed worker's attempt that is no longer running: removed whatever its deadline.
        assert runner.remove_orphans(running_attempt_ids={"t.other"}, attempt_prefix="t.") == [live.name]
        # Another installation's container on the same daemon is never touched.
        assert runner.client.containers.get(foreign.name).status == "running"
    finally:
        import contextlib

        for container in (orphan, live, foreign):
            with contextlib.suppress(Exception):
                container.remove(force=True)


@pytest.mark.parametrize("name", _executors())
def test_artifacts_of_the_project_folder_land_in_out_artifacts(name, tmp_path, probe_harness, caplog):
    """The stand-in harness writes an HTML page into the project folder (/workspace/project in the
    container): it lands in out/artifacts once the container is gone. A link named like a page is
    refused by name without making the attempt invalid, and what the harness wrote into
    /out/artifacts is not taken for the project's artifacts."""
    repo, commit = make_repo(tmp_path, "artifact")
    out = tmp_path / "out"
    with caplog.at_level("WARNING", logger="argusic.sandbox.executor"):
        result = _make(name).run(
            attempt_id="t.art", repo_path=repo, commit=commit, harness_args=[], out_dir=out,
            budget_seconds=60, artifacts=["*.html", "site/**/*.html"], changes=True,
        )  # fmt: skip
    assert (result.exit_code, result.error, result.refused) == (0, None, None)
    assert result.artifacts == ("site/index.html",)
    assert result.artifacts_refused == ("leak.html is a symbolic link",)
    assert "t.art: artifact refused: leak.html is a symbolic link" in caplog.text
    landed = sorted(p.relative_to(out).as_posix() for p in (out / "artifacts").rglob("*") if p.is_file())
    assert landed == ["artifacts/site/index.html"]
    assert (
        out / "artifacts" / "site" / "index.html"
    ).read_text() == "<html><body>made in the attempt</body></html>"
    assert json.loads((out / "facts.json").read_text())["head"] == commit  # /out landed as before
    # the agent's changes against the pinned commit (argusic.sandbox.changes), never the harness's own file
    changes = (out / "changes.patch").read_text()
    assert "forged" not in changes and "root:" not in changes  # leak.html is a link: never read
    assert "diff --git a/MODE b/MODE" in changes and "+fixed by the agent" in changes
    assert "diff --git a/site/index.html b/site/index.html\nnew file mode 100644" in changes


def test_bad_artifact_globs_are_refused_before_anything_runs(tmp_path, probe_harness):
    repo, commit = make_repo(tmp_path, "ok")
    with pytest.raises(
        ValueError, match=r"artifact glob '\.\./x\.html': '\.\.' would leave the project folder"
    ):
        LocalExecutor().run(
            attempt_id="t.glob", repo_path=repo, commit=commit, harness_args=[], out_dir=tmp_path / "out",
            budget_seconds=60, artifacts=["../x.html"],
        )  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_unknown_executor_name_is_refused():
    with pytest.raises(ValueError, match="ARGUSIC_EXECUTOR='podman'"):
        executor_mod.get_executor("podman")


LOCAL_DRIVER = r"""
import sys, time
from pathlib import Path
from argusic.sandbox import containment, executor as executor_mod
from argusic.sandbox.executor import LocalExecutor
executor_mod.HARNESS_DIR = Path(sys.argv[1])
if sys.argv[5] == "slow-watch":  # widen the window between starting the harness and telling the reaper
    told = containment.Reaper.watch_group
    containment.Reaper.watch_group = lambda self, pgid: (time.sleep(5), told(self, pgid))
LocalExecutor().run(attempt_id="t.killed", repo_path=Path(sys.argv[2]), commit=sys.argv[3], harness_args=[],
                    out_dir=Path(sys.argv[4]), budget_seconds=600)
"""


@pytest.mark.parametrize("when", ["while-running", "slow-watch"])
def test_local_executor_killed_with_sigkill_leaves_no_process_or_folder(tmp_path, probe_harness, when):
    """The local harness runs in its own session: when the orchestrator dies, its reaper kills the
    harness's process group and deletes the scratch folder. slow-watch: killed after the harness was
    started but before the reaper was told its group (a CI run once left the harness running so); the
    harness waits at a gate until then and leaves when the orchestrator dies."""
    import os
    import signal
    import sys
    import time

    repo, commit = make_repo(tmp_path, "hang")
    scratch = tmp_path / "scratch"
    driver = tmp_path / "driver.py"
    driver.write_text(LOCAL_DRIVER)
    env = dict(os.environ, ARGUSIC_SCRATCH_DIR=str(scratch))
    proc = subprocess.Popen(
        [sys.executable, str(driver), str(probe_harness), str(repo), commit, str(tmp_path / "out"), when],
        env=env,
    )

    def harness_processes() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    cmdline = (entry / "cmdline").read_bytes()
                    if str(scratch).encode() in cmdline and b"argusic.sandbox.containment" not in cmdline:
                        found.append(int(entry.name))  # the harness (bash, python), not the reaper
                except OSError:
                    pass
        return found

    end = time.monotonic() + 30
    while not harness_processes() and time.monotonic() < end:
        time.sleep(0.1)
    assert harness_processes(), "the harness never started"
    if when == "slow-watch":
        time.sleep(2.5)  # still before the reaper is told; time enough for an ungated harness to start
        assert proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    end = time.monotonic() + 15
    while (harness_processes() or any(scratch.iterdir())) and time.monotonic() < end:
        time.sleep(0.1)
    assert harness_processes() == [] and list(scratch.iterdir()) == []


def test_the_container_sees_the_pinned_commit_alone(tmp_path):
    """The source bound into an attempt container holds the pinned commit and nothing of the rest of
    the project's history (a later commit could hold the fix the agent is asked to find)."""
    from argusic.sandbox.executor import single_commit_source

    bare, second = make_repo(tmp_path, "history")
    first = _git(bare, "rev-parse", f"{second}~1").strip()
    dest = tmp_path / "source"
    assert single_commit_source(bare, first, dest) is None
    assert _git(dest, "rev-list", "--all").split() == [first]
    assert subprocess.run(["git", "-C", str(dest), "cat-file", "-e", second]).returncode != 0
    problem = single_commit_source(bare, "0" * 40, tmp_path / "missing")
    assert problem is not None and problem.startswith(f"could not fetch pinned commit {'0' * 40} from {bare}")


def test_the_orphan_grace_is_five_minutes_unless_set_and_a_bad_value_is_refused(monkeypatch) -> None:
    from argusic.sandbox.executor import ORPHAN_GRACE_SECONDS, orphan_grace_seconds

    monkeypatch.delenv("ARGUSIC_ORPHAN_GRACE_SECONDS", raising=False)
    assert orphan_grace_seconds() == ORPHAN_GRACE_SECONDS == 300
    monkeypatch.setenv("ARGUSIC_ORPHAN_GRACE_SECONDS", "30")
    assert orphan_grace_seconds() == 30
    for bad in ("-1", "1.5", "soon", "99999999"):
        monkeypatch.setenv("ARGUSIC_ORPHAN_GRACE_SECONDS", bad)
        with pytest.raises(ValueError, match="ARGUSIC_ORPHAN_GRACE_SECONDS"):
            orphan_grace_seconds()


# --- never fail open (issue 25): the executor is what the configuration says ----------------------


@pytest.fixture
def stopped_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A Docker daemon that does not answer: DOCKER_HOST names a socket nobody listens on (the real
    dockerd is never stopped). No executor is named."""
    host = f"unix://{tmp_path}/no-dockerd.sock"
    monkeypatch.setenv("DOCKER_HOST", host)
    monkeypatch.delenv("ARGUSIC_EXECUTOR", raising=False)
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(tmp_path / "scratch"))
    assert not docker_available()
    return host


def test_a_stopped_daemon_never_chooses_the_local_executor(stopped_daemon):
    """Before: no answer to a 3 s ping picked the local executor (the README ran on the host)."""
    for demo in (False, True):
        chosen = executor_mod.get_executor(demo=demo)
        assert isinstance(chosen, DockerExecutor) and chosen.name == "docker"
    assert executor_mod.executor_name() == "docker"


def test_the_local_executor_runs_only_when_named_and_only_for_a_demo(stopped_daemon, monkeypatch):
    with pytest.raises(executor_mod.ExecutorRefused, match="demo cycles only.*start dockerd"):
        executor_mod.get_executor("local")
    monkeypatch.setenv("ARGUSIC_EXECUTOR", "local")
    with pytest.raises(executor_mod.ExecutorRefused, match="ARGUSIC_EXECUTOR=local"):
        executor_mod.get_executor(demo=False)
    assert isinstance(executor_mod.get_executor(demo=True), LocalExecutor)
    assert isinstance(executor_mod.get_executor("local", demo=True), LocalExecutor)
    monkeypatch.setenv("ARGUSIC_EXECUTOR", "docker")
    assert isinstance(executor_mod.get_executor(demo=True), DockerExecutor)  # named docker: docker


def test_an_attempt_with_an_unreachable_daemon_fails_as_ours(stopped_daemon, tmp_path):
    """Not raised past the record, not run elsewhere: an executor error naming the daemon and how
    to fix it, so that the record is invalid and the attempt rerun."""
    repo, commit = make_repo(tmp_path, "ok")
    result = DockerExecutor().run(
        attempt_id="t.nodaemon", repo_path=repo, commit=commit, harness_args=[], out_dir=tmp_path / "out",
        budget_seconds=60,
    )  # fmt: skip
    assert result.executor == "docker" and result.exit_code is None and not result.timed_out
    assert result.error is not None
    assert result.error.startswith(f"the Docker daemon did not answer at {stopped_daemon}")
    assert "start dockerd" in result.error and "never falls back to the host" in result.error
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.docker
@needs_docker
def test_an_attempt_writing_into_its_stdout_leaves_no_log_on_the_host(tmp_path, probe_harness):
    """Before: dockerd's json-file log of the attempt container grew with whatever the attempt wrote
    into the harness's stdout (1 GiB in 23 s), uncapped, on the host's disk. Now the harness's stdout
    is /dev/null (PID 1 alone writes the container's output: the seal) and the log is capped."""
    import docker

    repo, commit = make_repo(tmp_path, "flood")
    runner = DockerExecutor()
    seen: dict = {}

    def inspect_while_running(out_area: Path):
        deadline = time.monotonic() + 90
        while not (out_area / "flooded").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        # all=True: the harness may have exited once "flooded" is there (the executor removes the
        # container only after this returns)
        (container,) = docker.from_env().containers.list(
            all=True, filters={"label": f"{executor_mod.LABEL}=t.flood"}
        )
        seen["log_config"] = container.attrs["HostConfig"]["LogConfig"]
        log_path = container.attrs.get("LogPath") or ""
        seen["log_bytes"] = Path(log_path).stat().st_size if log_path and Path(log_path).exists() else 0
        return lambda: None

    result = runner.run(
        attempt_id="t.flood", repo_path=repo, commit=commit, harness_args=[], out_dir=tmp_path / "out",
        budget_seconds=120, watch=inspect_while_running,
    )  # fmt: skip
    assert (result.exit_code, result.error) == (0, None)
    assert (tmp_path / "out" / "flooded").exists()  # the 32 MiB were written
    assert seen["log_bytes"] == 0  # before: 33.7 MB of json-file log for the 32 MiB
    assert seen["log_config"] == {"Type": "json-file", "Config": {"max-file": "1", "max-size": "1024k"}}
