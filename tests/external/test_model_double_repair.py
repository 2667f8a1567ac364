"""Repair attempts by the real Claude Code and Codex CLIs against the model double (issue #28, scenario (b)).

The demo forge's repairkit is built, its item repairkit-2 (durations with spaces or upper-case units are
refused; basic track) is built from the manifest and validated by the grader (gold resolved three
times, the empty patch unresolved), and the cycle's plan makes the attempt. The pinned CLI of the
agents image does it, its model the double answering ``model_scripts/repairkit/<harness>.repair.json``
(in the runner image on an internal network of this test's own, as in test_model_double.py): it reads
the code, reproduces the problem, edits the file (Claude Code: Edit; Codex: an apply_patch heredoc
through exec_command), writes a test, runs it, and — the scripts are never visible to the agent —
searches the container for any model script and finds none. The patch collected in the container is
graded by the validated grader in a fresh grader container; usage, cost (Claude Code's own; Codex
states none: tokens x model_prices), model, harness version and session log come from the CLI's own
output; the per-run key is minted, used, deleted, and in no stored byte.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from argusic.external import SESSION_LOG, claude_code, codex
from argusic.sandbox.model_double import load_script_file, script_file
from test_model_double import ROOT, double_service, served_requests

MANIFESTS = ROOT / "plugins" / "argusic" / "repair" / "manifests"
ITEM = "repairkit-2"
DURATIONS = "repairkit/durations.py"
NEW_TEST = "tests/test_duration_forms.py"
# USD per million tokens the pinned CLI charges for claude-sonnet-4-5 (uncached input, cache read,
# output): its result's total_cost_usd is the script's tokens times these.
PRICES = {"input_tokens": 3.0, "cache_read_input_tokens": 0.3, "output_tokens": 15.0}


@pytest.fixture
def env(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Isolated settings and an installation of this test's own (its sweeps touch only its objects)."""
    monkeypatch.setenv("ARGUSIC_INSTALLATION", f"t-{uuid.uuid4().hex[:10]}")
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(isolated / "scratch"))
    return isolated


def _script(harness: str = "claude-code") -> list[dict]:
    return load_script_file(script_file("repairkit", harness, "repair"))


def _calls(turns: list[dict]) -> list[dict]:
    return [call for turn in turns for call in turn.get("tool_calls", [])]


def _validated_item(tmp_path: Path, items_root: Path):
    """repairkit-2, built from the repairkit manifest (that item alone) on the forge's repository,
    and validated by the grader (the plan takes usable items only)."""
    from argusic.repair.grader import validate_item
    from argusic.repair.items import build_items
    from argusic.sources.forge import build_repair_forge

    build_repair_forge(tmp_path / "forge")
    forge = tmp_path / "forge" / "repos" / "repairkit.git"
    assert forge.is_dir()
    manifests = tmp_path / "manifests"
    shutil.copytree(MANIFESTS / "statements", manifests / "statements")
    text = (MANIFESTS / "repairkit.toml").read_text()
    head, _, rest = text.partition("[[items]]")
    mine = next(block for block in rest.split("[[items]]") if f'id = "{ITEM}"' in block)
    (manifests / "repairkit.toml").write_text(f"{head}[[items]]{mine}")
    (item,) = build_items(manifests / "repairkit.toml", items_root, repository=str(forge))
    assert (item.item_id, item.track) == (ITEM, "basic")
    assert item.fail_to_pass and all("test_durations" in t for t in item.fail_to_pass)
    validation = validate_item(item, out_dir=items_root)
    assert validation.usable, validation.problems
    return item


@dataclasses.dataclass
class RepairRun:
    spec: object  # the planned attempt
    item: object  # repairkit-2, validated
    record: object  # the run record
    out: Path  # the attempt's landed /out
    served: list[dict]  # the double's request log
    requests: str  # the same, as the double wrote it
    store: object  # the evidence store (patch, grade)
    key: str
    broker: object
    items_root: Path


