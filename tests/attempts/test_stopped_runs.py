"""Every run on record (issue 26): an attempt cancelled (SIGTERM, Ctrl-C) or ended by an emergency
stop lands the evidence it has and gets a run record with its end reason and who, when and why; the
stop refuses new attempts until it is lifted; the switch is hostile input and fails closed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from argusic.attempts.run import run_attempt
from argusic.core import emergency
from argusic.core.emergency import EmergencyStopError, EmergencyStopInForce, declare_stop, lift_stop
from argusic.core.evidence import EvidenceStore
from argusic.core.record import load_record_file
from argusic.core.spec import AttemptSpec
from argusic.cycle.run import run_with_reruns
from argusic.sandbox import executor as executor_mod
from argusic.sandbox.executor import LocalExecutor
from argusic.sandbox.launch import clear_cancel
from scripted_seal import SEAL_PROLOGUE
from test_executor import make_repo

REPO_ROOT = Path(__file__).resolve().parents[2]
AT = datetime(2026, 12, 3, 1, 0, tzinfo=UTC)

# The first run of an attempt works a little, then hangs until it is ended; any later run finishes.
HANGS_ONCE = (
    SEAL_PROLOGUE
    + r"""
import json, os, sys, time
args = sys.argv[1:]
project, out = args[args.index("--project") + 1], args[args.index("--out") + 1]
_seal_at_exit(out)
def write(name, text):
    with open(os.path.join(out, name), "w") as f:
        f.write(text)
write("log.txt", "step 1: installing\n")
write("recording.cast", '{"version": 2, "width": 80, "height": 24}\n[0.1, "o", "installing"]\n')
marker = os.path.join(os.environ["MARKERS"], "hung-once")
if not os.path.exists(marker):
    open(marker, "w").close()
    open(os.path.join(os.environ["MARKERS"], "working"), "w").close()
    time.sleep(600)
write("report.json", json.dumps({"install_ok": True, "ran_ok": True, "errors_encountered": 0,
      "errors_fixed": 0, "test_depth": "tier1_real", "verified_how": "it ran", "final_state": "ran"}))
