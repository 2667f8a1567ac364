"""Per-attempt model keys: created for one attempt, gone afterwards whatever the ending.

Three layers:
- an in-process fake broker for the guarantees of ``attempt_key()`` (return, exception, timeout,
  KeyboardInterrupt, SIGTERM, creation failure, deletion failure);
- ``LiteLLMKeyBroker`` over HTTP against a stand-in of LiteLLM's key endpoints on 127.0.0.1 (same
  paths, bodies and answers as litellm 1.108's /key/generate, /key/delete, /key/list, /key/info),
  including worker processes cancelled with SIGTERM and killed with SIGKILL, and the same tests
  against the model double's gateway (``argusic.sandbox.model_double.KeyGateway``, which also
  archives deleted keys as LiteLLM 1.108.7 does);
- the same HTTP tests against the real LiteLLM proxy + PostgreSQL started by
  scripts/start_litellm.sh (marked slow; skipped, with the reason, where LiteLLM's Prisma engines
  cannot be had).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from argusic.attempts.keys import (
    ALIAS_PREFIX,
    AttemptCancelled,
    IssuedKey,
    KeyBroker,
    KeyBrokerError,
    KeyRef,
    KeyStats,
    KeyUnavailable,
    LiteLLMKeyBroker,
    attempt_key,
    attempt_of_alias,
    key_for_attempt,
    new_alias,
    shared_key,
    sweep_keys,
    token_id,
)
from argusic.core.settings import orchestrator_config

ROOT = Path(__file__).resolve().parents[2]
LIMIT = orchestrator_config().per_run_key_limit_usd


# ---------------------------------------------------------------------------------------------------
# Fake in-process broker


class FakeBroker:
    def __init__(self) -> None:
        self.keys: dict[str, dict[str, Any]] = {}
        self.stats = KeyStats()
        self.fail_create = False
        self.fail_delete = False

    def create(self, attempt_id: str, limit_usd: float, *, ttl_seconds: int | None = None) -> IssuedKey:
        if self.fail_create:
            self.stats.add("create_failed")
            raise KeyUnavailable("gateway down")
        value = f"sk-fake-{uuid.uuid4().hex}"
        alias = new_alias(attempt_id)
        self.keys[token_id(value)] = {"alias": alias, "attempt_id": attempt_id, "max_budget": limit_usd}
        self.stats.add("created")
        return IssuedKey(value=value, kind="per_run", attempt_id=attempt_id, alias=alias, limit_usd=limit_usd)

    def delete(self, key: IssuedKey | KeyRef | str) -> bool:
        tid = key if isinstance(key, str) else key.token_id
        if self.fail_delete:
            self.stats.add("delete_failed")
            raise KeyBrokerError("gateway down")
        existed = self.keys.pop(tid, None) is not None
        if existed:
            self.stats.add("deleted")
        return existed

    def list_attempt_keys(self) -> list[KeyRef]:
        return [KeyRef(t, k["alias"], k["attempt_id"]) for t, k in self.keys.items()]

    def sweep(self, running_attempt_ids: Any) -> list[KeyRef]:
        return sweep_keys(self, running_attempt_ids)


def test_fake_broker_is_a_key_broker() -> None:
    assert isinstance(FakeBroker(), KeyBroker)


def test_limit_defaults_to_the_orchestrator_value() -> None:
    broker = FakeBroker()
    with attempt_key(broker, "a-limit") as key:
        assert key.limit_usd == LIMIT == 3
        assert broker.keys[key.token_id]["max_budget"] == 3
        assert key.record() == {"kind": "per_run", "limit_usd": 3}
    assert broker.keys == {}


def test_deleted_after_success() -> None:
    broker = FakeBroker()
    with attempt_key(broker, "a-ok", LIMIT) as key:
        assert key.token_id in broker.keys
    assert broker.keys == {}
    assert broker.stats.as_dict() == {
        "created": 1,
        "create_failed": 0,
        "deleted": 1,
        "delete_failed": 0,
        "swept": 0,
    }


def test_deleted_after_exception() -> None:
    broker = FakeBroker()
    with pytest.raises(RuntimeError), attempt_key(broker, "a-fail", LIMIT):
        raise RuntimeError("harness crashed")
    assert broker.keys == {}


def test_deleted_after_timeout() -> None:
    broker = FakeBroker()
    with pytest.raises(subprocess.TimeoutExpired), attempt_key(broker, "a-timeout", LIMIT):
        subprocess.run(["sleep", "30"], timeout=0.3)
    assert broker.keys == {}


def test_deleted_after_keyboard_interrupt() -> None:
    broker = FakeBroker()
    with pytest.raises(KeyboardInterrupt), attempt_key(broker, "a-ctrl-c", LIMIT):
        raise KeyboardInterrupt
    assert broker.keys == {}


def test_sigterm_cancels_and_deletes() -> None:
    broker = FakeBroker()
    before = signal.getsignal(signal.SIGTERM)
    reached_end = False
    with pytest.raises(AttemptCancelled), attempt_key(broker, "a-cancel", LIMIT):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # interrupted by the handler
        reached_end = True
    assert not reached_end
    assert broker.keys == {}
    assert signal.getsignal(signal.SIGTERM) is before  # handler restored


def test_except_exception_in_the_body_does_not_swallow_a_cancel() -> None:
    broker = FakeBroker()
    with pytest.raises(AttemptCancelled), attempt_key(broker, "a-cancel-2", LIMIT):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except Exception:  # noqa: BLE001 - the point of the test
            pytest.fail("a cancel must not be an Exception")
    assert broker.keys == {}


def test_no_key_no_attempt() -> None:
    broker = FakeBroker()
    broker.fail_create = True
    started = False
    with pytest.raises(KeyUnavailable), attempt_key(broker, "a-nokey", LIMIT):
        started = True
    assert not started
    assert broker.stats.created == 0 and broker.stats.create_failed == 1


def test_no_shared_fallback_when_per_run_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VENDOR_SHARED_KEY", "sk-shared-should-not-be-used")
    broker = FakeBroker()
    broker.fail_create = True
    with (
        pytest.raises(KeyUnavailable),
        key_for_attempt("per_run", "a-x", broker=broker, shared_env_var="VENDOR_SHARED_KEY"),
    ):
        pytest.fail("attempt started without its key")
    with pytest.raises(KeyUnavailable), key_for_attempt("per_run", "a-y", broker=None):
        pytest.fail("attempt started without a routing layer")


def test_delete_failure_is_logged_and_left_to_the_sweep(caplog: pytest.LogCaptureFixture) -> None:
    broker = FakeBroker()
    with attempt_key(broker, "a-del-fail", LIMIT) as key:
        broker.fail_delete = True
    assert key.token_id in broker.keys  # still there ...
    assert "left to the sweep" in caplog.text
    broker.fail_delete = False
    swept = broker.sweep(running_attempt_ids=[])
    assert [r.attempt_id for r in swept] == ["a-del-fail"]
    assert broker.keys == {}  # ... until the sweep


def test_sweep_keeps_running_attempts() -> None:
    broker = FakeBroker()
    keys = {a: broker.create(a, LIMIT) for a in ("run-1", "run-2", "dead-1", "dead-2")}
    deleted = broker.sweep(running_attempt_ids={"run-1", "run-2"})
    assert sorted(r.attempt_id for r in deleted) == ["dead-1", "dead-2"]
    assert {k["attempt_id"] for k in broker.keys.values()} == {"run-1", "run-2"}
    assert keys["run-1"].token_id in broker.keys


def test_value_is_never_shown(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    value = "sk-secret-value-0123456789"
    key = IssuedKey(value=value, kind="per_run", attempt_id="a", alias="x", limit_usd=3)
    assert value not in repr(key) and value not in str(key) and value not in f"{key}"
    assert key.container_env() == {"OPENAI_API_KEY": value}
    assert key.container_env("ANTHROPIC_API_KEY", None) == {"ANTHROPIC_API_KEY": value}
    masked = key.mask(f"echo {value} > out.txt")
    assert value not in masked and key.fingerprint in masked
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(key)


def test_shared_key_is_recorded_as_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VENDOR_SHARED_KEY", "sk-vendor-shared")
    with key_for_attempt("shared", "a-vendor", shared_env_var="VENDOR_SHARED_KEY") as key:
        assert key.record() == {"kind": "shared", "limit_usd": None}
        assert key.container_env("VENDOR_KEY", None) == {"VENDOR_KEY": "sk-vendor-shared"}
    monkeypatch.delenv("VENDOR_SHARED_KEY")
    with pytest.raises(KeyUnavailable):
        shared_key("VENDOR_SHARED_KEY")
    with key_for_attempt("none", "a-none") as key:
        assert key.record() == {"kind": "none", "limit_usd": None} and key.container_env() == {}


def test_the_gateways_count_of_a_per_run_key_is_recorded_only_when_known() -> None:
    from argusic.core.record import Key

    key = IssuedKey(value="sk-x", kind="per_run", attempt_id="a", alias="x", limit_usd=3)
    assert key.record() == {"kind": "per_run", "limit_usd": 3}  # the contract's shape, as before
    key.gateway_spend = {"spend_usd": 0.25, "max_budget_usd": 3.0}
    assert key.record() == {"kind": "per_run", "limit_usd": 3, "gateway_spend_usd": 0.25}
    written = '{"kind":"per_run","limit_usd":3.0,"gateway_spend_usd":0.25}'
    assert Key(**key.record()).model_dump_json() == written
    assert Key(kind="per_run", limit_usd=3.0).model_dump_json() == '{"kind":"per_run","limit_usd":3.0}'
    shared = IssuedKey(value="sk-v", kind="shared", attempt_id="a", alias="shared:V")
    shared.gateway_spend = {"spend_usd": 9.0, "max_budget_usd": None}  # a shared key has no per-run count
    assert shared.record() == {"kind": "shared", "limit_usd": None}


def test_a_per_run_keys_unknown_spend_is_said_never_left_blank() -> None:
    """The gateway answered neither before nor after the deletion: the record says why the count is
    unknown (a blank would read as "under the limit"), capped; the contract's shape otherwise."""
    from argusic.core.record import Key

    key = IssuedKey(value="sk-x", kind="per_run", attempt_id="a", alias="x", limit_usd=3)
    key.gateway_spend_unread = "spend not read before deletion: gateway unreachable " + "x" * 300
    doc = key.record()
    assert (
        doc["gateway_spend_unread"].startswith("spend not read") and len(doc["gateway_spend_unread"]) == 200
    )
    assert Key(**doc).gateway_spend_unread == doc["gateway_spend_unread"]
    key.gateway_spend = {"spend_usd": 1.0, "max_budget_usd": 3.0}  # a count read after all wins
    assert key.record() == {"kind": "per_run", "limit_usd": 3, "gateway_spend_usd": 1.0}