def _repair_against_double(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str) -> RepairRun:
    """repairkit-2 validated, planned for `agent` (claude-code, codex) by the cycle's plan and run
    against the double answering model_scripts/repairkit/<agent>.repair.json (``double_service``)."""
    from argusic.attempts.run import run_attempt
    from argusic.core.evidence import EvidenceStore
    from argusic.core.record import load_record_file
    from argusic.cycle.plan import plan_repair_specs
    from argusic.repair import testrun

    try:
        testrun.image_id(testrun.grader_image())
    except testrun.StateError as err:
        pytest.skip(str(err))
    items_root = tmp_path / "items"
    monkeypatch.setenv("ARGUSIC_ITEMS_DIR", str(items_root))
    item = _validated_item(tmp_path, items_root)
    script = _script(agent)

    with double_service(tmp_path, monkeypatch, script, agent=agent) as (broker, key, network, server):
        (spec,) = plan_repair_specs(
            "double-repair", ["repairkit"], [agent], demo=True, budget_scale=0.15, attempts_per_item=1
        )
        assert (spec.purpose, spec.item.item_id, spec.commit) == ("repair", ITEM, item.base)
        store = EvidenceStore((tmp_path / "evidence").as_uri())
        path = run_attempt(spec, None, store, tmp_path / "runs", broker=broker)
        requests = served_requests(server)
    record = load_record_file(path)
    served = [json.loads(line) for line in requests.splitlines()]
    print("requests:", json.dumps(served, indent=1))
    print("record:", record.end_reason, record.invalid_reason, record.usage, record.repair)
    assert record.environment.limits.network == network
    out = path.parent / "out"
    return RepairRun(spec, item, record, out, served, requests, store, key, broker, items_root)


def _graded_resolved(run: RepairRun) -> str:
    """The landed patch (stored, graded resolved by the validated grader in its container, the agent's
    test left out): its text."""
    from argusic.attempts import repair_run as repair
    from argusic.repair import testrun

    record, item = run.record, run.item
    patch = run.store.read(record.repair.patch.uri)
    assert (run.out / repair.PATCH_FILE).read_bytes() == patch
    text = patch.decode()
    changed = [line.split(" b/", 1)[1] for line in text.splitlines() if line.startswith("diff --git ")]
    print("patch files:", changed)
    # Running Python in the working copy left bytecode caches; the collection leaves them out.
    assert changed == [DURATIONS, NEW_TEST]
    assert '+_PART = re.compile(r"\\s*(\\d+)\\s*([dhms])", re.IGNORECASE)' in text
    assert (
        "+    text = text.strip()" in text
        and "+        total += int(match.group(1)) * UNITS[match.group(2).lower()]" in text
    )
    grade = json.loads(run.store.read(record.repair.grade.uri))
    print("grade:", grade["verdict"], grade["results"])
    assert grade["verdict"] == "resolved", grade
    assert grade["source"] == {"kind": "attempt", "attempt_id": run.spec.attempt_id}
    assert grade["patch_sha256"] == hashlib.sha256(patch).hexdigest()
    # The agent's own test (and its bytecode) is not taken into account.
    assert NEW_TEST in grade["excluded_paths"]
    assert all(p.startswith("tests/") for p in grade["excluded_paths"])
    assert grade["failing_tests"] == []
    assert all(grade["results"].get(t) == "passed" for t in item.fail_to_pass + item.pass_to_pass), grade
    assert grade["grader_image"]["digest"] == testrun.image_id(testrun.grader_image())
    return text


def _key_lived_one_attempt(tmp_path: Path, run: RepairRun) -> None:
    """The key: minted once, deleted, in no stored byte and not in the double's log."""
    assert run.broker.stats.created == 1 and run.broker.stats.deleted == 1 and run.broker.keys == {}
    assert run.record.key.kind == "per_run"
    for root in (tmp_path / "runs", tmp_path / "evidence", run.items_root):
        for file in root.rglob("*"):
            if file.is_file():
                assert run.key.encode() not in file.read_bytes(), file
    assert run.key not in run.requests