"""
)


@pytest.fixture
def hangs_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    harness = tmp_path / "harness"
    harness.mkdir()
    (harness / "readme_runner.py").write_text(HANGS_ONCE)
    monkeypatch.setattr(executor_mod, "HARNESS_DIR", harness)
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(tmp_path / "scratch"))
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "runs"))  # the stop switch lives here
    monkeypatch.delenv("ARGUSIC_RUNS_URL", raising=False)
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("MARKERS", str(markers))
    clear_cancel()
    yield markers
    clear_cancel()


def _spec(repo: Path, commit: str) -> AttemptSpec:
    return AttemptSpec(
        cycle_id="2026-12", agent_id="readme-runner", project_id="p", repo_url=str(repo), commit=commit,
        tier="standard", attempt_no=1, demo=True,
    )  # fmt: skip


def _wait_for(path: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def test_an_emergency_stop_ends_the_attempt_records_it_and_refuses_new_ones_until_resume(
    tmp_path, hangs_once
):
    repo, commit = make_repo(tmp_path, "hang")
    spec = _spec(repo, commit)
    store = EvidenceStore((tmp_path / "evidence").as_uri())
    base = tmp_path / "attempts"
    raised: list[BaseException] = []

    def run() -> None:
        try:
            run_attempt(spec, LocalExecutor(), store, base)
        except BaseException as err:  # noqa: BLE001 - what the attempt raised is the test's subject
            raised.append(err)

    worker = threading.Thread(target=run)
    worker.start()
    _wait_for(hangs_once / "working")
    started = time.monotonic()
    declare_stop(by="ops-alice", reason="the gateway is leaking keys", at=AT)
    worker.join(60)
    assert not worker.is_alive() and time.monotonic() - started < 30
    assert len(raised) == 1 and isinstance(raised[0], EmergencyStopInForce), raised

    record = load_record_file(base / "2026-12" / spec.attempt_id / "run_record.json")
    assert record.end_reason == "emergency_stop"
    assert record.invalid_reason == (
        "emergency stop (every cycle) by ops-alice at 2026-12-03T01:00:00+00:00: the gateway is leaking keys"
    )
    assert record.report is None and record.container_fault is None
    # the evidence that existed was landed, fingerprinted, like any attempt's
    assert store.read(record.evidence.log.uri) == b"step 1: installing\n"
    assert record.evidence.recording is not None

    # while the stop is in force nothing starts and nothing is written
    other = _spec(repo, commit).model_copy(update={"attempt_no": 2})
    with pytest.raises(EmergencyStopInForce, match="ops-alice.*argusic resume"):
        run_attempt(other, LocalExecutor(), store, base)
    assert not (base / "2026-12" / other.attempt_id).exists()
    # the stopped attempt's own record is on file: asking for it again measures nothing
    assert run_attempt(spec, LocalExecutor(), store, base).name == "run_record.json"

    # lifted: the stopped attempt is rerun like any attempt cut on our side, and its rerun counts
    lift_stop(by="ops-bob", reason="keys rotated, gateway patched", at=AT.replace(hour=2))
    paths = run_with_reruns(spec, LocalExecutor(), store, base)
    records = [load_record_file(p) for p in paths]
    assert [(r.end_reason, r.attempt_id) for r in records] == [
        ("emergency_stop", spec.attempt_id),
        ("completed", f"{spec.attempt_id}.r1"),
    ]
    assert records[1].rerun_of == spec.attempt_id and records[1].invalid_reason is None
    # every decision kept, write-once, with who, when and why
    decisions = sorted((tmp_path / "runs" / "control" / "decisions").iterdir())
    assert [json.loads(p.read_text())["by"] for p in decisions] == ["ops-alice", "ops-bob"]
    assert json.loads((tmp_path / "runs" / "control" / "emergency_stop.json").read_text())["active"] is False


def test_a_stop_for_one_cycle_leaves_the_others_running(tmp_path, hangs_once):
    declare_stop(by="ops", reason="bad pool", at=AT, cycle="2026-11")
    assert emergency.stop_in_force("2026-11.board.a.p.a1") is not None
    assert emergency.stop_in_force("2026-12.board.a.p.a1") is None
    assert emergency.stop_in_force("2026-110.board.a.p.a1") is None  # a prefix is not the cycle


def _driver(tmp_path: Path, spec: AttemptSpec) -> Path:
    script = tmp_path / "driver.py"
    script.write_text(
        "import signal, sys\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal (xdist ignores it)\n"
        f"sys.path[:0] = [{str(REPO_ROOT / 'tests')!r}, {str(REPO_ROOT / 'tests' / 'sandbox')!r}]\n"
        "from pathlib import Path\n"
        "from argusic.attempts.run import run_attempt\n"
        "from argusic.core.evidence import EvidenceStore\n"
        "from argusic.core.spec import AttemptSpec\n"
        "from argusic.sandbox import executor as executor_mod\n"
        "from argusic.sandbox.executor import LocalExecutor\n"
        f"executor_mod.HARNESS_DIR = Path({str(tmp_path / 'harness')!r})\n"
        f"spec = AttemptSpec.model_validate_json({spec.model_dump_json()!r})\n"
        f"run_attempt(spec, LocalExecutor(), EvidenceStore({(tmp_path / 'evidence').as_uri()!r}), "
        f"Path({str(tmp_path / 'attempts')!r}))\n"
    )
    return script


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_cancelled_attempt_lands_what_exists_and_is_on_record(tmp_path, hangs_once, sig):
    """What Airflow does when a task is cleared or marked (SIGTERM to the task's process), and what a
    person does at `argusic`'s terminal (Ctrl-C)."""
    repo, commit = make_repo(tmp_path, "hang")
    spec = _spec(repo, commit)
    proc = subprocess.Popen(
        [sys.executable, str(_driver(tmp_path, spec))], env=os.environ.copy(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    _wait_for(hangs_once / "working")
    proc.send_signal(sig)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0, output
    expected = "AttemptCancelled" if sig == signal.SIGTERM else "KeyboardInterrupt|AttemptCancelled"
    assert any(word in output for word in expected.split("|")), output[-2000:]

    record = load_record_file(tmp_path / "attempts" / "2026-12" / spec.attempt_id / "run_record.json")
    assert record.end_reason == "cancelled"
    how = "signal 15 (SIGTERM)" if sig == signal.SIGTERM else "interrupted (SIGINT, Ctrl-C)"
    assert record.invalid_reason.startswith("cancelled: ") and how in record.invalid_reason
    assert record.evidence.log is not None and record.evidence.recording is not None
    store = EvidenceStore((tmp_path / "evidence").as_uri())
    assert store.read(record.evidence.log.uri) == b"step 1: installing\n"
    # nothing of the harness outlives the cancel
    assert subprocess.run(["pgrep", "-f", str(tmp_path / "harness")], capture_output=True).returncode == 1


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"{not json", "unreadable"),
        (b'{"active": "yes", "by": "x", "at": "t", "reason": "r"}', "boolean 'active'"),
        (b'{"active": true, "by": "", "at": "t", "reason": "r"}', "non-empty strings"),
        (b'{"active": false, "by": "x", "at": "t", "reason": "r", "cycle": "../x"}', "not a cycle id"),
        (b"x" * (emergency.MAX_STOP_BYTES + 1), "over"),
    ],
)
def test_a_switch_that_cannot_be_read_is_a_stop_in_force_that_names_the_problem(
    tmp_path, monkeypatch, content, problem
):
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("ARGUSIC_RUNS_URL", raising=False)
    path = tmp_path / "runs" / emergency.STOP_KEY
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    stop = emergency.current_stop()
    assert stop.active and problem in stop.reason and str(path) in stop.reason
    with pytest.raises(EmergencyStopInForce, match="unreadable"):
        emergency.refuse_if_stopped("2026-12.board.a.p.a1")


