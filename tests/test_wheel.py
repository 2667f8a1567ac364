"""The wheel carries what it needs (issue 24): built offline from a clean copy of the sources, installed
into a scratch virtualenv, and used from a folder outside the repository, where the editable install's
path to plugins/ cannot hide a missing file.

- The wheel holds every file git tracks in the package folder, byte for byte (templates, prompts,
  manifests, schemas, task files, the harness whose files are hashed into the scaffold, the demo
  projects with their dotfiles), and no bytecode cache.
- `argusic --help` runs; `argusic site build` writes the site of a small published folder (its pages
  come from the package's templates, its player from the package's vendored asciinema-player).
- Every DAG file of dags/ imports (Airflow's DagBag, no dag.test()) with no import error, each DAG id
  written in the files is found, and every entry point of the installed wheel (read from its
  metadata: console script, Airflow cluster policy) loads.
- None of these writes beside the virtualenv's site-packages: with no ARGUSIC_HOME set, the
  installation's folders (warehouse, runs, published...) default to <venv>/lib/pythonX.Y/.

The scratch virtualenv sees the project's dependencies through a .pth line naming .venv's
site-packages: a directory named in a .pth file has its own .pth files left unread, so .venv's
editable-install line (pointing at plugins/) never reaches it, and `argusic` resolves to the wheel's
copy only (checked: every argusic module loaded lies in the scratch virtualenv).

The build backend: `uv build --offline` (uv is in .venv, `make install` puts it there) takes the
setuptools that `make install` fetched for the editable install from uv's cache; .venv's own
setuptools (the one `python -m venv` seeds) is older than [build-system] requires and cannot build a
wheel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from test_site import _published as published_cycle

pytestmark = pytest.mark.slow


def _repo_root() -> Path:
    here = Path(__file__).resolve().parent
    return next(p for p in (here, *here.parents) if (p / "pyproject.toml").is_file())


ROOT = _repo_root()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGE = PYPROJECT["project"]["name"]
SOURCE_DIR = PYPROJECT["tool"]["setuptools"]["package-dir"][""]  # the folder holding the package
MARK = "@@RESULT@@"
CACHE_PARTS = ("__pycache__",)
CACHE_SUFFIXES = (".pyc", ".pyo")

# Runs in the scratch virtualenv: the wheel's entry points, every DAG file, and where argusic came from.
DAG_DRIVER = r"""
import importlib.metadata as md, json, os, sys
dist = md.distribution("argusic")
entry_points = []
for ep in dist.entry_points:
    ep.load()
    entry_points.append(f"{ep.group}: {ep.name} = {ep.value}")
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
out = {
    "entry_points": entry_points,
    "dist_files": str(dist.locate_file("")),
    "errors": {str(k): str(v) for k, v in bag.import_errors.items()},
    "dags": {dag_id: os.path.basename(dag.fileloc) for dag_id, dag in bag.dags.items()},
    "argusic_modules": sorted({getattr(m, "__file__", None) or "" for name, m in list(sys.modules.items())
                              if name == "argusic" or name.startswith("argusic.")}),
}
print("@@RESULT@@" + json.dumps(out))
"""


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        )
    return proc.stdout


def _is_cache(path: str) -> bool:
    return any(part in CACHE_PARTS for part in path.split("/")) or path.endswith(CACHE_SUFFIXES)


def _source_copy(dest: Path) -> Path:
    """The files setuptools reads, copied (no build/, egg-info or bytecode left by earlier builds:
    a stale build/lib would put files into the wheel that the configuration no longer names)."""
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(
        ROOT / SOURCE_DIR,
        dest / SOURCE_DIR,
        symlinks=True,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", "*.egg-info", "build"),
    )
    return dest


def _build_wheel(tmp: Path) -> Path:
    source = _source_copy(tmp / "source")
    uv = Path(sys.executable).parent / "uv"
    assert uv.is_file(), f"{uv}: missing (`make install` installs uv into the virtualenv)"
    out = tmp / "dist"
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")} | {"UV_OFFLINE": "1"}
    _run(
        [str(uv), "build", "--wheel", "--offline", "--python", sys.executable, "--out-dir", str(out), "."],
        cwd=source,
        env=env,
        timeout=600,
    )
    (wheel,) = out.glob(f"{PACKAGE}-*.whl")
    return wheel


def _scratch_venv(tmp: Path, wheel: Path) -> tuple[Path, Path]:
    """A virtualenv with the wheel installed (no dependencies), then a .pth line naming .venv's
    site-packages (added after the install, so that pip sees no other argusic)."""
    tmp.mkdir(parents=True)
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp, env=dict(os.environ))
    python = venv / "bin" / "python"
    _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
         str(wheel)],
        cwd=tmp, env={k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
    )  # fmt: skip
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=tmp,
            env=dict(os.environ),
        ).strip()
    )
    ours = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "_project_dependencies.pth").write_text("".join(f"{p}\n" for p in ours))
    return venv, site


def _clean_env(venv: Path, **extra: str) -> dict[str, str]:
    """No PYTHONPATH, no project settings: only what a user of the wheel would have, and the extras."""
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AIRFLOW", "ARGUSIC_", "DBT_", "PYTHON", "VIRTUAL_ENV", "UV_", "PIP_"))
    }
    return keep | {"PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", **extra}


def _tracked_package_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", f"{SOURCE_DIR}/{PACKAGE}"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [path for path in listed.split("\0") if path]


def test_the_wheel_carries_what_it_needs(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path / "build")

    # The wheel holds every tracked file of the package folder, byte for byte, and no bytecode.
    with zipfile.ZipFile(wheel) as archive:
        members = set(archive.namelist())
        tracked = _tracked_package_files()
        assert len(tracked) > 100
        missing = [p for p in tracked if p.removeprefix(f"{SOURCE_DIR}/") not in members]
        assert missing == [], f"tracked files not in the wheel: {missing}"
        differ = [
            p for p in tracked if archive.read(p.removeprefix(f"{SOURCE_DIR}/")) != (ROOT / p).read_bytes()
        ]
        assert differ == []
        assert [m for m in members if _is_cache(m)] == []

    venv, site = _scratch_venv(tmp_path / "scratch", wheel)
    outside = tmp_path / "elsewhere"  # the working directory of every command: not the repository
    outside.mkdir()

    # argusic --help
    help_text = _run([str(venv / "bin" / "argusic"), "--help"], cwd=outside, env=_clean_env(venv))
    assert "site" in help_text and "Usage" in help_text

    # argusic site build on a small published folder
    (tmp_path / "data").mkdir()
    publish, store_url = published_cycle(tmp_path / "data", masked=True)  # test_site's small cycle
    env = _clean_env(venv, ARGUSIC_PUBLISH_DIR=str(publish), ARGUSIC_EVIDENCE_URL=store_url)
    said = _run([str(venv / "bin" / "argusic"), "site", "build"], cwd=outside, env=env)
    assert "pages in" in said
    built = publish / "site"
    run_page = built / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html"
    assert (built / "index.html").is_file() and (built / "cycles/2026-11-x/pool.html").is_file()
    assert "the demo works." in run_page.read_text() and 'id="argusic-recording"' in run_page.read_text()
    assert (built / "assets" / "asciinema-player.min.js").stat().st_size > 10_000  # the vendored player

    # Every DAG of dags/, imported (no dag.test()); every entry point of the wheel loads.
    dags = shutil.copytree(ROOT / "dags", tmp_path / "dags", ignore=shutil.ignore_patterns("__pycache__"))
    written = {
        dag_id: path.name
        for path in sorted(dags.glob("*.py"))
        for dag_id in re.findall(r"""\bdag_id\s*=\s*["']([^"']+)["']""", path.read_text())
    }
    assert written and set(written.values()) == {p.name for p in dags.glob("*.py")}
    env = _clean_env(
        venv,
        AIRFLOW_HOME=str(tmp_path / "airflow"),
        AIRFLOW__CORE__DAGS_FOLDER=str(dags),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(tmp_path / "airflow" / "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT="120",
    )
    out = _run([str(venv / "bin" / "python"), "-c", DAG_DRIVER], cwd=outside, env=env, timeout=600)
    found = json.loads(next(x for x in out.splitlines() if x.startswith(MARK))[len(MARK) :])
    assert found["errors"] == {}
    assert {dag_id: found["dags"].get(dag_id) for dag_id in written} == written
    assert any(ep.startswith("console_scripts: argusic = ") for ep in found["entry_points"])
    assert any(ep.startswith("airflow.policy: ") for ep in found["entry_points"])
    assert Path(found["dist_files"]).resolve() == site.resolve()
    modules = [Path(m) for m in found["argusic_modules"] if m]
    assert modules and all(m.resolve().is_relative_to(site.resolve()) for m in modules), [
        str(m) for m in modules if not m.resolve().is_relative_to(site.resolve())
    ]
    # None of it wrote beside site-packages (with no ARGUSIC_HOME, the settings' defaults lie there).
    assert sorted(p.name for p in site.parent.iterdir()) == [site.name]