@pytest.mark.slow
@pytest.mark.docker
def test_claude_code_repairs_a_repairkit_item_against_the_double(env, tmp_path, monkeypatch):
    from argusic.attempts import agents
    from argusic.core import settings

    script = _script()
    calls = _calls(script)
    run = _repair_against_double(tmp_path, monkeypatch, "claude-code")
    record, out, served = run.record, run.out, run.served

    # The CLI asked for every scripted turn, with the per-run key, streaming, its tools offered.
    assert [r.get("turn") for r in served] == list(range(len(script))), served
    assert all(r["status"] == 200 and r["path"].startswith("/v1/messages") for r in served)
    assert all(r["stream"] is True and {"Bash", "Edit", "Write", "Read"} <= set(r["tools"]) for r in served)

    assert (record.purpose, record.executor, record.image) == ("repair", "docker", settings.agents_image())
    assert record.end_reason == "completed" and record.invalid_reason is None, record.invalid_reason
    assert record.repair.item_id == ITEM and record.repair.limit_hit is None

    # What the CLI did in the container, from its own session log.
    collected = agents.DRIVERS["claude-code"].collect(out)
    assert [c.name for c in collected.tool_calls] == [c["name"] for c in calls]
    executed = [c for c in collected.tool_calls if c.category == "exec"]
    assert [c.arguments.get("command") for c in executed] == [
        c["input"]["command"] for c in calls if c["name"] == "Bash"
    ]
    # The reproduction fails (ValueError), everything after the fix succeeds.
    assert [c.ok for c in executed] == [True, False, True, True, True, True]
    assert all(c.ok for c in collected.tool_calls if c.name != "Bash"), collected.tool_calls
    assert collected.end_state == "completed"
    session = (out / SESSION_LOG).read_text()
    results = [json.loads(line) for line in session.splitlines() if '"tool_use_result"' in line]
    stdouts = [r["tool_use_result"].get("stdout") for r in results if isinstance(r["tool_use_result"], dict)]
    assert any("not a duration: '1h 30m'" in json.dumps(r) for r in results)  # the reproduction
    assert "5400 187200 5400 45" in stdouts  # the report's examples after the fix
    assert any("Ran 3 tests" in json.dumps(r) and "OK" in json.dumps(r) for r in results)
    # The agent searched the whole container for a model script, by name and by content: none.
    (search,) = [s for s in stdouts if s and "search done" in s]
    assert search.strip() == "search done", search

    # The patch: collected in the container, stored, graded by the validated grader in its container.
    _graded_resolved(run)

    # Usage, cost, model and harness from the CLI's output: the script's numbers, summed by the CLI.
    record_in = sum(t["usage"]["input_tokens"] + t["usage"].get("cache_read_input_tokens", 0) for t in script)
    assert record.usage.input_tokens.value == record_in
    assert record.usage.output_tokens.value == sum(t["usage"]["output_tokens"] for t in script)
    assert record.usage.model_calls.value == len(script)
    result = next(e for e in map(json.loads, session.splitlines()) if e.get("type") == "result")
    assert (
        record.usage.cost_usd.value == pytest.approx(result["total_cost_usd"])
        and result["total_cost_usd"] > 0
    )
    registered = agents.DRIVERS["claude-code"]
    assert record.model.requested == registered.model and record.model.responded == registered.model
    assert record.harness.name == "claude-code" and record.harness.version == claude_code.PINNED_VERSION
    # seed 002: the settings the CLI was handed, and its grade from the models that answered (the
    # auxiliary variables point its side calls at the compared model: same-model)
    settings = record.model.settings
    assert {n: s.value for n, s in settings.auxiliary_models.items()} == dict.fromkeys(
        ("ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL"), registered.model
    )
    assert (
        settings.passed["model"].value == registered.model
        and settings.passed["max_turns"].status == "measured"
    )
    assert settings.temperature.status == "unavailable" and settings.answered == [registered.model]
    assert record.harness.grade == "same-model", record.harness.grade_basis
    assert result["result"] == script[-1]["text"]  # the final message: the agent's report

    _key_lived_one_attempt(tmp_path, run)


