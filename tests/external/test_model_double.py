"""The scripted model service (argusic.sandbox.model_double, issue #28 first slice).

Unit tests of the server on 127.0.0.1 (SSE framing, non-streaming JSON, the key check, scripted
errors, script exhaustion), and one slow Docker test in which the pinned Claude Code CLI of the agents
image does a whole install-and-run attempt against it: the server runs in the runner image on a Docker
network this test makes (internal: nothing else is reachable), the attempt container joins that network,
and a stand-in broker mints the per-run key the server checks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.client
import json
import threading
import time
import uuid
from pathlib import Path

import pytest
from argusic.external import SESSION_LOG, claude_code
from argusic.sandbox.model_double import (
    SCRIPTS_DIR,
    ScriptError,
    load_script,
    load_script_file,
    make_server,
    script_file,
)

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-double-unit-key"


@pytest.fixture
def serve():
    servers = []

    def start(turns, key=KEY):
        server = make_server(load_script(turns), key)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _post(server, body, headers=None, path="/v1/messages?beta=true"):
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json", **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, dict((k.lower(), v) for k, v in response.getheaders()), data


def _events(data: bytes) -> list[tuple[str, dict]]:
    frames = data.decode().split("\n\n")
    assert frames[-1] == ""  # every frame ends with a blank line
    out = []
    for frame in frames[:-1]:
        event_line, data_line = frame.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        event, payload = event_line[7:], json.loads(data_line[6:])
        assert payload["type"] == event
        out.append((event, payload))
    return out


AGENT = {
    "model": "m",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"name": "Bash"}],
}


def test_streaming_turns_are_framed_as_the_messages_api(serve):
    server = serve(
        [
            {"text": "let me look", "tool_calls": [{"name": "Bash", "input": {"command": "ls -la"}}],
             "usage": {"input_tokens": 1234, "output_tokens": 56}},
            {"text": "done"},
        ]
    )  # fmt: skip
    status, headers, data = _post(server, {**AGENT, "stream": True}, {"x-api-key": KEY})
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = _events(data)
    assert [e for e, _ in events] == [
        "message_start",
        "content_block_start", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]  # fmt: skip
    start = events[0][1]["message"]
    assert start["role"] == "assistant" and start["content"] == [] and start["model"] == "m"
    assert start["usage"]["input_tokens"] == 1234
    assert events[1][1]["content_block"] == {"type": "text", "text": ""}
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "let me look"}
    tool = events[4][1]["content_block"]
    assert tool["type"] == "tool_use" and tool["name"] == "Bash" and tool["input"] == {}
    assert tool["id"].startswith("toolu_")
    assert events[5][1]["delta"]["type"] == "input_json_delta"
    assert json.loads(events[5][1]["delta"]["partial_json"]) == {"command": "ls -la"}
    assert [p["index"] for e, p in events if e.startswith("content_block")] == [0, 0, 0, 1, 1, 1]
    delta = events[7][1]
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] == 56

    status, _, data = _post(server, {**AGENT, "stream": True}, {"authorization": f"Bearer {KEY}"})
    events = _events(data)
    assert status == 200 and events[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert [r["turn"] for r in server.double.requests] == [0, 1]
    # The log keeps the tokens each answer stated (message_delta's: the final count).
    assert [r["usage"] for r in server.double.requests] == [
        {"input_tokens": 1234, "output_tokens": 56}, {"input_tokens": 100, "output_tokens": 20}
    ]  # fmt: skip


def test_non_streaming_answers_one_json_message(serve):
    server = serve([{"tool_calls": [{"name": "Write", "input": {"file_path": "/tmp/a", "content": "x"}}]}])
    status, headers, data = _post(server, AGENT, {"x-api-key": KEY})
    message = json.loads(data)
    assert status == 200 and headers["content-type"] == "application/json"
    assert message["type"] == "message" and message["stop_reason"] == "tool_use"
    assert message["content"][0]["input"] == {"file_path": "/tmp/a", "content": "x"}
    assert message["usage"]["input_tokens"] == 100


def test_wrong_or_missing_key_is_401_and_consumes_no_turn(serve):
    server = serve([{"text": "only turn"}])
    for headers in ({}, {"x-api-key": "sk-wrong"}, {"authorization": "Bearer sk-wrong"}):
        status, _, data = _post(server, AGENT, headers)
        assert status == 401 and json.loads(data)["error"]["type"] == "authentication_error"
    assert _post(server, AGENT, {"x-api-key": KEY})[0] == 200
    assert all(KEY not in json.dumps(r) for r in server.double.requests)  # the log never holds the key


def test_side_requests_do_not_consume_turns(serve):
    server = serve([{"text": "the agent's turn"}])
    status, _, data = _post(server, {"model": "small", "max_tokens": 1, "messages": []}, {"x-api-key": KEY})
    assert status == 200 and json.loads(data)["content"] == [{"type": "text", "text": "ok"}]
    status, _, data = _post(server, AGENT, {"x-api-key": KEY}, path="/v1/messages/count_tokens")
    assert status == 200 and json.loads(data) == {"input_tokens": 100}
    status, _, data = _post(server, AGENT, {"x-api-key": KEY})
    assert json.loads(data)["content"][0]["text"] == "the agent's turn"


def test_scripted_errors_and_exhaustion(serve):
    server = serve([{"status": 429, "message": "slow down"}, {"status": 500}, {"text": "last"}])
    status, headers, data = _post(server, AGENT, {"x-api-key": KEY})
    assert status == 429 and json.loads(data)["error"] == {"type": "rate_limit_error", "message": "slow down"}
    assert headers["retry-after"] == "0"
    assert _post(server, AGENT, {"x-api-key": KEY})[0] == 500
    assert _post(server, AGENT, {"x-api-key": KEY})[0] == 200
    status, _, data = _post(server, AGENT, {"x-api-key": KEY})
    assert status == 500 and "script exhausted after 3 turns" in json.loads(data)["error"]["message"]


INVALID = [
    [], {"turns": []}, [{"text": "a", "status": 500}], [{"status": 418}], [{"tool_calls": []}],
    [{"tool_calls": [{"input": {}}]}], [{"text": 3}], [{"text": "a", "usage": {"input_tokens": -1}}], [{}],
    [{"text": "a", "delay": -1}], [{"text": "a", "delay": "1"}],
    # unknown keys anywhere (a typo is refused, never ignored), a message without a status
    [{"tool_call": [{"name": "Bash"}]}], {"turns": [{"text": "a"}], "turn": []},
    [{"text": "a", "message": "x"}], [{"text": "a", "usage": {"input_token": 1}}],
    [{"tool_calls": [{"name": "Bash", "args": {}}]}], [{"text": "a", "usage": {"input_tokens": True}}],
    {"schema": "argusic.model-script/2", "turns": [{"text": "a"}]},
]  # fmt: skip


@pytest.mark.parametrize("script", INVALID)
def test_invalid_scripts_are_refused(script):
    with pytest.raises(ScriptError):
        load_script(script)


@pytest.mark.parametrize("script", INVALID)
def test_the_schema_and_the_hand_rules_refuse_the_same_scripts(script):
    """The double checks by hand (the runner image has no jsonschema); the published JSON Schema
    refuses every script the hand rules refuse."""
    from argusic.sandbox.model_double import _check_turns, schema_problem

    with pytest.raises(ScriptError):
        _check_turns(script)
    assert schema_problem(script) is not None


# -- scripts as data: plugins/argusic/model_scripts/<project>/<harness>.<kind>.json ---------------------


def _script_files() -> list[Path]:
    return sorted(SCRIPTS_DIR.glob("*/*.json"))


def test_every_script_file_is_valid_and_named_for_what_it_says():
    from argusic.sandbox.model_double import SCRIPT_SCHEMA, schema_problem

    files = _script_files()
    assert {f"{f.parent.name}/{f.name}" for f in files} >= {
        "tinydata/claude-code.install.json", "tinydata/claude-code.budget.json",
        "tinydata/claude-code.fails-500.json", "tinydata/claude-code.fails-429.json",
        "tinydata/codex.install.json", "tinydata/codex.budget.json",
        "tinydata/codex.fails-500.json", "tinydata/codex.fails-429.json",
        "repairkit/claude-code.repair.json", "repairkit/codex.repair.json",
    }  # fmt: skip
    assert {p.name for p in SCRIPTS_DIR.iterdir() if p.is_file()} == {"README.md"}  # nothing else lies here
    for path in files:
        doc = json.loads(path.read_text())
        assert load_script_file(path) == doc["turns"]
        assert schema_problem(doc) is None
        assert doc["schema"] == SCRIPT_SCHEMA and doc["about"]
        assert (doc["project"], f"{doc['harness']}.{doc['kind']}.json") == (path.parent.name, path.name)
        assert script_file(doc["project"], doc["harness"], doc["kind"]) == path


def test_a_bad_script_file_is_refused_with_its_name_and_the_problem(tmp_path):
    from argusic.sandbox.model_double import serve

    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps({"turns": [{"text": "a"}, {"tool_call": [{"name": "Bash"}]}]}))
    with pytest.raises(ScriptError, match=r"typo\.json: turn 1: unknown key\(s\) \['tool_call'\]"):
        load_script_file(typo)
    with pytest.raises(ScriptError, match=r"typo\.json: turn 1"):  # the double refuses to start on it
        serve(typo, KEY, port=0)
    # What only the schema says (a tool call's id is a string): the path to the field, and the rule.
    schema_only = tmp_path / "id.json"
    schema_only.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "Bash", "id": 5}]}]}))
    with pytest.raises(ScriptError, match=r"model-script-1\.schema\.json: turns/0/tool_calls/0/id: 5 is not"):
        load_script_file(schema_only)
    broken = tmp_path / "broken.json"
    broken.write_text('{"turns": [')
    with pytest.raises(ScriptError, match=r"broken\.json: not JSON"):
        load_script_file(broken)
    with pytest.raises(ScriptError, match=r"no model script .*tinydata/claude-code\.nosuch\.json.*install"):
        script_file("tinydata", "claude-code", "nosuch")


def test_the_double_started_as_in_its_container_refuses_a_bad_script_in_one_line(tmp_path, capsys):
    """`python3 model_double.py serve` (the runner image's way): exit 2, the file and the problem."""
    from argusic.sandbox.model_double import main

    bad = tmp_path / "script.json"
    bad.write_text(json.dumps({"turns": [{"text": "a", "usage": {"input_tokens": -3}}]}))
    assert main(["serve", "--script", str(bad), "--key", KEY, "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"model double: refused: {bad}: turn 0: usage holds non-negative integers")
    assert "\n" not in err


def test_without_jsonschema_the_hand_rules_still_refuse(monkeypatch):
    """The runner image (where the double runs in a container) has no jsonschema."""
    import sys

    from argusic.sandbox.model_double import schema_problem

    monkeypatch.setitem(sys.modules, "jsonschema", None)
    assert schema_problem([{"tool_calls": [{"name": "Bash", "id": 5}]}]) is None
    with pytest.raises(ScriptError, match="turn 0: unknown key"):
        load_script([{"txt": "a"}])


def test_the_scripts_are_out_of_every_attempt_containers_reach(tmp_path):
    """No attempt container can see a script: the folder is not under the demo projects or their
    history (the forge commits those whole), nor under any host path an attempt container mounts; and
    no object of any forge repository (every commit, every tree) holds a script's bytes or its name."""
    import hashlib
    import subprocess

    from argusic.sandbox.executor import HARNESS_DIR, DockerExecutor
    from argusic.sources.forge import HISTORY, SOURCES, build_forge, build_repair_forge

    scripts = SCRIPTS_DIR.resolve()
    for root in (SOURCES, HISTORY, HARNESS_DIR):
        assert not scripts.is_relative_to(root.resolve()) and not root.resolve().is_relative_to(scripts)
    areas = {"out": tmp_path / "out", "work": tmp_path / "work"}
    config = DockerExecutor(network="none").host_config(
        "c", {}, areas, tmp_path / "task", tmp_path / "source"
    )
    for host in config["volumes"]:
        assert not scripts.is_relative_to(Path(host).resolve()), host

    blobs = {}
    for path in _script_files():
        data = path.read_bytes()
        blobs[hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()] = path  # noqa: S324 - git's id
    build_forge(tmp_path / "forge")
    build_repair_forge(tmp_path / "forge")
    repos = sorted((tmp_path / "forge" / "repos").glob("*.git"))
    assert "repairkit.git" in {r.name for r in repos}
    for repo in repos:
        objects = subprocess.run(
            ["git", "--git-dir", str(repo), "rev-list", "--all", "--objects"],
            capture_output=True, text=True, check=True,
        ).stdout.split("\n")  # fmt: skip
        ids = {line.split(" ", 1)[0] for line in objects if line}
        names = {line.split(" ", 1)[1] for line in objects if " " in line}
        assert not ids & set(blobs), (repo, [blobs[i] for i in ids & set(blobs)])
        assert not any("model_scripts" in n or n.endswith("model-script-1.schema.json") for n in names)
        assert not any(Path(n).name.startswith(("claude-code.", "codex.")) for n in names), repo


def test_a_turn_can_be_delayed(serve):
    server = serve([{"text": "slow", "delay": 0.5}])
    started = time.monotonic()
    status, _, data = _post(server, AGENT, {"x-api-key": KEY})
    assert status == 200 and time.monotonic() - started >= 0.5


def free_loopback_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_listening(proc, port: int, seconds: float = 30) -> None:
    """Until the double started as `proc` accepts connections on 127.0.0.1:`port` (its stderr shown
    if it exits or does not listen in time)."""
    import socket

    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.2)


def test_the_command_serves_a_script_on_loopback(tmp_path):
    """`argusic model-double serve`: listens on 127.0.0.1, answers the script, refuses a wrong key."""
    import subprocess
    import sys

    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "from the command"}]}))
    port = free_loopback_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "argusic.cli", "model-double", "serve", "--script", str(script), "--port",
         str(port), "--key", KEY],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_listening(proc, port)
        server = type("S", (), {"server_address": ("127.0.0.1", port)})
        assert _post(server, AGENT, {"x-api-key": "sk-wrong"})[0] == 401
        status, _, data = _post(server, AGENT, {"x-api-key": KEY})
        assert status == 200 and json.loads(data)["content"][0]["text"] == "from the command"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    stderr = proc.stderr.read().decode()
    assert f"1 turns on 127.0.0.1:{port}" in stderr and KEY not in stderr


