"""The scripted model service's OpenAI Responses API (argusic.sandbox.model_double, issue #28): what the
pinned Codex CLI (0.171.0, ``wire_api = "responses"``) calls.

Unit tests of the server on 127.0.0.1 (SSE framing as the Responses streaming API, non-streaming JSON,
the key check, scripted errors, script exhaustion, OpenAI-shaped errors), and slow Docker tests in which
the pinned Codex CLI of the agents image does whole attempts against it: the server runs in the runner
image on an internal Docker network this test makes, the attempt container joins that network, and a
stand-in broker mints the per-run key the server checks (the same arrangement as the Claude Code tests
in test_model_double.py, whose constants and checks are reused).
"""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path

import pytest
from argusic.external import SESSION_LOG, codex
from argusic.sandbox.model_double import (
    load_script,
    load_script_file,
    responses_output,
    responses_stream_events,
    script_file,
)
from test_model_double import (
    KEY,
    PROJECT,
    REPORT,
    VERIFY,
    DoubleRun,
    _attempt_against_double,
    _key_in_no_stored_byte,
    _post,
    env,  # noqa: F401 - the fixture, used by the Docker tests
    serve,  # noqa: F401 - the fixture, used by the unit tests
)

RESPONSES = "/v1/responses"
# What Codex 0.171.0 offers a model of unknown metadata (seen in its requests to the double).
CODEX_TOOLS = [{"type": "function", "name": "exec_command"}, {"type": "function", "name": "write_stdin"},
               {"type": "web_search"}]  # fmt: skip
AGENT = {
    "model": "gpt-m",
    "input": [{"type": "message", "role": "user", "content": "hi"}],
    "tools": CODEX_TOOLS,
}


def _events(data: bytes) -> list[dict]:
    frames = data.decode().split("\n\n")
    assert frames[-1] == ""  # every frame ends with a blank line
    out = []
    for frame in frames[:-1]:
        event_line, data_line = frame.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        payload = json.loads(data_line[6:])
        assert payload["type"] == event_line[7:]
        out.append(payload)
    return out


def test_streaming_turns_are_framed_as_the_responses_api(serve):  # noqa: F811 - the fixture
    server = serve(
        [
            {"text": "let me look", "tool_calls": [{"name": "exec_command", "input": {"cmd": "ls -la"}}],
             "usage": {"input_tokens": 1234, "output_tokens": 56, "cached_tokens": 1000,
                       "reasoning_tokens": 7}},
            {"text": "done"},
        ]
    )  # fmt: skip
    status, headers, data = _post(
        server, {**AGENT, "stream": True}, {"authorization": f"Bearer {KEY}"}, RESPONSES
    )
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = _events(data)
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.output_item.done",
        "response.completed",
    ]  # fmt: skip
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    created = events[0]["response"]
    assert created["status"] == "in_progress" and created["output"] == [] and created["model"] == "gpt-m"
    message = events[7]["item"]
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["content"] == [{"type": "output_text", "text": "let me look", "annotations": []}]
    assert events[4]["delta"] == "let me look" and events[4]["item_id"] == message["id"]
    call = events[11]["item"]
    assert call["type"] == "function_call" and call["name"] == "exec_command"
    assert json.loads(call["arguments"]) == {"cmd": "ls -la"} and call["call_id"].startswith("call_")
    assert events[9]["delta"] == call["arguments"] and events[9]["output_index"] == 1
    done = events[-1]["response"]
    assert done["status"] == "completed" and [i["type"] for i in done["output"]] == [
        "message",
        "function_call",
    ]
    assert done["usage"] == {
        "input_tokens": 1234, "input_tokens_details": {"cached_tokens": 1000},
        "output_tokens": 56, "output_tokens_details": {"reasoning_tokens": 7}, "total_tokens": 1290,
    }  # fmt: skip

    status, _, data = _post(server, {**AGENT, "stream": True}, {"authorization": f"Bearer {KEY}"}, RESPONSES)
    events = _events(data)
    assert status == 200 and [i["type"] for i in events[-1]["response"]["output"]] == ["message"]
    assert [(r["turn"], r["api"], r["output"]) for r in server.double.requests] == [
        (0, "responses", ["message", "function_call"]), (1, "responses", ["message"])
    ]  # fmt: skip
    assert server.double.requests[0]["tools"] == ["exec_command", "write_stdin", "web_search"]
    assert [r["usage"] for r in server.double.requests] == [
        {"input_tokens": 1234, "output_tokens": 56}, {"input_tokens": 100, "output_tokens": 20}
    ]  # fmt: skip


