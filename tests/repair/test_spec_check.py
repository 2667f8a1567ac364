"""The spec track's checker (seed 001): new names the tests use must be in the item's spec.

Fast, no Docker: small base trees written here, and repairkit's real spec-track item built from the
demo forge's history (its base exported, its test patch applied) checked against its spec.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from argusic.repair import spec_check, testrun
from argusic.repair.spec_check import check_trees

BASE = {
    "pkg/__init__.py": "from pkg.core import parse\n\n__all__ = ['parse']\n",
    "pkg/core.py": (
        "import json\n\n\ndef parse(text, strict=False):\n    return json.loads(text)\n\n\n"
        "class Reader:\n    def __init__(self, path):\n        self.path = path\n\n"
        "    def read(self):\n        return open(self.path).read()\n"
    ),
    "pkg/cli.py": "import argparse\n\np = argparse.ArgumentParser()\np.add_argument('--verbose')\n",
    "tests/__init__.py": "",
    "tests/test_old.py": "from pkg import parse\n\n\ndef test_parse():\n    assert parse('1') == 1\n",
}


def _trees(tmp_path: Path, test_text: str, extra_base: dict[str, str] | None = None) -> tuple[Path, Path]:
    base, with_tests = tmp_path / "base", tmp_path / "with_tests"
    both = {**BASE, **(extra_base or {})}
    for root, files in ((base, both), (with_tests, {**both, "tests/test_new.py": test_text})):
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
    return base, with_tests


def _missing(tmp_path: Path, test_text: str, spec: str, **kw) -> list[str]:
    base, with_tests = _trees(tmp_path, test_text, **kw)
    _, missing = check_trees(base, with_tests, ["tests/test_new.py"], spec)
    return [u.describe() for u in missing]


def test_a_new_name_in_the_tests_and_not_in_the_spec_is_reported_with_file_and_line(tmp_path: Path) -> None:
    tests = "import pkg\nfrom pkg.core import parse, dump\n\n\ndef test_dump():\n    assert dump(1) == '1'\n"
    assert _missing(tmp_path, tests, "## `pkg.core.load`\nnothing about the other one") == [
        "tests/test_new.py:2: name pkg.core.dump"
    ]


def test_a_name_in_both_tests_and_spec_is_ok(tmp_path: Path) -> None:
    tests = "from pkg.core import dump\n\n\ndef test_dump():\n    assert dump(1) == '1'\n"
    assert _missing(tmp_path, tests, "## `pkg.core.dump`\n- Signature: `dump(value) -> str`") == []


def test_stdlib_third_party_and_existing_names_are_ignored(tmp_path: Path) -> None:
    tests = (
        "import json\nimport os.path\nimport pytest\nfrom collections import OrderedDict\n"
        "from pkg import parse\nfrom pkg.core import Reader\n\n\n"
        "def test_old_things(tmp_path):\n    assert parse('2', strict=True) == 2\n"
        "    r = Reader(tmp_path)\n    assert r.path == tmp_path\n    r.read\n"
        "    json.dumps(OrderedDict(), sort_keys=True)\n    pytest.raises(ValueError)\n"
        "    assert os.path.join('a', 'b')\n    args = ['--verbose']\n"
    )
    assert _missing(tmp_path, tests, "no spec at all") == []


def test_new_module_attribute_method_keyword_and_flag_are_each_reported(tmp_path: Path) -> None:
    tests = (
        "import pkg\nimport pkg.fmt\nfrom pkg.core import Reader, parse\n\n\n"
        "def test_new():\n    assert pkg.render(1)\n    r = Reader('x', encoding='utf-8')\n"
        "    r.close()\n    Reader.open_many([])\n    parse('1', lenient=True)\n"
        "    main(['--dry-run'])\n"
    )
    found = _missing(tmp_path, tests, "nothing named")
    assert found == [
        "tests/test_new.py:2: module pkg.fmt",
        "tests/test_new.py:7: name pkg.render",
        "tests/test_new.py:8: keyword argument pkg.core.Reader(encoding=)",
        "tests/test_new.py:9: name pkg.core.Reader.close",
        "tests/test_new.py:10: name pkg.core.Reader.open_many",
        "tests/test_new.py:11: keyword argument pkg.core.parse(lenient=)",
        "tests/test_new.py:12: CLI flag --dry-run",
    ]
    spec = (
        "## `pkg.render`, `pkg/fmt.py`\n- `Reader(path, encoding='utf-8')`, `Reader.close()`,\n"
        "  `Reader.open_many(paths)`; `parse(text, strict=False, lenient=False)`; `--dry-run`\n"
    )
    assert _missing(tmp_path / "again", tests, spec) == []


def test_a_name_re_exported_by_a_test_helper_is_followed(tmp_path: Path) -> None:
    # tomli's tests import the package through tests/__init__.py (`import tomli as tomllib`).
    helper = {"tests/__init__.py": "import pkg as lib\n"}
    tests = "from . import lib\n\n\ndef test_x():\n    lib.brand_new()\n    lib.parse('1')\n"
    assert _missing(tmp_path, tests, "", extra_base=helper) == ["tests/test_new.py:5: name pkg.brand_new"]


def test_star_import_and_foreign_bases_are_not_guessed(tmp_path: Path) -> None:
    extra = {
        "pkg/star.py": "from os.path import *\n",
        "pkg/err.py": "import json\n\n\nclass Err(json.JSONDecodeError):\n    pass\n",
    }
    tests = "from pkg.star import joinx\nfrom pkg.err import Err\n\n\ndef test_x():\n    Err.anything\n"
    assert _missing(tmp_path, tests, "", extra_base=extra) == []


# --- on a real repository's history: repairkit (the demo forge) -------------------------------------


@pytest.fixture(scope="module")
def repairkit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from argusic.sources.forge import build_repair_forge

    dest = tmp_path_factory.mktemp("forge")
    build_repair_forge(dest)
    return dest / "repos" / "repairkit.git"


def _merge_trees(git_dir: Path, merge: str, work: Path) -> tuple[Path, Path, list[str], str]:
    """base and base + test patch of a merge (as the item builder splits it), and the test files."""
    base = testrun.git(["--git-dir", str(git_dir), "rev-parse", f"{merge}^1"]).decode().strip()
    names = testrun.git(["--git-dir", str(git_dir), "diff", "--name-only", base, merge]).decode().split()
    tests = [n for n in names if n.startswith("tests/")]
    patch = testrun.git(["--git-dir", str(git_dir), "diff", "--binary", base, merge, "--", *tests])
    testrun.export_base(git_dir, base, work / "base")
    testrun.materialise(git_dir, base, [("test_patch", patch, ())], work / "with_tests")
    return work / "base", work / "with_tests", tests, base


def test_repairkit_spec_item_names_every_new_name_and_a_stripped_spec_fails(
    repairkit: Path, tmp_path: Path
) -> None:
    import tomllib

    root = Path(__file__).resolve().parents[2] / "plugins" / "argusic" / "repair" / "manifests"
    manifest = tomllib.loads((root / "repairkit.toml").read_text())
    entry = next(i for i in manifest["items"] if i["id"] == "repairkit-3")
    spec = (root / entry["spec"]).read_text()
    base, with_tests, tests, _ = _merge_trees(repairkit, entry["merge"], tmp_path)
    uses, missing = check_trees(base, with_tests, tests, spec)
    assert "repairkit.format_duration" in {u.name for u in uses} or "repairkit.durations.format_duration" in {
        u.name for u in uses
    }
    assert missing == []
    # The same tests against a spec that leaves the function out: reported, with file:line.
    stripped = spec.replace("format_duration", "the function")
    _, missing = check_trees(base, with_tests, tests, stripped)
    assert missing and all(u.file.startswith("tests/") and u.line > 0 for u in missing)
    assert {u.name.rsplit(".", 1)[-1] for u in missing} == {"format_duration"}


def test_repairkit_basic_items_need_no_spec(repairkit: Path, tmp_path: Path) -> None:
    import tomllib

    root = Path(__file__).resolve().parents[2] / "plugins" / "argusic" / "repair" / "manifests"
    manifest = tomllib.loads((root / "repairkit.toml").read_text())
    for entry in manifest["items"]:
        if entry.get("spec"):
            continue
        statement = (root / entry["statement"]).read_text()
        base, with_tests, tests, _ = _merge_trees(repairkit, entry["merge"], tmp_path / entry["id"])
        _, missing = check_trees(base, with_tests, tests, statement)
        assert missing == [], (entry["id"], [u.describe() for u in missing])


def test_report_lines_name_the_text_checked() -> None:
    report = spec_check.SpecReport("x-1", "spec", "interface_spec")
    report.missing = [spec_check.Use("name", "pkg.f", "tests/t.py", 3)]
    assert report.problems() == ["not in the spec: tests/t.py:3: name pkg.f"]
    assert not report.ok and report.to_dict()["missing"][0]["line"] == 3


def test_tomli_real_history_spec_names_the_new_attributes_and_an_empty_text_misses_them(
    tmp_path: Path,
) -> None:
    """tomli (tests/fixtures/repair_real, a repository no one here prepared): the spec item's tests read
    five new attributes of TOMLDecodeError through `from . import tomllib` (tests/__init__.py imports
    tomli under that name); the spec names them all; the basic item's tests use nothing new."""
    import subprocess
    import tomllib

    real = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "repair_real"
    repo = tmp_path / "tomli.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(real / "tomli.bundle"), str(repo)], check=True)
    manifest = tomllib.loads((real / "tomli.toml").read_text())
    found = {}
    for entry in manifest["items"]:
        text = (real / (entry.get("spec") or entry["statement"])).read_text()
        base, with_tests, tests, _ = _merge_trees(repo, entry["merge"], tmp_path / entry["id"])
        uses, missing = check_trees(base, with_tests, tests, text)
        _, against_nothing = check_trees(base, with_tests, tests, "")
        found[entry["id"]] = ([u.name for u in uses], missing, [u.describe() for u in against_nothing])
    names, missing, against_nothing = found["tomli-decode-error-attributes"]
    assert names == [f"tomli.TOMLDecodeError.{a}" for a in ("msg", "doc", "pos", "lineno", "colno")]
    assert missing == []
    assert against_nothing[0] == "tests/test_error.py:94: name tomli.TOMLDecodeError.msg"
    assert found["tomli-loads-type-error"][0] == []


def test_only_the_items_graded_tests_count(tmp_path: Path) -> None:
    """A split item shares its test patch with the other topic: new names only the other topic's tests
    use are not this item's business; a module-level import still is (it breaks the whole file)."""
    tests = (
        "from pkg import core\nfrom pkg.core import imported_new\n\n\n"
        "def test_mine():\n    core.mine_new()\n\n\n"
        "def test_theirs():\n    core.theirs_new()\n\n\n"
        "class TestGroup:\n    def test_theirs_too(self):\n        core.theirs_also()\n"
    )
    base, with_tests = _trees(tmp_path, tests)
    graded = ["tests.test_new::test_mine", "tests.test_old::test_parse"]
    _, missing = check_trees(base, with_tests, ["tests/test_new.py"], "", graded)
    assert [u.name for u in missing] == ["pkg.core.imported_new", "pkg.core.mine_new"]
    # ids of another form than the checker's (no test matches): every test counts, to be safe
    _, missing = check_trees(base, with_tests, ["tests/test_new.py"], "", ["test_new.py::test_mine"])
    assert len(missing) == 4