def test_the_command_refuses_a_bad_script_or_no_key(tmp_path, monkeypatch):
    from argusic.cli.main import app
    from typer.testing import CliRunner

    monkeypatch.delenv("ARGUSIC_DOUBLE_KEY", raising=False)
    bad, good = tmp_path / "bad.json", tmp_path / "good.json"
    bad.write_text(json.dumps({"turns": [{"status": 418}]}))
    good.write_text(json.dumps([{"text": "x"}]))
    done = CliRunner().invoke(app, ["model-double", "serve", "--script", str(bad), "--key", KEY])
    assert done.exit_code == 2 and "status must be one of" in done.output
    done = CliRunner().invoke(app, ["model-double", "serve", "--script", str(good)])
    assert done.exit_code == 2 and "a key is required" in done.output


def test_a_key_is_required():
    with pytest.raises(ValueError, match="needs a key"):
        make_server([{"text": "x"}], "")


@pytest.fixture
def env(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Isolated settings and an installation of this test's own (its sweeps touch only its objects)."""
    monkeypatch.setenv("ARGUSIC_INSTALLATION", f"t-{uuid.uuid4().hex[:10]}")
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(isolated / "scratch"))
    return isolated


# -- Claude Code against the double, a whole attempt in Docker -----------------------------------------

