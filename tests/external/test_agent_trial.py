"""`argusic model-double attempt` (argusic.cli.double_attempt, issue #28): a stranger's command for a
whole attempt of a real agent CLI against the scripted model, the double as the LiteLLM gateway.

Fast tests: the arguments it refuses (exit 2, before any Docker), the project it builds, the spent
scenario's limit. One slow Docker test drives the command through its CLI entry for Codex's install
scenario and checks each printed line against the run record, the session log and the gateway.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from argusic.cli import double_attempt as T
from argusic.cli.main import app
from argusic.sandbox import model_double
from argusic.sandbox.model_double import DEFAULT_PRICES_FILE, load_prices
from test_model_double import MAKE_DATA
from typer.testing import CliRunner


def _invoke(*args: str):
    return CliRunner().invoke(app, ["model-double", "attempt", *args])


def _flat(text: str) -> str:
    """The output without its whitespace (the error console wraps long lines, inside words too)."""
    return "".join(c for c in text if c not in " \n│")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--agent", "readme-runner"], "the model double speaks to claude-code, codex"),
        (["--agent", "codex", "--scenario", "explode"], "one of install, budget, fails-500"),
        (["--agent", "codex", "--project", "repairkit"], "the trial builds tinydata"),
        (["--agent", "codex", "--project", "../x"], "the trial builds tinydata"),
        (["--agent", "codex", "--budget-seconds", "5"], "Invalid value for '--budget-seconds'"),
    ],
)
def test_arguments_are_refused_before_anything_runs(args, said, monkeypatch):
    monkeypatch.setattr(T, "check_docker", lambda: pytest.fail("Docker looked at for a refused argument"))
    done = _invoke(*args)
    assert done.exit_code == 2 and _flat(said) in _flat(done.output), done.output


def test_a_scenario_without_a_script_for_that_cli_is_refused(monkeypatch, tmp_path):
    """A project whose folder has no script of that kind for the CLI: refused, naming the file."""
    (tmp_path / "tinydata").mkdir()
    (tmp_path / "tinydata" / "claude-code.install.json").write_text("{}")
    monkeypatch.setattr(model_double, "SCRIPTS_DIR", tmp_path)
    monkeypatch.setattr(T, "check_docker", lambda: pytest.fail("Docker looked at for a missing script"))
    done = _invoke("--agent", "codex", "--scenario", "budget")
    output = _flat(done.output)
    assert done.exit_code == 2 and _flat("scenario 'budget' has no script for codex") in output
    assert "tinydata/codex.budget.json" in output and "['claude-code.install.json']" in output


def test_no_docker_or_no_image_is_refused_plainly(monkeypatch):
    import docker

    monkeypatch.setattr(T, "docker_available", lambda: False)
    done = _invoke("--agent", "claude-code")
    assert done.exit_code == 2 and _flat("no Docker daemon answers") in _flat(done.output)

    class Images:
        def get(self, name):
            raise docker.errors.ImageNotFound(name)

    monkeypatch.setattr(T, "docker_available", lambda: True)
    monkeypatch.setattr(docker, "from_env", lambda: type("C", (), {"images": Images()})())
    monkeypatch.setenv("ARGUSIC_AGENTS_IMAGE", "argusic-agents:nowhere")
    done = _invoke("--agent", "codex", "--scenario", "fails-500")
    output = " ".join(done.output.split())
    assert (
        done.exit_code == 2 and "no image argusic-agents:nowhere" in output and "make agents-image" in output
    )


def test_every_scenario_has_a_script_for_both_clis():
    for agent in T.AGENTS:
        for scenario in T.SCENARIOS:
            plan = T.plan_trial(agent, scenario, "tinydata")
            assert plan.turns and plan.script.name == f"{agent}.{T.SCENARIOS[scenario]}.json"
            assert plan.budget == (T.BUDGET_FOR.get((scenario, agent)) or T.DEFAULT_BUDGET)
            assert (plan.limit_usd is not None) == (scenario == "spent")


def test_the_spent_limit_is_passed_by_the_second_answer_only():
    prices = load_prices(DEFAULT_PRICES_FILE)
    for agent in T.AGENTS:
        plan = T.plan_trial(agent, "spent", "tinydata")
        model = T.agents.DRIVERS[agent].model
        first, second = (T.answer_cost(t, model, prices) for t in plan.turns[:2])
        assert first < Decimal(str(plan.limit_usd)) <= first + second


def test_the_project_is_the_tests_tiny_project_in_a_fresh_repository(tmp_path):
    """The same make_data.py as the tests' (the scripts' edits apply to it), committed in a bare
    repository an attempt can fetch by commit."""
    assert T.TRIAL_PROJECTS["tinydata"]["make_data.py"] == MAKE_DATA
    assert "python3 make_data.py out/data.json" in T.TRIAL_PROJECTS["tinydata"]["README.md"]
    bare, commit = T.build_project("tinydata", tmp_path)
    shown = subprocess.run(
        ["git", "--git-dir", str(bare), "show", f"{commit}:make_data.py"], capture_output=True, text=True
    )
    assert shown.returncode == 0 and shown.stdout == MAKE_DATA
    cycle = tmp_path / "runs" / "model-double-x"
    assert T.next_attempt_no(cycle, "codex", "tinydata") == 1
    (cycle / "model-double-x.board.codex.tinydata.a1").mkdir(parents=True)
    assert T.next_attempt_no(cycle, "codex", "tinydata") == 2


def test_the_project_is_built_under_a_relative_folder_too(tmp_path, monkeypatch):
    """The command's default folder is relative (model-double-attempts/ where it is run): git runs in
    two folders, so a relative path named two places and the clone failed (a stranger's first run)."""
    monkeypatch.chdir(tmp_path)
    bare, commit = T.build_project("tinydata", Path("model-double-attempts") / "projects" / "t1")
    assert bare == tmp_path / "model-double-attempts" / "projects" / "t1" / "tinydata.git" and bare.is_dir()
    assert len(commit) == 40


def test_the_attempt_conditions_are_undone(monkeypatch):
    from argusic.sandbox.containment import NETWORK_ENV

    monkeypatch.delenv(NETWORK_ENV, raising=False)
    before = T.agents.DRIVERS["codex"]
    with T.attempt_conditions("codex", "argusic-model-double-x"):
        assert T.agents.DRIVERS["codex"].max_retries == 0
        assert os.environ[NETWORK_ENV] == "argusic-model-double-x"
    assert T.agents.DRIVERS["codex"] is before
    assert NETWORK_ENV not in os.environ


# -- the command, whole, in Docker -------------------------------------------------------------------------


@pytest.fixture
def env(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARGUSIC_INSTALLATION", f"t-{uuid.uuid4().hex[:10]}")
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(isolated / "scratch"))
    return isolated


def _value(lines: list[str], prefix: str) -> str:
    (line,) = [x for x in lines if x.startswith(prefix)]
    return line[len(prefix) :]


@pytest.mark.slow
@pytest.mark.docker
def test_a_codex_install_attempt_against_the_double_as_a_stranger_runs_it(env, tmp_path):
    from argusic.attempts import agents
    from argusic.core import settings
    from argusic.core.record import load_record_file
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

    out = tmp_path / "trial"
    done = CliRunner().invoke(app, ["model-double", "attempt", "--agent", "codex", "--out", str(out)])
    print(done.output)
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    record_path = Path(_value(lines, "record: "))
    record = load_record_file(record_path)
    assert record_path.is_relative_to(out) and record.cycle_id.startswith(f"{T.CYCLE}-") and record.demo
    attempt_out = record_path.parent / "out"

    # The commands, from the CLI's own session log, as the driver's collector reads them.
    calls = [c for c in agents.DRIVERS["codex"].collect(attempt_out).tool_calls if c.category == "exec"]
    assert len(calls) == 5  # look, run (fails), read, run again, verify
    assert _value(lines, "commands executed (the CLI's session log): ") == str(len(calls))
    listed = [x for x in lines if x.startswith("  ") and ". [" in x]
    assert [x.split("] ", 1)[1] for x in listed] == [c.arguments["command"] for c in calls]
    assert "[failed]" in listed[1] and "make_data.py out/data.json" in listed[1]

    assert _value(lines, "end reason: ") == record.end_reason == "completed"
    assert _value(lines, "invalid reason: ") == "—" and record.invalid_reason is None
    assert _value(lines, "container fault: ") == "—" and record.container_fault is None
    seen = record.observed
    assert seen.verified and seen.errors_fixed == 1
    assert _value(lines, "observed (session_log): ").startswith(
        "installed yes, ran yes, errors 1 found / 1 fixed"
    )
    points = _value(lines, "points (the rubric, dbt attempt_scores): ")
    assert points.startswith("outcome pass_full,"), points
    usage = record.usage
    assert _value(lines, "usage (the CLI's own count): ").startswith(
        f"input tokens {usage.input_tokens.value:g} (measured), output tokens {usage.output_tokens.value:g}"
    )
    # The gateway's spend: what it served x the seed's prices, as the record's key says.
    spend = record.key.gateway_spend_usd
    assert spend and _value(lines, "gateway spend: ").startswith(f"{spend:.6f} USD of max_budget 3.0 USD")
    key_line = _value(lines, "key: minted ")
    assert key_line.startswith(f"argusic-attempt:{settings.installation_id()}:{record.attempt_id}:")
    assert "model requests 8 (8 x 200), the key accepted on 8; deleted yes" in key_line
    assert "(broker: created 1, deleted 1, delete failed 0)" in key_line

    # Where things are, and the replay line `argusic play` takes.
    for name in ("log.txt", "recording.cast", "session.jsonl", "report.json"):
        assert Path(_value(lines, f"{name}: ")) == attempt_out / name and (attempt_out / name).is_file()
    assert _value(lines, "served recording: ") == record.presentation.recording.uri
    replay = _value(lines, "replay: ")
    assert (
        replay.endswith(f"argusic play {record.attempt_id}") and f"ARGUSIC_RUNS_DIR={out / 'runs'}" in replay
    )

    # Nothing of the double is left, and no stored byte holds the key.
    network = _value(lines, "model double and its network ").removesuffix(": removed")
    assert client.networks.list(names=[network]) == []
    assert client.containers.list(all=True, filters={"name": f"^{network}$"}) == []
    for file in out.rglob("*"):
        if file.is_file():
            assert b"sk-master-" not in file.read_bytes(), file
    served = json.loads((attempt_out / "report.json").read_text())
    assert served["errors_fixed"] == 1