def test_non_streaming_answers_one_response_object(serve):  # noqa: F811 - the fixture
    server = serve([{"tool_calls": [{"name": "exec_command", "input": {"cmd": "make"}, "id": "call_mine"}]}])
    status, headers, data = _post(server, AGENT, {"authorization": f"Bearer {KEY}"}, RESPONSES)
    response = json.loads(data)
    assert status == 200 and headers["content-type"] == "application/json"
    assert response["object"] == "response" and response["status"] == "completed"
    assert response["output"][0]["call_id"] == "call_mine"
    assert response["usage"]["input_tokens"] == 100 and response["usage"]["output_tokens"] == 20


def test_wrong_or_missing_key_is_an_openai_401_and_consumes_no_turn(serve):  # noqa: F811 - the fixture
    server = serve([{"text": "only turn"}])
    for headers in ({}, {"authorization": "Bearer sk-wrong"}, {"authorization": KEY}):
        status, _, data = _post(server, AGENT, headers, RESPONSES)
        assert status == 401
        assert json.loads(data)["error"] == {
            "message": "Incorrect API key provided.", "type": "invalid_request_error", "param": None,
            "code": "invalid_api_key",
        }  # fmt: skip
    status, _, data = _post(server, AGENT, {"authorization": f"Bearer {KEY}"}, RESPONSES)
    assert status == 200 and json.loads(data)["output"][0]["content"][0]["text"] == "only turn"
    assert all(KEY not in json.dumps(r) for r in server.double.requests)  # the log never holds the key


def test_scripted_errors_exhaustion_and_side_requests(serve):  # noqa: F811 - the fixture
    server = serve([{"status": 429, "message": "slow down"}, {"status": 500}, {"text": "last"}])
    auth = {"authorization": f"Bearer {KEY}"}
    status, headers, data = _post(server, AGENT, auth, RESPONSES)
    assert status == 429 and headers["retry-after"] == "0"
    assert json.loads(data)["error"] == {
        "message": "slow down", "type": "requests", "param": None, "code": "rate_limit_exceeded"
    }  # fmt: skip
    status, _, data = _post(server, AGENT, auth, RESPONSES)
    assert status == 500 and json.loads(data)["error"]["type"] == "server_error"
    status, _, data = _post(server, {"model": "m", "input": []}, auth, RESPONSES)  # no tools: a side request
    assert status == 200 and json.loads(data)["output"][0]["content"][0]["text"] == "ok"
    assert _post(server, AGENT, auth, RESPONSES)[0] == 200
    status, _, data = _post(server, AGENT, auth, RESPONSES)
    assert status == 500 and "script exhausted after 3 turns" in json.loads(data)["error"]["message"]
    assert [r["turn"] for r in server.double.requests] == [0, 1, None, 2, -1]


def test_one_script_serves_either_api(serve):  # noqa: F811 - the fixture
    """The turn counter is the script's: a Messages request and a Responses request take turns in order."""
    server = serve([{"text": "first"}, {"text": "second"}])
    anthropic = {"model": "m", "max_tokens": 10, "messages": [], "tools": [{"name": "Bash"}]}
    status, _, data = _post(server, anthropic, {"x-api-key": KEY})
    assert status == 200 and json.loads(data)["content"][0]["text"] == "first"
    status, _, data = _post(server, AGENT, {"authorization": f"Bearer {KEY}"}, RESPONSES)
    assert status == 200 and json.loads(data)["output"][0]["content"][0]["text"] == "second"


def test_stream_of_a_turn_is_rebuilt_into_the_same_response():
    """What a Responses client assembles from the stream (items from output_item.done, the
    completed response) equals the non-streaming object."""
    turn = load_script(
        [{"text": "t", "tool_calls": [{"name": "a", "input": {}}, {"name": "b", "input": {"x": 1}}]}]
    )[0]
    response = responses_output(turn, "m")
    events = _events(b"".join(responses_stream_events(response)))
    assert [e["item"] for e in events if e["type"] == "response.output_item.done"] == response["output"]
    assert events[-1]["response"] == response
    assert [e["output_index"] for e in events if e["type"] == "response.output_item.added"] == [0, 1, 2]


