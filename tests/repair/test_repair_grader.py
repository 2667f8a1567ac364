"""The repair grader (issue 13): JUnit XML read as hostile input, verdict logic on canned results,
quality figures, predictions files and labels; slow: every one of the seven verdicts reached by a
fixture in the grader image, validation of the grader, `argusic grade` on a predictions file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
import repair_fixture as fixture
from argusic.cli.main import app
from argusic.repair import grader, testrun
from argusic.repair.grader import VERDICTS, decide, grade_json_schema, grade_patch, quality_of, validate_item
from argusic.repair.items import build_items, load_item, make_item, store_item
from argusic.repair.predictions import PredictionsError, label_for, load_labels, read_predictions
from argusic.repair.testrun import ReportError, file_of_test, parse_junit, read_report, results_of
from test_repair_items import _fields, needs_grader
from typer.testing import CliRunner

JUNIT = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5">
<testcase classname="tests.test_a" name="test_ok" time="0.001"/>
<testcase classname="tests.test_a" name="test_bad"><failure message="assert 1 == 2">trace</failure></testcase>
<testcase classname="tests.test_a" name="test_skip"><skipped message="later"/></testcase>
<testcase classname="" name="tests.test_b"><error message="collection failure">ImportError</error></testcase>
<testcase classname="tests.test_a.TestX" name="test_param[1-2]"/>
</testsuite></testsuites>
"""


# ---------------------------------------------------------------------------------------------------
# JUnit XML


def test_junit_outcomes() -> None:
    results = results_of(parse_junit(JUNIT))
    assert results == {
        "::tests.test_b": "error",
        "tests.test_a.TestX::test_param[1-2]": "passed",
        "tests.test_a::test_bad": "failed",
        "tests.test_a::test_ok": "passed",
        "tests.test_a::test_skip": "skipped",
    }
    single = b'<testsuite name="x"><testcase classname="m" name="t"/></testsuite>'
    assert results_of(parse_junit(single)) == {"m::t": "passed"}


def test_a_test_reported_twice_keeps_its_worse_outcome() -> None:
    twice = (
        b'<testsuite><testcase classname="m" name="t"><failure/></testcase>'
        b'<testcase classname="m" name="t"/></testsuite>'
    )
    assert results_of(parse_junit(twice)) == {"m::t": "failed"}


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (
            b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite>&a;</testsuite>',
            "DTD or entity",
        ),
        (b"<testsuite><testcase", "not well-formed"),
        (b"<html><body/></html>", "not <testsuites>"),
    ],
)
def test_hostile_reports_refused(data: bytes, problem: str) -> None:
    with pytest.raises(ReportError, match=problem):
        parse_junit(data)


def test_report_files_read_carefully(tmp_path: Path) -> None:
    assert read_report(tmp_path / "absent.xml") is None
    secret = tmp_path / "secret"
    secret.write_text("host file")
    (tmp_path / "link.xml").symlink_to(secret)
    with pytest.raises(ReportError, match="symlink"):
        read_report(tmp_path / "link.xml")
    (tmp_path / "big.xml").write_bytes(b"x" * 101)
    with pytest.raises(ReportError, match="over 100 bytes"):
        read_report(tmp_path / "big.xml", cap=100)
    os.mkfifo(tmp_path / "fifo.xml")
    with pytest.raises(ReportError, match="not a regular file"):
        read_report(tmp_path / "fifo.xml")


