"""The attempt transaction: evidence landed with fingerprints, run record written, resumable; every
way our own tooling can fail kept as an invalid attempt with its reason (then rerun), and every way
the container can cut its own measurement kept as a measured failure (never rerun: issue #25)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import pytest
from argusic.attempts.environment import read_pin
from argusic.attempts.identity import configuration_from_pin
from argusic.attempts.run import run_attempt
from argusic.core.evidence import EvidenceStore
from argusic.core.record import load_record_file
from argusic.core.spec import AttemptSpec
from argusic.cycle.run import run_with_reruns
from argusic.sandbox import executor as executor_mod
from argusic.sandbox.executor import LocalExecutor
from scripted_seal import SEAL_PROLOGUE
from test_executor import make_repo

# Behaviour is chosen by the MODE file of the fixture repo.
SCRIPTED = (
    SEAL_PROLOGUE
    + r"""
import json, os, sys, time
args = sys.argv[1:]
project, out = args[args.index("--project") + 1], args[args.index("--out") + 1]
_seal_at_exit(out)
mode = open(os.path.join(project, "MODE")).read().strip()
def write(name, text):
    with open(os.path.join(out, name), "w") as f:
        f.write(text)
write("log.txt", "step 1\n")
if mode != "norecording":
    title = args[args.index("--title") + 1] if "--title" in args else None
    header = json.dumps({"version": 2, "width": 80, "height": 24, "title": title})
    write("recording.cast", header + '\n[0.1, "o", "hi"]\n')
if mode == "printkey":  # an untrusted project talks the agent into printing its environment
    key = os.environ.get("OPENAI_API_KEY", "")
    write("log.txt", f"step 1\nOPENAI_API_KEY={key}\n")
    header = '{"version": 2, "width": 80, "height": 24}\n'
    write("recording.cast", header + json.dumps([0.1, "o", key]) + "\n")
if mode == "garbagecast":  # the project overwrites the recording with what no player can read
    write("recording.cast", "not asciicast\n")
if mode == "page":  # the project made a page: an artifact when the task's globs match it
    with open(os.path.join(project, "index.html"), "w") as f:
        f.write("<html><body>made</body></html>")
if mode == "hang":
    time.sleep(600)
if mode == "crash":
    sys.exit(2)
report = {"install_ok": True, "ran_ok": True, "errors_encountered": 1, "errors_fixed": 1,
          "test_depth": "tier1_real", "verified_how": "python3 decode.py -> 10 frames",
          "final_state": "Decoded 10 frames."}
if mode == "badreport":
    write("report.json", "{not json")
elif mode == "flaky" and not os.path.exists(os.path.join(out, "..", "..", "flaky-once")):
    open(os.path.join(out, "..", "..", "flaky-once"), "w").close()
    sys.exit(5)
else:
    write("report.json", json.dumps(report))