def _prices() -> dict[str, dict]:
    import csv

    from argusic.core.settings import dbt_project_dir

    with open(dbt_project_dir() / "seeds" / "model_prices.csv", newline="") as handle:
        return {row["model"]: row for row in csv.DictReader(handle)}


def test_every_external_agents_model_has_a_price():
    """Codex states no cost (its usage is tokens only): the warehouse's cost rule prices the record's
    tokens (int_attempt_costs x seed model_prices). Every external agent's model has a row, so no
    attempt of theirs is left with an unknown cost for want of a price."""
    from argusic.attempts import agents

    priced = _prices()
    for driver in agents.DRIVERS.values():
        if driver.external:
            assert driver.model in priced, driver.agent_id
            row = priced[driver.model]
            assert (
                float(row["usd_per_million_input_tokens"]) > 0 < float(row["usd_per_million_output_tokens"])
            )


# -- Codex against the double, whole attempts in Docker ------------------------------------------------

HANG = "python3 -c 'import time; time.sleep(300)'"  # longer than the budget
SCRIPT_PY = "make_data.py"
PATCH = """apply_patch <<'PATCH'
*** Begin Patch
*** Update File: make_data.py
@@
-import json, sys
+import json, os, sys
 path = sys.argv[1]
+os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
 with open(path, "w") as f:
*** End Patch
PATCH
"""
COMMANDS = [
    "cat README.md",
    "python3 make_data.py out/data.json",  # fails: out/ does not exist
    "cat make_data.py",
    "python3 make_data.py out/data.json",  # after the fix: make_data.py makes the folder
    VERIFY,
]


def _report_patch() -> str:
    lines = json.dumps(REPORT, indent=1).splitlines()
    body = "\n".join("+" + line for line in lines)
    head = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: /out/report.json"
    return f"{head}\n{body}\n*** End Patch\nPATCH\n"


def _exec(cmd: str, i: int, **extra) -> dict:
    usage = {"input_tokens": 1000 + i, "output_tokens": 40 + i, "cached_tokens": 500}
    return {"text": f"Step {i}.", "usage": usage,
            "tool_calls": [{"name": "exec_command", "input": {"cmd": cmd, **extra}}]}  # fmt: skip


def _script(kind: str = "install") -> list[dict]:
    """The tiny project's Codex script of that kind (plugins/argusic/model_scripts/tinydata/codex.*):
    install is look, run (fails), read the code, fix it (a patch), run again, verify, write the report,
    stop."""
    return load_script_file(script_file(PROJECT, "codex", kind))


def test_the_codex_scripts_are_the_steps_these_tests_check():
    """The scripts are data; what they say is what the Docker tests below expect, step by step."""
    steps = [_exec(COMMANDS[0], 0), _exec(COMMANDS[1], 1), _exec(COMMANDS[2], 2), _exec(PATCH, 3),
             _exec(COMMANDS[3], 4), _exec(COMMANDS[4], 5), _exec(_report_patch(), 6)]  # fmt: skip
    steps.append({"text": REPORT["final_state"], "usage": {"input_tokens": 2100, "output_tokens": 30}})
    assert _script() == steps
    first = steps[0]
    for status in (500, 429):
        assert _script(f"fails-{status}") == [first, {"status": status, "message": "outage"}]
    hang = {"tool_calls": [{"name": "exec_command", "input": {"cmd": HANG, "yield_time_ms": 30000}}],
            "usage": {"input_tokens": 1500, "output_tokens": 10}}  # fmt: skip
    assert _script("budget") == [first, hang, {"text": "never asked"}]


def _codex_attempt(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    turns: list[dict],
    budget: float = 180,
    *,
    known: bool = True,
) -> DoubleRun:
    """A Codex install-and-run attempt on the tiny project against the double (the arrangement of
    test_model_double._attempt_against_double, for the codex agent)."""
    return _attempt_against_double(tmp_path, monkeypatch, turns, budget, known=known, agent="codex")


def _exec_calls(out: Path) -> list:
    from argusic.attempts import agents

    return [c for c in agents.DRIVERS["codex"].collect(out).tool_calls if c.category == "exec"]


def _unwrapped(call) -> str:
    """The command the model asked for: Codex runs it as `/bin/bash -lc '<command>'`."""
    import shlex

    words = shlex.split(call.arguments["command"])
    assert words[:2] == ["/bin/bash", "-lc"] and len(words) == 3, words
    return words[2]


