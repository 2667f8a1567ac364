from __future__ import annotations

from argusic.attempts.keys import LiteLLMKeyBroker
from argusic.ops import maintenance
from test_keys import FakeBroker


def test_sweep_deletes_keys_of_attempts_that_are_not_running(isolated, monkeypatch):
    broker = FakeBroker()
    live = broker.create("2026-12.board.a.p.a1", 3.0)
    dead = broker.create("2026-12.board.a.p.a2", 3.0)
    started = isolated / "runs" / "2026-12" / "2026-12.board.a.p.a1" / "out"
    started.mkdir(parents=True)  # in progress: no run record yet
    finished = isolated / "runs" / "2026-12" / "2026-12.board.a.p.a2"
    (finished / "out").mkdir(parents=True)
    (finished / "run_record.json").write_text("{}")
    monkeypatch.setenv("LITELLM_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-master")
    monkeypatch.setattr(LiteLLMKeyBroker, "from_env", classmethod(lambda cls: broker))
    result = maintenance.sweep_model_keys()
    assert result["configured"] and result["deleted"] == [dead.alias]
    assert [ref.alias for ref in broker.list_attempt_keys()] == [live.alias]


def test_sweep_is_a_no_op_without_a_gateway(isolated, monkeypatch):
    monkeypatch.delenv("LITELLM_BASE_URL", raising=False)
    assert maintenance.sweep_model_keys() == {"configured": False, "deleted": []}


def test_debris_sweep_touches_only_dead_runs_of_this_installation(isolated, monkeypatch):
    import json
    import os
    import subprocess
    import time

    from argusic.sandbox.containment import process_start

    monkeypatch.setenv("ARGUSIC_INSTALLATION", "ours")
    scratch = isolated / "scratch"
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(scratch))
    gone = subprocess.Popen(["true"])
    gone.wait()
    me = {"pid": os.getpid(), "start": process_start(os.getpid())}
    dead = {"pid": gone.pid, "start": "1"}

    def folder(name: str, owner: dict | None, age: float = 0) -> None:
        path = scratch / name
        (path / "work").mkdir(parents=True)
        if owner is not None:
            (path / "owner.json").write_text(json.dumps({"installation": "ours", "reaper_pid": None} | owner))
        os.utime(path, (time.time() - age, time.time() - age))

    folder("ours--aa--x.a1", dead)  # orchestrator and reaper gone: debris
    folder("ours--bb--x.a2", me)  # still running
    reaper_at_work = {"reaper_pid": os.getpid(), "reaper_start": me["start"]}
    folder("ours--cc--x.a3", dead | reaper_at_work)
    folder("ours--dd--x.a4", dead | {"installation": "ours-too"})  # another installation's, despite the name
    folder("theirs--ee--x.a5", dead)
    folder("ours--ff--x.a6", None)  # being created right now (no owner file yet)
    folder("ours--gg--x.a7", None, age=3600)  # its maker died before writing it
    assert maintenance.sweep_debris() == ["ours--aa--x.a1", "ours--gg--x.a7"]
    assert sorted(p.name for p in scratch.iterdir()) == [
        "ours--bb--x.a2", "ours--cc--x.a3", "ours--dd--x.a4", "ours--ff--x.a6", "theirs--ee--x.a5",
    ]  # fmt: skip
