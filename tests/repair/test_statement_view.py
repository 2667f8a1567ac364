"""The statement writer's view (seed 001, issue 31): failure messages of base + test patch.

Fast: messages read from JUnit XML, trimmed to pytest's E lines, container paths and credentials
masked. Slow (the grader image): the calc fixture's items built from its history (a merged PR), the
view run for real, and `argusic items statement-view` writing it beside the item.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import repair_fixture as fixture
from argusic.cli.main import app
from argusic.repair.items import build_items, load_item
from argusic.repair.statement_view import build_view, failure_messages, mask, trim
from test_repair_items import needs_grader
from typer.testing import CliRunner

JUNIT = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" tests="3">
<testcase classname="tests.test_a" name="test_ok"/>
<testcase classname="tests.test_a" name="test_bad"><failure message="assert 0 == 0.5">def test_bad():
&gt;       assert div(1, 2) == 0.5
E       assert 0 == 0.5
E        +  where 0 = div(1, 2)

/workspace/repo/tests/test_a.py:5: AssertionError</failure></testcase>
<testcase classname="" name="tests.test_b"><error message="collection failure">ImportError: \
cannot import name 'fmt' from 'pkg' (/workspace/repo/pkg/__init__.py)</error></testcase>
</testsuite></testsuites>
"""


def test_failure_messages_keep_the_assertion_lines() -> None:
    found = failure_messages(JUNIT)
    assert set(found) == {"tests.test_a::test_bad", "::tests.test_b"}
    outcome, body = found["tests.test_a::test_bad"]
    assert outcome == "failed"
    assert trim(body) == "E       assert 0 == 0.5\nE        +  where 0 = div(1, 2)"
    assert found["::tests.test_b"][0] == "error"
    assert trim(found["::tests.test_b"][1]).startswith(
        "ImportError: cannot import name 'fmt' from 'pkg' (pkg/__init__.py)"
    )


def test_long_messages_are_trimmed_and_credentials_masked() -> None:
    text = "\n".join(f"line {n}" for n in range(100))
    trimmed = trim(text)
    assert trimmed.splitlines()[0] == "line 76" and trimmed.endswith("… (trimmed)")
    token = "ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c"
    shown = mask(trim(f"E   AssertionError: header was Bearer {token}"))
    assert token not in shown and "AssertionError" in shown


@pytest.mark.slow
@needs_grader
def test_view_of_a_real_merge_in_the_grader_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shas = fixture.make_repo(tmp_path / "repo")
    manifest = fixture.write_manifest(tmp_path / "m", tmp_path / "repo", shas["merge"])
    items = tmp_path / "items"
    build_items(manifest, items)
    item = load_item(items / "calc" / "calc-1.json")
    view = build_view(item)
    assert view.problem is None
    shown = {t.test_id: t for t in view.tests}
    assert set(item.fail_to_pass) <= set(shown) and all(t.fail_to_pass for t in view.tests)
    half = shown["checks.test_div::test_div_half"]
    assert half.outcome == "failed" and "assert 0 == 0.5" in half.message
    assert "5 == 5" not in shown["tests.test_clamp::test_clamp_upper"].message
    assert "9 == 5" in shown["tests.test_clamp::test_clamp_upper"].message
    page = view.to_markdown()
    assert "return a / b" not in page and "min(max(" not in page  # nothing of the fix
    assert "/workspace/repo" not in page

    monkeypatch.setenv("ARGUSIC_ITEMS_DIR", str(items))
    cli = CliRunner().invoke(app, ["items", "statement-view", "calc-1-div"])
    assert cli.exit_code == 0, cli.output
    written = (items / "calc" / "calc-1-div.statement-view.md").read_text()
    assert "checks.test_div::test_div_half" in written and "fail-to-pass" in written
    assert "tests.test_clamp::test_clamp_upper` \n" not in written