PROJECT = "tinydata"
HANG = "python3 -c 'import time; time.sleep(300)'"  # longer than the budget
VERIFY = "python3 -c \"import json; print(len(json.load(open('out/data.json'))['items']))\""
REPORT = {
    "install_ok": True,
    "ran_ok": True,
    "errors_encountered": 1,
    "errors_fixed": 1,
    "test_depth": "tier1_real",
    "verified_how": VERIFY + " returned 3",
    "final_state": "Fixed make_data.py to create out/, ran it and decoded 3 items from out/data.json.",
}
COMMANDS = [
    "cat README.md",
    "python3 make_data.py out/data.json",  # fails: out/ does not exist
    "python3 make_data.py out/data.json",  # after the fix: make_data.py makes the folder
    VERIFY,
]
SCRIPT_PY = "/workspace/project/make_data.py"
MAKEDIRS = "os.makedirs(os.path.dirname(path) or '.', exist_ok=True)\n"
FIX = {
    "file_path": SCRIPT_PY,
    "old_string": "path = sys.argv[1]\n",
    "new_string": "path = sys.argv[1]\n" + MAKEDIRS,
}
TOOLS_USED = ["Bash", "Bash", "Read", "Edit", "Edit", "Bash", "Bash", "Write"]


def _script(kind: str = "install") -> list[dict]:
    """The tiny project's script of that kind (plugins/argusic/model_scripts/tinydata/): install is
    look, run (fails), read the code, fix it (two edits), run again, verify, write the report, stop."""
    return load_script_file(script_file(PROJECT, "claude-code", kind))