"""
)


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    harness = tmp_path / "harness"
    harness.mkdir()
    (harness / "readme_runner.py").write_text(SCRIPTED)
    monkeypatch.setattr(executor_mod, "HARNESS_DIR", harness)
    # The harness's output folder is <scratch>/<attempt>/out: "flaky" keeps its marker two levels up.
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(tmp_path / "scratch"))


def _spec(repo: Path, commit: str, project: str = "p", **over) -> AttemptSpec:
    fields = dict(
        cycle_id="2026-12", agent_id="readme-runner", project_id=project, repo_url=str(repo), commit=commit,
        tier="standard", attempt_no=1,
        demo=True,  # the local executor runs demo cycles only; budget_scale 1 keeps the real budgets
    )  # fmt: skip
    return AttemptSpec(**(fields | over))


def _run(tmp_path: Path, mode: str, **over) -> tuple[Path, EvidenceStore]:
    repo, commit = make_repo(tmp_path, mode)
    store = EvidenceStore((tmp_path / "evidence").as_uri())
    path = run_attempt(_spec(repo, commit, mode, **over), LocalExecutor(), store, tmp_path / "runs")
    return path, store


def test_completed_attempt_lands_fingerprinted_evidence(tmp_path, scripted):
    path, store = _run(tmp_path, "ok")
    record = load_record_file(path)
    assert path == tmp_path / "runs" / "2026-12" / record.attempt_id / "run_record.json"
    assert (record.end_reason, record.invalid_reason, record.executor) == ("completed", None, "local")
    assert record.report.test_depth == "tier1_real" and record.budget_seconds == 5400
    for name in ("log", "recording", "report"):
        ref = getattr(record.evidence, name)
        data = store.read(ref.uri)
        assert hashlib.sha256(data).hexdigest() == ref.sha256 and len(data) == ref.bytes
    assert record.usage.input_tokens.status == "unavailable" and record.usage.input_tokens.value is None
    # The recording is titled on the host: the agent's neutral identity (never the operator's agent
    # id, issue 32), project and attempt; the identity is its configuration's, as the cycle's pin has it.
    header = json.loads(store.read(record.evidence.recording.uri).splitlines()[0])
    pin = read_pin("2026-12", tmp_path / "runs")
    assert pin is not None and set(pin.agents) == {"readme-runner"}
    name = configuration_from_pin(pin, "readme-runner").identity.name
    assert re.fullmatch(r"Argusic agent A-[0-9a-f]{6}", name)
    assert header["title"] == f"{name} / ok / attempt 1"


def test_existing_record_is_not_measured_again(tmp_path, scripted):
    path, _ = _run(tmp_path, "ok")
    before = path.read_text()
    repo, commit = tmp_path / "ok.git", load_record_file(path).commit
    again = run_attempt(_spec(repo, commit, "ok"), LocalExecutor(), EvidenceStore((tmp_path / "e2").as_uri()),
                        tmp_path / "runs")  # fmt: skip
    assert again == path and path.read_text() == before


@pytest.mark.parametrize(
    ("mode", "end_reason", "reason"),
    [
        ("crash", "harness_error", "harness exited with code 2"),
        ("badreport", "completed", "report unreadable"),
        ("norecording", "completed", "incomplete evidence: no recording"),
    ],
)
def test_what_the_container_cuts_is_a_measured_failure_not_invalid(
    tmp_path, scripted, mode, end_reason, reason
):
    """The harness killed from inside, a report it cannot read, a recording deleted: all within reach
    of the project and the agent. Were they invalid (rerun, and a set without three valid runs left
    off the board), the code under test would hold a veto over its own result."""
    path, _ = _run(tmp_path, mode)
    record = load_record_file(path)
    assert record.end_reason == end_reason
    assert record.invalid_reason is None
    assert record.container_fault is not None and record.container_fault.startswith(reason)


def test_timeout_record_keeps_partial_evidence_and_real_budget(tmp_path, scripted):
    path, store = _run(tmp_path, "hang", demo=True, budget_scale=2 / 5400)
    record = load_record_file(path)
    assert record.end_reason == "timeout" and record.invalid_reason is None and record.report is None
    assert record.budget_seconds == 5400 and record.effective_budget_seconds == 2 and record.demo
    assert store.read(record.evidence.recording.uri).startswith(b'{"version": 2')


class DaemonLost(LocalExecutor):
    """Our tooling failing: the first `fail_times` runs end with an executor error (the Docker daemon
    lost mid-attempt), then the attempt runs."""

    def __init__(self, fail_times: int) -> None:
        super().__init__()
        self.fail_times = fail_times

    def run(self, *args, **kwargs):
        result = super().run(*args, **kwargs)
        if self.fail_times > 0:
            self.fail_times -= 1
            return dataclasses.replace(result, error="the Docker daemon stopped answering")
        return result


def test_invalid_attempt_is_rerun_until_valid(tmp_path, scripted):
    repo, commit = make_repo(tmp_path, "ok")
    store = EvidenceStore((tmp_path / "evidence").as_uri())
    paths = run_with_reruns(_spec(repo, commit, "ok"), DaemonLost(1), store, tmp_path / "runs")
    first, second = (load_record_file(p) for p in paths)
    assert first.invalid_reason == "executor error: the Docker daemon stopped answering"
    assert first.container_fault is None
    assert second.invalid_reason is None and second.rerun_of == first.attempt_id
    assert second.attempt_no == first.attempt_no and second.attempt_id.endswith(".a1.r1")


def test_reruns_are_bounded(tmp_path, scripted):
    repo, commit = make_repo(tmp_path, "ok")
    store = EvidenceStore((tmp_path / "evidence").as_uri())
    paths = run_with_reruns(_spec(repo, commit, "ok"), DaemonLost(10), store, tmp_path / "runs")
    assert len(paths) == 3  # the attempt and max_reruns = 2 reruns
    assert all(load_record_file(p).invalid_reason for p in paths)


@pytest.mark.parametrize("mode", ["crash", "flaky"])
def test_a_container_that_cuts_its_attempt_gets_no_rerun(tmp_path, scripted, mode):
    """A project that kills the harness (every time, or once to try its luck) is measured once: the
    failure counts, no second draw."""
    from argusic.attempts.story import story_of
    from argusic.core.record import RecordFile

    repo, commit = make_repo(tmp_path, mode)
    store = EvidenceStore((tmp_path / "evidence").as_uri())
    spec = _spec(repo, commit, mode)
    paths = run_with_reruns(spec, LocalExecutor(), store, tmp_path / "runs")
    assert len(paths) == 1
    record = load_record_file(paths[0])
    assert record.invalid_reason is None and record.container_fault.startswith("harness exited with code")
    story = story_of(spec, [RecordFile.load(paths[0])])  # what the task log says at the end
    assert not story.invalid and "cut short in its container: harness exited with code" in story.label
    assert any("a measured failure, 0 points, no rerun" in line for line in story.lines)


def test_record_json_is_the_contract_shape(tmp_path, scripted):
    path, _ = _run(tmp_path, "ok")
    doc = json.loads(path.read_text())
    assert doc["schema"] == "argusic.run_record/1"
    assert set(doc["evidence"]) == {"log", "recording", "report"}
    assert doc["started_at"].endswith("Z") and doc["key"] == {"kind": "none", "limit_usd": None}


# -- per-run model keys through the attempt runner ---------------------------------------------------


@pytest.fixture
def routed_agent(monkeypatch):
    """Register a stand-in agent routed through our gateway (key kind per_run)."""
    from argusic.attempts import agents

    driver = agents.AgentDriver("routed-agent", "readme-runner", (), "per_run")
    monkeypatch.setitem(agents.DRIVERS, "routed-agent", driver)
    return driver


def test_per_run_key_reaches_agent_by_env_only_and_is_deleted(tmp_path, scripted, routed_agent):
    from test_keys import FakeBroker

    broker = FakeBroker()
    repo, commit = make_repo(tmp_path, "printkey")
    store = EvidenceStore((tmp_path / "evidence").as_uri())
    spec = _spec(repo, commit, "printkey", agent_id="routed-agent")
    path = run_attempt(spec, LocalExecutor(), store, tmp_path / "runs", broker=broker)
    record = load_record_file(path)
    assert broker.stats.created == 1 and broker.stats.deleted == 1 and broker.keys == {}
    assert record.key.kind == "per_run" and record.key.limit_usd == 3.0
    log = store.read(record.evidence.log.uri).decode()
    assert "OPENAI_API_KEY=[key " in log and "sk-fake-" not in log  # the agent saw it; storage never did
    for file in (tmp_path / "runs").rglob("*"):
        if file.is_file():
            assert b"sk-fake-" not in file.read_bytes(), file


def test_key_deleted_when_attempt_times_out(tmp_path, scripted, routed_agent):
    from test_keys import FakeBroker

    broker = FakeBroker()
    repo, commit = make_repo(tmp_path, "hang")
    spec = _spec(repo, commit, "hang", agent_id="routed-agent", demo=True, budget_scale=2 / 5400)
    path = run_attempt(spec, LocalExecutor(), EvidenceStore((tmp_path / "e").as_uri()), tmp_path / "runs",
                       broker=broker)  # fmt: skip
    assert load_record_file(path).end_reason == "timeout"
    assert broker.stats.created == 1 and broker.keys == {}


def test_no_key_means_the_attempt_does_not_start(tmp_path, scripted, routed_agent, monkeypatch):
    from argusic.attempts.keys import KeyUnavailable
    from test_keys import FakeBroker

    broker = FakeBroker()
    broker.fail_create = True
    repo, commit = make_repo(tmp_path, "ok")
    spec = _spec(repo, commit, "ok", agent_id="routed-agent")
    with pytest.raises(KeyUnavailable):
        run_attempt(spec, LocalExecutor(), EvidenceStore((tmp_path / "e").as_uri()), tmp_path / "runs",
                    broker=broker)  # fmt: skip
    assert not list((tmp_path / "runs").rglob("run_record.json"))
    assert not (tmp_path / "runs" / "2026-12" / spec.attempt_id / "out").exists() or not any(
        (tmp_path / "runs" / "2026-12" / spec.attempt_id / "out").iterdir()
    )
    # No routing layer configured at all: refused the same way, never a shared key instead.
    monkeypatch.delenv("LITELLM_BASE_URL", raising=False)
    with pytest.raises(KeyUnavailable, match="LITELLM_BASE_URL"):
        run_attempt(spec, LocalExecutor(), EvidenceStore((tmp_path / "e").as_uri()), tmp_path / "runs")


def test_served_copies_are_recorded(tmp_path, scripted):
    path, store = _run(tmp_path, "ok")
    record = load_record_file(path)
    assert record.presentation is not None and not record.presentation.withheld
    assert store.read(record.presentation.log.uri) == store.read(record.evidence.log.uri)


def test_a_served_copy_the_container_spoiled_is_its_measured_failure(tmp_path, scripted):
    """A recording overwritten with garbage cannot be served: the copies are withheld, and the attempt
    is the container's failure (scored 0, no rerun), not ours."""
    path, _ = _run(tmp_path, "garbagecast")
    record = load_record_file(path)
    assert record.presentation.withheld and record.invalid_reason is None
    assert record.container_fault.startswith("served copy withheld: recording:")


