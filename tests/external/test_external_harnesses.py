"""External harnesses: drivers (isolation, key only in the environment) and collectors on session logs
written in the tools' documented formats, plus logs recorded offline from the real CLIs."""

from __future__ import annotations

import copy
import json
import shlex
from pathlib import Path

import pytest
from argusic.core.record import SCHEMA_ID, parse_record
from argusic.external import claude_code, codex, harnesses, render_instructions
from argusic.external.collect import USAGE_FIELDS, categorize, read_jsonl, record_parts, total_of

SESSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
REPORTS = SESSIONS / "reports"
CLAUDE = SESSIONS / "claude_code"
CODEX = SESSIONS / "codex"
SECRET = "sk-test-THIS-MUST-NEVER-APPEAR-IN-ARGV"

M, D, U = "measured", "derived", "unavailable"

# fixture -> {usage field: (value, status)}, end state
CLAUDE_EXPECTED = {
    "normal.jsonl": (
        {
            "input_tokens": (25027, D),
            "output_tokens": (797, D),
            "model_calls": (9, D),
            "cost_usd": (0.084215, M),
            "duration_seconds": (95.432, M),
        },
        "completed",
    ),
    "error_max_turns.jsonl": (
        {
            "input_tokens": (3738, D),
            "output_tokens": (75, M),
            "model_calls": (2, D),
            "cost_usd": (0.012337, M),
            "duration_seconds": (20.518, M),
        },
        "error",
    ),
    "missing_usage.jsonl": (
        {
            "input_tokens": (None, U),
            "output_tokens": (None, U),
            "model_calls": (3, D),
            "cost_usd": (None, U),
            "duration_seconds": (None, U),
        },
        "completed",
    ),
    "truncated_midline.jsonl": (
        {
            "input_tokens": (14306, D),
            "output_tokens": (417, D),
            "model_calls": (6, D),
            "cost_usd": (None, U),
            "duration_seconds": (None, U),
        },
        "truncated",
    ),
    "zeroed_result.jsonl": (
        {
            "input_tokens": (2412, D),
            "output_tokens": (55, D),
            "model_calls": (1, D),
            "cost_usd": (None, U),
            "duration_seconds": (None, U),
        },
        "error",
    ),
    # Recorded from claude-code 2.1.332 against a closed port: the API error is stated with zeros.
    "recorded_connection_refused.jsonl": (
        {
            "input_tokens": (0, D),
            "output_tokens": (0, M),
            "model_calls": (0, D),
            "cost_usd": (0, M),
            "duration_seconds": (0.748, M),
        },
        "error",
    ),
    # Recorded: killed during API retries, no result event, nothing counted.
    "recorded_killed_during_retries.jsonl": (
        {
            "input_tokens": (None, U),
            "output_tokens": (None, U),
            "model_calls": (None, U),
            "cost_usd": (None, U),
            "duration_seconds": (None, U),
        },
        "truncated",
    ),
}

_CODEX_NOTHING = {name: (None, U) for name in ("model_calls", "cost_usd", "duration_seconds")}
CODEX_EXPECTED = {
    "normal.jsonl": ({"input_tokens": (48211, M), "output_tokens": (2305, M), **_CODEX_NOTHING}, "completed"),
    "turn_failed.jsonl": ({"input_tokens": (None, U), "output_tokens": (None, U), **_CODEX_NOTHING}, "error"),
    "missing_usage.jsonl": (
        {"input_tokens": (None, U), "output_tokens": (None, U), **_CODEX_NOTHING},
        "completed",
    ),
    "truncated_midline.jsonl": (
        {"input_tokens": (None, U), "output_tokens": (None, U), **_CODEX_NOTHING},
        "truncated",
    ),
    "recorded_killed_waiting_for_network.jsonl": (
        {"input_tokens": (None, U), "output_tokens": (None, U), **_CODEX_NOTHING},
        "truncated",
    ),
}


def _usage_of(run) -> dict:
    return {name: (m.value, m.status) for name, m in run.usage.items()}


@pytest.mark.parametrize("name", sorted(CLAUDE_EXPECTED))
def test_claude_code_fixture_numbers_and_statuses(name: str) -> None:
    run = claude_code.collect(CLAUDE / name, REPORTS / "valid.json")
    usage, end_state = CLAUDE_EXPECTED[name]
    assert _usage_of(run) == usage
    assert run.end_state == end_state


