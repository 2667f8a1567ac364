"""A repair attempt by the real Claude Code CLI against the model double (issue #28, scenario (b)).

The demo forge's repairkit is built, its item repairkit-2 (durations with spaces or upper-case units are
refused; basic track) is built from the manifest and validated by the grader (gold resolved three
times, the empty patch unresolved), and the cycle's plan makes the attempt. The pinned Claude Code CLI
of the agents image does it, its model the double answering ``model_scripts/repairkit/
claude-code.repair.json`` (in the runner image on an internal network of this test's own, as in
test_model_double.py): it reads the code, reproduces the problem, edits the file (Edit), writes a test
(Write), runs it, and — the scripts are never visible to the agent — searches the container for any
model script and finds none. The patch collected in the container is graded by the validated grader in
a fresh grader container; usage, cost, model, harness version and session log come from the CLI's own
output; the per-run key is minted, used, deleted, and in no stored byte.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from argusic.external import SESSION_LOG, claude_code
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


def _script() -> list[dict]:
    return load_script_file(script_file("repairkit", "claude-code", "repair"))


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


@pytest.mark.slow
@pytest.mark.docker
def test_claude_code_repairs_a_repairkit_item_against_the_double(env, tmp_path, monkeypatch):
    from argusic.attempts import agents
    from argusic.attempts import repair_run as repair
    from argusic.attempts.run import run_attempt
    from argusic.core import settings
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
    script = _script()
    calls = _calls(script)

    with double_service(tmp_path, monkeypatch, script) as (broker, key, network, server):
        (spec,) = plan_repair_specs(
            "double-repair", ["repairkit"], ["claude-code"], demo=True, budget_scale=0.15
        )
        assert (spec.purpose, spec.item.item_id, spec.commit) == ("repair", ITEM, item.base)
        store = EvidenceStore((tmp_path / "evidence").as_uri())
        path = run_attempt(spec, None, store, tmp_path / "runs", broker=broker)
        requests = served_requests(server)
    record = load_record_file(path)
    out = path.parent / "out"
    served = [json.loads(line) for line in requests.splitlines()]
    print("requests:", json.dumps(served, indent=1))
    print("record:", record.end_reason, record.invalid_reason, record.usage, record.repair)

    # The CLI asked for every scripted turn, with the per-run key, streaming, its tools offered.
    assert [r.get("turn") for r in served] == list(range(len(script))), served
    assert all(r["status"] == 200 and r["path"].startswith("/v1/messages") for r in served)
    assert all(r["stream"] is True and {"Bash", "Edit", "Write", "Read"} <= set(r["tools"]) for r in served)

    assert (record.purpose, record.executor, record.image) == ("repair", "docker", settings.agents_image())
    assert record.environment.limits.network == network
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
    patch = store.read(record.repair.patch.uri)
    assert (out / repair.PATCH_FILE).read_bytes() == patch
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
    grade = json.loads(store.read(record.repair.grade.uri))
    assert grade["verdict"] == "resolved", grade
    assert grade["source"] == {"kind": "attempt", "attempt_id": spec.attempt_id}
    assert grade["patch_sha256"] == hashlib.sha256(patch).hexdigest()
    # The agent's own test (and its bytecode) is not taken into account.
    assert NEW_TEST in grade["excluded_paths"]
    assert all(p.startswith("tests/") for p in grade["excluded_paths"])
    assert grade["failing_tests"] == []
    assert all(grade["results"].get(t) == "passed" for t in item.fail_to_pass + item.pass_to_pass), grade
    assert grade["grader_image"]["digest"] == testrun.image_id(testrun.grader_image())

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
    assert result["result"] == script[-1]["text"]  # the final message: the agent's report

    # The key: minted once, deleted, in no stored byte and not in the double's log.
    assert broker.stats.created == 1 and broker.stats.deleted == 1 and broker.keys == {}
    assert record.key.kind == "per_run"
    for root in (tmp_path / "runs", tmp_path / "evidence", items_root):
        for file in root.rglob("*"):
            if file.is_file():
                assert key.encode() not in file.read_bytes(), file
    assert key not in requests


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


def test_the_agents_search_would_find_a_visible_script(tmp_path):
    """The negative control of the search in the repair script: run on a folder holding a script (under
    its own name, and renamed), it names both: by name, and by content."""
    commands = [c["input"]["command"] for c in _calls(_script()) if c["name"] == "Bash"]
    (command,) = [c for c in commands if "search done" in c]
    assert command.count("find / ") == 1 and command.count(" / 2>/dev/null") == 1
    root = tmp_path / "root"
    (root / "some" / "where").mkdir(parents=True)
    source = script_file("repairkit", "claude-code", "repair")
    shutil.copy(source, root / "some" / "claude-code.repair.json")
    shutil.copy(source, root / "some" / "where" / "turns.json")
    local = command.replace("find / ", f"find {root} ").replace(" / 2>/dev/null", f" {root} 2>/dev/null")
    done = subprocess.run(["bash", "-c", local], capture_output=True, text=True, timeout=60)
    found = done.stdout.splitlines()
    assert found[-1] == "search done"
    assert str(root / "some" / "claude-code.repair.json") in found  # by name
    assert str(root / "some" / "where" / "turns.json") in found  # by content only