MAKE_DATA = """import json, sys
path = sys.argv[1]
with open(path, "w") as f:
    json.dump({"items": [1, 2, 3]}, f)
print("wrote", path)
"""


@dataclasses.dataclass
class DoubleRun:
    record: object  # the run record
    out: Path  # the attempt's landed /out
    served: list[dict]  # the double's request log
    requests: str  # the same, as the double wrote it
    key: str
    broker: object


@contextlib.contextmanager
def double_service(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    turns: list[dict],
    *,
    known: bool = True,
    agent: str = "claude-code",
    gateway: type | None = None,
):
    """The double answering `turns`, in the runner image on an internal Docker network of this test's
    own (bound to its address there), attempts sent to that network (NETWORK_ENV), the `agent` CLI's
    model-request retries off, and a stand-in broker that hands out the key the double checks (`known` False:
    another key). Yields (broker, key, network name, double container); network and double are
    removed afterwards. The double's container has the plugins folder (its code) read-only and the
    script's turns; the attempt container has neither.

    `gateway` (a LiteLLMKeyBroker class): the double is a LiteLLM gateway instead (a master key of its
    own, the seed's model prices, no static key), and the broker is that class on the double's address
    (the host reaches it on the internal network; the attempt container only through the network).
    The key is then None: each attempt's key is minted by the broker."""
    from argusic.attempts import agents
    from argusic.attempts.keys import IssuedKey, new_alias, token_id
    from argusic.core import settings
    from argusic.sandbox.containment import NETWORK_ENV
    from argusic.sandbox.executor import docker_available
    from test_keys import FakeBroker

    import docker

    if not docker_available():
        pytest.skip("no Docker daemon answers")
    client = docker.from_env()
    try:
        client.images.get(settings.agents_image())
    except docker.errors.ImageNotFound:
        pytest.skip("no agents image (scripts/build_agents_image.sh)")

    key = f"sk-double-{uuid.uuid4().hex}"
    script_dir = tmp_path / "script"
    script_dir.mkdir()
    (script_dir / "script.json").write_text(json.dumps({"turns": turns}))
    (script_dir / "key").write_text(key if known else f"sk-double-{uuid.uuid4().hex}")
    master = f"sk-master-{uuid.uuid4().hex}"
    key_args = " --key-file /script/key"
    if gateway is not None:
        (script_dir / "master").write_text(master)
        (script_dir / "model_prices.csv").write_bytes(
            (ROOT / "dbt_project/seeds/model_prices.csv").read_bytes()
        )
        key_args = " --master-key-file /script/master --prices /script/model_prices.csv"
    tag = uuid.uuid4().hex[:10]
    network = client.networks.create(f"argusic-double-{tag}", driver="bridge", internal=True)
    server = None
    try:
        server = client.containers.run(
            settings.runner_image(),
            ["sh", "-c", "exec python3 /plugins/argusic/sandbox/model_double.py serve"
             " --script /script/script.json" + key_args +
             ' --log /tmp/requests.jsonl --port 8080 --host "$(hostname -i)"'],
            detach=True, network=network.name, name=f"argusic-double-{tag}",
            volumes={str(ROOT / "plugins"): {"bind": "/plugins", "mode": "ro"},
                     str(script_dir): {"bind": "/script", "mode": "ro"}},
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while b"model double:" not in server.logs() and time.monotonic() < deadline:
            time.sleep(0.2)
        server.reload()
        address = server.attrs["NetworkSettings"]["Networks"][network.name]["IPAddress"]
        assert address and b"model double:" in server.logs(), server.logs()

        class DoubleBroker(FakeBroker):
            """FakeBroker whose key is the one the double checks, with the double's URL."""

            def create(self, attempt_id, limit_usd, *, ttl_seconds=None) -> IssuedKey:
                alias = new_alias(attempt_id)
                self.keys[token_id(key)] = {"alias": alias, "attempt_id": attempt_id, "max_budget": limit_usd}
                self.stats.add("created")
                return IssuedKey(value=key, kind="per_run", attempt_id=attempt_id, alias=alias,
                                 limit_usd=limit_usd, base_url=f"http://{address}:8080/v1")  # fmt: skip

        registered = agents.DRIVERS[agent]
        monkeypatch.setitem(agents.DRIVERS, agent, dataclasses.replace(registered, max_retries=0))
        monkeypatch.setenv(NETWORK_ENV, network.name)
        if gateway is not None:
            broker = gateway(f"http://{address}:8080", master, backoff_seconds=0.05)
            yield broker, None, network.name, server
        else:
            yield DoubleBroker(), key, network.name, server
    finally:
        if server is not None:
            server.remove(force=True)
        network.remove()


def served_requests(server) -> str:
    """The double's request log (one JSON line per request), read before the double is removed."""
    return server.exec_run(["cat", "/tmp/requests.jsonl"]).output.decode()


def _attempt_against_double(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    turns: list[dict],
    budget: float = 180,
    *,
    known: bool = True,
    agent: str = "claude-code",
) -> DoubleRun:
    """An install-and-run attempt of the `agent` CLI (Claude Code, Codex) on the tiny project, its
    model the double answering `turns` (``double_service``)."""
    from argusic.attempts.run import run_attempt
    from argusic.core.evidence import EvidenceStore
    from argusic.core.record import load_record_file
    from argusic.core.spec import AttemptSpec
    from test_containment import hostile_repo

    service = double_service(tmp_path, monkeypatch, turns, known=known, agent=agent)
    with service as (broker, key, network, server):
        usage = ["python3 make_data.py out/data.json"]
        bare, commit = hostile_repo(tmp_path, PROJECT, usage, {"make_data.py": MAKE_DATA})
        spec = AttemptSpec(
            cycle_id="double", agent_id=agent, project_id=PROJECT, repo_url=str(bare), commit=commit,
            tier="standard", attempt_no=1, demo=True, budget_scale=budget / 5400,
        )  # fmt: skip
        store = EvidenceStore((tmp_path / "evidence").as_uri())
        path = run_attempt(spec, None, store, tmp_path / "runs", broker=broker)
        requests = served_requests(server)
    record = load_record_file(path)
    served = [json.loads(line) for line in requests.splitlines()]
    print("requests:", json.dumps(served, indent=1))
    print("record:", record.end_reason, record.invalid_reason, record.usage, record.observed)
    assert record.environment.limits.network == network
    return DoubleRun(record, path.parent / "out", served, requests, key, broker)


def _key_in_no_stored_byte(tmp_path: Path, run: DoubleRun) -> None:
    assert run.broker.stats.created == 1 and run.broker.stats.deleted == 1 and run.broker.keys == {}
    assert run.record.key.kind == "per_run"
    for root in (tmp_path / "runs", tmp_path / "evidence"):
        for file in root.rglob("*"):
            if file.is_file():
                assert run.key.encode() not in file.read_bytes(), file
    assert run.key not in run.requests


def _exec_calls(out: Path) -> list:
    from argusic.attempts import agents

    return [c for c in agents.DRIVERS["claude-code"].collect(out).tool_calls if c.category == "exec"]


@pytest.mark.slow
@pytest.mark.docker
def test_claude_code_does_an_install_and_run_attempt_against_the_double(env, tmp_path, monkeypatch):
    from argusic.attempts import agents
    from argusic.core import settings

    registered = agents.DRIVERS["claude-code"]
    run = _attempt_against_double(tmp_path, monkeypatch, _script())
    record, out, served = run.record, run.out, run.served

    # The CLI asked for every scripted turn, with the per-run key, and nothing else.
    assert [r.get("turn") for r in served] == list(range(len(_script()))), served
    assert all(r["status"] == 200 and r["path"].startswith("/v1/messages") for r in served)
    assert all(r["stream"] is True and "Bash" in r["tools"] for r in served)

    assert record.executor == "docker" and record.image == settings.agents_image()
    assert record.end_reason == "completed", (record.end_reason, record.invalid_reason)
    assert record.invalid_reason is None

    # The commands the CLI executed, from its own session log.
    session = (out / SESSION_LOG).read_text()
    collected = agents.DRIVERS["claude-code"].collect(out)
    executed = [c.arguments.get("command") for c in collected.tool_calls if c.category == "exec"]
    assert executed == COMMANDS
    assert [c.ok for c in collected.tool_calls if c.category == "exec"] == [True, False, True, True]
    assert [c.name for c in collected.tool_calls] == TOOLS_USED
    assert all(c.ok for c in collected.tool_calls if c.name != "Bash"), collected.tool_calls
    # The fix is in the project's changes, computed on the host against our copy of the commit.
    patch = (out / "changes.patch").read_text()
    assert "+import json, os, sys" in patch and "+os.makedirs(os.path.dirname(path)" in patch
    results = [json.loads(line) for line in session.splitlines() if '"tool_use_result"' in line]
    assert any("wrote out/data.json" in json.dumps(r) for r in results)
    stdouts = [r["tool_use_result"].get("stdout") for r in results if isinstance(r["tool_use_result"], dict)]
    assert "3" in stdouts, results  # the decoding command's output: three items
    assert any("No such file or directory" in json.dumps(r) for r in results)  # the first run's failure
    assert collected.end_state == "completed"

    # Usage from the CLI's output: the script's numbers, summed by the CLI.
    script = _script()
    assert record.usage.input_tokens.value == sum(t["usage"]["input_tokens"] for t in script)
    assert record.usage.output_tokens.value == sum(t["usage"]["output_tokens"] for t in script)
    assert record.usage.model_calls.value == len(script)
    result = next(e for e in map(json.loads, session.splitlines()) if e.get("type") == "result")
    assert record.usage.cost_usd.value == pytest.approx(result["total_cost_usd"])

    # Model and harness from the CLI's own lines (the double answers as the model requested).
    assert record.model.requested == registered.model and record.model.responded == registered.model
    assert record.harness.name == "claude-code" and record.harness.version == claude_code.PINNED_VERSION
    # Its side calls were sent to the agent's model too (an agent is one model), so the record is
    # graded same-model (seed 002), from what the session showed, never from the agent's claim.
    auxiliary = record.model.settings.auxiliary_models
    assert {k: v.value for k, v in auxiliary.items()} == {
        "ANTHROPIC_SMALL_FAST_MODEL": registered.model,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": registered.model,
    }, auxiliary
    assert record.harness.grade == "same-model", record.harness.grade_basis

    # The report the model wrote through the Write tool, and what the harness observed.
    assert json.loads((out / "report.json").read_text()) == REPORT
    assert record.report is not None and record.report.errors_fixed == 1
    observed = record.observed
    assert observed.source == "session_log"
    assert observed.install_ok and observed.ran_ok
    assert observed.errors_encountered == 1 and observed.errors_fixed == 1
    assert observed.verified and observed.verify_command == VERIFY
    assert observed.commands_run == len(COMMANDS)

    # The key: minted once, deleted, and in no stored byte.
    _key_in_no_stored_byte(tmp_path, run)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("status", [500, 429])
def test_a_model_failing_mid_session_makes_the_attempt_invalid(status, env, tmp_path, monkeypatch):
    """The model answers one turn, then 500 or 429 (no retries): the CLI ends in error, the attempt is
    ours to rerun (invalid), what it did before is on record, the key deleted."""
    script = _script(f"fails-{status}")
    first = script[0]
    assert first == _script()[0] and script[1]["status"] == status
    run = _attempt_against_double(tmp_path, monkeypatch, script)
    assert [(r.get("turn"), r["status"]) for r in run.served] == [(0, 200), (1, status)]
    record = run.record
    assert record.end_reason == "harness_error"
    assert record.invalid_reason and record.invalid_reason.startswith("agent CLI ended in error")
    assert [c.arguments.get("command") for c in _exec_calls(run.out)] == [COMMANDS[0]]
    assert record.report is None
    assert record.usage.input_tokens.value == first["usage"]["input_tokens"]
    _key_in_no_stored_byte(tmp_path, run)


@pytest.mark.slow
@pytest.mark.docker
def test_a_session_that_runs_into_the_budget_is_a_measured_timeout(env, tmp_path, monkeypatch):
    """The model has the agent run a command longer than the attempt's budget: the container is killed
    at the budget, the attempt is a valid timeout (the agent's doing), the session log so far is read,
    the key deleted."""
    # (Claude Code 2.1.332 refuses a standalone `sleep 300` in its Bash tool: "Blocked: standalone sleep")
    script = _script("budget")
    first, hang = script[:2]
    assert first == _script()[0] and hang["tool_calls"][0]["input"]["command"] == HANG
    started = time.monotonic()
    run = _attempt_against_double(tmp_path, monkeypatch, script, budget=30)
    assert time.monotonic() - started < 150
    assert [r.get("turn") for r in run.served] == [0, 1]  # the third turn is never asked for
    record = run.record
    assert record.end_reason == "timeout" and record.invalid_reason is None
    assert record.report is None and record.seal.status == "missing"
    calls = _exec_calls(run.out)
    assert [c.arguments.get("command") for c in calls] == [COMMANDS[0], HANG]
    assert [c.ok for c in calls] == [True, None]  # the log never says how the sleep ended
    assert record.observed.commands_run == 1
    # No result event: tokens from the assistant lines the CLI wrote (both turns' input tokens), no cost.
    assert record.usage.input_tokens.value == first["usage"]["input_tokens"] + hang["usage"]["input_tokens"]
    assert record.usage.cost_usd.status == "unavailable"
    # Output tokens: the assistant lines carry message_start's usage (output_tokens 1), not message_delta's
    # final count, so the sum is a lower bound of what the double served (its log), marked derived.
    served_out = sum(r["usage"]["output_tokens"] for r in run.served if r["status"] == 200)
    assert served_out == first["usage"]["output_tokens"] + hang["usage"]["output_tokens"]
    print("output tokens: record", record.usage.output_tokens, "served", served_out)
    assert record.usage.output_tokens.status == "derived"
    assert record.usage.output_tokens.value <= served_out
    _key_in_no_stored_byte(tmp_path, run)


@pytest.mark.slow
@pytest.mark.docker
def test_a_key_the_model_does_not_know_is_refused(env, tmp_path, monkeypatch):
    """The per-run key is not the one the model service checks: 401 on the first request, the CLI
    stops, the attempt is invalid (the agent never reached its model), no turn is consumed."""
    run = _attempt_against_double(tmp_path, monkeypatch, _script(), known=False)
    assert [(r.get("turn"), r["status"]) for r in run.served] == [(None, 401)]
    assert run.record.end_reason == "harness_error"
    assert run.record.invalid_reason.startswith("the agent never reached its model")
    assert _exec_calls(run.out) == []
    _key_in_no_stored_byte(tmp_path, run)