def test_cancelled_attempt_leaves_no_key_in_its_output(tmp_path, scripted, routed_agent):
    from argusic.attempts.keys import AttemptCancelled
    from test_keys import FakeBroker

    class CancelledAfterOutput(LocalExecutor):
        def run(self, **kwargs):
            super().run(**kwargs)  # the agent ran and printed its key
            raise AttemptCancelled("SIGTERM")

    broker = FakeBroker()
    repo, commit = make_repo(tmp_path, "printkey")
    spec = _spec(repo, commit, "printkey", agent_id="routed-agent")
    with pytest.raises(AttemptCancelled):
        run_attempt(spec, CancelledAfterOutput(), EvidenceStore((tmp_path / "e").as_uri()), tmp_path / "runs",
                    broker=broker)  # fmt: skip
    assert broker.stats.created == 1 and broker.keys == {}
    files = [f for f in (tmp_path / "runs").rglob("*") if f.is_file()]
    assert files and all(b"sk-fake-" not in f.read_bytes() for f in files)


# --- artifacts: the task's globs, handed to the executor --------------------------------------------


def _fake_tasks(
    monkeypatch: pytest.MonkeyPatch, artifacts: tuple[str, ...], seen: list | None = None
) -> None:
    """A stand-in for argusic.core.tasks (written elsewhere): task_for gives these globs."""
    import sys
    import types

    def task_for(purpose: str, project_id: str):
        if seen is not None:
            seen.append((purpose, project_id))
        return types.SimpleNamespace(artifacts=artifacts)

    module = types.ModuleType("argusic.core.tasks")
    module.task_for = task_for
    monkeypatch.setitem(sys.modules, "argusic.core.tasks", module)