@pytest.mark.parametrize("name", sorted(CODEX_EXPECTED))
def test_codex_fixture_numbers_and_statuses(name: str) -> None:
    run = codex.collect(CODEX / name, REPORTS / "valid.json", requested_model="gpt-5-codex")
    usage, end_state = CODEX_EXPECTED[name]
    assert _usage_of(run) == usage
    assert run.end_state == end_state


def test_every_fixture_log_has_an_expectation() -> None:
    assert {p.name for p in CLAUDE.glob("*.jsonl")} == set(CLAUDE_EXPECTED)
    assert {p.name for p in CODEX.glob("*.jsonl")} == set(CODEX_EXPECTED)


def test_claude_code_normal_session_details() -> None:
    run = claude_code.collect(CLAUDE / "normal.jsonl", REPORTS / "valid.json")
    assert run.harness == "claude-code" and run.harness_version == "2.1.332"
    assert run.model_requested == "claude-sonnet-4-5"  # from the init event
    assert run.model_responded == "claude-sonnet-4-5-20250929"  # main loop, not the haiku subagent
    assert [(c.name, c.category, c.ok) for c in run.tool_calls] == [
        ("Read", "read", True),
        ("Bash", "exec", False),
        ("Grep", "search", True),
        ("Edit", "edit", True),
        ("Bash", "exec", True),
        ("Bash", "exec", True),
        ("Write", "edit", True),
    ]
    assert run.tool_calls[0].target == "/workspace/project/README.md"
    assert run.tool_calls[1].target == "pip install ."
    assert run.details["num_turns"] == 8
    assert run.details["cache_read_tokens"] == 20250 and run.details["cache_write_tokens"] == 3840
    assert run.final_text.startswith("Installed after fixing")
    assert not run.partial and run.problems == []
    assert run.report is not None and run.report_problem is None
    assert "modelUsage" in run.usage["input_tokens"].note


def test_claude_code_requested_model_from_driver_wins() -> None:
    run = claude_code.collect(CLAUDE / "normal.jsonl", None, requested_model="claude-sonnet-4-5-20250929")
    assert run.model_requested == "claude-sonnet-4-5-20250929"
    assert run.report is None and run.report_problem == "no report path given"


def test_claude_code_error_ends() -> None:
    run = claude_code.collect(CLAUDE / "error_max_turns.jsonl", None)
    assert run.end_detail == "max_turns: Reached maximum number of turns (2)"
    recorded = claude_code.collect(CLAUDE / "recorded_connection_refused.jsonl", None)
    assert recorded.end_detail.startswith("api_error: API Error: Connection refused")
    assert recorded.model_responded is None  # the CLI's <synthetic> error message is not a model
    assert recorded.details["api_errors"] and recorded.details["api_retries"] == 1
    zeroed = claude_code.collect(CLAUDE / "zeroed_result.jsonl", None)
    assert zeroed.details["result_zeroed"] is True


def test_truncated_claude_log_is_partial_with_lower_bounds() -> None:
    run = claude_code.collect(CLAUDE / "truncated_midline.jsonl", None)
    assert run.partial and run.truncated_tail
    assert run.lines_total == 13 and run.lines_unparsable == 1
    assert run.problems and "cut mid-line" in run.problems[0]
    assert "lower bound" in run.usage["model_calls"].note
    assert run.tool_calls[-1].name == "Bash" and run.tool_calls[-1].ok is None  # result never logged
    assert "no result event" in run.end_detail


def test_claude_killed_during_retries_counts_nothing_as_zero() -> None:
    run = claude_code.collect(CLAUDE / "recorded_killed_during_retries.jsonl", None)
    assert run.details["api_retries"] == 10
    assert run.usage["model_calls"].value is None  # 0 from a cut log would be a silent zero