def test_a_switch_nobody_can_read_for_two_minutes_stops_the_attempt_one_blip_does_not(monkeypatch):
    """Mid-attempt the store may be unreachable: one failed poll is retried; failures for the whole
    grace period are a stop in force naming the problem (nothing fails open)."""
    clock = [1000.0]
    monkeypatch.setattr(emergency.time, "monotonic", lambda: clock[0])
    reads = {"fail": True}

    def read(attempt_id):
        if reads["fail"]:
            raise OSError("runs store unreachable: connection refused")
        return None

    monkeypatch.setattr(emergency, "stop_in_force", read)
    poller = emergency.StopPoller("2026-12.board.a.p.a1", every=2.0, unreadable_after=120.0)
    assert poller() is None  # the first failure starts the grace period
    clock[0] += 60
    assert poller() is None
    reads["fail"] = False  # the store answers again: the count starts over
    clock[0] += 2
    assert poller() is None
    reads["fail"] = True
    clock[0] += 2
    assert poller() is None
    clock[0] += 118
    assert poller() is None  # 118 s of failures: still within the grace
    clock[0] += 2
    stop = poller()
    assert stop is not None and stop.covers("2026-12.board.a.p.a1")
    assert "could not be read for 120 s" in stop.reason and "connection refused" in stop.reason
    reads["fail"] = False
    clock[0] += 10
    assert poller() is stop  # once found, the stop stays for this attempt


def test_a_stop_needs_a_reason_a_person_and_a_real_cycle_and_resume_needs_a_stop(tmp_path, monkeypatch):
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("ARGUSIC_RUNS_URL", raising=False)
    with pytest.raises(EmergencyStopError, match="reason is required"):
        declare_stop(by="ops", reason="  ", at=AT)
    with pytest.raises(EmergencyStopError, match="must be named"):
        declare_stop(by="", reason="r", at=AT)
    with pytest.raises(EmergencyStopError, match="not a cycle id"):
        declare_stop(by="ops", reason="r", at=AT, cycle="2026-12/../x")
    with pytest.raises(EmergencyStopError, match="nothing to resume"):
        lift_stop(by="ops", reason="r", at=AT)
    assert not (tmp_path / "runs" / "control").exists()  # nothing half-written