def test_test_files_of_ids(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("")
    assert file_of_test("tests.test_a::test_ok", tmp_path) == "tests/test_a.py"
    assert file_of_test("tests.test_a.TestX::test_p[1]", tmp_path) == "tests/test_a.py"
    assert file_of_test("::tests.test_a", tmp_path) == "tests/test_a.py"  # a collection error
    assert file_of_test("x.y::z", tmp_path) is None
    assert file_of_test("m::t", tmp_path, "../../etc/passwd") is None  # no way out of the tree
    assert file_of_test("m::t", tmp_path, "tests/test_a.py") == "tests/test_a.py"


def test_rerun_argv_runs_the_file_alone(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "setup.cfg").write_text("")
    command = ["python3", "-m", "pytest", "-p", "no:cacheprovider", "-c", "setup.cfg", "-q", "tests", "/etc"]
    alone = testrun.rerun_argv(command, "tests/test_a.py", tmp_path)
    assert alone == [*command[:8], "/etc", "tests/test_a.py"]  # the folder argument gave way to the file


def test_junit_argv() -> None:
    assert testrun.junit_argv(["pytest"], "/out/r.xml") == ["pytest", "--junitxml=/out/r.xml"]
    assert testrun.junit_argv(["run", "--report={junitxml}"], "/out/r.xml") == ["run", "--report=/out/r.xml"]


# ---------------------------------------------------------------------------------------------------
# Verdict logic on canned results

F2P, P2P = "tests.test_a::test_new", "tests.test_a::test_old"


def test_decide() -> None:
    item = make_item(_fields())
    ok = {F2P: "passed", P2P: "passed"}
    assert decide(item, ok, ok) == ("resolved", [])
    assert decide(item, {F2P: "failed", P2P: "passed"}, ok) == ("resolved_after_rerun", [])
    assert decide(item, {F2P: "failed", P2P: "passed"}, {F2P: "failed", P2P: "passed"}) == (
        "unresolved",
        [F2P],
    )
    assert decide(item, {F2P: "passed"}, {F2P: "passed"}) == ("unresolved", [P2P])  # a p2p gone is broken
    assert decide(item, {F2P: "passed", P2P: "skipped"}, {F2P: "passed", P2P: "skipped"})[0] == "unresolved"
    assert decide(item, {**ok, "unrelated": "failed"}, {**ok, "unrelated": "failed"}) == ("resolved", [])


def test_junit_to_verdict_end_to_end_without_docker() -> None:
    item = make_item(
        _fields(fail_to_pass=["tests.test_a::test_ok"], pass_to_pass=["tests.test_a.TestX::test_param[1-2]"])
    )
    results = results_of(parse_junit(JUNIT))
    assert decide(item, results, results) == ("resolved", [])
    item = make_item(_fields(fail_to_pass=["tests.test_a::test_bad"], pass_to_pass=["tests.test_a::test_ok"]))
    assert decide(item, results, results) == ("unresolved", ["tests.test_a::test_bad"])


def test_lint_new_errors_counts_what_the_gold_state_lacks(tmp_path: Path) -> None:
    from argusic.repair import lint

    agent, gold = tmp_path / "agent", tmp_path / "gold"
    for tree, body in (
        (agent, "import os\nimport sys\n\n\ndef f():\n    return undefined_name\n"),
        (gold, "import os\n\n\ndef f():\n    return 1\n"),
    ):
        (tree / "pkg").mkdir(parents=True)
        (tree / "pkg" / "mod.py").write_text(body)
        (tree / "tests").mkdir()
        (tree / "tests" / "test_mod.py").write_text("import json\n")  # unused, but a test file
    not_test = lambda p: not p.startswith("tests/")  # noqa: E731
    touched = ["pkg/mod.py", "tests/test_mod.py", "README.md"]
    # `os` unused in both states: not new; `sys` unused and the undefined name: new
    assert lint.new_errors(agent, gold, touched, not_test) == 2
    assert lint.new_errors(gold, gold, touched, not_test) == 0
    (agent / "pkg" / "mod.py").write_text("def f(:\n")  # a syntax error is one error
    assert lint.messages(agent, ["pkg/mod.py"]) == {("pkg/mod.py", "syntax error: invalid syntax"): 1}
    (agent / "pkg" / "mod.py").unlink()
    (agent / "pkg" / "mod.py").symlink_to("/etc/passwd")  # never followed: nothing to check
    assert lint.messages(agent, ["pkg/mod.py"]) == {}
    (agent / "pkg" / "mod.py").unlink()
    (agent / "pkg" / "mod.py").write_text("x = (" * 200_000)  # the parser gives up: counted, no crash
    assert sum(lint.messages(agent, ["pkg/mod.py"]).values()) == 1
    with open(agent / "pkg" / "big.py", "wb") as handle:
        handle.truncate(lint.MAX_LINT_FILE_BYTES + 1)
    assert list(lint.messages(agent, ["pkg/big.py"])) == [
        ("pkg/big.py", f"not checked: over {lint.MAX_LINT_FILE_BYTES} bytes")
    ]


def test_quality_figures() -> None:
    item = make_item(_fields())
    patch = (
        b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,3 @@\n-x = 1\n+x = 2  # noqa: E501\n"
        b"+y = f()  # type: ignore\n keep\n"
        b"diff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n+++ b/tests/test_a.py\n"
        b"@@ -1 +1,2 @@\n keep\n+# noqa\n"
    )
    gold = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 3\n"
    assert quality_of(item, patch, gold) == {
        "empty_patch": False,
        "changed_lines": 3,  # the test file's line is not counted
        "gold_changed_lines": 2,
        "lint_new_errors": None,
        "suppressions_added": 2,
    }
    assert quality_of(item, b"", gold) == {
        "empty_patch": True, "changed_lines": None, "gold_changed_lines": 2,
        "lint_new_errors": None, "suppressions_added": None,
    }  # fmt: skip


def test_grade_record_matches_its_schema() -> None:
    record = grader.Grade(
        item_id="calc-1", revision="a" * 64, source={"kind": "attempt", "attempt_id": "x"},
        patch_sha256="b" * 64, patch_bytes=3, excluded_paths=["tests/test_a.py"], verdict="unresolved",
        failing_tests=[F2P], rerun_files=[{"file": "tests/test_a.py", "tries": 3, "passed": False}],
        results={F2P: "failed"}, graded_at="2026-12-01T00:00:00Z",
        grader_image={"reference": "argusic-grader:bookworm", "digest": "sha256:" + "c" * 64},
        quality={"empty_patch": False, "changed_lines": 1, "gold_changed_lines": 2, "lint_new_errors": None,
                 "suppressions_added": 0}, detail="", grade_id="x.calc-1",
    )  # fmt: skip
    jsonschema.validate(json.loads(record.to_json()), grade_json_schema())
    record.verdict = "sort_of"
    with pytest.raises(ValueError, match="verdict"):
        record.to_json()
    assert len(VERDICTS) == 7


# ---------------------------------------------------------------------------------------------------
# Predictions


def _jsonl(path: Path, *rows: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_predictions_read_with_labels(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "p.jsonl",
        {"instance_id": "calc-1", "model_name_or_path": "vendor/secret-model", "model_patch": "diff"},
        {"instance_id": "calc-1-div", "model_name_or_path": "known", "model_patch": ""},
    )
    found = read_predictions(path, {"calc-1", "calc-1-div"}, {"known": "model-a"})
    assert [(p.line, p.instance_id, p.label) for p in found] == [
        (1, "calc-1", label_for("vendor/secret-model", {})),
        (2, "calc-1-div", "model-a"),
    ]
    assert found[0].label.startswith("model-") and "secret" not in found[0].label
    assert isinstance(load_labels(), dict)  # the shipped mapping parses


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        (
            {"instance_id": "nope", "model_name_or_path": "m", "model_patch": ""},
            ":2: instance_id: unknown item 'nope'",
        ),
        ({"instance_id": "calc-1", "model_patch": ""}, ":2: model_name_or_path: missing"),
        (
            {"instance_id": "calc-1", "model_name_or_path": "m", "model_patch": 3},
            ":2: model_patch: missing or not a string",
        ),
        ("{not json", ":2: not JSON"),
        ("[1, 2]", ":2: not a JSON object"),
        (
            {"instance_id": "calc-1", "model_name_or_path": "m", "model_patch": "x"},
            ":2: instance_id: calc-1 already",
        ),
    ],
)
def test_predictions_refusals_name_the_line(tmp_path: Path, row: object, problem: str) -> None:
    first = {"instance_id": "calc-1", "model_name_or_path": "m", "model_patch": ""}
    path = _jsonl(tmp_path / "p.jsonl", first, row)
    with pytest.raises(PredictionsError) as caught:
        read_predictions(path, {"calc-1"}, {})
    assert f"{path}{problem}" in str(caught.value)


