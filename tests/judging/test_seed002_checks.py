"""Seed 002 in the record and in Layer 1: conditions, tool calls and the final output carried by the
run record (read once from the session log), and the two deterministic checks -- output_exact_match
(one newline at each end ignored, nothing else) and tool_calls (a category's count, on a path) -- with
``not_applicable`` per condition. Real session logs of both CLIs (tests/fixtures/sessions)."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from argusic.attempts.common import final_output_part, tool_calls_part
from argusic.core import tasks as T
from argusic.core.record import TOOL_CALLS_MAX_BYTES, RecordError, default_condition, parse_record
from argusic.core.spec import AttemptSpec
from argusic.core.tasks import Check, TaskDefinitionError, load_task
from argusic.external import harnesses
from argusic.judging.hints import agent_steps, checks_hint, compute_hints, output_matches
from conftest import VALID_RECORD

SESSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
CLAUDE = SESSIONS / "claude_code" / "normal.jsonl"
CODEX = SESSIONS / "codex" / "normal.jsonl"


def _collected(harness: str, session: Path):
    return harnesses()[harness].collect(session, None)


def _record(harness: str, session: Path | None, condition: str | None = None, **changes):
    doc = copy.deepcopy(VALID_RECORD)
    doc.update(agent_id=harness, harness={"name": harness, "version": "1.0.0"}, **changes)
    doc["attempt_id"] = f"{doc['cycle_id']}.{doc['purpose']}.{harness}.{doc['project_id']}.a1"
    if session is not None:
        run = _collected(harness, session)
        doc |= {"tool_calls": tool_calls_part(run), "final_output": final_output_part(run)}
    if condition is not None:
        doc["condition"] = condition
    return parse_record(doc)


def _task_with(tmp_path: Path, checks_toml: str, expected: dict[str, bytes] | None = None):
    folder = tmp_path / "tasks"
    shutil.copytree(T.TASKS_DIR, folder)
    kind = folder / "install_and_run.toml"
    kind.write_text(kind.read_text() + "\n" + checks_toml)
    for name, data in (expected or {}).items():
        (folder / "expected").mkdir(exist_ok=True)
        (folder / "expected" / name).write_bytes(data)
    return folder


# -- the record ------------------------------------------------------------------------------------


def test_the_record_carries_the_sessions_tool_calls_and_final_output_once():
    record = _record("claude-code", CLAUDE)
    calls = record.tool_calls
    assert calls.source == "session_log" and calls.total == len(calls.calls) == 7
    assert [(c.order, c.category, c.name) for c in calls.calls[:3]] == [
        (1, "read", "Read"), (2, "exec", "Bash"), (3, "search", "Grep")
    ]  # fmt: skip
    assert calls.calls[1].target == "pip install ." and calls.calls[1].ok is False
    assert json.loads(calls.calls[0].arguments)["file_path"] == "/workspace/project/README.md"
    text = _collected("claude-code", CLAUDE).final_text
    assert record.final_output.text == text and record.final_output.chars == len(text)
    assert record.final_output.sha256 == hashlib.sha256(text.encode()).hexdigest()
    # The hints read the steps from the record, not from the session log (no out/ folder here).
    steps, problem, source = agent_steps(Path("/nonexistent"), record)
    assert problem is None and source == "claude-code session (run record)"
    assert steps[0] == "read" and "edit" in steps and steps[-1] == "report"


def test_tool_calls_stay_within_their_share_of_a_record():
    """A session of thousands of long calls: the record keeps the first that fit, counts them all,
    and the record stays readable (under MAX_RECORD_BYTES)."""
    from argusic.external.collect import ToolCall

    run = _collected("claude-code", CLAUDE)
    many = [ToolCall("Bash", "exec", "x" * 5000, {"command": "\x01" * 5000}, True)] * 5000
    part = tool_calls_part(type(run)(**{**run.__dict__, "tool_calls": many}))
    assert part["total"] == 5000 and 0 < len(part["calls"]) < 5000
    assert len(json.dumps(part["calls"])) <= TOOL_CALLS_MAX_BYTES
    doc = copy.deepcopy(VALID_RECORD) | {"tool_calls": part}
    assert parse_record(doc).tool_calls.total == 5000
    # ... and the hints do not take a partial list for the whole one
    aid = f"{doc['cycle_id']}.{doc['purpose']}.claude-code.{doc['project_id']}.a1"
    record = parse_record(doc | {"agent_id": "claude-code", "attempt_id": aid,
                                 "harness": {"name": "claude-code", "version": "1"}})  # fmt: skip

    assert agent_steps(Path("/nonexistent"), record)[1] == "session.jsonl is missing"


def test_conditions_default_by_harness_and_are_checked():
    assert default_condition("claude-code", external=True) == "external-claude-code"
    assert default_condition("readme-runner", external=False) == "baseline"
    assert _record("codex", None, "variant").condition == "variant"
    with pytest.raises(RecordError, match="condition"):
        _record("codex", None, "external-")
    with pytest.raises(RecordError, match="condition"):
        _record("codex", None, "treatment")


def test_a_spec_without_a_condition_is_written_as_before():
    """Write-once plan packs compare bytes: a spec that names no condition serialises as it did."""
    spec = AttemptSpec(cycle_id="c1", agent_id="codex", project_id="p1", repo_url="r", commit="a" * 40,
                       tier="standard", attempt_no=1)  # fmt: skip
    assert "condition" not in spec.model_dump_json() and "condition" not in spec.model_dump()
    named = spec.model_copy(update={"condition": "variant"})
    assert json.loads(named.model_dump_json())["condition"] == "variant"
    assert AttemptSpec.model_validate_json(named.model_dump_json()).condition == "variant"


# -- output_exact_match ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "expected", "same"),
    [
        ("hello\n", b"hello\n", True),
        ("hello", b"hello\n", True),  # one newline at each end ignored
        ("\nhello\n", b"hello", True),
        ("hello\n\n", b"hello", False),  # two are not one
        ("\n\nhello", b"\nhello", False),  # one newline off each side of both: "\nhello" is not "hello"
        ("\n\nhello", b"\n\nhello", True),
        ("\nhello", b"\n\nhello", False),
        ("hello ", b"hello", False),  # no whitespace trimming
        ("```\nhello\n```", b"hello", False),  # no fence removal
        ("héllo", "héllo\n".encode(), True),
    ],
)
def test_output_exact_match_ignores_one_newline_at_each_end_and_nothing_else(output, expected, same):
    digest = hashlib.sha256(output.encode()).hexdigest()
    assert output_matches(expected, len(output), digest) is same


def test_output_exact_match_compares_a_long_output_exactly_by_its_fingerprint(tmp_path):
    """The record keeps the first 8,000 characters, but the whole text's sha256: a 20,000-character
    output that differs only at its end is still told apart."""
    body = ("line of output\n" * 1400).rstrip("\n")
    exact = '[[checks]]\nid = "exact"\ntype = "output_exact_match"\nexpected_file = "long.txt"\n'
    folder = _task_with(tmp_path, exact, {"long.txt": body.encode() + b"\n"})
    task = load_task("install_and_run", tasks_dir=folder)
    for text, status in ((body, "pass"), (body[:-1] + "X", "fail")):
        final = {"text": text[:7960], "chars": len(text), "sha256": hashlib.sha256(text.encode()).hexdigest()}
        record = _record("codex", None, final_output=final)
        monkey = T.TASKS_DIR
        try:
            T.TASKS_DIR = folder  # expected files are read from the package's tasks/expected/
            (result,) = checks_hint(record, task)
        finally:
            T.TASKS_DIR = monkey
        assert result["status"] == status, result


# -- tool_calls and conditions ---------------------------------------------------------------------

CHECKS = """
[[checks]]
id = "single-read"
type = "tool_calls"
category = "read"
count = 1
path = "/workspace/project/README.md"
not_applicable = ["baseline"]