@pytest.mark.slow
@pytest.mark.docker
def test_codex_does_an_install_and_run_attempt_against_the_double(env, tmp_path, monkeypatch):  # noqa: F811
    from argusic.attempts import agents
    from argusic.core import settings
    from argusic.core.tasks import task_for
    from argusic.judging.hints import agent_logic_hint

    registered = agents.DRIVERS["codex"]
    script = _script()
    run = _codex_attempt(tmp_path, monkeypatch, script)
    record, out, served = run.record, run.out, run.served

    # The CLI asked for every scripted turn on the Responses API, with the per-run key, nothing else.
    assert [r.get("turn") for r in served] == list(range(len(script))), served
    assert all(r["status"] == 200 and r["path"] == RESPONSES and r["api"] == "responses" for r in served)
    assert all(r["stream"] is True and "exec_command" in r["tools"] for r in served)
    assert [r["tool_outputs"] for r in served] == list(range(len(script)))  # each call's output came back
    assert all(r["model"] == registered.model for r in served)

    assert record.executor == "docker" and record.image == settings.agents_image()
    assert record.end_reason == "completed", (record.end_reason, record.invalid_reason)
    assert record.invalid_reason is None

    # The commands the CLI executed, from its own session log; the patches are its file changes.
    collected = agents.DRIVERS["codex"].collect(out)
    assert collected.end_state == "completed"
    calls = [c for c in collected.tool_calls if c.category == "exec"]
    assert [_unwrapped(c) for c in calls] == COMMANDS
    assert [c.ok for c in calls] == [True, False, True, True, True]
    edits = [c for c in collected.tool_calls if c.category == "edit"]
    assert [(c.target, c.ok) for c in edits] == [
        (f"/workspace/project/{SCRIPT_PY}", True),
        ("/out/report.json", True),
    ]
    items = [
        json.loads(line)["item"]
        for line in (out / SESSION_LOG).read_text().splitlines()
        if '"item.completed"' in line
    ]
    assert "No such file or directory" in items_output(items, COMMANDS[1], 0)  # the first run's failure
    assert "wrote out/data.json" in items_output(items, COMMANDS[3], 1)
    assert items_output(items, VERIFY, 0).strip() == "3"  # the decoding command's output: three items
    # The fix is in the project's changes, computed on the host against our copy of the commit.
    patch = (out / "changes.patch").read_text()
    assert "+import json, os, sys" in patch and "+os.makedirs(os.path.dirname(path)" in patch

    # Usage from the CLI's output: its thread total of the script's numbers.
    assert record.usage.input_tokens.value == sum(t["usage"]["input_tokens"] for t in script)
    assert record.usage.output_tokens.value == sum(t["usage"]["output_tokens"] for t in script)
    assert record.usage.model_calls.status == "unavailable"
    # Codex states no cost; the warehouse prices these tokens (int_attempt_costs, seed model_prices).
    assert record.usage.cost_usd.status == "unavailable"
    price = _prices()[registered.model]
    tokens_in, tokens_out = int(record.usage.input_tokens.value), int(record.usage.output_tokens.value)
    priced = (
        tokens_in * Decimal(price["usd_per_million_input_tokens"])
        + tokens_out * Decimal(price["usd_per_million_output_tokens"])
    ) / 10**6
    print("cost from tokens x model_prices:", priced, "USD")
    last = [
        json.loads(line)
        for line in (out / SESSION_LOG).read_text().splitlines()
        if '"turn.completed"' in line
    ]
    assert last[-1]["usage"]["cached_input_tokens"] == sum(t["usage"].get("cached_tokens", 0) for t in script)

    # Model and harness: the model requested (Codex names no other); the pinned CLI.
    assert record.model.requested == registered.model
    assert record.harness.name == "codex" and record.harness.version == codex.PINNED_VERSION
    assert all(f"codex_exec/{codex.PINNED_VERSION} " in r["user-agent"] for r in served)

    # The report the model wrote through apply_patch, and what the harness observed.
    assert json.loads((out / "report.json").read_text()) == REPORT
    assert record.report is not None and record.report.errors_fixed == 1
    observed = record.observed
    assert observed.source == "session_log"
    assert observed.install_ok and observed.ran_ok
    assert observed.errors_encountered == 1 and observed.errors_fixed == 1
    assert observed.verified and observed.verify_command == VERIFY
    assert observed.commands_run == len(COMMANDS)

    # Layer 1's agent-logic hint, from the steps in the CLI's session log.
    hint = agent_logic_hint(out.parent, record, task_for(record.purpose, PROJECT))
    print("agent logic:", hint)
    # the steps read from the record's tool calls (issue 31), not by parsing the session log again
    assert hint["source"] == "codex session (run record)" and hint["succeeded"] is True
    assert hint["steps"] == ["read", "exec", "read", "edit", "exec", "report"]
    assert hint["status"] == "measured" and hint["score"] == 1.0

    # The key: minted once, deleted, and in no stored byte.
    _key_in_no_stored_byte(tmp_path, run)


