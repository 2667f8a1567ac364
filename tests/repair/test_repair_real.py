"""Repair items from repositories no one here prepared, and from the demo forge's repairkit.

Fast: the forge builds repairkit's history of merged pull requests (one bundled) on the same hashes the
person-written manifest names, and its statements pass the builder's checks.
Slow (real Docker, the grader image): items built from tomli's real history (committed as a git
bundle, MIT: tests/fixtures/repair_real/README.md), the grader validated on them, and gold, empty and
deliberately broken patches graded; repairkit's bundled merge split into two topic items with the
original kept apart, every item usable.
"""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
from argusic.repair.grader import grade_patch, validate_item
from argusic.repair.items import build_items, check_statement
from argusic.sources.forge import REPAIR_CATALOGUE, REPAIR_FIXTURES, build_repair_forge

ROOT = Path(__file__).resolve().parents[2]
REPAIRKIT_MANIFEST = ROOT / "plugins" / "argusic" / "repair" / "manifests" / "repairkit.toml"
REAL = ROOT / "tests" / "fixtures" / "repair_real"
TOMLI_TIP = "d1d6a8571b06b18005af8bf9078c1d37de5353e1"
SOURCE = {"kind": "predictions", "file_sha256": "0" * 64, "label": "test-real"}


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("forge")
    build_repair_forge(dest)
    return dest / "repos" / "repairkit.git"


@pytest.fixture
def items_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ARGUSIC_ITEMS_DIR", str(tmp_path / "items"))
    return tmp_path / "items"


# --- fast: the forge's history and the manifest ----------------------------------------------------


def test_repairkit_history_is_merged_pull_requests(forge: Path) -> None:
    merges = git("--git-dir", str(forge), "rev-list", "--merges", "--first-parent", "main").split()
    assert len(merges) == 3
    main_line = git("--git-dir", str(forge), "rev-list", "--first-parent", "main").split()
    assert len(main_line) == 4  # the initial import and three merges: nothing committed on main directly
    for merge in merges:
        parents = git("--git-dir", str(forge), "rev-list", "--parents", "-n", "1", merge).split()[1:]
        assert len(parents) == 2 and parents[0] in main_line
        changed = git("--git-dir", str(forge), "diff", "--name-only", parents[0], merge).splitlines()
        assert any(p.startswith("tests/") for p in changed), merge
        assert any(p.startswith("repairkit/") for p in changed), merge
    # The bundled pull request: two commits on its branch, one per topic.
    first = merges[-1]
    assert git("--git-dir", str(forge), "rev-list", "--count", f"{first}^1..{first}^2") == "2"
    catalogue = (forge.parent.parent / REPAIR_CATALOGUE).read_text()
    assert merges[0] in catalogue  # the catalogue pins the last merge


def test_repairkit_manifest_names_the_forges_merges(forge: Path) -> None:
    manifest = tomllib.loads(REPAIRKIT_MANIFEST.read_text())
    merges = set(git("--git-dir", str(forge), "rev-list", "--merges", "main").split())
    assert [i["merge"] in merges for i in manifest["items"]] == [True, True, True]
    assert manifest["project_id"] == REPAIR_FIXTURES[0]["project_id"] == "repairkit"
    tracks = {i["id"]: "spec" if "spec" in i else "basic" for i in manifest["items"]}
    assert sorted(tracks.values()) == ["basic", "basic", "spec"]
    bundled = [i for i in manifest["items"] if i.get("topics")]
    assert len(bundled) == 1 and len(bundled[0]["topics"]) == 2


@pytest.mark.parametrize("manifest", [REPAIRKIT_MANIFEST, *sorted(REAL.glob("*.toml"))], ids=lambda p: p.stem)
def test_statements_pass_the_builders_checks(manifest: Path) -> None:
    data = tomllib.loads(manifest.read_text())
    texts = []
    for item in data["items"]:
        texts += [item["statement"], *(t["statement"] for t in item.get("topics", []))]
    for relative in texts:
        text = (manifest.parent / relative).read_text()
        check_statement(text, relative, pr_numbers=set())
        assert "github" not in text.lower() and "http" not in text


def test_tomli_bundle_is_small_and_holds_the_commits(tmp_path: Path) -> None:
    bundle = REAL / "tomli.bundle"
    assert bundle.stat().st_size < 2 * 1024 * 1024
    repo = tmp_path / "tomli.git"
    git("clone", "-q", "--bare", str(bundle), str(repo))
    assert git("--git-dir", str(repo), "rev-parse", "main") == TOMLI_TIP
    for item in tomllib.loads((REAL / "tomli.toml").read_text())["items"]:
        git("--git-dir", str(repo), "merge-base", "--is-ancestor", item["merge"], "main")
    assert "MIT License" in (REAL / "tomli.LICENSE").read_text()


# --- slow: build, validate and grade in the grader image -------------------------------------------