def test_predictions_size_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from argusic.repair import predictions

    monkeypatch.setattr(predictions, "MAX_LINE_BYTES", 50)
    path = _jsonl(
        tmp_path / "p.jsonl", {"instance_id": "calc-1", "model_name_or_path": "m", "model_patch": "x" * 60}
    )
    with pytest.raises(PredictionsError, match=":1: line over 50 bytes"):
        read_predictions(path, {"calc-1"}, {})


# ---------------------------------------------------------------------------------------------------
# Every verdict, reached by a fixture in the grader image


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("repair")
    shas = fixture.make_repo(root / "repo")
    manifest = fixture.write_manifest(root / "m", root / "repo", shas["merge"])
    build_items(manifest, root / "items")
    return {
        "root": root,
        "shas": shas,
        "item": load_item(root / "items" / "calc" / "calc-1.json"),
        "div": load_item(root / "items" / "calc" / "calc-1-div.json"),
    }


SOURCE = {"kind": "attempt", "attempt_id": "attempt-1"}
DIV_FIX = "def div(a, b):\n    return a / b\n"
CLAMP_FIX = fixture.FIX_FILES["calc/clamp.py"]


def _patch(built: dict, tmp_path: Path, files: dict[str, str | None]) -> bytes:
    return fixture.patch_from(built["root"] / "repo", built["shas"]["base"], files, tmp_path)


