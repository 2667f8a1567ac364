"""Repair items (issue 13): test-file classification, manifests, statements, the item record and its
schema, topic splitting checks, storage per revision; slow: items built from a real git repository in
the grader image."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import repair_fixture as fixture
from argusic.cli.main import app
from argusic.core.settings import PACKAGE_DIR
from argusic.repair import items as items_mod
from argusic.repair.grader import grade_json_schema
from argusic.repair.items import (
    Item,
    ItemError,
    TopicEntry,
    build_items,
    check_statement,
    f2p_p2p,
    item_json_schema,
    list_items,
    load_item,
    load_manifest,
    make_item,
    split_topics,
    store_item,
)
from argusic.repair.paths import is_test_path, split_paths
from typer.testing import CliRunner

# ---------------------------------------------------------------------------------------------------
# Classification


@pytest.mark.parametrize(
    "path",
    [
        "src/__tests__/socket.ts",
        "src/socket.test.ts",
        "src/socket.spec.js",
        "pkg/test_parse.py",
        "pkg/parse_test.py",
        "conftest.py",
        "pkg/conftest.py",
        "tests/helpers.py",
        "tests/data/input.json",
        "lib/test/support.py",
        "src/__snapshots__/view.ts.snap",
        "src/view.snap",
        "pkg/fixtures/sample.txt",
        "pkg/__fixtures__/a.json",
        "snapshots/x.txt",
    ],
)
def test_test_files_by_the_seed_and_issue_rules(path: str) -> None:
    assert is_test_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "src/socket.ts",
        "pkg/parse.py",
        "pkg/testing.py",  # "test" in a name is not enough
        "pkg/latest_tests.md",
        "contest.py",
        "pkg/tests",  # a file named tests, not a folder
        "docs/testing/guide.md",
        "pytest.ini",
        "Tests/Readme.md",  # case-sensitive, as git paths
        "src/specs.ts",
    ],
)
def test_other_files_are_not_test_files(path: str) -> None:
    assert not is_test_path(path)


def test_manifest_globs_add_test_files() -> None:
    tests, others = split_paths(["e2e/run.py", "e2e/cases/a.yaml", "src/a.py"], ["e2e/**", "e2e/*"])
    assert tests == ["e2e/cases/a.yaml", "e2e/run.py"] and others == ["src/a.py"]


# ---------------------------------------------------------------------------------------------------
# Manifests


def _manifest(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "items.toml"
    path.write_text(text)
    return path


GOOD_HEAD = 'project_id = "calc"\nrepository = "/r"\ntest_command = ["python3", "-m", "pytest"]\n'


def test_manifest_parses(tmp_path: Path) -> None:
    fixture.write_manifest(tmp_path, Path("/r"), "a" * 40, extra='test_paths = ["e2e/**"]')
    manifest = load_manifest(tmp_path / "items.toml")
    assert manifest.project_id == "calc" and manifest.test_paths == ["e2e/**"]
    assert [t.name for t in manifest.items[0].topics] == ["div", "clamp"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('[[items]]\nid = "x"\nstatement = "s.md"\n', "items.0"),  # neither merge nor range
        ('[[items]]\nid = "x"\nmerge = "abcd"\nrange = "a1b2..c3d4"\nstatement = "s.md"\n', "items.0"),
        ('[[items]]\nid = "x y"\nmerge = "abcd"\nstatement = "s.md"\n', "items.0.id"),
        ('[[items]]\nid = "x"\nmerge = "abcd"\nstatement = "s.md"\ncolour = "red"\n', "items.0.colour"),
        (
            '[[items]]\nid = "x"\nmerge = "abcd"\nstatement = "s.md"\n[[items.topics]]\nname = "a"\n'
            'match = "t"\nstatement = "a.md"\nfiles = ["a.py"]\n',
            "items.0",
        ),  # one topic is no split
        (
            '[[items]]\nid = "x"\nmerge = "abcd"\nstatement = "s.md"\n[[items.topics]]\nname = "a"\n'
            'match = "t"\nstatement = "a.md"\nfiles = []\n',
            "items.0.topics.0.files",
        ),
    ],
)
def test_manifest_refusals_name_file_and_field(tmp_path: Path, body: str, field: str) -> None:
    path = _manifest(tmp_path, GOOD_HEAD + body)
    with pytest.raises(ItemError) as caught:
        load_manifest(path)
    assert str(path) in str(caught.value) and field in str(caught.value)


def test_manifest_without_items_or_not_toml(tmp_path: Path) -> None:
    with pytest.raises(ItemError, match="items"):
        load_manifest(_manifest(tmp_path, GOOD_HEAD))
    with pytest.raises(ItemError, match="not TOML"):
        load_manifest(_manifest(tmp_path, "project_id = \n"))


def test_repeated_ids_refused(tmp_path: Path) -> None:
    body = '[[items]]\nid = "x"\nmerge = "abcd"\nstatement = "s.md"\n' * 2
    with pytest.raises(ItemError, match="repeat"):
        load_manifest(_manifest(tmp_path, GOOD_HEAD + body))


# ---------------------------------------------------------------------------------------------------
# Statements


def test_statement_checks() -> None:
    assert check_statement(fixture.STATEMENT, "s.md", {"7"}) == fixture.STATEMENT
    with pytest.raises(ItemError, match="s.md: statement looks empty"):
        check_statement("# Title\n\n## Symptom\n\nTBD\n", "s.md", set())
    with pytest.raises(ItemError, match="URL"):
        check_statement(fixture.STATEMENT + "\nSee https://example.org/issues/3\n", "s.md", set())
    with pytest.raises(ItemError, match="URL"):
        check_statement(fixture.STATEMENT + "\nSee github.com/acme/calc\n", "s.md", set())
    with pytest.raises(ItemError, match="PR number 7"):
        check_statement(fixture.STATEMENT + "\nFixed in #7.\n", "s.md", {"7"})
    with pytest.raises(ItemError, match="pull request"):
        check_statement(fixture.STATEMENT + "\nLike pull request 12 did.\n", "s.md", set())
    # a number that is not the PR's is fine
    check_statement(fixture.STATEMENT + "\nStep #2 of the guide.\n", "s.md", {"7"})


# ---------------------------------------------------------------------------------------------------
# The record


def _fields(**changes: object) -> dict:
    data = {
        "item_id": "calc-1",
        "project_id": "calc",
        "repository": "/r",
        "base": "a" * 40,
        "source": {"kind": "merge", "ref": "b" * 40},
        "track": "basic",
        "problem_statement": fixture.STATEMENT,
        "interface_spec": None,
        "test_patch": "diff --git a/tests/test_a.py b/tests/test_a.py\n",
        "gold_patch": "diff --git a/a.py b/a.py\n",
        "test_files": ["tests/test_a.py"],
        "test_command": ["python3", "-m", "pytest"],
        "setup_command": None,
        "fail_to_pass": ["tests.test_a::test_new"],
        "pass_to_pass": ["tests.test_a::test_old"],
        "split": None,
        "superseded_by_split": False,
        "states": {
            "base": {"tests.test_a::test_old": "passed"},
            "with_tests": {"tests.test_a::test_old": "passed", "tests.test_a::test_new": "failed"},
            "with_gold": {"tests.test_a::test_old": "passed", "tests.test_a::test_new": "passed"},
        },
        "built_at": "2026-12-01T00:00:00Z",
        "grader_image": {"reference": "argusic-grader:bookworm", "digest": "sha256:" + "c" * 64},
    }
    data.update(changes)
    return data


def test_schema_files_are_generated_from_the_models() -> None:
    schemas = PACKAGE_DIR / "schemas"
    assert json.loads((schemas / "repair-item-1.schema.json").read_text()) == item_json_schema()
    assert json.loads((schemas / "repair-grade-1.schema.json").read_text()) == grade_json_schema()


def test_item_round_trip_and_schema(tmp_path: Path) -> None:
    import jsonschema

    item = make_item(_fields())
    path = store_item(item, tmp_path)
    assert path == tmp_path / "calc" / "calc-1.json"
    assert path.stat().st_mode & 0o777 == 0o644  # readable by the warehouse's ingest
    loaded = load_item(path)
    assert loaded == item and loaded.revision == item.revision
    jsonschema.validate(json.loads(path.read_text()), item_json_schema())
    assert list_items(tmp_path) == [path]


def test_revision_ignores_built_at_only() -> None:
    one = make_item(_fields())
    assert make_item(_fields(built_at="2027-01-01T00:00:00Z")).revision == one.revision
    assert make_item(_fields(problem_statement=fixture.STATEMENT + "\nMore.\n")).revision != one.revision


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"fail_to_pass": ["tests.test_a::test_new", "hacked"]}, "revision"),
        ({"item_id": "../../etc"}, "item_id"),
        ({"base": "HEAD"}, "base"),
        ({"colour": "red"}, "colour"),
        ({"track": "spec"}, "spec"),
        ({"states": {"base": {"t": "maybe"}, "with_tests": {}, "with_gold": {}}}, "states.base.t"),
    ],
)
def test_load_item_refuses_naming_file_and_field(tmp_path: Path, change: dict, field: str) -> None:
    data = make_item(_fields()).to_dict()
    data.update(change)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ItemError) as caught:
        load_item(path)
    assert str(path) in str(caught.value) and field in str(caught.value)


def test_load_item_refuses_symlinks_and_oversize(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = store_item(make_item(_fields()), tmp_path)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(ItemError, match="symlink"):
        load_item(link)
    monkeypatch.setattr(items_mod, "MAX_ITEM_BYTES", 100)
    with pytest.raises(ItemError, match="cap"):
        load_item(real)


def test_store_is_write_once_per_revision(tmp_path: Path) -> None:
    first = make_item(_fields())
    path = store_item(first, tmp_path)
    stamp = path.stat().st_mtime_ns
    history = tmp_path / "calc" / "revisions" / "calc-1"
    store_item(make_item(_fields(built_at="2026-12-02T00:00:00Z")), tmp_path)  # same revision: no-op
    assert path.stat().st_mtime_ns == stamp and load_item(path).built_at == first.built_at
    assert [p.name for p in history.iterdir()] == [f"{first.revision}.json"]
    second = make_item(_fields(problem_statement=fixture.STATEMENT + "\nAlso on Tuesdays.\n"))
    store_item(second, tmp_path)
    assert load_item(path).revision == second.revision
    assert sorted(p.name for p in history.iterdir()) == sorted(f"{i.revision}.json" for i in (first, second))
    assert load_item(history / f"{first.revision}.json") == first  # the old revision kept as it was


# ---------------------------------------------------------------------------------------------------
# f2p / p2p and topic splitting


def test_f2p_and_p2p_from_three_states() -> None:
    states = {
        "base": {"old": "passed", "gone_flaky": "passed", "broken_by_tests": "passed"},
        "with_tests": {"old": "passed", "new": "failed", "gone_flaky": "failed", "broken_by_tests": "failed",
                       "new_ok": "passed"},
        "with_gold": {"old": "passed", "new": "passed", "gone_flaky": "passed", "broken_by_tests": "failed",
                      "new_ok": "passed", "collected_late": "passed"},
    }  # fmt: skip
    f2p, p2p = f2p_p2p(states)
    assert f2p == ["collected_late", "gone_flaky", "new"]  # absent with the tests alone counts as failing
    assert p2p == ["old"]  # new_ok was not there at base


def _topic(name: str, match: str, files: list[str]) -> TopicEntry:
    return TopicEntry(name=name, match=match, statement=f"{name}.md", files=files)


def test_split_topics_every_f2p_in_exactly_one_topic() -> None:
    f2p = ["t.test_div::test_div_half", "t.test_clamp::test_clamp_upper"]
    topics = [_topic("div", "test_div", ["calc/div.py"]), _topic("clamp", "test_clamp", ["calc/clamp.py"])]
    assert split_topics("calc-1", f2p, topics, ["calc/div.py", "calc/clamp.py"], "m") == {
        "div": ["t.test_div::test_div_half"],
        "clamp": ["t.test_clamp::test_clamp_upper"],
    }
    with pytest.raises(ItemError, match=r"t.test_clamp::test_clamp_upper is in 0 topics \(none\)"):
        split_topics("calc-1", f2p, topics[:1] + [_topic("x", "zzz", ["calc/clamp.py"])], ["calc/div.py",
                     "calc/clamp.py"], "m")  # fmt: skip
    overlapping = [_topic("div", "test_div", ["calc/div.py"]), _topic("all", "::test_", ["calc/clamp.py"])]
    with pytest.raises(ItemError, match=r"test_div_half is in 2 topics \(div, all\)"):
        split_topics("calc-1", f2p, overlapping, ["calc/div.py", "calc/clamp.py"], "m")
    with pytest.raises(ItemError, match="files not in the gold patch: calc/other.py"):
        split_topics("calc-1", f2p, [topics[0], _topic("clamp", "test_clamp", ["calc/other.py"])],
                     ["calc/div.py", "calc/clamp.py"], "m")  # fmt: skip


def test_excluded_tests_are_in_no_list_and_an_item_without_them_keeps_its_revision() -> None:
    """Seed 001's exclusion list: a test set aside is neither fail-to-pass nor pass-to-pass (the grader
    never reads it), with its reason; an item that sets none aside is written as before (same revision,
    no key), so items built before the list existed stay valid."""
    from argusic.repair.grader import Validation, failing_of

    plain = make_item(_fields())
    assert "excluded_tests" not in plain.to_dict() and plain.excluded_tests == []
    assert Item.model_validate(json.loads(plain.to_json())).revision == plain.revision  # as stored
    why = "checks the exact arguments of the serializer call"
    item = make_item(_fields(
        pass_to_pass=[], excluded_tests=[{"test": "tests.test_a::test_old", "reason": why}],
    ))  # fmt: skip
    assert item.to_dict()["excluded_tests"] == [{"test": "tests.test_a::test_old", "reason": why}]
    assert item.revision != plain.revision
    # whatever the set-aside test does, it is never read
    assert failing_of(item, {"tests.test_a::test_new": "passed", "tests.test_a::test_old": "failed"}) == []
    with pytest.raises(ItemError, match="excluded test is still in fail_to_pass or pass_to_pass"):
        make_item(_fields(excluded_tests=[{"test": "tests.test_a::test_old", "reason": why}]))
    with pytest.raises(ItemError, match="reason"):
        make_item(_fields(pass_to_pass=[], excluded_tests=[{"test": "tests.test_a::test_old", "reason": ""}]))
    shown = Validation(
        "calc-1", item.revision, "2026-12-01T00:00:00Z", {}, excluded_tests=item.to_dict()["excluded_tests"]
    )
    assert shown.to_dict()["excluded_tests"][0]["reason"] == why
    assert "excluded_tests" not in Validation("calc-1", plain.revision, "t", {}).to_dict()


def test_partial_gold_patch_keeps_the_topics_files() -> None:
    gold = (
        "diff --git a/calc/div.py b/calc/div.py\n--- a/calc/div.py\n+++ b/calc/div.py\n@@ -1 +1 @@\n-a\n+b\n"
        "diff --git a/calc/clamp.py b/calc/clamp.py\n--- a/calc/clamp.py\n+++ b/calc/clamp.py\n"
        "@@ -1 +1 @@\n-c\n+d\n"
    )
    split = {"original": "calc-1", "topic": "div", "match": "test_div", "files": ["calc/div.py"]}
    item = make_item(_fields(item_id="calc-1-div", gold_patch=gold, split=split))
    assert item.partial_gold_patch == gold.split("diff --git a/calc/clamp.py")[0]
    with pytest.raises(ItemError, match="split item's id"):
        make_item(_fields(item_id="other-div", gold_patch=gold, split=split))


# ---------------------------------------------------------------------------------------------------
# Built from a real repository (Docker, the grader image)


def _grader_image_present() -> bool:
    try:
        from argusic.repair.testrun import grader_image, image_id

        image_id(grader_image())
        return True
    except Exception:
        return False


needs_grader = pytest.mark.skipif(not _grader_image_present(), reason="no grader image (make grader-image)")


@pytest.mark.slow
@needs_grader
def test_items_build_from_merged_pr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUSIC_ITEMS_DIR", str(tmp_path / "items"))
    shas = fixture.make_repo(tmp_path / "repo")
    manifest = fixture.write_manifest(tmp_path / "m", tmp_path / "repo", shas["merge"][:12])
    result = CliRunner().invoke(app, ["items", "build", "--manifest", str(manifest)])
    assert result.exit_code == 0, result.output
    assert "calc/calc-1: basic, 2 f2p, 2 p2p" in result.output and "superseded by split" in result.output
    paths = list_items(tmp_path / "items")
    assert [p.name for p in paths] == ["calc-1-clamp.json", "calc-1-div.json", "calc-1.json"]
    original = load_item(tmp_path / "items" / "calc" / "calc-1.json")
    assert original.base == shas["base"]  # the merge commit's first parent
    assert original.source.kind == "merge" and original.source.ref == shas["merge"]
    assert original.superseded_by_split and original.split is None
    assert original.test_files == ["checks/test_div.py", "tests/test_clamp.py"]
    assert "calc/div.py" in original.gold_patch and "checks/test_div.py" not in original.gold_patch
    assert original.fail_to_pass == ["checks.test_div::test_div_half", "tests.test_clamp::test_clamp_upper"]
    assert original.pass_to_pass == ["tests.test_basic::test_add", "tests.test_basic::test_mul"]
    assert original.states.with_tests["checks.test_div::test_div_whole"] == "passed"  # neither f2p nor p2p
    assert original.grader_image.digest.startswith("sha256:")
    div = load_item(tmp_path / "items" / "calc" / "calc-1-div.json")
    assert (
        div.fail_to_pass == ["checks.test_div::test_div_half"] and div.pass_to_pass == original.pass_to_pass
    )
    assert (div.test_patch, div.gold_patch, div.base) == (
        original.test_patch,
        original.gold_patch,
        original.base,
    )
    assert div.split.files == ["calc/div.py"] and not div.superseded_by_split
    # a rebuild of the same revision changes nothing
    stamp = os.stat(tmp_path / "items" / "calc" / "calc-1.json").st_mtime_ns
    build_items(manifest, tmp_path / "items")
    assert os.stat(tmp_path / "items" / "calc" / "calc-1.json").st_mtime_ns == stamp
    assert len(list((tmp_path / "items" / "calc" / "revisions" / "calc-1").iterdir())) == 1
    listing = CliRunner().invoke(app, ["items", "list"])
    assert "calc/calc-1-div: basic, 1 f2p, 2 p2p split div of calc-1; not validated" in listing.output


@pytest.mark.slow
@needs_grader
def test_an_items_excluded_test_is_set_aside_when_it_is_built(tmp_path: Path) -> None:
    """exclude_tests in the manifest: the named test leaves pass-to-pass, the item says why; a name
    that is not among the item's tests is refused (a typo would set nothing aside)."""
    shas = fixture.make_repo(tmp_path / "repo")
    manifest = fixture.write_manifest(tmp_path / "m", tmp_path / "repo", shas["merge"][:12], topics=False)
    text = manifest.read_text()
    exclusion = (
        '\n[[items.exclude_tests]]\ntest = "tests.test_basic::test_mul"\n'
        'reason = "checks a call\'s exact arguments"\n'
    )
    manifest.write_text(text + exclusion)
    (item,) = build_items(manifest, tmp_path / "items")
    assert item.pass_to_pass == ["tests.test_basic::test_add"]
    assert [e.model_dump() for e in item.excluded_tests] == [
        {"test": "tests.test_basic::test_mul", "reason": "checks a call's exact arguments"}
    ]
    listing = CliRunner().invoke(app, ["items", "list", "--out", str(tmp_path / "items")])
    assert "calc/calc-1: basic, 2 f2p, 1 p2p, 1 set aside; not validated" in listing.output
    manifest.write_text(text + exclusion.replace("test_mul", "test_nope"))
    with pytest.raises(
        ItemError, match=r"exclude_tests: not among the item's tests: tests.test_basic::test_nope"
    ):
        build_items(manifest, tmp_path / "items2")