[[checks]]
id = "two-edits"
type = "tool_calls"
category = "edit"
count = 2
"""


def test_tool_calls_checks_count_a_category_on_a_path_per_condition(tmp_path):
    task = load_task("install_and_run", tasks_dir=_task_with(tmp_path, CHECKS))
    assert [c.id for c in task.checks] == ["single-read", "two-edits"]
    claude = {r["id"]: r for r in checks_hint(_record("claude-code", CLAUDE, "external-claude-code"), task)}
    assert claude["single-read"] | {"detail": None} == {
        "id": "single-read", "type": "tool_calls", "condition": "external-claude-code", "status": "pass",
        "detail": None, "observed": 1,
    }  # fmt: skip
    assert claude["two-edits"]["status"] == "pass"  # Edit setup.cfg, Write the report
    # Codex reads with cat through exec_command: no read call at all -- a fail, said with the count.
    codex = {r["id"]: r for r in checks_hint(_record("codex", CODEX, "external-codex"), task)}
    assert codex["single-read"]["status"] == "fail"
    assert codex["single-read"]["detail"] == "0 read call(s), 1 expected"
    # The baseline (no tools) is not judged by a check that names it.
    base = {r["id"]: r for r in checks_hint(_record("codex", CODEX, "baseline"), task)}
    assert base["single-read"]["status"] == "not_applicable" and base["two-edits"]["status"] == "pass"
    # A record that carries no tool calls (older records, the reference harness): unavailable, not 0.
    old = {r["id"]: r for r in checks_hint(_record("codex", None, "variant"), task)}
    assert old["two-edits"]["status"] == "unavailable"


def test_a_path_that_differs_fails_and_is_named(tmp_path):
    checks = (
        '[[checks]]\nid = "one-read"\ntype = "tool_calls"\ncategory = "read"\ncount = 1\npath = "hello.txt"\n'
    )
    task = load_task("install_and_run", tasks_dir=_task_with(tmp_path, checks))
    (result,) = checks_hint(_record("claude-code", CLAUDE), task)
    assert (
        result["status"] == "fail"
        and "on /workspace/project/README.md instead of hello.txt" in result["detail"]
    )


def test_checks_appear_in_the_hints_document_and_pass_its_schema(tmp_path):
    task = load_task("install_and_run", tasks_dir=_task_with(tmp_path, CHECKS))
    attempt = tmp_path / "attempt"
    (attempt / "out").mkdir(parents=True)
    shutil.copy(CLAUDE, attempt / "out" / "session.jsonl")
    hints = compute_hints(attempt, _record("claude-code", CLAUDE), task, renderer=lambda pages: [])
    assert [c["status"] for c in hints["checks"]] == ["pass", "pass"]
    # A task without checks writes none (documents and revisions as before).
    plain = load_task("install_and_run")
    assert "checks" not in compute_hints(
        attempt, _record("claude-code", CLAUDE), plain, renderer=lambda p: []
    )


@pytest.mark.parametrize(
    ("toml", "refusal"),
    [
        ('[[checks]]\nid = "x"\ntype = "tool_calls"\ncategory = "read"\n', "a tool_calls check needs count"),
        ('[[checks]]\nid = "x"\ntype = "output_exact_match"\n', "needs expected_file"),
        ('[[checks]]\nid = "x"\ntype = "output_exact_match"\nexpected_file = "a"\ncount = 1\n', "no count"),
        ('[[checks]]\nid = "x"\ntype = "output_exact_match"\nexpected_file = "../etc/passwd"\n', "'..'"),
        ('[[checks]]\nid = "x"\ntype = "tool_calls"\ncategory = "read"\ncount = 1\nnot_applicable = ["a"]\n',
         "not_applicable"),
        ('[[checks]]\nid = "x"\ntype = "regex"\n', "checks.0.type"),
        ('[[checks]]\nid = "x"\ntype = "tool_calls"\ncategory = "read"\ncount = 1\n' * 2, "ids repeated: x"),
    ],
)  # fmt: skip
def test_a_broken_check_is_refused_naming_the_field(tmp_path, toml, refusal):
    with pytest.raises(TaskDefinitionError, match=refusal.replace(".", r"\.").replace("(", r"\(")):
        load_task("install_and_run", tasks_dir=_task_with(tmp_path, toml))


def test_an_expected_file_is_read_without_links_and_capped(tmp_path):
    folder = _task_with(tmp_path, "", {"real.txt": b"x" * 10})
    (folder / "expected" / "link.txt").symlink_to(folder / "expected" / "real.txt")
    check = Check("c", "output_exact_match", expected_file="link.txt")
    with pytest.raises(TaskDefinitionError, match="link.txt"):
        T.expected_output(check, tasks_dir=folder)
    assert (
        T.expected_output(Check("c", "output_exact_match", expected_file="real.txt"), tasks_dir=folder)
        == b"x" * 10
    )
    with pytest.raises(TaskDefinitionError, match="over 5 bytes"):
        T.expected_output(
            Check("c", "output_exact_match", expected_file="real.txt"), tasks_dir=folder, limit=5
        )


def test_a_task_without_checks_keeps_its_revision(tmp_path):
    """Checks join the hashed definition only when a task has some."""
    plain = load_task("install_and_run")
    assert plain.checks == () and "checks" not in plain.definition()
    with_checks = load_task("install_and_run", tasks_dir=_task_with(tmp_path, CHECKS))
    assert with_checks.revision != plain.revision
