"""A tiny Python project with a bundled bug-fix PR merged, and its items manifest (issue 13's tests).

History: base (``calc`` with two bugs: ``div`` floors, ``clamp`` ignores the upper bound; tests of
``add``/``mul`` that pass) ← branch ``fix`` (fixes both, adds ``checks/test_div.py`` in a new folder and
``tests/test_clamp.py``) merged with ``--no-ff`` as "Merge pull request #7". Topics: ``div`` (match
``test_div``, file ``calc/div.py``) and ``clamp`` (match ``test_clamp``, file ``calc/clamp.py``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Fixture",
    "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
    "GIT_COMMITTER_NAME": "Fixture",
    "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
    "GIT_AUTHOR_DATE": "2026-11-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-11-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

BASE_FILES = {
    "calc/__init__.py": "from calc.clamp import clamp\nfrom calc.div import div\n\n\ndef add(a, b):\n"
    "    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    "calc/div.py": "def div(a, b):\n    return a // b\n",
    "calc/clamp.py": "def clamp(value, low, high):\n    return max(value, low)\n",
    "tests/__init__.py": "",
    "tests/test_basic.py": "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n",
    "README.md": "calc: small arithmetic helpers\n",
}
FIX_FILES = {
    "calc/div.py": "def div(a, b):\n    return a / b\n",
    "calc/clamp.py": "def clamp(value, low, high):\n    return min(max(value, low), high)\n",
    "checks/test_div.py": "from calc import div\n\n\ndef test_div_half():\n    assert div(1, 2) == 0.5\n\n\n"
    "def test_div_whole():\n    assert div(6, 3) == 2\n",
    "tests/test_clamp.py": "from calc import clamp\n\n\n"
    "def test_clamp_upper():\n    assert clamp(9, 0, 5) == 5\n\n\n"
    "def test_clamp_lower():\n    assert clamp(-1, 0, 5) == 0\n",
}
STATEMENT = (
    "# Division and clamping give wrong answers\n\n"
    "## Symptom\nDividing one by two with the library's division helper answers zero instead of one half, "
    "and clamping a value above the upper bound returns the value itself.\n\n"
    "## Reproduction\nCall the division helper with 1 and 2; call the clamp helper with 9, 0 and 5.\n\n"
    "## Expected\nOne half, and five.\n"
)
DIV_STATEMENT = (
    "# Division of small numbers answers zero\n\nDividing one by two with the library's division helper "
    "answers zero; the expected answer is one half, as true division gives.\n"
)
CLAMP_STATEMENT = (
    "# Clamp ignores its upper bound\n\nClamping nine between zero and five returns nine; the expected "
    "answer is five, the upper bound, whenever the value is above it.\n"
)
TEST_COMMAND = ["python3", "-m", "pytest", "-p", "no:cacheprovider", "-q"]


def git(repo: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
    ).stdout


def write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def make_repo(repo: Path) -> dict[str, str]:
    """The repository; {"base": sha, "merge": sha, "fix": sha}."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    write(repo, BASE_FILES)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "calc: add, mul, div, clamp")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "fix")
    write(repo, FIX_FILES)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Fix div and clamp")
    fix = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge pull request #7 from someone/fix", "fix")
    merge = git(repo, "rev-parse", "HEAD").strip()
    return {"base": base, "merge": merge, "fix": fix}


def patch_from(repo: Path, base: str, files: dict[str, str | None], work: Path) -> bytes:
    """An agent-style patch: base checked out, `files` written (None: deleted), then
    ``git add -A && git diff --cached --binary``."""
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, capture_output=True)
    git(clone, "checkout", "-q", base)
    for name, text in files.items():
        path = clone / name
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    git(clone, "add", "-A")
    env = {"PATH": os.environ["PATH"], "HOME": str(clone), **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(clone), "diff", "--cached", "--binary"], env=env, check=True, capture_output=True
    ).stdout


def write_manifest(folder: Path, repo: Path, merge: str, *, topics: bool = True, extra: str = "") -> Path:
    """The manifest and its statements in `folder`."""
    (folder / "statements").mkdir(parents=True, exist_ok=True)
    (folder / "statements" / "calc-1.md").write_text(STATEMENT)
    (folder / "statements" / "calc-1-div.md").write_text(DIV_STATEMENT)
    (folder / "statements" / "calc-1-clamp.md").write_text(CLAMP_STATEMENT)
    command = ", ".join(f'"{a}"' for a in TEST_COMMAND)
    text = f'project_id = "calc"\nrepository = "{repo}"\ntest_command = [{command}]\n{extra}\n'
    text += f'[[items]]\nid = "calc-1"\nmerge = "{merge}"\nstatement = "statements/calc-1.md"\n'
    if topics:
        text += (
            '\n[[items.topics]]\nname = "div"\nmatch = "test_div"\nstatement = "statements/calc-1-div.md"\n'
            'files = ["calc/div.py"]\n'
            '\n[[items.topics]]\nname = "clamp"\nmatch = "test_clamp"\n'
            'statement = "statements/calc-1-clamp.md"\n'
            'files = ["calc/clamp.py"]\n'
        )
    path = folder / "items.toml"
    path.write_text(text)
    return path