@pytest.mark.slow
@needs_grader
def test_verdict_resolved_agent_patch_with_test_edits_excluded(built: dict, tmp_path: Path) -> None:
    # the agent fixed the code and also "fixed" a test by weakening it: the test edit is dropped
    weakened = fixture.BASE_FILES["tests/test_basic.py"].replace("== 5", "!= 0")
    files = {"calc/div.py": DIV_FIX, "calc/clamp.py": CLAMP_FIX, "tests/test_basic.py": weakened}
    files["conftest.py"] = "collect_ignore = ['checks']\n"  # would hide the new tests: dropped too
    patch = _patch(built, tmp_path, files)
    grade = grade_patch(built["item"], patch, source=SOURCE)
    assert grade.verdict == "resolved", grade.detail
    assert grade.excluded_paths == ["conftest.py", "tests/test_basic.py"]
    assert grade.results["checks.test_div::test_div_half"] == "passed"
    assert grade.quality["changed_lines"] == 4 and grade.quality["gold_changed_lines"] == 4
    assert grade.quality["lint_new_errors"] == 0  # the gold fix itself: nothing new for pyflakes
    assert grade.grade_id == "attempt-1.calc-1" and grade.grader_image["digest"].startswith("sha256:")
    jsonschema.validate(json.loads(grade.to_json()), grade_json_schema())


@pytest.mark.slow
@needs_grader
def test_verdict_resolved_after_rerun_flaky_fix(built: dict, tmp_path: Path) -> None:
    # wrong on its first call in a container (a counter file in the container's /tmp), right after
    flaky = (
        "import os\n\n\ndef div(a, b):\n    if not os.path.exists('/tmp/div-called'):\n"
        "        open('/tmp/div-called', 'w').close()\n        return a // b\n    return a / b\n"
    )
    patch = _patch(built, tmp_path, {"calc/div.py": flaky, "calc/clamp.py": CLAMP_FIX})
    grade = grade_patch(built["item"], patch, source=SOURCE)
    assert grade.verdict == "resolved_after_rerun", grade.detail
    assert grade.rerun_files == [{"file": "checks/test_div.py", "tries": 1, "passed": True}]