@pytest.mark.slow
@pytest.mark.docker
def test_codex_repairs_a_repairkit_item_against_the_double(env, tmp_path, monkeypatch):
    """The same item, planned for Codex, its model the double answering codex.repair.json: every step
    an exec_command (the edits are apply_patch heredocs the CLI takes as file changes)."""
    from argusic.attempts import agents
    from argusic.core import settings
    from test_model_double_codex import RESPONSES, _prices, _unwrapped, items_output

    script = _script("codex")
    commands = [c["input"]["cmd"] for c in _calls(script)]
    patches = [c for c in commands if c.startswith("apply_patch <<")]
    run = _repair_against_double(tmp_path, monkeypatch, "codex")
    record, out, served = run.record, run.out, run.served
    registered = agents.DRIVERS["codex"]

    # The CLI asked for every scripted turn on the Responses API, streaming, each call's output back.
    assert [r.get("turn") for r in served] == list(range(len(script))), served
    assert all(r["status"] == 200 and r["path"] == RESPONSES and r["api"] == "responses" for r in served)
    assert all(r["stream"] is True and "exec_command" in r["tools"] for r in served)
    assert [r["tool_outputs"] for r in served] == list(range(len(script)))
    assert all(r["model"] == registered.model for r in served)
    assert all(f"codex_exec/{codex.PINNED_VERSION} " in r["user-agent"] for r in served)

    assert (record.purpose, record.executor, record.image) == ("repair", "docker", settings.agents_image())
    assert record.end_reason == "completed" and record.invalid_reason is None, record.invalid_reason
    assert record.repair.item_id == ITEM and record.repair.limit_hit is None

    # What the CLI did in the container, from its own session log: the commands it executed, and the
    # patches as its file changes (not commands).
    collected = registered.collect(out)
    assert collected.end_state == "completed"
    executed = [c for c in collected.tool_calls if c.category == "exec"]
    print("executed:", [_unwrapped(c) for c in executed])
    assert [_unwrapped(c) for c in executed] == [c for c in commands if c not in patches]
    # The reproduction fails (ValueError), everything after the fix succeeds.
    assert [c.ok for c in executed] == [True, True, False, True, True, True, True]
    edits = [c for c in collected.tool_calls if c.category == "edit"]
    assert [(c.target, c.ok) for c in edits] == [
        (f"/workspace/project/{DURATIONS}", True),
        (f"/workspace/project/{NEW_TEST}", True),
    ]
    assert len(collected.tool_calls) == len(commands)
    session = [json.loads(line) for line in (out / SESSION_LOG).read_text().splitlines()]
    items = [e["item"] for e in session if e.get("type") == "item.completed"]
    assert "not a duration: '1h 30m'" in items_output(items, commands[2], 0)  # the reproduction
    assert items_output(items, commands[6], 0).strip() == "5400 187200 5400 45"  # the examples after it
    ran = items_output(items, commands[5], 0)
    assert "Ran 3 tests" in ran and "OK" in ran
    # The agent searched the whole container for a model script, by name and by content: none.
    (search,) = [c for c in commands if "search done" in c]
    assert items_output(items, search, 0).strip() == "search done"

    # The patch: collected in the container, stored, graded by the validated grader in its container.
    _graded_resolved(run)

    # Usage from the CLI's output: its thread total (turn.completed) of the script's numbers. Codex
    # states no cost and no model calls; the warehouse prices the tokens (int_attempt_costs x seed
    # model_prices), as here.
    assert record.usage.input_tokens.value == sum(t["usage"]["input_tokens"] for t in script)
    assert record.usage.output_tokens.value == sum(t["usage"]["output_tokens"] for t in script)
    (completed,) = [e for e in session if e.get("type") == "turn.completed"]
    assert completed["usage"]["cached_input_tokens"] == sum(t["usage"]["cached_tokens"] for t in script)
    assert record.usage.model_calls.status == "unavailable" and record.usage.cost_usd.status == "unavailable"
    price = _prices()[registered.model]
    priced = (
        int(record.usage.input_tokens.value) * Decimal(price["usd_per_million_input_tokens"])
        + int(record.usage.output_tokens.value) * Decimal(price["usd_per_million_output_tokens"])
    ) / 10**6
    print("usage:", completed["usage"], "cost from tokens x model_prices:", priced, "USD")
    assert priced > 0
    assert record.model.requested == registered.model and record.model.responded is None
    assert record.harness.name == "codex" and record.harness.version == codex.PINNED_VERSION
    assert record.model.settings.passed["model"].value == registered.model
    assert record.harness.grade == "same-model", record.harness.grade_basis  # no reroute reported
    assert collected.final_text == script[-1]["text"]  # the final message: the agent's report
    assert (out / codex.LAST_MESSAGE_FILE).read_text().strip() == script[-1]["text"]

    _key_lived_one_attempt(tmp_path, run)


def test_the_repair_script_fixes_the_item_and_only_edits_what_it_read(tmp_path):
    """Fast: replayed on the demo project's files (repairkit-2's base has the same durations.py), the
    script's Edits apply once each to files it Read first, and give the fix the item's tests check."""
    script = _script()
    project = tmp_path / "repairkit"
    shutil.copytree(ROOT / "plugins" / "argusic" / "demo_projects" / "repairkit", project)
    read: set[str] = set()
    for call in _calls(script):
        args = call["input"]
        if call["name"] in ("Read", "Edit", "Write"):
            assert args["file_path"].startswith("/workspace/project/")
            target = project / args["file_path"].removeprefix("/workspace/project/")
        if call["name"] == "Read":
            read.add(args["file_path"])
        elif call["name"] == "Edit":
            assert args["file_path"] in read  # Claude Code refuses to edit a file it has not read
            source = target.read_text()
            assert source.count(args["old_string"]) == 1, args
            target.write_text(source.replace(args["old_string"], args["new_string"]))
        elif call["name"] == "Write":
            target.write_text(args["content"])
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-p", "test_duration_forms.py"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "Ran 3 tests" in done.stderr, done.stderr


