"""Model judges as a pipeline step (issue #28): the real judge CLI against the model double, the
judgements in the runs store on a cluster, and the cycle DAG's judge and ingest_judgements tasks.

- Unit tests (no Docker): judgement scripts (where they are found, what is refused), a judge's
  container on the double's network, the gateway's /v1 cut for Claude Code.
- Slow, Docker: ``argusic judge --script-dir`` runs the pinned Claude Code or Codex CLI of the agents
  image in the judge container against the model double (runner image, an internal network of its own,
  a per-run key it alone accepts, removed after): the CLI reads evidence files with its own tools
  (Claude Code: Read; Codex: ``cat`` through exec_command), its final message is the verdict, checked
  like any other.
- The runs store (moto's S3): judged on one host, pulled and loaded on another.
- The DAG: its judge step after ingest, ingest_judgements before the build (DagBag), and the
  tasks' bodies.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from argusic.judging import judges as J
from argusic.judging.double import DoubleBroker, JudgeScriptError, judge_scripts, read_judge_script
from argusic.judging.evidence import build_evidence_folder
from test_judging_judges import SESSIONS, FakeBroker, FakeDocker, make_attempt, record_doc

ROOT = Path(__file__).resolve().parents[2]
CRITERIA = ("code_structure", "logic_correctness")
QUOTE = "A page that renders with no console error"  # verbatim in artifacts/index.html (clean.html)


def verdict(code_structure: int = 2, logic_correctness: int = 1, quote: str = QUOTE) -> str:
    return json.dumps(
        {
            "schema": "argusic.judge-verdict/1",
            "scores": {"code_structure": code_structure, "logic_correctness": logic_correctness},
            "quotes": [{"criterion": "logic_correctness", "file": "artifacts/index.html", "quote": quote}],
            "summary": "Clean page; the log's claim is only partly shown by the artifacts.",
        }
    )


def judge_script(message: str) -> dict:
    """What a judge's model answers: read the task and the page with the CLI's Read tool, then the
    verdict as the final message."""
    return {
        "turns": [
            {
                "text": "Reading the evidence.",
                "tool_calls": [
                    {"name": "Read", "input": {"file_path": "/evidence/task.md"}},
                    {"name": "Read", "input": {"file_path": "/evidence/artifacts/index.html"}},
                ],
                "usage": {"input_tokens": 3000, "output_tokens": 60},
            },
            {"text": message, "usage": {"input_tokens": 3500, "output_tokens": 200}},
        ]
    }


CODEX_READS = ["cat task.md", "cat artifacts/index.html"]


def codex_judge_script(message: str) -> dict:
    """What a Codex judge's model answers: Codex 0.171.0 offers it no file-reading tool, so it reads
    the task and the page with ``cat`` through exec_command (run in /evidence), a call a turn, then the
    verdict as the final message (the Responses API's usage: input tokens include the cached ones)."""
    reads = [
        {
            "text": f"Reading {cmd.split()[-1]}.",
            "tool_calls": [{"name": "exec_command", "input": {"cmd": cmd}}],
            "usage": {"input_tokens": 3000 + 500 * i, "output_tokens": 40, "cached_tokens": 1000 * i},
        }
        for i, cmd in enumerate(CODEX_READS)
    ]
    final = {"text": message, "usage": {"input_tokens": 4200, "output_tokens": 180, "cached_tokens": 2000}}
    return {"turns": [*reads, final]}


# --- judgement scripts (no Docker) -----------------------------------------------------------------------


def test_a_judgement_script_per_attempt_wins_over_the_shared_one(tmp_path: Path) -> None:
    (tmp_path / "a1").mkdir()
    (tmp_path / "judge-claude.json").write_text("{}")
    (tmp_path / "a1" / "judge-claude.json").write_text("{}")
    (tmp_path / "judge-claude-2.json").symlink_to(tmp_path / "judge-claude.json")  # never followed
    found = judge_scripts(tmp_path, "a1", ["judge-claude", "judge-claude-2", "judge-codex"])
    assert found == {"judge-claude": tmp_path / "a1" / "judge-claude.json"}
    assert judge_scripts(tmp_path, "a2", ["judge-claude"]) == {"judge-claude": tmp_path / "judge-claude.json"}


@pytest.mark.parametrize("content", ["not json", "[]", '{"turns": [{"status": 418}]}'])
def test_a_bad_judgement_script_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "judge-claude.json"
    path.write_text(content)
    with pytest.raises(JudgeScriptError, match="judge-claude.json"):
        read_judge_script(path)
    assert read_judge_script(_write(tmp_path / "ok.json", judge_script(verdict())))[1][1]["text"] == verdict()


def _write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


class NetworkBroker(FakeBroker):
    network = "argusic-judge-double-test"


def test_a_codex_judge_with_a_script_runs_codex_against_the_double(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Codex judge's script is taken (the double speaks the Responses API; until issue 28's Codex
    judges it was refused): its broker is the double's, the container runs ``codex exec`` on the
    double's network with the gateway provider at the double's URL (``/v1`` kept: Codex adds
    ``/responses``) and the key in OPENAI_API_KEY."""
    import docker

    attempt = make_attempt(tmp_path / "runs")
    script = _write(tmp_path / "judge-codex.json", codex_judge_script(verdict()))
    made: list[Path] = []

    class ScriptedBroker(NetworkBroker):
        model = "model-double/test"

        def __init__(self, path: Path) -> None:
            super().__init__()
            made.append(path)

        def create(self, attempt_id, limit_usd, *, ttl_seconds=None):
            from argusic.attempts.keys import IssuedKey

            self.created.append(attempt_id)
            return IssuedKey(value="sk-j", kind="per_run", attempt_id=attempt_id, base_url="http://d:8080/v1")

    fake = FakeDocker(outcome=1)
    monkeypatch.setattr(docker, "from_env", lambda: fake)
    monkeypatch.setattr(J, "DoubleBroker", ScriptedBroker)
    with pytest.raises(J.JudgeError, match="container exited 1"):
        J.judge_attempt(attempt, ["judge-codex"], scripts={"judge-codex": script})
    assert made == [script]
    ((args, kwargs),) = fake.runs
    command = " ".join(args[1])
    assert "codex exec" in command and "model_provider=argusic" in command
    assert 'base_url = "http://d:8080/v1"' in command and 'wire_api = "responses"' in command
    assert kwargs["network"] == "argusic-judge-double-test" and "network_mode" not in kwargs
    assert kwargs["environment"]["OPENAI_API_KEY"] == "sk-j"
    assert kwargs["environment"]["OPENAI_BASE_URL"] == "http://d:8080/v1"


def test_a_judge_joins_its_brokers_network_and_reaches_the_gateway_without_v1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docker

    evidence = build_evidence_folder(make_attempt(tmp_path / "runs"), tmp_path / "evidence")
    fake = FakeDocker(outcome=1)
    monkeypatch.setattr(docker, "from_env", lambda: fake)

    class V1Broker(NetworkBroker):
        def create(self, attempt_id, limit_usd, *, ttl_seconds=None):
            from argusic.attempts.keys import IssuedKey

            return IssuedKey(
                value="sk-j", kind="per_run", attempt_id=attempt_id, base_url="http://gw:4000/v1"
            )

    with pytest.raises(J.JudgeError, match="container exited 1"):
        J.run_judge("judge-claude", evidence, tmp_path / "out", broker=V1Broker())
    ((_args, kwargs),) = fake.runs
    assert kwargs["network"] == "argusic-judge-double-test" and "network_mode" not in kwargs
    assert kwargs["environment"]["ANTHROPIC_BASE_URL"] == "http://gw:4000"  # the CLI adds /v1/messages


# --- the real Claude Code CLI against the model double (Docker) -------------------------------------------


def _docker_or_skip() -> None:
    from argusic.core import settings
    from argusic.sandbox.executor import docker_available

    import docker

    if not docker_available():
        pytest.skip("no Docker daemon answers")
    client = docker.from_env()
    for image in (settings.agents_image(), settings.runner_image()):
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            pytest.skip(f"no image {image}")


def _leftovers(*brokers: DoubleBroker) -> list[str]:
    """What is still there of these brokers' doubles: their container and network (one name each)."""
    import docker

    client = docker.from_env()
    left = []
    for broker in brokers:
        assert broker.network  # the name of the double's network and container
        left += [c.name for c in client.containers.list(all=True, filters={"name": f"^{broker.network}$"})]
        left += [n.name for n in client.networks.list(names=[broker.network])]
    return left


@pytest.mark.slow
@pytest.mark.docker
def test_claude_code_judges_an_attempt_against_the_double(
    isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`argusic judge --script-dir`: two Claude Code judges, the real CLI in the judge container, the
    model double answering their scripts: one verdict valid, one quoting what the evidence does not
    say (refused by the checks, on the CLI's own final message). Keys minted per run, deleted, in no
    stored byte; no double, judge container or network left."""
    from argusic.cli.main import app
    from argusic.external import claude_code
    from typer.testing import CliRunner

    _docker_or_skip()
    monkeypatch.setenv("ARGUSIC_INSTALLATION", f"t-{uuid.uuid4().hex[:10]}")
    attempt = make_attempt(isolated / "runs")
    scripts = tmp_path / "scripts"
    (scripts / attempt.name).mkdir(parents=True)
    _write(scripts / "judge-claude.json", judge_script(verdict()))
    _write(
        scripts / attempt.name / "judge-claude-2.json", judge_script(verdict(quote="a sentence nobody wrote"))
    )
    brokers: list[DoubleBroker] = []

    class Recorded(DoubleBroker):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            brokers.append(self)

    monkeypatch.setattr(J, "DoubleBroker", Recorded)
    judges = "judge-claude,judge-claude-2"
    done = CliRunner().invoke(
        app, ["judge", "--cycle", "2026-12", "--judges", judges, "--script-dir", str(scripts)]
    )
    assert done.exit_code == 0, done.output
    assert "2 judgements written (the real CLIs against the model double" in done.output

    claude = json.loads((attempt / "judging" / "judge-claude.json").read_text())
    assert claude["status"] == "valid", claude
    assert claude["scores"] == {"code_structure": 2, "logic_correctness": 1}
    assert claude["quotes"][0]["quote"] == QUOTE
    assert claude["replayed"] is False and claude["harness"] == "claude-code"
    assert claude["model"].startswith("model-double/")  # what answered, not the model the CLI asked for
    second = json.loads((attempt / "judging" / "judge-claude-2.json").read_text())
    assert second["status"] == "refused" and "not found verbatim in artifacts/index.html" in second["reason"]

    # The session is the real CLI's: its init line, its Read tool's results from the evidence folder,
    # and its result line, whose text is the verdict.
    session_path = attempt / "judging" / "sessions" / "judge-claude" / J.SESSION_FILE
    lines = [json.loads(line) for line in session_path.read_text().splitlines() if line.startswith("{")]
    init = next(line for line in lines if line.get("type") == "system" and line.get("subtype") == "init")
    assert init["claude_code_version"] == claude_code.PINNED_VERSION and init["cwd"] == "/evidence"
    results = json.dumps([line for line in lines if line.get("type") == "user"])
    assert "It works" in results and "You are judging" not in results  # index.html as the Read tool gave it
    assert "code_structure" in results  # task.md, read by the CLI
    print("session:", [(line.get("type"), line.get("subtype")) for line in lines])
    print("requests:", json.dumps([b.requests for b in brokers], indent=1))
    (result,) = [line for line in lines if line.get("type") == "result"]
    assert json.loads(result["result"]) == json.loads(verdict())
    assert result["usage"]["output_tokens"] == 260  # the script's two turns, summed by the CLI
    assert claude["session_sha256"] == J._sha256_of(session_path)

    # Each judge ran on a key of its own, minted and deleted; the double saw exactly its turns.
    assert len(brokers) == 2
    for broker in brokers:
        assert broker.stats.as_dict()["created"] == 1 and broker.stats.as_dict()["deleted"] == 1
        assert broker.list_attempt_keys() == []
        agent_turns = [r for r in broker.requests if r.get("turn") is not None]
        assert [(r["turn"], r["status"]) for r in agent_turns] == [(0, 200), (1, 200)], broker.requests
        assert all(r["status"] != 401 for r in broker.requests)
        assert "Read" in agent_turns[0]["tools"]
    for file in isolated.rglob("*"):
        if file.is_file():
            assert b"sk-double-" not in file.read_bytes(), file
    assert _leftovers(*brokers) == []


@pytest.mark.slow
@pytest.mark.docker
def test_codex_judges_an_attempt_against_the_double(
    isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`argusic judge --script-dir` with a Codex judge: the pinned Codex CLI in the judge container
    (read-only /evidence its working folder), the double answering on the Responses API: the CLI runs
    the script's ``cat`` commands in /evidence, its last message (``-o last_message.txt``) is the
    verdict, checked like any other. The key minted, deleted, in no stored byte; nothing left."""
    from argusic.cli.main import app
    from argusic.external import codex
    from typer.testing import CliRunner

    _docker_or_skip()
    monkeypatch.setenv("ARGUSIC_INSTALLATION", f"t-{uuid.uuid4().hex[:10]}")
    attempt = make_attempt(isolated / "runs")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    script = codex_judge_script(verdict())
    _write(scripts / "judge-codex.json", script)
    brokers: list[DoubleBroker] = []

    class Recorded(DoubleBroker):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            brokers.append(self)

    monkeypatch.setattr(J, "DoubleBroker", Recorded)
    done = CliRunner().invoke(
        app, ["judge", "--cycle", "2026-12", "--judges", "judge-codex", "--script-dir", str(scripts)]
    )
    assert done.exit_code == 0, done.output
    assert "1 judgements written (the real CLIs against the model double" in done.output

    doc = json.loads((attempt / "judging" / "judge-codex.json").read_text())
    assert doc["status"] == "valid", doc
    assert doc["scores"] == {"code_structure": 2, "logic_correctness": 1}
    assert doc["quotes"][0]["quote"] == QUOTE
    assert doc["replayed"] is False and doc["harness"] == "codex"
    assert doc["model"].startswith("model-double/")

    # The session is the real CLI's: the commands it ran in /evidence and their output, its usage (the
    # thread's total of the script's turns), its last message, which is the verdict.
    out = attempt / "judging" / "sessions" / "judge-codex"
    lines = [
        json.loads(line) for line in (out / J.SESSION_FILE).read_text().splitlines() if line.startswith("{")
    ]
    print("session:", [(line.get("type"), (line.get("item") or {}).get("type")) for line in lines])
    print("requests:", json.dumps([b.requests for b in brokers], indent=1))
    assert lines[0]["type"] == "thread.started"
    executed = [
        line["item"] for line in lines
        if line.get("type") == "item.completed" and line["item"].get("type") == "command_execution"
    ]  # fmt: skip
    assert [item["command"].split()[-1].strip("'\"") for item in executed] == [
        "task.md",
        "artifacts/index.html",
    ]
    assert all(item["exit_code"] == 0 and item["status"] == "completed" for item in executed)
    assert "code_structure" in executed[0]["aggregated_output"]  # task.md, as the CLI read it
    assert (
        "It works" in executed[1]["aggregated_output"]
        and "You are judging" not in executed[1]["aggregated_output"]
    )
    (completed,) = [line for line in lines if line.get("type") == "turn.completed"]
    turns = script["turns"]
    assert completed["usage"]["input_tokens"] == sum(t["usage"]["input_tokens"] for t in turns)
    assert completed["usage"]["output_tokens"] == sum(t["usage"]["output_tokens"] for t in turns)
    assert completed["usage"]["cached_input_tokens"] == sum(t["usage"]["cached_tokens"] for t in turns)
    assert json.loads((out / J.LAST_MESSAGE_FILE).read_text()) == json.loads(verdict())
    assert doc["session_sha256"] == J._sha256_of(out / J.SESSION_FILE)

    # One key, minted and deleted; the double saw exactly the script's turns, on the Responses API.
    (broker,) = brokers
    assert broker.stats.as_dict()["created"] == 1 and broker.stats.as_dict()["deleted"] == 1
    assert broker.list_attempt_keys() == []
    agent_turns = [r for r in broker.requests if r.get("turn") is not None]
    assert [(r["turn"], r["status"]) for r in agent_turns] == [(i, 200) for i in range(len(turns))]
    assert all(r["api"] == "responses" and "exec_command" in r["tools"] for r in agent_turns)
    assert all(f"codex_exec/{codex.PINNED_VERSION} " in r["user-agent"] for r in agent_turns)
    assert all(r["model"] == J.JUDGES["judge-codex"].model for r in agent_turns)
    for file in isolated.rglob("*"):
        if file.is_file():
            assert b"sk-double-" not in file.read_bytes(), file
    assert _leftovers(*brokers) == []


@pytest.mark.docker
def test_a_double_that_does_not_start_is_no_key_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The double cannot bind its port: no key is handed out, the judge does not start (JudgeError),
    the double's container, network and staged key are gone."""
    from argusic.judging import double

    _docker_or_skip()
    monkeypatch.setattr(double, "DOUBLE_PORT", 99999)  # not a port: the server exits at once
    evidence = build_evidence_folder(make_attempt(tmp_path / "runs"), tmp_path / "evidence")
    broker = DoubleBroker(_write(tmp_path / "judge-claude.json", judge_script(verdict())))
    with pytest.raises(J.JudgeError, match="no per-run key: model double did not start"):
        J.run_judge("judge-claude", evidence, tmp_path / "out", broker=broker)
    assert broker.stats.as_dict()["create_failed"] == 1 and broker.stats.as_dict()["created"] == 0
    assert broker._stage is None and _leftovers(broker) == []
    assert not (tmp_path / "out" / J.SESSION_FILE).exists()


# --- the runs store on a cluster (moto S3) -------------------------------------------------------------


class SessionDocker(FakeDocker):
    """A stand-in Docker client whose judge container leaves a recorded session (no Docker needed)."""

    def run(self, *args, **kwargs):
        out = next(src for src, bind in kwargs["volumes"].items() if bind["bind"] == "/out")
        shutil.copy(SESSIONS / "claude_agree.jsonl", Path(out) / J.SESSION_FILE)
        return super().run(*args, **kwargs)


def _host(monkeypatch: pytest.MonkeyPatch, root: Path, name: str) -> Path:
    folder = root / "hosts" / name / "runs"
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(folder))
    return folder


def test_judgements_go_through_the_runs_store_to_the_ingesting_host(
    s3_bucket: str, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Host A (where the attempt ran) judges it and pushes the judgement; host B, which has only the
    record from the store, pulls the judgement beside it and ingest loads it. An attempt whose folder
    is not on the judging host is named, not judged on an empty folder."""
    import duckdb
    from argusic.core import runs_store
    from argusic.core.settings import evidence_url
    from argusic.judging.pipeline import judge_records, pull_judgements
    from argusic.warehouse.load_runs import ingest
    from conftest import evidence_refs

    import docker

    monkeypatch.setenv("ARGUSIC_RUNS_URL", f"s3://{s3_bucket}/runs")
    monkeypatch.setattr(docker, "from_env", lambda: SessionDocker(outcome=0))
    host_a = _host(monkeypatch, isolated, "a")
    doc = record_doc()
    doc["evidence"] = evidence_refs(evidence_url())  # in the test's evidence store (ingest checks it)
    attempt = make_attempt(host_a, doc)
    runs_store.push(attempt / "run_record.json", write_once=True)
    replay = isolated / "replay"
    replay.mkdir()
    shutil.copy(SESSIONS / "claude_agree.jsonl", replay / "judge-claude.jsonl")
    done = judge_records([attempt / "run_record.json"], ["judge-claude"], replay_dir=replay)
    key = f"2026-12/{attempt.name}/judging/judge-claude.json"
    assert done.not_judged == {} and done.written == [f"s3://{s3_bucket}/runs/{key}"]
    assert runs_store.shared().read(key) == (attempt / "judging" / "judge-claude.json").read_bytes()

    host_b = _host(monkeypatch, isolated, "b")
    record = runs_store.pull(f"2026-12/{attempt.name}/run_record.json")
    assert record == host_b / "2026-12" / attempt.name / "run_record.json"
    # host B has the record, not the attempt's folder: it does not judge an empty evidence folder
    elsewhere = judge_records([record], ["judge-claude"], replay_dir=replay)
    assert (
        elsewhere.written == []
        and "its evidence is on the host that ran it" in elsewhere.not_judged[attempt.name]
    )
    (pulled,) = pull_judgements(record)
    assert pulled == record.parent / "judging" / "judge-claude.json"
    assert json.loads(pulled.read_text())["status"] == "valid"
    assert ingest([record]).judgements == 1
    with duckdb.connect(str(isolated / "warehouse" / "argusic.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT attempt_id, judge_id, status FROM raw.judge_verdicts").fetchall()
    assert rows == [(attempt.name, "judge-claude", "valid")]

    # Judged again (e.g. after a fix): the store's judgement is replaced, not refused.
    (host_a / "2026-12" / attempt.name / "judging" / "judge-claude.json").write_text("{}\n")
    _host(monkeypatch, isolated, "a")
    runs_store.push(host_a / "2026-12" / attempt.name / "judging" / "judge-claude.json")
    assert runs_store.shared().read(key) == b"{}\n"


def test_single_machine_judgements_stay_where_ingest_reads_them(isolated: Path, monkeypatch) -> None:
    from argusic.judging.pipeline import pull_judgements, push_judgements

    monkeypatch.delenv("ARGUSIC_RUNS_URL", raising=False)
    attempt = make_attempt(isolated / "runs")
    path = attempt / "judging" / "judge-claude.json"
    path.parent.mkdir()
    path.write_text("{}")
    assert push_judgements([path]) == [str(path)]
    assert pull_judgements(attempt / "run_record.json") == [path]


# --- the cycle DAG's tasks -----------------------------------------------------------------------------

DAG_CHECK = r"""
import json, os, sys
import duckdb
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
dag = bag.dags["argusic_cycle"]
out = {t.task_id: {"up": sorted(t.upstream_task_ids), "down": sorted(t.downstream_task_ids),
                   "pool": t.pool, "queue": t.queue, "retries": t.retries} for t in dag.tasks}
params = {k: dag.params[k] for k in ("judges", "judge_scripts")}
# the tasks' bodies, as a worker runs them (the DAG file's wiring of argusic.workflows.judging_step)
spec_paths, scripts, judges = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
judge = dag.get_task("judge").python_callable
ingest_judgements = dag.get_task("ingest_judgements").python_callable
# outside a task run there is no Airflow context: the cycle id is the param's (as when the run sets it)
judge.__globals__["_cycle_id"] = lambda params: params["cycle_id"]
conf = {"cycle_id": "2026-12", "judges": judges, "judge_scripts": scripts}
none = judge({"files": 1}, spec_paths, [], {"cycle_id": "2026-12"})
try:
    judge({}, spec_paths, [], {**conf, "judges": ["judge-nobody"]})
    refused = None
except Exception as err:
    refused = [type(err).__name__, str(err)]
nothing = ingest_judgements(none, spec_paths, [], conf)
judged = judge({"files": 1}, spec_paths, [], conf)
loaded = ingest_judgements(judged, spec_paths, [], conf)
with duckdb.connect(os.environ["ARGUSIC_WAREHOUSE"], read_only=True) as con:
    rows = con.execute("SELECT judge_id, status, model FROM raw.judge_verdicts ORDER BY judge_id").fetchall()
print("@@RESULT@@" + json.dumps({"tasks": out, "params": params, "judged": judged, "none": none,
                                 "refused": refused, "nothing": nothing, "loaded": loaded, "rows": rows}))
"""


def _judge_step_in_a_dag_process(
    tmp_path: Path,
    judges_scripted: dict[str, dict],
    judges: tuple[str, ...] = ("judge-claude", "judge-claude-2"),
) -> tuple[dict, Path]:
    """A planned, measured attempt of the cycle; the cycle DAG's judge tasks checked and their bodies
    run in a process of their own (DAG_CHECK) for `judges`, with judgement scripts for `judges_scripted`:
    (what DAG_CHECK reported, the attempt's folder)."""
    from argusic.core.spec import AttemptSpec
    from conftest import evidence_refs
    from test_dags import airflow_env

    _docker_or_skip()
    env = airflow_env(tmp_path)
    for name in ("ARGUSIC_RUNS_URL", "LITELLM_BASE_URL", "LITELLM_MASTER_KEY"):
        env.pop(name, None)
    runs = Path(env["ARGUSIC_RUNS_DIR"])
    spec = AttemptSpec(
        cycle_id="2026-12", agent_id="claude-code", project_id="wavgen", repo_url="file:///nowhere",
        commit="0123456789abcdef0123456789abcdef01234567", tier="standard", attempt_no=1,
    )  # fmt: skip
    doc = record_doc()
    doc["attempt_id"] = spec.attempt_id
    doc["evidence"] = evidence_refs(env["ARGUSIC_EVIDENCE_URL"])
    attempt = make_attempt(runs, doc)
    plan = runs / "2026-12" / "plan"
    plan.mkdir(parents=True)
    spec_path = plan / f"{spec.attempt_id}.json"
    spec_path.write_text(spec.model_dump_json())
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for judge, script in judges_scripted.items():
        _write(scripts / f"{judge}.json", script)
    proc = subprocess.run(
        [sys.executable, "-c", DAG_CHECK, json.dumps([str(spec_path)]), str(scripts), json.dumps(judges)],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    info = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("@@RESULT@@"))[10:])
    return info, attempt


@pytest.mark.slow
@pytest.mark.docker
def test_the_cycle_dag_judges_after_ingest_and_loads_before_the_build(tmp_path: Path) -> None:
    """DagBag: judge after ingest on the attempt workers, ingest_judgements in the warehouse pool before
    the build. The tasks' bodies on a planned, measured attempt: judge-claude with a judgement script
    (the real CLI against the double), judge-claude-2 without one (no gateway here: the attempt is
    named as not judged, the step does not fail); no judges (nothing); an unknown judge (failed at
    once, no retry); ingest_judgements loads the judgement into raw.judge_verdicts."""
    info, attempt = _judge_step_in_a_dag_process(tmp_path, {"judge-claude": judge_script(verdict())})
    tasks = info["tasks"]
    assert "ingest" in tasks["judge"]["up"] and tasks["judge"]["down"] == ["ingest_judgements"]
    assert tasks["judge"]["queue"] == "argusic_attempts" and tasks["judge"]["retries"] >= 1
    assert "judge" in tasks["ingest_judgements"]["up"] and tasks["ingest_judgements"]["down"] == ["build"]
    assert tasks["ingest_judgements"]["pool"] == "argusic_warehouse"
    assert "ingest_judgements" in tasks["build"]["up"]
    assert info["params"] == {"judges": [], "judge_scripts": None}
    assert info["none"]["judgements"] == 0 and info["nothing"] == {"judgements": 0}
    assert info["refused"] is not None and "judge-nobody" in info["refused"][1]
    # judge-claude-2 has no script and there is no gateway: the attempt is named, nothing is written
    judged = info["judged"]
    assert judged["judgements"] == 0 and judged["not_judged"] == 1, judged
    assert "no model key" in judged["not_judged_attempts"][attempt.name]
    assert info["rows"] == [] and info["loaded"]["judgements"] == 0


@pytest.mark.slow
@pytest.mark.docker
def test_the_cycle_dags_judge_step_runs_the_cli_against_the_double_and_loads_it(tmp_path: Path) -> None:
    """The judge task's body with every judge scripted: the real Claude Code and Codex CLIs against the
    double, the judgements written, and ingest_judgements loading them into raw.judge_verdicts."""
    scripted = {
        "judge-claude": judge_script(verdict()),
        "judge-claude-2": judge_script(verdict(1, 1)),
        "judge-codex": codex_judge_script(verdict()),
    }
    info, attempt = _judge_step_in_a_dag_process(tmp_path, scripted, tuple(scripted))
    judged = info["judged"]
    assert judged["judgements"] == 3 and judged["not_judged"] == 0, judged
    assert info["loaded"]["judgements"] == 3 and info["loaded"]["inserted"] == 1  # no ingest ran before
    # judge-claude-2 scored code_structure 1 without quoting it: refused by the checks, on the CLI's output
    assert [(judge, status) for judge, status, _ in info["rows"]] == [
        ("judge-claude", "valid"),
        ("judge-claude-2", "refused"),
        ("judge-codex", "valid"),
    ]
    assert all(model.startswith("model-double/") for _, _, model in info["rows"])
    assert (attempt / "judging" / "judge-claude.json").is_file()