@pytest.mark.slow
@pytest.mark.docker
def test_tomli_items_built_validated_and_graded(tmp_path: Path, items_env: Path) -> None:
    repo = tmp_path / "tomli.git"
    git("clone", "-q", "--bare", str(REAL / "tomli.bundle"), str(repo))
    built = {i.item_id: i for i in build_items(REAL / "tomli.toml", items_env, repository=str(repo))}
    assert sorted(built) == ["tomli-decode-error-attributes", "tomli-loads-type-error"]
    item = built["tomli-loads-type-error"]
    assert item.track == "basic" and item.base == "facdab0f5aacc5eb223753c42604d5de7bdaee9d"
    assert item.fail_to_pass == ["tests.test_error.TestError::test_type_error"]
    assert "tests.test_error.TestError::test_module_name" in item.pass_to_pass
    assert item.test_files == ["tests/test_error.py"]
    assert "src/tomli/_parser.py" in item.gold_patch and "tests/" not in item.gold_patch
    spec_item = built["tomli-decode-error-attributes"]
    assert spec_item.track == "spec" and "lineno" in spec_item.interface_spec
    assert len(spec_item.fail_to_pass) == 2

    validation = validate_item(item)
    assert validation.usable, validation.problems
    assert [r["verdict"] for r in validation.runs] == ["resolved"] * 3 + ["unresolved"]

    # Deliberately broken patches, made in a working copy of base.
    work = tmp_path / "work"
    git("clone", "-q", str(repo), str(work))
    git("checkout", "-q", item.base, cwd=work)
    parser = work / "src" / "tomli" / "_parser.py"
    parser.write_text(parser.read_text() + "\n# looked into it, nothing to change\n")
    no_fix = git("diff", "--binary", cwd=work) + "\n"
    git("checkout", "-q", "--", ".", cwd=work)
    test_file = work / "tests" / "test_error.py"
    test_file.write_text(test_file.read_text().replace("class TestError", "class TestErrorByAgent"))
    tests_only = git("diff", "--binary", cwd=work) + "\n"
    stale = item.gold_patch.replace("    # The spec allows", "    # The specification allows", 1)
    assert stale != item.gold_patch

    verdicts = {}
    for kind, patch in [("gold", item.gold_patch), ("empty", ""), ("no-fix", no_fix),
                        ("tests-only", tests_only), ("stale", stale)]:  # fmt: skip
        verdicts[kind] = grade_patch(item, patch.encode(), source=SOURCE)
    assert {k: g.verdict for k, g in verdicts.items()} == {
        "gold": "resolved",
        "empty": "unresolved",
        "no-fix": "unresolved",
        "tests-only": "unresolved",
        "stale": "patch_apply_failed",
    }
    assert verdicts["no-fix"].failing_tests == item.fail_to_pass
    assert verdicts["tests-only"].excluded_paths == ["tests/test_error.py"]
    assert verdicts["empty"].quality["empty_patch"] is True
    assert verdicts["gold"].quality["changed_lines"] == verdicts["gold"].quality["gold_changed_lines"] > 0


@pytest.mark.slow
@pytest.mark.docker
def test_repairkit_bundled_merge_is_split_and_every_item_usable(forge: Path, items_env: Path) -> None:
    built = {i.item_id: i for i in build_items(REPAIRKIT_MANIFEST, items_env, repository=str(forge))}
    assert sorted(built) == [
        "repairkit-1", "repairkit-1-slug", "repairkit-1-version", "repairkit-2", "repairkit-3",
    ]  # fmt: skip
    original, slug, version = built["repairkit-1"], built["repairkit-1-slug"], built["repairkit-1-version"]
    assert original.superseded_by_split and original.split is None
    assert not slug.superseded_by_split and not version.superseded_by_split
    assert slug.split.original == version.split.original == "repairkit-1"
    # Same base, test patch and gold patch; f2p narrowed to each topic, together the original's; p2p kept.
    for part in (slug, version):
        assert (part.base, part.test_patch, part.gold_patch) == (
            original.base, original.test_patch, original.gold_patch,
        )  # fmt: skip
        assert part.pass_to_pass == original.pass_to_pass
    assert all("test_slug_" in t for t in slug.fail_to_pass) and len(slug.fail_to_pass) == 2
    assert all("test_version_" in t for t in version.fail_to_pass) and len(version.fail_to_pass) == 2
    assert sorted(slug.fail_to_pass + version.fail_to_pass) == original.fail_to_pass
    # The test patch touches tests only; the gold patch also carries the changelog.
    assert original.test_files == ["tests/test_slug.py", "tests/test_version.py"]
    assert "CHANGELOG.md" in original.gold_patch and "CHANGELOG.md" not in slug.partial_gold_patch
    # p2p: tests that pass in all three states exist on every item.
    assert all(len(i.pass_to_pass) >= 10 for i in built.values())
    assert built["repairkit-3"].track == "spec" and "format_duration" in built["repairkit-3"].interface_spec
    assert built["repairkit-2"].track == "basic"

    for item in built.values():
        validation = validate_item(item)
        assert validation.usable, (item.item_id, validation.problems)
        kinds = [r["patch"] for r in validation.runs]
        assert kinds.count("partial_gold") == (1 if item.split else 0)
    # A topic's partial gold does not resolve the other topic.
    wrong = grade_patch(slug, version.partial_gold_patch.encode(), source=SOURCE)
    assert wrong.verdict == "unresolved" and wrong.failing_tests == slug.fail_to_pass