@pytest.mark.slow
@needs_grader
def test_verdict_unresolved_lists_failing_tests(built: dict, tmp_path: Path) -> None:
    sloppy = DIV_FIX + "\n\nimport sys\n"  # an unused import the gold state does not have
    patch = _patch(built, tmp_path, {"calc/div.py": sloppy})  # clamp left broken
    grade = grade_patch(built["item"], patch, source=SOURCE)
    assert grade.verdict == "unresolved"
    assert grade.quality["lint_new_errors"] == 1
    assert grade.failing_tests == ["tests.test_clamp::test_clamp_upper"]
    assert grade.rerun_files == [{"file": "tests/test_clamp.py", "tries": 3, "passed": False}]
    # the topic's split item is resolved by the same patch
    assert grade_patch(built["div"], patch, source=SOURCE).verdict == "resolved"


@pytest.mark.slow
@needs_grader
def test_verdict_patch_apply_failed(built: dict) -> None:
    stale = (
        b"diff --git a/calc/div.py b/calc/div.py\n--- a/calc/div.py\n+++ b/calc/div.py\n@@ -1,2 +1,2 @@\n"
        b" def divide(a, b):\n-    return a // b\n+    return a / b\n"
    )  # made against a base where div was called divide
    grade = grade_patch(built["item"], stale, source=SOURCE)
    assert grade.verdict == "patch_apply_failed" and "calc/div.py" in grade.detail
    garbage = grade_patch(built["item"], b"this is not a diff\n", source=SOURCE)
    assert garbage.verdict == "patch_apply_failed"


@pytest.mark.slow
@needs_grader
def test_verdict_test_patch_conflict(built: dict, tmp_path: Path) -> None:
    # a non-test file named `checks` where the test patch needs the folder checks/ for its new test
    patch = _patch(built, tmp_path, {"calc/div.py": DIV_FIX, "checks": "notes\n"})
    grade = grade_patch(built["item"], patch, source=SOURCE)
    assert grade.verdict == "test_patch_conflict", grade.detail
    assert "checks/test_div.py" in grade.detail


@pytest.mark.slow
@needs_grader
def test_verdict_no_report_when_the_patch_breaks_the_test_configuration(built: dict, tmp_path: Path) -> None:
    # pytest.ini is not a test file; with the JUnit plugin off the run writes no report
    patch = _patch(
        built, tmp_path, {"calc/div.py": DIV_FIX, "pytest.ini": "[pytest]\naddopts = -p no:junitxml\n"}
    )
    grade = grade_patch(built["item"], patch, source=SOURCE)
    assert grade.verdict == "no_report" and "no JUnit XML" in grade.detail
    # a test command that writes no XML at all
    data = built["item"].to_dict()
    for key in ("schema", "revision"):
        data.pop(key)
    silent = make_item({**data, "test_command": ["python3", "-c", "print('no tests here')"]})
    assert grade_patch(silent, b"", source=SOURCE).verdict == "no_report"


@pytest.mark.slow
@needs_grader
def test_verdict_env_setup_failed(built: dict, tmp_path: Path) -> None:
    data = built["item"].to_dict()
    for key in ("schema", "revision"):
        data.pop(key)
    broken_setup = make_item({**data, "setup_command": ["python3", "-c", "raise SystemExit(3)"]})
    grade = grade_patch(broken_setup, built["item"].gold_patch.encode(), source=SOURCE)
    assert grade.verdict == "env_setup_failed" and "setup command exited 3" in grade.detail
    # a base that cannot be exported (the repository lost the commit): ours, not the model's
    gone = make_item({**data, "base": "0" * 40})
    assert grade_patch(gone, b"", source=SOURCE).verdict == "env_setup_failed"
    # a test patch that does not apply to base itself: ours too, not a conflict
    bad_tests = make_item({**data, "test_patch": _broken_test_patch(data["test_patch"])})
    assert grade_patch(bad_tests, b"", source=SOURCE).verdict == "env_setup_failed"
    # a missing grader image
    assert (
        grade_patch(built["item"], b"", source=SOURCE, image="argusic-no-such-image:0").verdict
        == "env_setup_failed"
    )