def _apply_patch(project: Path, command: str) -> list[str]:
    """Replay one ``apply_patch <<'PATCH'`` heredoc (Codex's file-change form, as the script sends it) on
    `project`: an Update File's hunks (context, -, +) each found exactly once, an Add File written whole.
    Returns the files, in order."""
    head, *rest = command.split("\n")
    assert head == "apply_patch <<'PATCH'" and rest[-2:] == ["PATCH", ""], command
    body = rest[:-2]
    assert body[0] == "*** Begin Patch" and body[-1] == "*** End Patch", command
    files: list[tuple[str, str, list[list[str]]]] = []  # (verb, path, hunks)
    for line in body[1:-1]:
        verb, _, path = line.removeprefix("*** ").partition(" File: ")
        if line.startswith("*** ") and verb in ("Update", "Add"):
            files.append((verb, path, [[]]))
        elif line == "@@":
            files[-1][2].append([])
        else:
            assert line[:1] in (" ", "-", "+"), line
            files[-1][2][-1].append(line)
    for verb, path, hunks in files:
        target = project / path
        if verb == "Add":
            assert not target.exists() and len(hunks) == 1, path
            assert all(line.startswith("+") for line in hunks[0]), path
            target.write_text("".join(line[1:] + "\n" for line in hunks[0]))
            continue
        for hunk in (h for h in hunks if h):
            old = "".join(line[1:] + "\n" for line in hunk if line[0] in " -")
            new = "".join(line[1:] + "\n" for line in hunk if line[0] in " +")
            source = target.read_text()
            assert source.count(old) == 1, (path, old)
            target.write_text(source.replace(old, new))
    return [path for _, path, _ in files]


def test_the_codex_repair_script_fixes_the_item(tmp_path):
    """Fast: the Codex script's apply_patch heredocs, replayed on the demo project's files (repairkit-2's
    base has the same durations.py), apply (each hunk found once) after the script read the file, and
    give the fix the item's tests check; its other commands are plain shell, run in the project."""
    commands = [c["input"]["cmd"] for c in _calls(_script("codex"))]
    assert all(c.get("name") == "exec_command" for c in _calls(_script("codex")))
    project = tmp_path / "repairkit"
    shutil.copytree(ROOT / "plugins" / "argusic" / "demo_projects" / "repairkit", project)
    touched = []
    for i, command in enumerate(commands):
        if command.startswith("apply_patch"):
            files = _apply_patch(project, command)
            for name in files:  # a file updated was read first (cat), a file added is new
                assert (name == NEW_TEST) or any(f"cat {name}" in c for c in commands[:i]), name
            touched += files
    assert touched == [DURATIONS, NEW_TEST]
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-p", "test_duration_forms.py"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "Ran 3 tests" in done.stderr, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr  # the project's own tests still pass


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_the_agents_search_would_find_a_visible_script(tmp_path, harness):
    """The negative control of the search in the repair scripts: run on a folder holding a script (under
    its own name, and renamed), it names both: by name, and by content."""
    tool, key = ("exec_command", "cmd") if harness == "codex" else ("Bash", "command")
    commands = [c["input"][key] for c in _calls(_script(harness)) if c["name"] == tool]
    (command,) = [c for c in commands if "search done" in c]
    assert command.count("find / ") == 1 and command.count(" / 2>/dev/null") == 1
    root = tmp_path / "root"
    (root / "some" / "where").mkdir(parents=True)
    source = script_file("repairkit", harness, "repair")
    shutil.copy(source, root / "some" / f"{harness}.repair.json")
    shutil.copy(source, root / "some" / "where" / "turns.json")
    local = command.replace("find / ", f"find {root} ").replace(" / 2>/dev/null", f" {root} 2>/dev/null")
    done = subprocess.run(["bash", "-c", local], capture_output=True, text=True, timeout=60)
    found = done.stdout.splitlines()
    assert found[-1] == "search done"
    assert str(root / "some" / f"{harness}.repair.json") in found  # by name
    assert str(root / "some" / "where" / "turns.json") in found  # by content only
