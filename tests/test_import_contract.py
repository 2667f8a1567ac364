"""The import contract of pyproject.toml (`make imports`, part of `make lint`): it holds on the package as
it is, and it fails when an import loop is added back, an import goes up the layers, Airflow is imported
outside orchestration/ or the container side imports the package (issue 24)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint_imports(tree: Path) -> subprocess.CompletedProcess:
    """lint-imports with the project's contract on the package copied under `tree`."""
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tree,
        env=os.environ | {"PYTHONPATH": str(tree / "plugins")},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "plugins" / "argusic",
        tmp_path / "plugins" / "argusic",
        ignore=shutil.ignore_patterns("__pycache__", "vendor", "demo_projects", "demo_history"),
    )
    return tmp_path


def test_the_contract_holds_on_the_package(tree: Path) -> None:
    done = _lint_imports(tree)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_a_loop_added_back_breaks_it(tree: Path) -> None:
    common = tree / "plugins" / "argusic" / "cli" / "common.py"
    common.write_text(common.read_text() + "\nfrom argusic.cli import main as _loop  # noqa: E402\n")
    done = _lint_imports(tree)
    assert done.returncode != 0
    assert "no import loop" in done.stdout and "BROKEN" in done.stdout, done.stdout[-3000:]


def test_an_import_against_the_layers_breaks_it(tree: Path) -> None:
    layout = tree / "plugins" / "argusic" / "core" / "layout.py"
    layout.write_text(layout.read_text() + "\nimport argusic.publication.board  # noqa: E402\n")
    done = _lint_imports(tree)
    assert done.returncode != 0
    assert "layers" in done.stdout and "BROKEN" in done.stdout, done.stdout[-3000:]


def test_airflow_outside_orchestration_breaks_it(tree: Path) -> None:
    loader = tree / "plugins" / "argusic" / "warehouse" / "load_runs.py"
    loader.write_text(loader.read_text() + "\n\ndef _task():\n    import airflow.sdk  # noqa: F401\n")
    done = _lint_imports(tree)
    assert done.returncode != 0
    assert "Airflow only in orchestration/" in done.stdout and "BROKEN" in done.stdout, done.stdout[-3000:]


def test_the_container_side_importing_the_package_breaks_it(tree: Path) -> None:
    runner = tree / "plugins" / "argusic" / "payload" / "__init__.py"
    runner.write_text(runner.read_text() + "\nimport argusic.core.settings  # noqa: E402,F401\n")
    done = _lint_imports(tree)
    assert done.returncode != 0
    assert "run inside the attempt container" in done.stdout and "BROKEN" in done.stdout, done.stdout[-3000:]


CHECK_DEFERRED = ROOT / "scripts" / "check_deferred_imports.py"


def _check_deferred(package: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(CHECK_DEFERRED), str(package)], capture_output=True, text=True, timeout=120
    )


def test_every_import_inside_a_function_of_the_package_says_why_it_waits() -> None:
    done = _check_deferred(ROOT / "plugins" / "argusic")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]


def test_an_import_inside_a_function_without_its_reason_is_refused(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "explained.py").write_text(
        "def load():\n"
        "    # deferred: docker's client is slow to import and only the launch needs it\n"
        "    import docker\n"
        "    from docker import errors\n"
        "\n"
        "    return docker, errors\n"
    )
    assert _check_deferred(package).returncode == 0
    (package / "bare.py").write_text(
        "import os\n\n\ndef load():\n    x = os.sep\n    import json\n\n    return json, x\n"
    )
    done = _check_deferred(package)
    assert done.returncode == 1
    assert done.stdout.strip() == f"{package / 'bare.py'}:6: json"