def test_artifact_globs_come_from_the_task_or_are_none_without_the_package(monkeypatch):
    import sys

    from argusic.attempts.common import artifact_globs

    spec = _spec(Path("/nowhere"), "0" * 40, project="weatherfetch", purpose="verdict")
    seen: list = []
    _fake_tasks(monkeypatch, ["*.html", "docs/**/*.html"], seen)
    assert artifact_globs(spec) == ("*.html", "docs/**/*.html")
    assert seen == [("verdict", "weatherfetch")]
    _fake_tasks(monkeypatch, ("/etc/*.conf",))
    with pytest.raises(ValueError, match="absolute"):
        artifact_globs(spec)
    monkeypatch.setitem(sys.modules, "argusic.core.tasks", None)  # not installed: ImportError
    assert artifact_globs(spec) == ()


def test_a_broken_task_definition_is_not_taken_for_a_missing_package(monkeypatch):
    import sys
    import types

    from argusic.attempts.common import artifact_globs

    def task_for(purpose: str, project_id: str):
        raise ValueError("install_and_run.toml: artifacts: not a list")

    module = types.ModuleType("argusic.core.tasks")
    module.task_for = task_for
    monkeypatch.setitem(sys.modules, "argusic.core.tasks", module)
    with pytest.raises(ValueError, match="install_and_run.toml"):
        artifact_globs(_spec(Path("/nowhere"), "0" * 40))