def items_output(items: list[dict], command: str, nth: int) -> str:
    """The aggregated output of the nth command_execution item whose command ends with `command`."""
    found = [i for i in items if i.get("type") == "command_execution" and _ends(i.get("command"), command)]
    return found[nth].get("aggregated_output") or ""


def _ends(wrapped: str | None, command: str) -> bool:
    import shlex

    return bool(wrapped) and shlex.split(wrapped)[-1] == command


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("status", [500, 429])
def test_a_model_failing_mid_session_makes_the_codex_attempt_invalid(status, env, tmp_path, monkeypatch):  # noqa: F811
    """The model answers one turn, then 500 or 429 (no retries): the CLI ends with turn.failed, the
    attempt is ours to rerun (invalid), what it did before is on record, the key deleted."""
    script = _script(f"fails-{status}")
    assert script[0] == _script()[0] and script[1]["status"] == status
    run = _codex_attempt(tmp_path, monkeypatch, script)
    assert [(r.get("turn"), r["status"]) for r in run.served] == [(0, 200), (1, status)]
    record = run.record
    assert record.end_reason == "harness_error"
    assert record.invalid_reason and record.invalid_reason.startswith("agent CLI ended in error")
    assert [_unwrapped(c) for c in _exec_calls(run.out)] == [COMMANDS[0]]
    assert record.report is None
    # No turn.completed: Codex states no usage for a failed turn.
    assert record.usage.input_tokens.status == "unavailable"
    _key_in_no_stored_byte(tmp_path, run)


@pytest.mark.slow
@pytest.mark.docker
def test_a_codex_session_that_runs_into_the_budget_is_a_measured_timeout(env, tmp_path, monkeypatch):  # noqa: F811
    """The model has the agent run a command longer than the attempt's budget, waiting for it as long
    as exec_command allows (30 s, longer than the budget): the container is killed at the budget, the
    attempt is a valid timeout (the agent's doing), the session log so far is read, the key deleted."""
    script = _script("budget")
    assert script[0] == _script()[0] and script[1]["tool_calls"][0]["input"]["cmd"] == HANG
    started = time.monotonic()
    run = _codex_attempt(tmp_path, monkeypatch, script, budget=20)
    assert time.monotonic() - started < 150
    assert [r.get("turn") for r in run.served] == [0, 1]  # the third turn is never asked for
    record = run.record
    assert record.end_reason == "timeout" and record.invalid_reason is None
    assert record.report is None and record.seal.status == "missing"
    calls = _exec_calls(run.out)
    assert [_unwrapped(c) for c in calls] == [COMMANDS[0], HANG]
    assert [c.ok for c in calls] == [True, None]  # the log never says how the sleep ended
    assert record.observed.commands_run == 1
    assert record.usage.input_tokens.status == "unavailable"  # no turn.completed before the end
    _key_in_no_stored_byte(tmp_path, run)


@pytest.mark.slow
@pytest.mark.docker
def test_a_key_the_model_does_not_know_is_refused_to_codex(env, tmp_path, monkeypatch):  # noqa: F811
    """The per-run key is not the one the model service checks: 401 on the first request, the CLI
    stops (turn.failed), the attempt is invalid, no turn is consumed."""
    run = _codex_attempt(tmp_path, monkeypatch, _script(), known=False)
    assert [(r.get("turn"), r["status"]) for r in run.served] == [(None, 401)]
    assert run.record.end_reason == "harness_error"
    assert run.record.invalid_reason.startswith("the agent never reached its model")
    assert _exec_calls(run.out) == []
    _key_in_no_stored_byte(tmp_path, run)