def test_alias_carries_the_attempt() -> None:
    alias = new_alias("2026-12.board.agent.proj.a1")
    assert alias.startswith(ALIAS_PREFIX)
    assert attempt_of_alias(alias) == "2026-12.board.agent.proj.a1"
    assert new_alias("a") != new_alias("a")  # a retried attempt gets a new key
    assert attempt_of_alias("someone-else") is None


def test_keys_carry_the_installation_and_the_sweep_keeps_to_its_own(monkeypatch) -> None:
    monkeypatch.setenv("ARGUSIC_INSTALLATION", "ours")
    broker = FakeBroker()
    mine = broker.create("2026-12.board.agent.proj.a1", LIMIT)
    assert mine.alias.startswith("argusic-attempt:ours:2026-12.board.agent.proj.a1:")
    monkeypatch.setenv("ARGUSIC_INSTALLATION", "theirs")  # another installation, same gateway
    theirs = broker.create("2026-12.board.agent.proj.a1", LIMIT)
    assert attempt_of_alias(mine.alias) is None  # not ours, seen from theirs
    broker.keys[token_id("sk-legacy")] = {"alias": "argusic-attempt:2026-12.x.a1:0000", "attempt_id": "x"}
    monkeypatch.setenv("ARGUSIC_INSTALLATION", "ours")
    assert [ref.alias for ref in broker.sweep(running_attempt_ids=[])] == [mine.alias]
    assert {k["alias"] for k in broker.keys.values()} == {theirs.alias, "argusic-attempt:2026-12.x.a1:0000"}