def test_the_stop_reaches_every_host_through_the_runs_store(tmp_path, monkeypatch):
    """Two hosts, two runs folders, one store: what one declares the other reads."""
    monkeypatch.setenv("ARGUSIC_RUNS_URL", (tmp_path / "store").as_uri())
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "host-a"))
    declare_stop(by="ops", reason="incident 42", at=AT)
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "host-b"))
    assert emergency.stop_in_force("2026-12.board.a.p.a1").reason == "incident 42"
    lift_stop(by="ops", reason="over", at=AT)
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "host-a"))
    assert emergency.stop_in_force("2026-12.board.a.p.a1") is None


CLI_DRIVER = r"""
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal (xdist workers ignore it)
from pathlib import Path
import typer
from argusic.cli.cycle import run_with_progress
from argusic.core.spec import AttemptSpec
from argusic.sandbox import executor as executor_mod
from argusic.sandbox.executor import LocalExecutor

executor_mod.HARNESS_DIR = Path(sys.argv[1])
specs = {}
for path in sys.argv[2:]:
    specs[path] = AttemptSpec.model_validate_json(Path(path).read_text())
try:
    run_with_progress("attempts", specs, LocalExecutor(), workers=2)
except typer.Exit as done:
    print(f"exit {done.exit_code}")
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_cancelling_the_cli_ends_every_running_attempt_with_a_record_and_starts_no_other(
    tmp_path, hangs_once, monkeypatch, sig
):
    """`argusic cycle run` runs attempts in threads: Ctrl-C (or SIGTERM) reaches the main thread, which
    tells each running attempt to end; each lands and records what it has; the queued one never starts."""
    (hangs_once / "hung-once").touch()  # from now on: hang at every run
    harness = tmp_path / "harness" / "readme_runner.py"
    harness.write_text(harness.read_text().replace("if not os.path.exists(marker):", "if True:"))
    repo, commit = make_repo(tmp_path, "hang")
    paths = []
    for n in (1, 2, 3):
        spec = _spec(repo, commit).model_copy(update={"attempt_no": n})
        path = tmp_path / f"spec{n}.json"
        path.write_text(spec.model_dump_json())
        paths.append(str(path))
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI_DRIVER, str(tmp_path / "harness"), *paths], env=os.environ.copy(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    runs = tmp_path / "runs" / "2026-12"
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("scratch/*/out/log.txt"))) < 2:  # two attempts at work
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()[0][-3000:]
        time.sleep(0.2)
    proc.send_signal(sig)
    output, _ = proc.communicate(timeout=60)
    assert "exit 1" in output and "cancelled" in output, output[-3000:]
    records = sorted(runs.glob("*/run_record.json"))
    assert len(records) == 2, output[-3000:]  # the third was queued: never started, nothing written
    for path in records:
        record = load_record_file(path)
        assert record.end_reason == "cancelled" and record.evidence.log is not None
    assert "2 attempt(s) ended and recorded, 1 not started" in output, output[-3000:]
    assert "invalid 2 · not started 1" in output, output[-3000:]


def test_an_emergency_stop_deletes_the_keys_it_covers_running_or_not(tmp_path, monkeypatch):
    """Every key of the stopped cycle goes at once (a running attempt's too: its container is being
    ended); another cycle's keys stay."""
    from argusic.attempts.keys import LiteLLMKeyBroker
    from argusic.ops import emergency as ops_emergency
    from test_keys import FakeBroker

    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("ARGUSIC_RUNS_URL", raising=False)
    monkeypatch.setenv("LITELLM_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-master")
    monkeypatch.setattr("argusic.sandbox.executor.docker_available", lambda: False)
    broker = FakeBroker()
    stopped = [broker.create(f"2026-12.board.a.p.a{n}", 3.0) for n in (1, 2)]
    other = broker.create("2027-01.board.a.p.a1", 3.0)
    monkeypatch.setattr(LiteLLMKeyBroker, "from_env", classmethod(lambda cls: broker))
    report = ops_emergency.emergency_stop(
        by="ops", reason="incident 9", at=AT, cycle="2026-12", wait_seconds=0
    )
    assert report.keys_configured and sorted(report.keys_deleted) == sorted(k.alias for k in stopped)
    assert [ref.alias for ref in broker.list_attempt_keys()] == [other.alias]
    assert report.as_dict()["stop"].startswith("emergency stop (cycle 2026-12) by ops")
