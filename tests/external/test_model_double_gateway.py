"""Keys through the gateway path (issue #28): the model double as LiteLLM's gateway.

With a master key the double (argusic.sandbox.model_double.KeyGateway) answers LiteLLM 1.108.7's key
endpoints, accepts the keys minted there on model requests, keeps each key's spend (the tokens it
served x the seed model_prices) and refuses a key whose spend reached its max_budget as LiteLLM does.
Unit tests on 127.0.0.1 check the shapes; Docker tests run the pinned Claude Code and Codex CLIs
through it with the real key broker of argusic.attempts.keys (LiteLLMKeyBroker): for each, a whole
install-and-run attempt (the key minted with max_budget, carried by every request, deleted at the end,
the sweep keeping to this installation's keys) and a key with a tiny max_budget that the gateway stops
mid-session.
"""

from __future__ import annotations

import copy
import dataclasses
import http.client
import json
import os
import threading
import time
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from argusic.attempts.keys import KeyBrokerError, KeyStats, LiteLLMKeyBroker, attempt_key, token_id
from argusic.sandbox.model_double import (
    BUDGET_EXCEEDED_STATUS,
    DEFAULT_PRICES_FILE,
    load_prices,
    load_script,
    make_server,
)
from test_model_double import (
    COMMANDS,
    MAKE_DATA,
    PROJECT,
    _exec_calls,
    _script,
    double_service,
    env,  # noqa: F401 - the fixture, used by the Docker tests
    free_loopback_port,
    served_requests,
    wait_listening,
)

ROOT = Path(__file__).resolve().parents[2]
MODEL = "claude-sonnet-4-5"  # the Claude Code driver's model: priced by the seed
PRICE_IN, PRICE_OUT = Decimal("3.00") / 10**6, Decimal("15.00") / 10**6  # seed model_prices, per token
AGENT = {
    "model": MODEL,
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"name": "Bash"}],
}
TURN = {
    "text": "a turn",
    "usage": {"input_tokens": 1000, "output_tokens": 40},
}  # 0.0036 USD at the seed's price


