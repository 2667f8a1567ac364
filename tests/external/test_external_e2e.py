"""External agents end to end: a real attempt of Claude Code and of the Codex CLI on a forge fixture
project, inside the agents image (scripts/build_agents_image.sh), networking off, with a per-run key
from a stand-in broker whose gateway URL points at a closed port.

The CLI really starts in the container (isolated config, the standard instructions on stdin, session
JSONL teed to /out/session.jsonl, everything under the stdlib recorder) and cannot reach any model.
Claude Code gives up with an API error (harness_error); the Codex CLI "waits for network" with growing
pauses (5, 10, 20, 40 s, … whatever its retry settings) until the budget kills it (timeout). Either
way the record must say: executor docker, invalid because the agent never reached its model (our
tooling's failure, rerun: METHODOLOGY.md §7), log and recording landed and fingerprinted, the key
deleted and in no stored file, usage from the collector (a number only where the session log states
it, unavailable otherwise), model requested and harness version.

The drivers are the registered ones with one setting changed: no model-request retries, so Claude
Code gives up at once instead of backing off for about 3 minutes (10 retries).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from argusic.attempts import agents
from argusic.attempts.keys import IssuedKey
from argusic.attempts.run import run_attempt
from argusic.core import settings
from argusic.core.evidence import EvidenceStore
from argusic.core.record import load_record_file
from argusic.core.spec import AttemptSpec
from argusic.external import SESSION_LOG, claude_code, codex
from argusic.external.collect import USAGE_FIELDS
from argusic.sandbox.executor import docker_available
from argusic.sources.forge import build_forge

ROOT = Path(__file__).resolve().parents[2]
CLOSED_GATEWAY = "http://127.0.0.1:9/v1"  # nothing listens there; the container has no network anyway
BUDGETS = {"claude-code": 120, "codex": 20}  # demo budgets (s); Codex is killed at its budget


@pytest.fixture(scope="module")
def agents_image() -> str:
    if not docker_available():
        pytest.skip("no Docker daemon answers")
    started = time.monotonic()
    done = subprocess.run(
        [str(ROOT / "scripts" / "build_agents_image.sh")], capture_output=True, text=True, timeout=1200
    )
    if done.returncode != 0:
        pytest.skip(f"agents image could not be built: {done.stderr.strip().splitlines()[-1:]}")
    print(f"agents image ready in {time.monotonic() - started:.0f} s")
    return settings.agents_image()


@pytest.fixture(scope="module")
def forge_project(tmp_path_factory) -> dict:
    catalogue = json.loads(build_forge(tmp_path_factory.mktemp("forge")).read_text())
    return catalogue["candidates"][0]


def _gateway_broker():
    from test_keys import FakeBroker

    class GatewayBroker(FakeBroker):
        """FakeBroker whose keys come with our gateway's URL, as LiteLLMKeyBroker's do."""

        def create(self, attempt_id: str, limit_usd: float, *, ttl_seconds: int | None = None) -> IssuedKey:
            key = super().create(attempt_id, limit_usd, ttl_seconds=ttl_seconds)
            key.base_url = CLOSED_GATEWAY
            return key

    return GatewayBroker()


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize(
    ("agent_id", "module", "session_marker", "end_reason"),
    [
        ("claude-code", claude_code, '"subtype":"init"', "harness_error"),
        ("codex", codex, '"type":"thread.started"', "timeout"),
    ],
)
def test_external_agent_attempt_in_the_agents_image(
    agent_id, module, session_marker, end_reason, agents_image, forge_project, tmp_path, monkeypatch
):
    registered = agents.DRIVERS[agent_id]
    assert registered.key_kind == "per_run" and registered.external and registered.model
    monkeypatch.setitem(agents.DRIVERS, agent_id, dataclasses.replace(registered, max_retries=0))
    broker = _gateway_broker()
    store = EvidenceStore((tmp_path / "evidence").as_uri())
    spec = AttemptSpec(
        cycle_id="2026-12", agent_id=agent_id, project_id=forge_project["project_id"],
        repo_url=forge_project["repo_url"], commit=forge_project["commit"], tier="standard", attempt_no=1,
        demo=True, budget_scale=BUDGETS[agent_id] / 5400,
    )  # fmt: skip
    started = time.monotonic()
    path = run_attempt(spec, None, store, tmp_path / "runs", broker=broker)
    took = time.monotonic() - started
    record = load_record_file(path)
    out = path.parent / "out"

    # Ran in Docker, in the agents image; ended with an error (Claude Code) or at the budget (Codex).
    assert record.executor == "docker" and record.image == agents_image
    assert record.end_reason == end_reason
    if end_reason == "harness_error":
        assert took < BUDGETS[agent_id], f"{agent_id} ran {took:.0f} s: still retrying at the budget?"
    assert record.invalid_reason and record.invalid_reason.startswith("the agent never reached its model")
    assert record.report is None and record.evidence.report is None
    # The recorder sealed what it wrote through PID 1 (the CLI ended before the budget: its seal came;
    # at the budget the container is killed and nothing is sealed), and the session was observed.
    assert record.seal.status == ("missing" if end_reason == "timeout" else "intact"), record.seal
    assert record.observed.source == "session_log"

    # The CLI really started: its session JSONL was teed to /out and into the recorded terminal.
    session = (out / SESSION_LOG).read_text()
    assert session_marker in session
    log = store.read(record.evidence.log.uri).decode()
    cast = store.read(record.evidence.recording.uri).decode()
    assert session_marker in log and "recorder: start" in log
    if end_reason == "harness_error":  # killed at the budget, the recorder writes no closing line
        assert "recorder: exit" in log
    header, *events = cast.splitlines()
    assert json.loads(header)["version"] == 2 and events
    # titled on the host with the agent's neutral identity, never its id or product (issue 32)
    title = json.loads(header)["title"]
    assert re.fullmatch(
        rf"Argusic agent A-[0-9a-f]{{6}} / {forge_project['project_id']} / attempt 1", title
    ), title
    assert all(json.loads(e)[1] == "o" for e in events)
    # the raw session, fingerprinted into the store (issue #31, seed 002): what was read is what is kept
    assert record.evidence.session_log is not None
    assert store.read(record.evidence.session_log.uri) == (out / SESSION_LOG).read_bytes()
    for ref in (record.evidence.log, record.evidence.recording, record.evidence.session_log):
        data = store.read(ref.uri)
        assert hashlib.sha256(data).hexdigest() == ref.sha256 and len(data) == ref.bytes

    # Isolated configuration: nothing of the agent's config folders landed in /out (display.json is
    # the bootstrap's record of the virtual display, the agents image being the runner image plus;
    # changes.patch is the project's changes, computed on the host against our copy of the commit;
    # display.mkv the raw session video of the virtual display, issue #30).
    assert {p.name for p in out.iterdir()} <= {
        "log.txt", "recording.cast", SESSION_LOG, "report.json", codex.LAST_MESSAGE_FILE, "display.json",
        "changes.patch", "display.mkv",
    }  # fmt: skip
    assert record.environment is not None and record.environment.display is not None
    if agent_id == "claude-code":
        init = next(json.loads(line) for line in session.splitlines() if '"subtype":"init"' in line)
        assert init["mcp_servers"] == [] and init["cwd"] == "/workspace/project"
        assert init["permissionMode"] == "bypassPermissions"

    # The per-run key: created once, deleted afterwards, in no stored file.
    assert broker.stats.created == 1 and broker.stats.deleted == 1 and broker.keys == {}
    assert record.key.kind == "per_run" and record.key.limit_usd == 3.0
    for root in (tmp_path / "runs", tmp_path / "evidence"):
        for file in root.rglob("*"):
            if file.is_file():
                assert b"sk-fake-" not in file.read_bytes(), file

    # Usage from the collector: a number only where the session log states one.
    collected = agents.DRIVERS[agent_id].collect(out)
    for name in USAGE_FIELDS:
        got = getattr(record.usage, name)
        assert (got.value is None) == (got.status == "unavailable"), name
        want = collected.usage[name]
        if name != "duration_seconds" or want.status != "unavailable":  # else: the wall time fills it
            assert (got.value, got.status) == (want.value, want.status), name
    if agent_id == "codex":  # the stream states no tokens without a completed turn, no calls, no cost
        for name in ("input_tokens", "output_tokens", "model_calls", "cost_usd"):
            assert getattr(record.usage, name).status == "unavailable", name
        assert record.usage.duration_seconds.status == "measured"  # the executor's wall time
    else:  # the CLI's result event states zero usage and zero cost for the refused connection
        assert collected.end_state == "error" and collected.details["api_errors"]
        assert record.usage.cost_usd.status == "measured" and record.usage.cost_usd.value == 0

    # Model requested and harness name / version recorded.
    assert record.model.requested == registered.model and record.model.responded is None
    assert record.harness.name == agent_id and record.harness.version == module.PINNED_VERSION


# -- the validity decisions, without Docker ------------------------------------------------------------


def _result(*, exit_code=0, timed_out=False, error=None):
    from datetime import UTC, datetime

    from argusic.sandbox.launch import ExecutionResult

    now = datetime.now(UTC)
    return ExecutionResult("docker", now, now, exit_code, timed_out, error, "img")


def _run(end_state, *, answered=True, report=True, detail="detail"):
    from argusic.external.collect import CollectedRun, unavailable

    return CollectedRun(
        harness="codex", harness_version=None,
        usage={name: unavailable("test") for name in USAGE_FIELDS},
        model_requested="m", model_responded=None, end_state=end_state, end_detail=detail,
        final_text="done" if answered else None, tool_calls=[], lines_total=1, lines_unparsable=0,
        truncated_tail=False, problems=[], report={"x": 1} if report else None,
        report_problem=None if report else "report missing: report.json was not written",
    )  # fmt: skip


EVIDENCE = {"log": {"sha256": "0" * 64}, "recording": {"sha256": "1" * 64}, "report": None}
SPENT = {"kind": "per_run", "limit_usd": 3.0, "gateway_spend_usd": 3.0012}  # the record's key field
UNREAD = {"kind": "per_run", "limit_usd": 3.0, "gateway_spend_unread": "spend not read before deletion: gone"}


@pytest.mark.parametrize(
    ("result", "run", "evidence", "expected", "key"),
    [case if len(case) == 5 else (*case, None) for case in [
        # expected: (end_reason, invalid_reason: ours, container_fault: the container's, keep_report)
        (_result(), _run("completed"), EVIDENCE, ("completed", None, None, True)),
        # Worked until it stopped but wrote no report: the agent's doing, a measured failure (#25).
        (_result(), _run("completed", report=False), EVIDENCE, ("completed", None, "report missing", False)),
        (_result(timed_out=True, exit_code=None), _run("truncated"), EVIDENCE,
         ("timeout", None, None, False)),
        # The CLI's own error event: the model API or our gateway failed mid-run -- ours, rerun.
        (_result(exit_code=1), _run("error"), EVIDENCE,
         ("harness_error", "agent CLI ended in error", None, False)),
        # The CLI's error came after the gateway counted the key's spend up to its limit: the agent's
        # own model use, inside the test machine -- a measured failure, never rerun (v1.6).
        (_result(exit_code=1), _run("error"), EVIDENCE, ("harness_error", None,
         "the attempt's model key reached its spend limit (3.0012 of 3 USD", False), SPENT),
        # Spend under the limit, or a key whose spend the gateway did not say: ours, as above.
        (_result(exit_code=1), _run("error"), EVIDENCE,
         ("harness_error", "agent CLI ended in error", None, False), SPENT | {"gateway_spend_usd": 2.99}),
        (_result(exit_code=1), _run("error"), EVIDENCE,
         ("harness_error", "agent CLI ended in error", None, False), SPENT | {"gateway_spend_usd": None}),
        # The gateway's count unknown (it answered neither before nor after the deletion): never taken
        # for one under the limit. The CLI's sealed error showing the gateway's budget refusal decides;
        # without it the rerun's reason says the spend is unknown.
        (_result(exit_code=1), _run("error", detail="API Error: 422 {'error': {'type': 'budget_exceeded'}}"),
         EVIDENCE, ("harness_error", None, "the attempt's model key was refused for its spend limit", False),
         UNREAD),
        (_result(exit_code=1), _run("error", detail="API Error: 500 upstream"), EVIDENCE,
         ("harness_error", "agent CLI ended in error: API Error: 500 upstream (the key's spend is unknown: "
          "spend not read", None, False), UNREAD),
        # A refusal's words with the count known under the limit are the container's words, not a count.
        (_result(exit_code=1), _run("error", detail="Budget has been exceeded!"), EVIDENCE,
         ("harness_error", "agent CLI ended in error", None, False), SPENT | {"gateway_spend_usd": 0.5}),
        # The CLI killed inside the container (its log cut): the container's.
        (_result(exit_code=137), _run("truncated"), EVIDENCE,
         ("harness_error", None, "session log ends", False)),
        (_result(exit_code=1), _run("error", answered=False), EVIDENCE,
         ("harness_error", "the agent never reached its model", None, False)),
        (_result(timed_out=True, exit_code=None), _run("truncated", answered=False), EVIDENCE,
         ("timeout", "the agent never reached its model", None, False)),
        (_result(error="docker: gone"), _run("completed"), EVIDENCE,
         ("harness_error", "executor error", None, False)),
        # The recording deleted from inside: the container's; its report earns nothing.
        (_result(), _run("completed"), EVIDENCE | {"recording": None},
         ("completed", None, "incomplete evidence: no recording", False)),
    ]],
)  # fmt: skip
def test_external_outcome_decisions(result, run, evidence, expected, key):
    from argusic.attempts.install_run import external_outcome

    end_reason, invalid, fault, keep_report = external_outcome(result, run, evidence, key)
    want_end, want_invalid, want_fault, want_keep = expected
    assert end_reason == want_end
    assert (invalid is None) == (want_invalid is None) and (invalid or "").startswith(want_invalid or "")
    assert (fault is None) == (want_fault is None) and (fault or "").startswith(want_fault or "")
    assert keep_report == want_keep


def test_a_cli_error_on_record_names_no_key():
    """The CLI's own words are kept in the published reason, but a gateway's error names the key
    (LiteLLM: "Key=<alias> (sk-...<last 4>)"), and the alias carries the operator's agent and project
    ids, which published ids never show (issue 32)."""
    from argusic.attempts.common import cli_error

    said = (
        "API Error: 422 Budget has been exceeded! Key=argusic-attempt:id27b62b:c1.board.claude-code."
        "tinydata.a1:2a8a5980 (sk-...FlQQ) Current cost: 0.0072, Max budget: 0.0054; also sk-live-0123abcd"
    )
    reason = cli_error(said)
    assert reason.startswith("agent CLI ended in error: API Error: 422 Budget has been exceeded! Key=")
    assert "Current cost: 0.0072, Max budget: 0.0054" in reason
    for name in ("argusic-attempt:", "claude-code", "tinydata", "2a8a5980", "FlQQ", "sk-", "0123abcd"):
        assert name not in reason
    assert cli_error(None) == "agent CLI ended in error: "