# ---------------------------------------------------------------------------------------------------
# Stand-in of LiteLLM's key endpoints (for the HTTP client; the real proxy is tested below)


class _State:
    def __init__(self, master: str) -> None:
        self.master = master
        self.keys: dict[str, dict[str, Any]] = {}
        self.fail_next: list[int] = []
        self.requests = 0
        self.lock = threading.Lock()


class _KeyAPI(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _guard(self) -> bool:
        st: _State = self.server.state
        with st.lock:
            st.requests += 1
            if st.fail_next:
                self._send(st.fail_next.pop(0), {"error": {"message": "injected"}})
                return False
        if self.headers.get("Authorization") != f"Bearer {st.master}":
            self._send(401, {"error": {"message": "Authentication Error", "code": "401"}})
            return False
        return True

    def do_POST(self) -> None:  # noqa: N802
        if not self._guard():
            return
        st: _State = self.server.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        path = urlparse(self.path).path
        with st.lock:
            if path == "/key/generate":
                alias = body.get("key_alias")
                if alias and any(k["key_alias"] == alias for k in st.keys.values()):
                    return self._send(
                        400, {"error": {"message": f"Key with alias '{alias}' already exists."}}
                    )
                value = f"sk-{uuid.uuid4().hex[:22]}"
                tid = token_id(value)
                st.keys[tid] = {
                    "token": tid,
                    "key_alias": alias,
                    "max_budget": body.get("max_budget"),
                    "metadata": body.get("metadata") or {},
                    "duration": body.get("duration"),
                    "spend": 0.0,
                }
                return self._send(200, {**st.keys[tid], "key": value, "token_id": tid, "expires": None})
            if path == "/key/delete":
                tids = [t if len(t) == 64 else token_id(t) for t in body.get("keys") or []]
                found = [t for t in tids if t in st.keys]
                if not found:
                    return self._send(404, {"error": {"message": "No keys found", "code": "404"}})
                for t in found:
                    del st.keys[t]
                return self._send(200, {"deleted_keys": body.get("keys")})
        self._send(404, {"detail": "Not Found"})

    def do_GET(self) -> None:  # noqa: N802
        if not self._guard():
            return
        st: _State = self.server.state
        url = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        with st.lock:
            if url.path == "/key/list":
                page, size = int(q.get("page", 1)), int(q.get("size", 10))
                items = [k for k in st.keys.values() if q.get("key_alias", "") in (k["key_alias"] or "")]
                pages = max(1, -(-len(items) // size))
                chunk = items[(page - 1) * size : page * size]
                listing = {
                    "keys": chunk,
                    "total_count": len(items),
                    "current_page": page,
                    "total_pages": pages,
                }
                return self._send(200, listing)
            if url.path == "/key/info":
                k = st.keys.get(q.get("key", ""))
                if k is None:
                    return self._send(404, {"error": {"message": "Key not found", "code": "404"}})
                return self._send(200, {"key": k["token"], "info": k})
        self._send(404, {"detail": "Not Found"})


@pytest.fixture
def standin() -> Iterator[tuple[str, str, _State]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeyAPI)
    server.state = _State(master=f"sk-master-{uuid.uuid4().hex}")  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.state.master, server.state  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------------------------------
# The real LiteLLM proxy (scripts/start_litellm.sh)

PRISMA_MARKERS = (
    "binaries.prisma.sh",
    "Unable to find Prisma binaries",
    "Could not connect to the query engine",
)


@pytest.fixture(scope="session")
def litellm_proxy() -> Iterator[tuple[str, str]]:
    if not (ROOT / ".venv-litellm" / "bin" / "litellm").exists():
        pytest.skip(
            "LiteLLM proxy not installed (scripts/start_litellm.sh install makes .venv-litellm); where the "
            "registries are all there is, it cannot keep virtual keys anyway: Prisma's query engine is "
            "only downloadable from outside them (docs/keys.md)"
        )
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.skip("PostgreSQL server binaries missing: apt-get install postgresql")
    state = Path(tempfile.mkdtemp(prefix="argusic-litellm-test-", dir="/tmp"))
    env = {**os.environ, "ARGUSIC_LITELLM_STATE": str(state), "ARGUSIC_LITELLM_START_TIMEOUT": "240"}
    script = ROOT / "scripts" / "start_litellm.sh"
    try:
        run = subprocess.run(
            ["bash", str(script), "start"], env=env, capture_output=True, text=True, timeout=420
        )
        if run.returncode != 0:
            text = run.stderr + run.stdout
            hits = [line.strip() for line in text.splitlines() if any(m in line for m in PRISMA_MARKERS)]
            if hits:
                marker = hits[-1][hits[-1].find("Error") :] if "Error" in hits[-1] else hits[-1]
                pytest.skip(
                    "LiteLLM cannot keep virtual keys on this machine: its database layer needs Prisma's "
                    f"native query engine, which no package registry ships ({marker[:200]})"
                )
            pytest.fail(f"scripts/start_litellm.sh start failed:\n{text[-3000:]}")
        values = dict(line.split("=", 1) for line in (state / "env").read_text().splitlines() if "=" in line)
        yield values["LITELLM_BASE_URL"], values["LITELLM_MASTER_KEY"]
    finally:
        subprocess.run(["bash", str(script), "stop"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture
def model_double_gateway() -> Iterator[tuple[str, str]]:
    """The model double as a LiteLLM gateway (argusic.sandbox.model_double.KeyGateway: LiteLLM
    1.108.7's key endpoints, checked against its source) on 127.0.0.1."""
    from argusic.sandbox.model_double import make_server

    master = f"sk-master-{uuid.uuid4().hex}"
    server = make_server([{"text": "unused"}], "", master_key=master)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", master
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["standin", "double", pytest.param("litellm", marks=pytest.mark.slow)])
def http_gateway(request: pytest.FixtureRequest) -> tuple[str, str]:
    if request.param == "standin":
        url, master, _ = request.getfixturevalue("standin")
        return url, master
    if request.param == "double":
        return request.getfixturevalue("model_double_gateway")
    return request.getfixturevalue("litellm_proxy")


def _broker(gw: tuple[str, str]) -> LiteLLMKeyBroker:
    return LiteLLMKeyBroker(gw[0], gw[1], backoff_seconds=0.05)


def _exists(broker: LiteLLMKeyBroker, key: IssuedKey | str) -> bool:
    return broker.key_info(key) is not None


def test_http_key_created_with_limit_and_gone_after_success(http_gateway: tuple[str, str]) -> None:
    broker = _broker(http_gateway)
    attempt = f"t-{uuid.uuid4().hex[:8]}"
    with attempt_key(broker, attempt) as key:
        info = broker.key_info(key)
        assert info is not None
        assert float(info["max_budget"]) == LIMIT == 3
        assert info["key_alias"] == key.alias and attempt in key.alias
        assert (info.get("metadata") or {}).get("argusic_attempt_id") == attempt
        assert key.container_env()["OPENAI_BASE_URL"].endswith("/v1")
    assert not _exists(broker, key)


@pytest.mark.parametrize("ending", ["exception", "timeout", "keyboard_interrupt", "sigterm"])
def test_http_key_gone_after_every_ending(http_gateway: tuple[str, str], ending: str) -> None:
    broker = _broker(http_gateway)
    expected = {
        "exception": RuntimeError,
        "timeout": subprocess.TimeoutExpired,
        "keyboard_interrupt": KeyboardInterrupt,
        "sigterm": AttemptCancelled,
    }[ending]
    holder: list[IssuedKey] = []
    with pytest.raises(expected), attempt_key(broker, f"t-{ending}-{uuid.uuid4().hex[:6]}") as key:
        holder.append(key)
        assert _exists(broker, key)
        if ending == "exception":
            raise RuntimeError("harness crashed")
        if ending == "timeout":
            subprocess.run(["sleep", "30"], timeout=0.3)
        if ending == "keyboard_interrupt":
            raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert not _exists(broker, holder[0])


_WORKER = """
import sys, time
from argusic.attempts.keys import LiteLLMKeyBroker, attempt_key
broker = LiteLLMKeyBroker(sys.argv[1], sys.argv[2])
with attempt_key(broker, sys.argv[3], 3) as key:
    print(key.token_id, flush=True)
    time.sleep(60)
"""


def _start_worker(gw: tuple[str, str], attempt: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "plugins")}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORKER, gw[0], gw[1], attempt],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    tid = proc.stdout.readline().strip()
    assert len(tid) == 64, proc.stderr.read() if proc.stderr else "no output"
    return proc, tid


def test_http_worker_cancelled_with_sigterm_deletes_its_key(http_gateway: tuple[str, str]) -> None:
    broker = _broker(http_gateway)
    proc, tid = _start_worker(http_gateway, f"t-w-term-{uuid.uuid4().hex[:6]}")
    assert _exists(broker, tid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) != 0
    assert not _exists(broker, tid)


def test_http_worker_killed_then_sweep(http_gateway: tuple[str, str]) -> None:
    broker = _broker(http_gateway)
    dead = f"t-w-kill-{uuid.uuid4().hex[:6]}"
    proc, tid = _start_worker(http_gateway, dead)
    proc.kill()  # SIGKILL: no clean-up can run in the worker
    proc.wait(timeout=30)
    assert _exists(broker, tid)
    running = f"t-running-{uuid.uuid4().hex[:6]}"
    with attempt_key(broker, running) as live:
        deleted = broker.sweep(running_attempt_ids={running})
        assert dead in {r.attempt_id for r in deleted}
        assert running not in {r.attempt_id for r in deleted}
        assert not _exists(broker, tid)
        assert _exists(broker, live)  # a running attempt keeps its key
    assert not _exists(broker, live)


def test_http_proxy_down_means_no_attempt() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    broker = LiteLLMKeyBroker(
        f"http://127.0.0.1:{port}", "sk-master", attempts=2, backoff_seconds=0.01, timeout=2
    )
    started = False
    with pytest.raises(KeyUnavailable, match="unreachable"), attempt_key(broker, "t-down"):
        started = True
    assert not started
    assert broker.stats.create_failed == 1 and broker.stats.created == 0


def test_http_transient_errors_are_retried(standin: tuple[str, str, _State]) -> None:
    url, master, state = standin
    broker = LiteLLMKeyBroker(url, master, backoff_seconds=0.01)
    state.fail_next = [503, 502]
    with attempt_key(broker, "t-retry") as key:
        assert key.token_id in state.keys
    assert state.keys == {}
    assert broker.stats.created == 1 and broker.stats.deleted == 1


def test_http_rejection_is_not_retried_and_means_no_attempt(standin: tuple[str, str, _State]) -> None:
    url, _master, state = standin
    broker = LiteLLMKeyBroker(url, "sk-wrong-master", backoff_seconds=0.01)
    with pytest.raises(KeyUnavailable, match="401"), attempt_key(broker, "t-auth"):
        pytest.fail("attempt started without its key")
    assert state.requests == 1 and state.keys == {}


def test_http_value_never_logged(standin: tuple[str, str, _State], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url, master, _ = standin
    broker = LiteLLMKeyBroker(url, master)
    with attempt_key(broker, "t-log") as key:
        value = key.container_env()["OPENAI_API_KEY"]
    assert value not in caplog.text and master not in caplog.text
    assert key.fingerprint in caplog.text and key.alias in caplog.text  # type: ignore[operator]


def test_sweep_pages_through_many_keys(standin: tuple[str, str, _State]) -> None:
    url, master, state = standin
    broker = LiteLLMKeyBroker(url, master)
    for i in range(230):
        broker.create(f"t-page-{i}", LIMIT)
    assert len(broker.list_attempt_keys()) == 230
    deleted = broker.sweep(running_attempt_ids={"t-page-7"})
    assert len(deleted) == 229
    assert [k["metadata"]["argusic_attempt_id"] for k in state.keys.values()] == ["t-page-7"]


# ---------------------------------------------------------------------------------------------------
# Key-lifecycle figures


def test_key_lifecycle_figures(http_gateway: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Attempts of every ending through one gateway; print created / deleted / left over."""
    broker = _broker(http_gateway)
    tag = uuid.uuid4().hex[:6]
    endings = ["success"] * 4 + ["exception"] * 3 + ["timeout"] * 2 + ["cancel"] * 2 + ["killed"] * 2
    started_ids: list[str] = []
    for i, ending in enumerate(endings):
        attempt = f"fig-{tag}-{i}-{ending}"
        if ending == "killed":
            proc, _ = _start_worker(http_gateway, attempt)
            started_ids.append(attempt)
            proc.kill()
            proc.wait(timeout=30)
            continue
        try:
            with attempt_key(broker, attempt):
                started_ids.append(attempt)
                if ending == "exception":
                    raise RuntimeError("x")
                if ending == "timeout":
                    subprocess.run(["sleep", "30"], timeout=0.2)
                if ending == "cancel":
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(5)
        except (RuntimeError, subprocess.TimeoutExpired, AttemptCancelled):
            pass
    down = LiteLLMKeyBroker("http://127.0.0.1:9", "sk-x", attempts=2, backoff_seconds=0.01, timeout=1)
    refused = 0
    for i in range(3):
        try:
            with attempt_key(down, f"fig-{tag}-down-{i}"):
                started_ids.append(f"fig-{tag}-down-{i}")
        except KeyUnavailable:
            refused += 1
    mine = [r for r in broker.list_attempt_keys() if (r.attempt_id or "").startswith(f"fig-{tag}-")]
    before_sweep = len(mine)
    swept = [
        r for r in broker.sweep(running_attempt_ids=[]) if (r.attempt_id or "").startswith(f"fig-{tag}-")
    ]
    left = [r for r in broker.list_attempt_keys() if (r.attempt_id or "").startswith(f"fig-{tag}-")]
    created = broker.stats.created + 2  # + the two killed workers' keys (created in their processes)
    figures = {
        "gateway": "litellm" if "litellm" in str(os.environ.get("PYTEST_CURRENT_TEST")) else "standin",
        "attempts": len(endings) + 3,
        "started": len(started_ids),
        "refused_no_key": refused,
        "created": created,
        "deleted_at_end": broker.stats.deleted - len(swept),
        "left_by_killed_workers": before_sweep,
        "deleted_by_sweep": len(swept),
        "left_over": len(left),
    }
    with capsys.disabled():
        print(f"\nkey-lifecycle figures: {json.dumps(figures)}")
    assert refused == 3 and len(started_ids) == len(endings)  # no attempt without its key
    assert created == len(endings)
    assert figures["deleted_at_end"] == len(endings) - 2
    assert before_sweep == 2 and len(swept) == 2
    assert left == []