def test_codex_sessions() -> None:
    run = codex.collect(CODEX / "normal.jsonl", REPORTS / "valid.json", requested_model="gpt-5-codex")
    assert run.model_requested == "gpt-5-codex" and run.model_responded is None
    assert run.details["cached_input_tokens"] == 40960
    assert [(c.category, c.ok) for c in run.tool_calls] == [
        ("exec", True),
        ("exec", False),
        ("edit", True),
        ("exec", True),
        ("exec", True),
        ("edit", True),
    ]
    assert run.tool_calls[2].target == "/workspace/project/setup.cfg"
    assert run.final_text.startswith("Installed after fixing setup.cfg")
    failed = codex.collect(CODEX / "turn_failed.jsonl", None)
    assert failed.end_detail == "turn.failed: stream disconnected before completion: error sending request"
    assert failed.model_responded == "gpt-5.1-codex-mini"  # stated by the reroute notice
    cut = codex.collect(CODEX / "truncated_midline.jsonl", None)
    assert cut.partial and cut.truncated_tail and cut.lines_unparsable == 1
    assert cut.tool_calls[-1].ok is None
    killed = codex.collect(CODEX / "recorded_killed_waiting_for_network.jsonl", None)
    assert "waiting for network" in killed.end_detail


def test_codex_turn_completed_without_usage_key(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text(
        '{"type":"thread.started","thread_id":"t"}\n{"type":"turn.started"}\n{"type":"turn.completed"}\n'
    )
    run = codex.collect(log, None)
    assert run.end_state == "completed"
    assert run.usage["input_tokens"].status == "unavailable"


def test_codex_zero_usage_without_any_work_is_a_real_zero(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text(
        '{"type":"thread.started","thread_id":"t"}\n{"type":"turn.started"}\n'
        '{"type":"turn.completed","usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0}}\n'
    )
    assert codex.collect(log, None).usage["input_tokens"].as_record() == {"value": 0, "status": "measured"}


# --- no silent zero ------------------------------------------------------------------------------


def _strip(obj, keys: set[str]):
    if isinstance(obj, dict):
        return {k: _strip(v, keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list):
        return [_strip(v, keys) for v in obj]
    return obj


CLAUDE_SOURCES = {
    "input_tokens": {"usage", "modelUsage"},
    "output_tokens": {"usage", "modelUsage"},
    "cost_usd": {"total_cost_usd"},
    "duration_seconds": {"duration_ms"},
    "model_calls": set(),  # the assistant events themselves are dropped
}
CODEX_SOURCES = {"input_tokens": {"usage"}, "output_tokens": {"usage"}}


@pytest.mark.parametrize("name", sorted(CLAUDE_EXPECTED))
@pytest.mark.parametrize("field", sorted(CLAUDE_SOURCES))
def test_no_silent_zero_claude(tmp_path: Path, name: str, field: str) -> None:
    """Property: remove from a log every key a number comes from; that number is then unavailable
    with a null value, never 0, whatever else the log holds (also on a cut log)."""
    text = (CLAUDE / name).read_text()
    lines = []
    for line in text.split("\n"):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            lines.append(line)  # keep a cut last line cut
            continue
        if field == "model_calls" and event.get("type") == "assistant":
            continue  # without assistant events there is nothing to count
        lines.append(json.dumps(_strip(event, CLAUDE_SOURCES[field])))
    log = tmp_path / name
    log.write_text("\n".join(lines))
    run = claude_code.collect(log, None)
    measure = run.usage[field]
    if field == "model_calls" and run.end_state != "truncated" and run.lines_unparsable == 0:
        # a complete log without any assistant message did make zero calls: counted, derived
        assert measure.as_record() == {"value": 0, "status": "derived"}
    else:
        assert measure.as_record() == {"value": None, "status": "unavailable"}


@pytest.mark.parametrize("name", sorted(CODEX_EXPECTED))
@pytest.mark.parametrize("field", sorted(CODEX_SOURCES))
def test_no_silent_zero_codex(tmp_path: Path, name: str, field: str) -> None:
    text = (CODEX / name).read_text()
    lines = []
    for line in text.split("\n"):
        try:
            lines.append(json.dumps(_strip(json.loads(line), CODEX_SOURCES[field])))
        except json.JSONDecodeError:
            lines.append(line)
    log = tmp_path / name
    log.write_text("\n".join(lines))
    assert codex.collect(log, None).usage[field].as_record() == {"value": None, "status": "unavailable"}


@pytest.mark.parametrize(
    ("mod", "folder", "expected"),
    [(claude_code, CLAUDE, CLAUDE_EXPECTED), (codex, CODEX, CODEX_EXPECTED)],
)
def test_unavailable_always_null_and_zero_only_when_stated(mod, folder: Path, expected: dict) -> None:
    for name in expected:
        run = mod.collect(folder / name, None)
        for field in USAGE_FIELDS:
            m = run.usage[field]
            assert (m.status == "unavailable") == (m.value is None), (name, field)
            assert m.note, (name, field)  # every number says where it came from


def test_total_of_rules() -> None:
    assert total_of([("a", 3)], "x").status == "measured"
    assert total_of([("a", 3), ("b", 4)], "x").as_record() == {"value": 7, "status": "derived"}
    assert total_of([("a", None), ("b", "7")], "x").as_record() == {"value": None, "status": "unavailable"}
    assert total_of([("a", 3), ("b", None)], "x").status == "derived"
    assert total_of([("a", True)], "x").status == "unavailable"  # a bool is not a count


# --- reading damaged logs ------------------------------------------------------------------------


def test_read_jsonl_never_raises(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_bytes(
        b'{"type":"a"}\n\n[1,2]\nnot json\n\xff\xfe{"type":"b"}\n{"type":"c"}\n{"type":"d", "x": [1,'
    )
    read = read_jsonl(log)
    assert [e["type"] for e in read.events] == ["a", "c"]
    assert read.lines_unparsable == 4 and read.truncated_tail
    assert read.lines_total == 6  # 7 lines, the blank one is not counted
    assert read_jsonl(tmp_path / "missing.jsonl").problems == [
        f"session log missing: {tmp_path / 'missing.jsonl'}"
    ]
    for mod in (claude_code, codex):
        run = mod.collect(log, None)
        assert run.end_state == "truncated" and run.partial
        empty = mod.collect(tmp_path / "missing.jsonl", None)
        assert empty.end_state == "truncated" and all(m.status == "unavailable" for m in empty.usage.values())


def test_garbage_shapes_do_not_crash(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text(
        "\n".join(
            json.dumps(e)
            for e in [
                {"type": "system", "subtype": "init", "model": 5},
                {"type": "assistant", "message": "nope"},
                {"type": "assistant", "message": {"content": "text", "usage": {"output_tokens": "9"}}},
                {"type": "assistant", "message": {"content": [{"type": "tool_use"}, 7]}},
                {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": 3}]}},
                {"type": "result", "modelUsage": {"m": "bad"}, "usage": None, "total_cost_usd": "1"},
                {"type": "item.completed", "item": {"type": "file_change", "changes": "x"}},
                {"type": "item.completed", "item": "nope"},
                {"type": "turn.completed", "usage": {"input_tokens": True}},
            ]
        )
        + "\n"
    )
    for mod in (claude_code, codex):
        run = mod.collect(log, None)
        for m in run.usage.values():
            assert (m.status == "unavailable") == (m.value is None)


# --- reports -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "problem"),
    [
        ("valid.json", None),
        ("invalid.json", "report invalid: errors_encountered"),
        ("cut.json", "report is not JSON"),
        ("absent.json", "report missing: absent.json was not written"),
    ],
)
def test_report_validated_with_the_record_contract(filename: str, problem: str | None) -> None:
    run = claude_code.collect(CLAUDE / "normal.jsonl", REPORTS / filename)
    if problem is None:
        assert run.report is not None and run.report["test_depth"] == "tier1_real"
        assert run.report_problem is None
    else:
        assert run.report is None and run.report_problem.startswith(problem)
    if filename == "invalid.json":
        for field in ("errors_encountered", "confidence"):
            assert field in run.report_problem


# --- run record parts ----------------------------------------------------------------------------


def _full_record(parts: dict, **overrides) -> dict:
    doc = {
        "schema": SCHEMA_ID,
        "attempt_id": "2026-12.board.claude-code.wavgen.a1",
        "cycle_id": "2026-12",
        "purpose": "board",
        "agent_id": "claude-code",
        "project_id": "wavgen",
        "commit": "0123456789abcdef0123456789abcdef01234567",
        "tier": "standard",
        "attempt_no": 1,
        "methodology_version": "1.5",
        "started_at": "2026-12-01T10:00:00Z",
        "ended_at": "2026-12-01T10:02:00Z",
        "budget_seconds": 5400,
        "end_reason": "completed",
        "invalid_reason": None,
        "evidence": {"log": None, "recording": None, "report": None},
        **parts,
    }
    doc.update(overrides)
    return doc


@pytest.mark.parametrize(
    ("mod", "folder", "expected"),
    [(claude_code, CLAUDE, CLAUDE_EXPECTED), (codex, CODEX, CODEX_EXPECTED)],
)
def test_record_parts_validate_in_a_full_record(mod, folder: Path, expected: dict) -> None:
    for name in expected:
        for report in ("valid.json", "invalid.json"):
            run = mod.collect(folder / name, REPORTS / report, requested_model="some-model")
            parts = record_parts(
                run, key_kind="per_run", key_limit_usd=3.0, harness_version=mod.PINNED_VERSION
            )
            record = parse_record(_full_record(parts), source=name)
            assert record.usage.model_dump() == {
                f: {"value": v, "status": s} for f, (v, s) in expected[name][0].items()
            }
            assert record.harness.name == mod.HARNESS_NAME and record.harness.version == mod.PINNED_VERSION
            assert record.key.kind == "per_run" and record.key.limit_usd == 3.0
            assert (record.report is None) == (report == "invalid.json")
            assert record.model.requested == "some-model"


def test_record_parts_defaults_and_wall_time() -> None:
    run = codex.collect(CODEX / "normal.jsonl", REPORTS / "valid.json")
    parts = record_parts(run, key_kind="shared", key_limit_usd=9.0, wall_seconds=123.4567)
    assert parts["key"] == {"kind": "shared", "limit_usd": None}
    assert parts["harness"] == {"name": "codex", "version": "unknown"}
    # the executor's wall time fills a duration the log does not state; a stated one is kept
    assert parts["usage"]["duration_seconds"] == {"value": 123.457, "status": "measured"}
    claude = claude_code.collect(CLAUDE / "normal.jsonl", None)
    kept = record_parts(claude, key_kind="shared", wall_seconds=1.0)["usage"]["duration_seconds"]
    assert kept == {"value": 95.432, "status": "measured"}
    per_run = record_parts(claude, key_kind="per_run")  # limit from orchestrator.toml
    assert per_run["key"] == {"kind": "per_run", "limit_usd": 3.0}
    parse_record(_full_record(per_run))


def test_record_parts_never_mutate_run() -> None:
    run = claude_code.collect(CLAUDE / "normal.jsonl", REPORTS / "valid.json")
    before = copy.deepcopy(run.usage)
    record_parts(run, key_kind="shared", wall_seconds=5)
    assert run.usage == before


# --- drivers -------------------------------------------------------------------------------------


def _script_argv(command: list[str]) -> list[str]:
    assert command[:2] == ["bash", "-c"]
    return shlex.split(command[2].replace("\n", " ; "))


def test_claude_code_driver_isolation_and_key_only_in_env() -> None:
    key_env = {"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": "http://gateway.internal:4000"}
    command = claude_code.build_command(
        "/workspace/project", "/out", "/out/instructions.md", "claude-sonnet-4-5"
    )
    env = claude_code.build_env(key_env, "/tmp/argusic-agent-config")
    assert SECRET not in " ".join(command)
    words = _script_argv(command)
    for flag in (
        "-p",
        "--verbose",
        "--strict-mcp-config",
        "--dangerously-skip-permissions",
        "--no-session-persistence",
    ):
        assert flag in words
    assert words[words.index("--output-format") + 1] == "stream-json"
    assert words[words.index("--setting-sources") + 1] == ""  # no user, project or local settings
    assert words[words.index("--mcp-config") + 1] == '{"mcpServers":{}}'
    assert words[words.index("--model") + 1] == "claude-sonnet-4-5"
    assert "tee" in words and "/out/session.jsonl" in words
    assert "/out/instructions.md" in words
    assert "set -o pipefail" in command[2] and 'rm -rf -- "$HOME" "$CLAUDE_CONFIG_DIR"' in command[2]
    assert env["ANTHROPIC_API_KEY"] == SECRET and env["ANTHROPIC_BASE_URL"] == "http://gateway.internal:4000"
    assert env["CLAUDE_CONFIG_DIR"] == "/tmp/argusic-agent-config/claude"
    assert env["HOME"] == "/tmp/argusic-agent-config/home"
    assert env["IS_SANDBOX"] == "1" and env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    assert claude_code.key_kind(key_env) == "per_run"
    assert claude_code.key_kind({"ANTHROPIC_API_KEY": SECRET}) == "shared"


def test_codex_driver_isolation_and_key_only_in_env() -> None:
    routed = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://gateway.internal:4000/v1"}
    command = codex.build_command(
        "/workspace/project",
        "/out",
        "/out/instructions.md",
        "gpt-5-codex",
        gateway_url=routed["OPENAI_BASE_URL"],
    )
    assert SECRET not in " ".join(command)
    words = _script_argv(command)
    start = words.index("codex")
    assert words[start : start + 3] == ["codex", "exec", "--json"]
    for flag in (
        "--skip-git-repo-check",
        "--ephemeral",
        "--ignore-user-config",
        "--ignore-rules",
        "--dangerously-bypass-approvals-and-sandbox",
    ):
        assert flag in words
    assert words[words.index("-C") + 1] == "/workspace/project"
    assert words[words.index("-m") + 1] == "gpt-5-codex"
    assert "model_provider=argusic" in words
    provider = next(w for w in words if w.startswith("model_providers.argusic="))
    assert '"http://gateway.internal:4000/v1"' in provider and 'env_key = "OPENAI_API_KEY"' in provider
    assert words[words.index("<") - 1] == "-"  # the prompt is read from stdin
    assert words[words.index("<") + 1] == "/out/instructions.md" and "/out/session.jsonl" in words
    env = codex.build_env(routed, "/tmp/argusic-agent-config")
    assert env["OPENAI_API_KEY"] == SECRET and "CODEX_API_KEY" not in env
    assert env["CODEX_HOME"] == "/tmp/argusic-agent-config/codex"
    vendor = codex.build_env({"OPENAI_API_KEY": SECRET})
    assert vendor["CODEX_API_KEY"] == SECRET and "OPENAI_API_KEY" not in vendor
    assert codex.key_kind(routed) == "per_run" and codex.key_kind({"OPENAI_API_KEY": SECRET}) == "shared"
    plain = codex.build_command("/workspace/project", "/out", "/out/instructions.md", "gpt-5-codex")
    assert "model_provider" not in plain[2]


@pytest.mark.parametrize("mod", [claude_code, codex])
def test_driver_refuses_bad_key_env_and_config_dir(mod) -> None:
    good = {mod.KEY_ENV: SECRET}
    with pytest.raises(ValueError, match="required"):
        mod.build_env({mod.KEY_ENV: ""})
    with pytest.raises(ValueError, match="unexpected key variables"):
        mod.build_env({**good, "AWS_SECRET_ACCESS_KEY": "x"})
    for bad in ("/out", "/out/config", "relative/dir", "/"):
        with pytest.raises(ValueError, match="outside /out"):
            mod.build_env(good, bad)
    env = mod.build_env(good)
    assert not any(v == "" for v in env.values())
    assert set(env) >= {"PATH", "HOME"}


def test_instructions_rendered_for_every_harness() -> None:
    text = render_instructions("/workspace/project", "/out/report.json")
    assert "{{" not in text and "/workspace/project" in text and "/out/report.json" in text
    example = json.loads(text.split("```json\n", 1)[1].split("```", 1)[0])
    from argusic.core.record import Report

    assert set(example) == set(Report.model_fields)  # the 7 fields, exactly
    Report.model_validate(example)
    assert set(harnesses()) == {"claude-code", "codex"}


def test_categories() -> None:
    assert [
        categorize(n) for n in ("Read", "Grep", "Glob", "Edit", "Write", "Bash", "Task", "mcp__x__y")
    ] == ["read", "search", "search", "edit", "edit", "exec", "other", "other"]


def test_session_logs_are_streamed_and_over_long_lines_are_skipped(tmp_path: Path, monkeypatch) -> None:
    from argusic.external import collect

    monkeypatch.setattr(collect, "MAX_LINE_BYTES", 64)
    log = tmp_path / "s.jsonl"
    log.write_bytes(b'{"type":"a"}\n{"type":"big","x":"' + b"y" * 500 + b'"}\n{"type":"c"}\n')
    read = collect.JsonlRead()
    assert [e["type"] for e in collect.iter_jsonl(log, read)] == ["a", "c"]
    assert read.lines_total == 3 and read.lines_unparsable == 1 and not read.truncated_tail
    assert read.problems == ["line 2: 521 bytes, over 64: not parsed"]
    report = tmp_path / "report.json"
    report.write_bytes(b" " * (collect.REPORT_MAX_BYTES + 1))
    assert collect.read_report(report) == (None, f"report unreadable: report.json is over {2**20} bytes")