@pytest.mark.slow
@needs_grader
def test_items_build_refusals(tmp_path: Path) -> None:
    shas = fixture.make_repo(tmp_path / "repo")
    folder = tmp_path / "m"
    manifest = fixture.write_manifest(folder, tmp_path / "repo", shas["merge"])
    # topics that leave an f2p test out: refused, the test named
    text = manifest.read_text().replace('match = "test_clamp"', 'match = "test_clampz"')
    manifest.write_text(text)
    with pytest.raises(ItemError, match=r"tests.test_clamp::test_clamp_upper is in 0 topics"):
        build_items(manifest, tmp_path / "items")
    # a statement giving the PR number away
    manifest = fixture.write_manifest(folder, tmp_path / "repo", shas["merge"], topics=False)
    (folder / "statements" / "calc-1.md").write_text(fixture.STATEMENT + "\nSee #7.\n")
    with pytest.raises(ItemError, match=r"items.calc-1.statement: statement contains the PR number 7"):
        build_items(manifest, tmp_path / "items")
    # a commit that is not there; a remote repository
    (folder / "statements" / "calc-1.md").write_text(fixture.STATEMENT)
    manifest.write_text(manifest.read_text().replace(shas["merge"], "0" * 40))
    with pytest.raises(ItemError, match="is not a commit of the repository"):
        build_items(manifest, tmp_path / "items")
    with pytest.raises(ItemError, match="only a local path"):
        build_items(manifest, tmp_path / "items", repository="https://github.com/acme/calc")
    # a failing setup command is our environment's problem, reported as such
    manifest = fixture.write_manifest(
        folder, tmp_path / "repo", shas["merge"], topics=False, extra='setup_command = ["false"]'
    )
    with pytest.raises(ItemError, match="state base: setup_failed"):
        build_items(manifest, tmp_path / "items")
    assert not list_items(tmp_path / "items")  # nothing half-written
    # one entry refused, the other built: exit 1, the refusal named
    manifest = fixture.write_manifest(folder, tmp_path / "repo", shas["merge"], topics=False)
    (folder / "statements" / "leak.md").write_text(fixture.STATEMENT + "\nhttps://example.org/fix\n")
    manifest.write_text(
        manifest.read_text()
        + f'\n[[items]]\nid = "calc-2"\nmerge = "{shas["merge"]}"\nstatement = "statements/leak.md"\n'
    )
    result = CliRunner().invoke(
        app, ["items", "build", "--manifest", str(manifest), "--out", str(tmp_path / "items")]
    )
    assert result.exit_code == 1
    assert "refused:" in result.output and "items.calc-2.statement: statement contains a URL" in result.output
    assert [p.name for p in list_items(tmp_path / "items")] == ["calc-1.json"]


