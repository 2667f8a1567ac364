from __future__ import annotations

from argusic import maintenance
from argusic.keys import LiteLLMKeyBroker
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