@pytest.fixture
def gateway():
    servers = []

    def start(turns, prices=None):
        master = f"sk-master-{uuid.uuid4().hex}"
        server = make_server(load_script(turns), "", master_key=master, prices=prices)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        url = f"http://127.0.0.1:{server.server_address[1]}"
        return server, LiteLLMKeyBroker(url, master, backoff_seconds=0.01), master

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _call(server, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    data = json.dumps(body) if body is not None else None
    conn.request(method, path, data, {"content-type": "application/json", **(headers or {})})
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, json.loads(raw) if raw else None


def _value(key) -> str:
    return key.masking_values()[0]  # the key's value, as the masker gets it


# -- LiteLLM's key endpoints -------------------------------------------------------------------------


def test_the_key_endpoints_answer_as_litellm_does(gateway):
    server, _, master = gateway([{"text": "x"}])
    admin = {"authorization": f"Bearer {master}"}
    body = {
        "key_alias": "argusic-attempt:i:a1:0000",
        "max_budget": 3.0,
        "duration": "600s",
        "metadata": {"m": 1},
    }
    status, made = _call(server, "POST", "/key/generate", body, admin)
    assert status == 200
    value = made["key"]
    assert value.startswith("sk-") and made["token"] == made["token_id"] == token_id(value)
    assert made["key_name"] == f"sk-...{value[-4:]}" and made["spend"] == 0.0 and made["max_budget"] == 3.0
    assert made["key_alias"] == body["key_alias"] and made["metadata"] == {"m": 1} and made["expires"]
    # An alias is unique; anyone but the master key is refused (a minted key too).
    status, error = _call(server, "POST", "/key/generate", body, admin)
    assert status == 400 and "already exists. Unique key aliases" in error["error"]["message"]
    for who in ("sk-wrong", value):
        status, error = _call(server, "POST", "/key/generate", {}, {"authorization": f"Bearer {who}"})
        assert status == 401 and error["error"]["code"] == "401"
    # List (substring of the alias, full objects, paged), info, delete; a deleted key is archived.
    query = "key_alias=ATTEMPT:i:&substring_matching=true&return_full_object=true"
    status, listing = _call(server, "GET", f"/key/list?{query}", headers=admin)
    assert status == 200 and listing["total_count"] == 1 and listing["keys"][0]["token"] == made["token"]
    status, listing = _call(server, "GET", "/key/list?key_alias=argusic-attempt:i:", headers=admin)
    assert listing["keys"] == []  # exact match by default
    status, info = _call(server, "GET", f"/key/info?key={made['token']}", headers=admin)
    assert status == 200 and info["info"]["status"] == "active" and "token" not in info["info"]
    status, done = _call(server, "POST", "/key/delete", {"keys": [made["token"]]}, admin)
    assert status == 200 and done == {"deleted_keys": [made["token"]]}
    status, info = _call(server, "GET", f"/key/info?key={made['token']}", headers=admin)
    assert status == 200 and info["info"]["status"] == "deleted"
    status, error = _call(server, "POST", "/key/delete", {"keys": [made["token"]]}, admin)
    assert status == 404 and "No keys found" in error["error"]["message"]
    status, error = _call(server, "GET", f"/key/info?key={token_id('sk-never')}", headers=admin)
    assert status == 404 and error["error"]["message"] == "Key not found in database"
    log = json.dumps(server.double.requests)
    assert value not in log and master not in log and "query" not in log  # no value, no query string


def test_the_broker_sees_a_deleted_key_as_gone(gateway):
    """LiteLLM 1.108.7 still answers /key/info for a deleted key (status deleted): the broker's
    key_info says None, as for a key that never was."""
    _, broker, _ = gateway([{"text": "x"}])
    key = broker.create("a-deleted", 3)
    assert broker.key_info(key)["status"] == "active"
    assert broker.delete(key) is True and broker.key_info(key) is None and broker.delete(key) is False


def test_a_spend_the_gateway_did_not_give_before_deletion_is_read_from_its_archive(gateway, monkeypatch):
    """The read before deletion fails (the gateway down for a moment): the count is read from the
    deleted key's archive; when that fails too, the key says why its spend is unknown (never blank)."""
    server, broker, _ = gateway([TURN, TURN], prices=load_prices(DEFAULT_PRICES_FILE))
    cost = float(1000 * PRICE_IN + 40 * PRICE_OUT)
    real_info = broker.key_info

    def down_while_live(key, *, attempts=None, archived=False):
        if not archived:
            raise KeyBrokerError("key info: gateway unreachable (connection refused or reset)")
        return real_info(key, attempts=attempts, archived=archived)

    monkeypatch.setattr(broker, "key_info", down_while_live)
    with attempt_key(broker, "a-archive", 3.0) as key:
        assert _call(server, "POST", "/v1/messages", AGENT, {"x-api-key": _value(key)})[0] == 200
    assert key.gateway_spend == {"spend_usd": pytest.approx(cost), "max_budget_usd": 3.0}
    assert key.record() == {"kind": "per_run", "limit_usd": 3.0, "gateway_spend_usd": pytest.approx(cost)}
    assert real_info(key) is None  # deleted all the same

    def down(key, *, attempts=None, archived=False):
        raise KeyBrokerError("key info: gateway timed out")

    monkeypatch.setattr(broker, "key_info", down)
    with attempt_key(broker, "a-unknown", 3.0) as key:
        assert _call(server, "POST", "/v1/messages", AGENT, {"x-api-key": _value(key)})[0] == 200
    assert key.gateway_spend is None and real_info(key) is None
    assert key.record()["gateway_spend_unread"] == (
        "spend not read before deletion: key info: gateway timed out; not read after it either: "
        "key info: gateway timed out"
    )


def test_prices_come_from_the_seed_or_a_file(tmp_path):
    assert DEFAULT_PRICES_FILE == ROOT / "dbt_project" / "seeds" / "model_prices.csv"
    seed = load_prices(DEFAULT_PRICES_FILE)
    assert seed[MODEL] == (float(PRICE_IN), float(PRICE_OUT))
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m": {"input": 1.5, "output": 6}}))
    assert load_prices(prices) == {"m": (1.5e-6, 6e-6)}


# -- The spend limit -----------------------------------------------------------------------------------


def test_spend_is_counted_and_a_spent_key_refused_as_litellm_does(gateway, caplog):
    """Each answer's cost (served tokens x prices) is added to the key; once its spend reaches
    max_budget the next request is refused before it is answered: HTTP 422, LiteLLM's body (type
    budget_exceeded), no turn used. attempt_key reads the spend before deleting the key."""
    server, broker, _ = gateway(
        [TURN, TURN, {"text": "never served"}], prices=load_prices(DEFAULT_PRICES_FILE)
    )
    cost = float(1000 * PRICE_IN + 40 * PRICE_OUT)
    with attempt_key(broker, "a-spent", 0.005) as key:
        headers = {"x-api-key": _value(key)}
        assert _call(server, "POST", "/v1/messages", AGENT, headers)[0] == 200
        assert broker.key_info(key)["spend"] == pytest.approx(cost)
        assert _call(server, "POST", "/v1/messages", AGENT, headers)[0] == 200  # 0.0036 < 0.005: served
        responses = {"model": MODEL, "input": [], "tools": [{"type": "function", "name": "exec_command"}]}
        for path, body in (("/v1/messages", AGENT), ("/v1/responses", responses)):
            status, error = _call(server, "POST", path, body, headers)
            assert status == BUDGET_EXCEEDED_STATUS == 422
            assert error == {
                "error": {
                    "message": f"Budget has been exceeded! Key={key.alias} (sk-...{_value(key)[-4:]}) "
                    f"Current cost: {2 * cost}, Max budget: 0.005",
                    "type": "budget_exceeded",
                    "param": None,
                    "code": "422",
                }
            }
        value = _value(key)
    assert server.double.next_turn == 2  # the refused requests used no turn
    served = [r for r in server.double.requests if r["path"].startswith("/v1/")]
    assert [(r["status"], r.get("refused")) for r in served] == [
        (200, None), (200, None), (422, "budget_exceeded"), (422, "budget_exceeded")
    ]  # fmt: skip
    assert all(r["key"] == key.alias for r in served[:2]) and [r["cost_usd"] for r in served[:2]] == [
        cost,
        cost,
    ]
    assert key.gateway_spend == {"spend_usd": pytest.approx(2 * cost), "max_budget_usd": 0.005}
    assert broker.key_info(key) is None  # deleted
    assert value not in json.dumps(server.double.requests) and value not in caplog.text


def test_an_unknown_or_expired_key_is_refused_as_litellm_does(gateway):
    server, broker, _ = gateway([{"text": "x"}])
    status, error = _call(server, "POST", "/v1/messages", AGENT, {"x-api-key": "sk-unknown"})
    assert status == 401 and error["error"]["type"] == "token_not_found_in_db"
    assert error["error"]["message"] == "Authentication Error, Invalid API key provided."
    key = broker.create("a-expiring", 3, ttl_seconds=1)
    time.sleep(1.2)
    status, error = _call(server, "POST", "/v1/messages", AGENT, {"authorization": f"Bearer {_value(key)}"})
    assert status == 401 and error["error"]["type"] == "expired_key"
    assert error["error"]["message"].startswith("Authentication Error - Expired Key.")
    assert server.double.next_turn == 0


# -- Claude Code through the gateway, in Docker ----------------------------------------------------------


class RecordingBroker(LiteLLMKeyBroker):
    """The real broker; keeps the keys it made (to look for their values in stored bytes) and, when
    ``limit`` is set, mints them with that max_budget instead of the orchestrator's."""

    limit: float | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.issued: list = []

    def create(self, attempt_id, limit_usd, *, ttl_seconds=None):
        key = super().create(attempt_id, self.limit or limit_usd, ttl_seconds=ttl_seconds)
        self.issued.append(key)
        return key


class TinyBudgetBroker(RecordingBroker):
    limit = 0.005  # turn 0 costs 0.0036 USD, turns 0 and 1 together 0.0072: turn 2 is refused


@dataclasses.dataclass
class GatewayRun:
    record: object
    out: Path
    served: list[dict]  # the double's request log, model and key requests
    requests: str
    key: object  # the IssuedKey (deleted)
    broker: RecordingBroker
    left: list  # this installation's keys on the gateway after the attempt
    others_kept: bool  # another installation's key on the same gateway outlived our sweep
    swept: list


def _attempt_through_gateway(
    tmp_path, monkeypatch, broker_class, agent="claude-code", turns=None
) -> GatewayRun:
    from argusic.attempts.run import run_attempt
    from argusic.core.evidence import EvidenceStore
    from argusic.core.record import load_record_file
    from argusic.core.spec import AttemptSpec
    from test_containment import hostile_repo

    turns = turns or _script()
    service = double_service(tmp_path, monkeypatch, turns, agent=agent, gateway=broker_class)
    with service as (broker, _, network, server):
        ours = broker.list_attempt_keys()
        installation = os.environ["ARGUSIC_INSTALLATION"]
        monkeypatch.setenv("ARGUSIC_INSTALLATION", f"{installation}-other")  # another installation
        theirs = copy.copy(broker)  # the same gateway and master key, figures of its own
        theirs.stats, theirs.issued = KeyStats(), []
        other = theirs.create("2026-12.other.attempt", 3)
        monkeypatch.setenv("ARGUSIC_INSTALLATION", installation)
        assert ours == [] and broker.list_attempt_keys() == []  # the other's key is not ours to see
        usage = ["python3 make_data.py out/data.json"]
        bare, commit = hostile_repo(tmp_path, PROJECT, usage, {"make_data.py": MAKE_DATA})
        spec = AttemptSpec(
            cycle_id="gateway", agent_id=agent, project_id=PROJECT, repo_url=str(bare), commit=commit,
            tier="standard", attempt_no=1, demo=True, budget_scale=180 / 5400,
        )  # fmt: skip
        store = EvidenceStore((tmp_path / "evidence").as_uri())
        path = run_attempt(spec, None, store, tmp_path / "runs", broker=broker)
        left = broker.list_attempt_keys()
        swept = broker.sweep(running_attempt_ids=[])
        others_kept = broker.key_info(other) is not None
        theirs.delete(other)
        requests = served_requests(server)
    record = load_record_file(path)
    served = [json.loads(line) for line in requests.splitlines()]
    print("requests:", json.dumps(served, indent=1))
    print("record:", record.end_reason, record.invalid_reason, record.usage, record.key)
    (key,) = broker.issued
    print("gateway spend:", key.gateway_spend)
    assert record.environment.limits.network == network
    return GatewayRun(record, path.parent / "out", served, requests, key, broker, left, others_kept, swept)


def _key_lived_one_attempt(tmp_path: Path, run: GatewayRun) -> None:
    """Minted once (with its max_budget), every model request carried it, deleted, the sweep found
    nothing of ours and left the other installation's key alone, no stored byte holds the value."""
    stats = run.broker.stats
    assert (stats.created, stats.deleted, stats.create_failed, stats.delete_failed) == (1, 1, 0, 0)
    assert run.left == [] and run.swept == [] and run.others_kept
    assert run.record.key.kind == "per_run" and run.record.key.limit_usd == run.key.limit_usd
    lifecycle = [(r["method"], r["path"], r["status"]) for r in run.served if r["path"].startswith("/key/")]
    generate, *rest = [x for x in lifecycle if x[1] != "/key/list"]
    assert generate == ("POST", "/key/generate", 200)  # the other installation's key first
    assert ("POST", "/key/generate", 200) in rest and ("POST", "/key/delete", 200) in rest
    assert rest.index(("GET", "/key/info", 200)) < rest.index(("POST", "/key/delete", 200))  # spend read
    model = [r for r in run.served if r["path"].startswith("/v1/")]
    assert model and all(r.get("key") == run.key.alias for r in model if r["status"] == 200)
    value = _value(run.key)
    assert value not in run.requests
    for root in (tmp_path / "runs", tmp_path / "evidence"):
        for file in root.rglob("*"):
            if file.is_file():
                assert value.encode() not in file.read_bytes(), file


@pytest.mark.slow
@pytest.mark.docker
def test_claude_code_attempt_through_the_gateway_with_a_per_run_key(env, tmp_path, monkeypatch):  # noqa: F811
    run = _attempt_through_gateway(tmp_path, monkeypatch, RecordingBroker)
    record = run.record
    assert record.end_reason == "completed" and record.invalid_reason is None
    assert [c.arguments.get("command") for c in _exec_calls(run.out)] == COMMANDS
    assert record.observed.verified and record.report.errors_fixed == 1
    assert run.key.limit_usd == 3.0  # the orchestrator's per-run limit, as the gateway stored it
    _key_lived_one_attempt(tmp_path, run)
    # The gateway's count of the key's spend: the tokens it served x the seed's prices, beside the
    # tokens the CLI itself counted (the same here: the session ended normally).
    model = [r for r in run.served if r["path"].startswith("/v1/") and r["status"] == 200]
    tokens_in = sum(r["usage"]["input_tokens"] for r in model)
    tokens_out = sum(r["usage"]["output_tokens"] for r in model)
    assert (tokens_in, tokens_out) == (record.usage.input_tokens.value, record.usage.output_tokens.value)
    spend = tokens_in * PRICE_IN + tokens_out * PRICE_OUT
    assert run.key.gateway_spend["spend_usd"] == pytest.approx(float(spend))
    assert record.key.gateway_spend_usd == pytest.approx(float(spend))  # kept in the run record
    assert sum(r["cost_usd"] for r in model) == pytest.approx(float(spend))


@pytest.mark.slow
@pytest.mark.docker
def test_a_spent_key_is_refused_by_the_gateway_and_the_cli_ends(env, tmp_path, monkeypatch):  # noqa: F811
    """max_budget 0.005 USD: turns 0 and 1 are served (0.0072 USD), the CLI's next request is refused
    by the gateway as LiteLLM refuses it (422 budget_exceeded); the CLI ends in error. The gateway
    counted the key's spend up to its limit: the agent's own model use spent it, inside the test
    machine, so the attempt is valid and a failure scoring 0 with that reason (METHODOLOGY.md §7,
    v1.6), never invalid and rerun (an agent could otherwise discard a losing run by burning its key);
    the key is deleted and in no byte."""
    run = _attempt_through_gateway(tmp_path, monkeypatch, TinyBudgetBroker)
    model = [r for r in run.served if r["path"].startswith("/v1/")]
    assert [(r.get("turn"), r["status"]) for r in model[:2]] == [(0, 200), (1, 200)]
    # Every later request refused, no turn used. (Claude Code 2.1.332 sends the refused request again
    # a few times, its retries off, some with a longer tool list: all refused alike.)
    refused = model[2:]
    assert refused and all((r["status"], r.get("refused")) == (422, "budget_exceeded") for r in refused)
    assert all(r.get("turn") is None for r in refused)
    print("refused:", [(len(r["tools"]), r.get("x-stainless-retry-count")) for r in refused])
    record = run.record
    assert record.end_reason == "harness_error" and record.invalid_reason is None
    assert record.container_fault.startswith("the attempt's model key reached its spend limit")
    assert "agent CLI ended in error" in record.container_fault
    assert "budget_exceeded" in record.container_fault or "Budget has been exceeded" in record.container_fault
    assert [c.arguments.get("command") for c in _exec_calls(run.out)] == COMMANDS[:2]
    assert record.report is None and run.key.limit_usd == 0.005 == record.key.limit_usd
    spend = sum(
        Decimal(r["usage"]["input_tokens"]) * PRICE_IN + r["usage"]["output_tokens"] * PRICE_OUT
        for r in model[:2]
    )
    assert run.key.gateway_spend == {"spend_usd": pytest.approx(float(spend)), "max_budget_usd": 0.005}
    assert run.key.gateway_spend["spend_usd"] >= 0.005
    assert record.key.gateway_spend_usd == pytest.approx(float(spend))
    _key_lived_one_attempt(tmp_path, run)


def test_the_double_started_as_in_its_container_is_a_gateway_with_a_master_key(tmp_path):
    """`python3 model_double.py serve --master-key-file` (no static key, no --prices: the seed's
    prices): the broker mints a key there, a model request with it is answered and charged."""
    import subprocess
    import sys

    script, master_file = tmp_path / "script.json", tmp_path / "master"
    script.write_text(json.dumps({"turns": [TURN]}))
    master_file.write_text(f"sk-master-{uuid.uuid4().hex}")
    port = free_loopback_port()
    program = ROOT / "plugins" / "argusic" / "sandbox" / "model_double.py"
    proc = subprocess.Popen(
        [sys.executable, str(program), "serve", "--script", str(script),
         "--master-key-file", str(master_file), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_listening(proc, port)
        broker = LiteLLMKeyBroker(f"http://127.0.0.1:{port}", master_file.read_text(), backoff_seconds=0.01)
        with attempt_key(broker, "a-command", 1.0) as key:
            server = type("S", (), {"server_address": ("127.0.0.1", port)})
            assert _call(server, "POST", "/v1/messages", AGENT, {"x-api-key": _value(key)})[0] == 200
            assert _call(server, "POST", "/v1/messages", AGENT, {"x-api-key": "sk-wrong"})[0] == 401
        assert key.gateway_spend == {"spend_usd": pytest.approx(0.0036), "max_budget_usd": 1.0}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    stderr = proc.stderr.read().decode()
    priced = len(load_prices(DEFAULT_PRICES_FILE))
    assert f"1 turns on 127.0.0.1:{port}, LiteLLM key endpoints, {priced} model prices" in stderr
    assert _value(key) not in stderr and master_file.read_text() not in stderr


# -- Codex through the gateway (the Responses API), in Docker -------------------------------------------


def _codex_turns() -> list[dict]:
    from test_model_double_codex import _script as codex_script

    return codex_script()


def _codex_cost(turn: dict) -> Decimal:
    price_in, price_out = (Decimal(str(p)) for p in load_prices(DEFAULT_PRICES_FILE)["gpt-5.3-codex"])
    usage = turn.get("usage", {})
    return usage.get("input_tokens", 100) * price_in + usage.get("output_tokens", 20) * price_out


@pytest.mark.slow
@pytest.mark.docker
def test_codex_attempt_through_the_gateway_with_a_per_run_key(env, tmp_path, monkeypatch):  # noqa: F811
    turns = _codex_turns()
    run = _attempt_through_gateway(tmp_path, monkeypatch, RecordingBroker, agent="codex", turns=turns)
    record = run.record
    assert record.end_reason == "completed" and record.invalid_reason is None
    model = [r for r in run.served if r["path"].startswith("/v1/")]
    assert [r.get("turn") for r in model] == list(range(len(turns)))
    assert all(r["api"] == "responses" and r["status"] == 200 for r in model)
    _key_lived_one_attempt(tmp_path, run)
    # Codex states no cost; the gateway counted the served tokens x the seed's gpt-5.3-codex prices.
    assert run.key.gateway_spend["spend_usd"] == pytest.approx(float(sum(map(_codex_cost, turns))))


@pytest.mark.slow
@pytest.mark.docker
def test_a_spent_key_is_refused_to_codex_by_the_gateway(env, tmp_path, monkeypatch):  # noqa: F811
    turns = _codex_turns()
    limit = float(_codex_cost(turns[0]) + _codex_cost(turns[1]) / 2)  # turns 0 and 1 served, then spent

    class Tiny(RecordingBroker):
        pass

    Tiny.limit = limit
    run = _attempt_through_gateway(tmp_path, monkeypatch, Tiny, agent="codex", turns=turns)
    model = [r for r in run.served if r["path"].startswith("/v1/")]
    print("codex requests:", [(r.get("turn"), r["status"], r.get("refused")) for r in model])
    assert [(r.get("turn"), r["status"]) for r in model[:2]] == [(0, 200), (1, 200)]
    refused = model[2:]
    assert refused
    assert all(
        (r["status"], r.get("refused"), r.get("turn")) == (422, "budget_exceeded", None) for r in refused
    )
    record = run.record
    print("record:", record.end_reason, record.invalid_reason, record.container_fault)
    assert record.end_reason == "harness_error" and record.invalid_reason is None  # the agent's spend
    assert record.container_fault.startswith("the attempt's model key reached its spend limit")
    assert "agent CLI ended in error: turn.failed: unexpected status 422" in record.container_fault
    assert "Budget has been exceeded!" in record.container_fault
    # Codex counts tokens per finished turn: the failed turn leaves the record without any, while the
    # gateway counted both answers it served: its spend is the only figure of what this attempt used.
    assert record.usage.input_tokens.status == record.usage.output_tokens.status == "unavailable"
    spent = _codex_cost(turns[0]) + _codex_cost(turns[1])
    assert run.key.gateway_spend == {"spend_usd": pytest.approx(float(spent)), "max_budget_usd": limit}
    assert run.key.gateway_spend["spend_usd"] >= limit
    assert record.key.gateway_spend_usd == pytest.approx(float(spent))
    _key_lived_one_attempt(tmp_path, run)