@pytest.mark.slow
@needs_grader
def test_items_build_from_git_daemon_on_loopback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import time

    from conftest import free_port

    shas = fixture.make_repo(tmp_path / "serve" / "calc")
    port = free_port()
    daemon = subprocess.Popen(
        ["git", "daemon", "--export-all", "--reuseaddr", f"--base-path={tmp_path / 'serve'}",
         "--listen=127.0.0.1", f"--port={port}", str(tmp_path / "serve")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"git://127.0.0.1:{port}/calc"
        for _ in range(100):  # until the daemon answers
            if subprocess.run(["git", "ls-remote", url], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        manifest = fixture.write_manifest(tmp_path / "m", Path("unused"), shas["merge"], topics=False)
        monkeypatch.setenv("ARGUSIC_ITEMS_DIR", str(tmp_path / "items"))
        built = build_items(manifest, tmp_path / "items", repository=url)
        assert [i.item_id for i in built] == ["calc-1"] and built[0].repository == url
        assert built[0].base == shas["base"]
        # graded from the same URL (a bare mirror cached under the items folder)
        from argusic.repair.grader import grade_patch

        grade = grade_patch(
            built[0], built[0].gold_patch.encode(), source={"kind": "attempt", "attempt_id": "a"}
        )
        assert grade.verdict == "resolved", grade.detail
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