def _broken_test_patch(test_patch: str) -> str:
    """The test patch with one more change, to a line base does not have."""
    return test_patch + (
        "diff --git a/tests/test_basic.py b/tests/test_basic.py\n--- a/tests/test_basic.py\n"
        "+++ b/tests/test_basic.py\n@@ -1 +1 @@\n-from calc import nothing\n+from calc import add\n"
    )


@pytest.mark.slow
@needs_grader
def test_validate_items_and_grade_predictions_cli(
    built: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items_dir = built["root"] / "items"
    monkeypatch.setenv("ARGUSIC_ITEMS_DIR", str(items_dir))
    validation = validate_item(built["div"], out_dir=items_dir)
    assert validation.usable, validation.problems
    assert [(r["patch"], r["run_no"], r["verdict"]) for r in validation.runs] == [
        ("gold", 1, "resolved"), ("gold", 2, "resolved"), ("gold", 3, "resolved"),
        ("empty", 1, "unresolved"), ("partial_gold", 1, "resolved"),
    ]  # fmt: skip
    record = json.loads((items_dir / "calc" / "calc-1-div.validation.json").read_text())
    assert record["usable"] and record["revision"] == built["div"].revision
    cli = CliRunner().invoke(app, ["items", "validate", "calc-1", "--out", str(items_dir)])
    assert cli.exit_code == 0, cli.output
    assert (
        "calc-1: usable (gold#1=resolved, gold#2=resolved, gold#3=resolved, empty#1=unresolved)" in cli.output
    )
    listing = CliRunner().invoke(app, ["items", "list", "--out", str(items_dir)]).output
    assert "calc/calc-1: basic, 2 f2p, 2 p2p superseded_by_split; usable" in listing
    assert "calc/calc-1-div: basic, 1 f2p, 2 p2p split div of calc-1; usable" in listing
    # an item whose partial gold does not resolve it is not usable (the wrong topic's files)
    data = built["div"].to_dict()
    for key in ("schema", "revision"):
        data.pop(key)
    wrong = make_item({**data, "split": {**data["split"], "files": ["calc/clamp.py"]}})
    wrong_file = store_item(wrong, tmp_path / "wrong")
    cli = CliRunner().invoke(app, ["items", "validate", str(wrong_file), "--out", str(tmp_path / "wrong")])
    assert cli.exit_code == 1 and "calc-1-div: NOT usable" in cli.output
    bad = json.loads(wrong_file.with_name("calc-1-div.validation.json").read_text())
    assert not bad["usable"] and bad["problems"] == [
        "partial_gold patch run 1: unresolved, expected resolved: 1 of the item's tests fail"
    ]
    predictions = tmp_path / "preds.jsonl"
    rows = [
        {"instance_id": "calc-1", "model_name_or_path": "gold", "model_patch": built["item"].gold_patch},
        {"instance_id": "calc-1", "model_name_or_path": "empty", "model_patch": ""},
        {
            "instance_id": "calc-1-div",
            "model_name_or_path": "broken",
            "model_patch": "diff --git a/x b/x\nnonsense\n",
        },
    ]
    predictions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "grades"
    result = CliRunner().invoke(app, ["grade", "--predictions", str(predictions), "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert [line.split(": ")[1].split()[0] for line in lines] == [
        "resolved",
        "unresolved",
        "patch_apply_failed",
    ]
    assert len(list(out.glob("*.json"))) == 3
    for path in out.glob("*.json"):
        grade = json.loads(path.read_text())
        jsonschema.validate(grade, grade_json_schema())
        assert grade["source"]["kind"] == "predictions" and grade["source"]["label"].startswith("model-")
        assert "gold" not in grade["source"]["label"]  # model names never reach a grade
    row = {"instance_id": "zzz", "model_name_or_path": "m", "model_patch": ""}
    unknown = _jsonl(tmp_path / "unknown.jsonl", row)
    refused = CliRunner().invoke(app, ["grade", "--predictions", str(unknown), "--out", str(out)])
    assert refused.exit_code == 2 and "instance_id: unknown item 'zzz'" in refused.output
    assert "items are looked up in" in refused.output  # where, and how to point elsewhere