def test_run_attempt_lands_the_tasks_artifacts_beside_valid_evidence(tmp_path, scripted, monkeypatch):
    _fake_tasks(monkeypatch, ("*.html",))
    path, _ = _run(tmp_path, "page")
    record = load_record_file(path)
    assert (record.end_reason, record.invalid_reason) == ("completed", None)
    out = path.parent / "out"
    assert (out / "artifacts" / "index.html").read_text() == "<html><body>made</body></html>"
    assert (out / "log.txt").exists()


def test_run_attempt_without_the_tasks_package_lands_no_artifacts(tmp_path, scripted, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "argusic.core.tasks", None)
    path, _ = _run(tmp_path, "page")
    assert load_record_file(path).invalid_reason is None
    assert not (path.parent / "out" / "artifacts").exists()


def test_the_seal_comes_through_when_its_pipe_is_descriptor_7(tmp_path, scripted, monkeypatch):
    """Under load the orchestrator's seal pipe got descriptor 7 itself, and the bootstrap's
    `7>&7 7>&-` closed it: every attempt of that process ended "seal did not reach us" (found by
    test_analyst in a whole run). The local executor now moves such a pipe first. Here the seal's
    pipe is given descriptor 7 (what held 7 in this process is put back afterwards)."""
    import os
    import sys

    from argusic.sandbox import executor as executor_module

    real_pipe, made = os.pipe, []
    held = os.dup(7) if _open(7) else None

    def pipe_on_7() -> tuple[int, int]:
        read, write = real_pipe()
        caller = sys._getframe(1)
        if caller.f_code.co_name != "run" or caller.f_globals is not vars(executor_module):
            return read, write  # another pipe (subprocess, the reaper): left alone
        made.append(write)
        if len(made) == 2:  # the local executor's second: the seal's; its write end becomes 7
            os.dup2(write, 7, inheritable=False)
            os.close(write)
            write = 7
        return read, write

    monkeypatch.setattr(executor_module.os, "pipe", pipe_on_7)
    try:
        path, _ = _run(tmp_path, "ok")
    finally:
        if held is not None:
            os.dup2(held, 7, inheritable=False)
            os.close(held)
    record = load_record_file(path)
    assert len(made) == 2
    assert record.invalid_reason is None and record.seal.status == "intact", record.invalid_reason


def _open(fd: int) -> bool:
    import os

    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
