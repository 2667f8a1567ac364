"""The demo forge: small fixture projects as bare git repositories, plus their candidate catalogue.

`build_forge(dest)` makes `dest/repos/<project_id>.git` from the sources in
`plugins/argusic/demo_projects/<project_id>/` and writes `dest/catalogue.json`. Commits are built
with git plumbing from the source files (file modes come from the fixture table below, not from the
working tree) with fixed author, committer and dates, so the same sources always give the same
commit hashes, on any machine. Each repository has two commits; the pinned commit is the latest.
Rebuilding is idempotent: an up-to-date repository is left alone.

The container fetches only the pinned commit, so every bare repository allows fetching any SHA-1
(`uploadpack.allowAnySHA1InWant`):

    git init; git fetch --depth 1 file:///forge/source <sha>; git checkout FETCH_HEAD

Catalogue (`argusic.catalogue/1`): see CATALOGUE_FIELDS and the module-level FIXTURES table. The
desktop applications (DESKTOP_FIXTURES: a Tk clock) live in the same forge with a catalogue of their
own, `dest/desktop_catalogue.json` (`build_desktop_forge`), so that the demo cycle is unchanged.

Repair fixtures (REPAIR_FIXTURES: `repairkit`) have a history of merged pull requests instead of two
release commits: an initial import from `demo_projects/<id>/`, then per pull request a branch of
commits (each commit's changed files, whole, from `demo_history/<id>/<overlay>/`) merged with a real
merge commit (`--no-ff`: first parent the old main, second the branch's tip). Repair items are built
from those merges (`repair/manifests/<id>.toml` names them by hash; the hashes are fixed because the
history is built like the other fixtures, from fixed authors and dates). They have a catalogue of their
own, `dest/repair_catalogue.json` (`build_repair_forge`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from argusic.core.settings import PACKAGE_DIR

CATALOGUE_SCHEMA = "argusic.catalogue/1"
FORGE_VERSION = "1"  # bump when the way commits are built changes (it changes every hash)
SOURCES = PACKAGE_DIR / "demo_projects"  # package data: the demo projects stay at the package root
HISTORY = PACKAGE_DIR / "demo_history"
AUTHOR_NAME = "Argusic Demo Forge"
AUTHOR_EMAIL = "forge@argusic.invalid"
STAMP_FILE = "argusic-forge.json"

CATALOGUE_FIELDS = (
    "project_id",
    "repo_url",
    "commit",
    "language",
    "licence",
    "has_readme",
    "difficulty",
    "size_mb",
    "owner_marked_heavy",
    "needs_gpu",
    "popular_since",
    "paid_account_required",
    "expected_outcome",
)

# expected_outcome documents what `readme-runner` does (demo only; null for ineligible candidates);
# expected_outcome_by_agent adds its --no-recovery twin. "timeout" needs an attempt budget shorter
# than the harness's --command-timeout (the run step never returns; the container is killed).
FIXTURES: list[dict[str, Any]] = [
    {
        "project_id": "tonegen-sh",
        "language": "shell",
        "licence": "MIT",
        "difficulty": "easy",
        "popular_since": "2025-06-14",
        "executables": ["bin/tonegen.sh"],
        "dates": ("2025-05-02T09:00:00+00:00", "2025-06-10T16:30:00+00:00"),
        "outcome": ("pass_full", "pass_full"),
    },
    {
        "project_id": "pixelart-py",
        "language": "python",
        "licence": "Apache-2.0",
        "difficulty": "medium",
        "owner_marked_heavy": True,
        "popular_since": "2024-11-03",
        "dates": ("2024-09-18T08:15:00+00:00", "2024-10-29T12:00:00+00:00"),
        "outcome": ("pass_full", "pass_full"),
    },
    {
        "project_id": "weatherfetch",
        "language": "python",
        "licence": "MIT",
        "difficulty": "medium",
        "popular_since": "2026-11-12",
        "dates": ("2026-10-20T10:00:00+00:00", "2026-11-08T18:45:00+00:00"),
        "outcome": ("pass_mock", "pass_mock"),
    },
    {
        "project_id": "csvstats",
        "language": "python",
        "licence": "MIT",
        "difficulty": "easy",
        "popular_since": "2025-02-20",
        "dates": ("2025-01-05T11:00:00+00:00", "2025-02-11T09:20:00+00:00"),
        "outcome": ("fail_run", "fail_run"),
    },
    {
        "project_id": "zigfmt",
        "language": "zig",
        "licence": "Apache-2.0",
        "difficulty": "hard",
        "popular_since": "2025-09-01",
        "executables": ["configure"],
        "dates": ("2025-07-30T14:00:00+00:00", "2025-08-27T07:10:00+00:00"),
        "outcome": ("fail_install", "fail_install"),
    },
    {
        "project_id": "banner-sh",
        "language": "shell",
        "licence": "MIT",
        "difficulty": "easy",
        "popular_since": "2026-11-20",
        "executables": [],  # bin/banner.sh is committed without its executable bit, on purpose
        "dates": ("2026-10-28T13:00:00+00:00", "2026-11-15T10:05:00+00:00"),
        "outcome": ("recovered", "fail_run"),
    },
    {
        "project_id": "greeter-env",
        "language": "python",
        "licence": "Apache-2.0",
        "difficulty": "medium",
        "popular_since": "2025-12-08",
        "dates": ("2025-11-02T09:30:00+00:00", "2025-11-30T17:00:00+00:00"),
        "outcome": ("recovered", "fail_run"),
    },
    {
        "project_id": "tickerd",
        "language": "python",
        "licence": "MIT",
        "difficulty": "hard",
        "popular_since": "2025-04-11",
        "dates": ("2025-03-01T08:00:00+00:00", "2025-04-02T15:40:00+00:00"),
        "outcome": ("timeout", "timeout"),
    },
    # Ineligible candidates: pool selection must filter them out.
    {
        "project_id": "nodocs-tool",
        "language": "shell",
        "licence": "MIT",
        "difficulty": "easy",
        "popular_since": "2026-11-18",
        "executables": ["tool.sh"],
        "dates": ("2026-10-01T10:00:00+00:00", "2026-11-02T10:00:00+00:00"),
        "outcome": (None, None),
    },
    {
        "project_id": "gpl-widget",
        "language": "python",
        "licence": "GPL-3.0-only",
        "difficulty": "easy",
        "popular_since": "2025-03-15",
        "dates": ("2025-02-01T10:00:00+00:00", "2025-03-01T10:00:00+00:00"),
        "outcome": (None, None),
    },
    {
        "project_id": "cloudsync-paid",
        "language": "python",
        "licence": "MIT",
        "difficulty": "medium",
        "paid_account_required": True,
        "popular_since": "2026-11-25",
        "dates": ("2026-10-10T10:00:00+00:00", "2026-11-21T10:00:00+00:00"),
        "outcome": (None, None),
    },
]


# Desktop applications (methodology section 7, item 6), in a catalogue of their own
# (desktop_catalogue.json, `build_desktop_forge`): the demo cycle's pool, budgets (15 s) and board stay
# as they are. "ran_unverified": installed and ran (the window stayed up on the virtual display, a
# version answered) but nothing was decoded: 80 points, a fail by the rubric.
DESKTOP_FIXTURES: list[dict[str, Any]] = [
    {
        "project_id": "tkclock",
        "language": "python",
        "licence": "MIT",
        "difficulty": "easy",
        "popular_since": "2026-11-16",
        "dates": ("2026-10-05T09:00:00+00:00", "2026-11-12T14:20:00+00:00"),
        "outcome": ("ran_unverified", "ran_unverified"),
    },
]
DESKTOP_CATALOGUE = "desktop_catalogue.json"

# Fixtures with merged pull requests, for repair items (issue 13). `pull_requests` are merged in order;
# each commit is (message, overlay folder under demo_history/<project_id>/, date); `merged` is the
# merge commit's date. The first pull request is bundled on purpose (two unrelated fixes, one commit
# each): its items are split by topic. The catalogue pins the last merge.
REPAIR_FIXTURES: list[dict[str, Any]] = [
    {
        "project_id": "repairkit",
        "language": "python",
        "licence": "MIT",
        "difficulty": "easy",
        "popular_since": "2025-08-04",
        "dates": ("2025-06-02T09:00:00+00:00",),
        "pull_requests": [
            {
                "number": 1,
                "head": "dana/review-fixes",
                "title": "Review fixes: slugs and long version numbers",
                "commits": [
                    (
                        "Slugs: one separator between words, none at the ends",
                        "pr1-slugs",
                        "2025-06-10T10:15:00+00:00",
                    ),
                    (
                        "Versions: keep every digit, refuse trailing text",
                        "pr1-versions",
                        "2025-06-10T11:40:00+00:00",
                    ),
                ],
                "merged": "2025-06-12T08:30:00+00:00",
            },
            {
                "number": 2,
                "head": "lee/duration-spaces",
                "title": "Durations: read spaces between parts and upper-case units",
                "commits": [
                    (
                        "Durations: spaces between parts, upper-case units",
                        "pr2-durations",
                        "2025-06-20T14:05:00+00:00",
                    ),
                ],
                "merged": "2025-06-23T09:00:00+00:00",
            },
            {
                "number": 3,
                "head": "dana/format-duration",
                "title": "Add format_duration",
                "commits": [
                    (
                        "Durations: format_duration, the inverse of parse_duration",
                        "pr3-format-duration",
                        "2025-07-01T16:20:00+00:00",
                    ),
                ],
                "merged": "2025-07-03T12:00:00+00:00",
            },
        ],
        # Not measured with readme-runner: this catalogue feeds repair items, not the install-and-run
        # pool (the README installs and runs like the other fixtures, should it join FIXTURES).
        "outcome": (None, None),
    },
]
REPAIR_CATALOGUE = "repair_catalogue.json"


def _git(
    args: list[str], git_dir: Path, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> str:
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(git_dir),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_DIR": str(git_dir),
        "LC_ALL": "C",
    }
    if env:
        base.update(env)
    done = subprocess.run(["git", *args], env=base, input=stdin, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode().strip()


def _source_files(project_id: str) -> dict[str, bytes]:
    root = SOURCES / project_id
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files[path.relative_to(root).as_posix()] = path.read_bytes()
    if not files:
        raise FileNotFoundError(f"no fixture sources in {root}")
    return files


def _changelog(fixture: dict[str, Any], releases: int) -> bytes:
    lines = [f"# Changes in {fixture['project_id']}", ""]
    for n in range(releases, 0, -1):
        lines.append(f"- 0.{n}.0 ({fixture['dates'][n - 1][:10]})")
    return ("\n".join(lines) + "\n").encode()


def _trees(fixture: dict[str, Any]) -> list[tuple[str, dict[str, bytes]]]:
    """The two commits' messages and trees: the first without the latest changelog entry."""
    files = _source_files(fixture["project_id"])
    first = dict(files, **{"CHANGELOG.md": _changelog(fixture, 1)})
    second = dict(files, **{"CHANGELOG.md": _changelog(fixture, 2)})
    return [("Initial import", first), ("Release 0.2.0", second)]


def _overlay(project_id: str, folder: str) -> dict[str, bytes]:
    """One history commit's changed files, whole (a commit of the history only adds or changes files)."""
    root = HISTORY / project_id / folder
    files = {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    if not files:
        raise FileNotFoundError(f"no history files in {root}")
    return files


def _commits(fixture: dict[str, Any]) -> list[tuple[str, dict[str, bytes], str, list[int]]]:
    """Every commit as (message, tree, date, parent indices), parents before children; the last one
    is pinned. Two release commits, or the pull-request history of a repair fixture."""
    if "pull_requests" not in fixture:
        (m1, t1), (m2, t2) = _trees(fixture)
        d1, d2 = fixture["dates"]
        return [(m1, t1, d1, []), (m2, t2, d2, [0])]
    commits: list[tuple[str, dict[str, bytes], str, list[int]]] = [
        ("Initial import", _source_files(fixture["project_id"]), fixture["dates"][0], [])
    ]
    main = 0
    for pr in fixture["pull_requests"]:
        tip = main
        for message, folder, date in pr["commits"]:
            tree = dict(commits[tip][1], **_overlay(fixture["project_id"], folder))
            commits.append((message, tree, date, [tip]))
            tip = len(commits) - 1
        merge = f"Merge pull request #{pr['number']} from {pr['head']}\n\n{pr['title']}"
        # main did not move while the branch was open: the merge's tree is the branch's tip
        commits.append((merge, commits[tip][1], pr["merged"], [main, tip]))
        main = len(commits) - 1
    return commits


def _fingerprint(fixture: dict[str, Any]) -> str:
    h = hashlib.sha256()
    h.update(FORGE_VERSION.encode())
    h.update(json.dumps(fixture, sort_keys=True, default=list).encode())
    for message, tree, *_ in _commits(fixture):
        h.update(message.encode())
        for path in sorted(tree):
            h.update(path.encode() + b"\0" + hashlib.sha256(tree[path]).digest())
    return h.hexdigest()


def _commit_env(date: str) -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": AUTHOR_NAME,
        "GIT_AUTHOR_EMAIL": AUTHOR_EMAIL,
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": AUTHOR_NAME,
        "GIT_COMMITTER_EMAIL": AUTHOR_EMAIL,
        "GIT_COMMITTER_DATE": date,
    }


def _build_repo(fixture: dict[str, Any], path: Path) -> str:
    """Create the bare repository at `path` (which must not exist); return the pinned commit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "init", "--bare", "--quiet", "--initial-branch=main", str(path)],
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(path.parent),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
        },
        check=True,
        capture_output=True,
    )
    _git(["config", "uploadpack.allowAnySHA1InWant", "true"], path)
    _git(["config", "uploadpack.allowReachableSHA1InWant", "true"], path)
    executables = set(fixture.get("executables", []))
    index = path / "forge-index"
    made: list[str] = []
    for message, tree, date, parents in _commits(fixture):
        entries = []
        for file_path in sorted(tree):
            blob = _git(["hash-object", "-w", "--no-filters", "--stdin"], path, stdin=tree[file_path])
            mode = "100755" if file_path in executables else "100644"
            entries.append(f"{mode} {blob}\t{file_path}\n")
        env = {"GIT_INDEX_FILE": str(index)}
        _git(["read-tree", "--empty"], path, env=env)
        _git(["update-index", "--add", "--index-info"], path, env=env, stdin="".join(entries).encode())
        tree_id = _git(["write-tree"], path, env=env)
        args = ["commit-tree", tree_id, "-m", message]
        for parent in parents:
            args += ["-p", made[parent]]
        made.append(_git(args, path, env=_commit_env(date)))
    index.unlink(missing_ok=True)
    _git(["update-ref", "refs/heads/main", made[-1]], path)
    return made[-1]


def _read_stamp(path: Path) -> dict[str, Any] | None:
    try:
        stamp = json.loads((path / STAMP_FILE).read_text())
        if _git(["rev-parse", "--verify", "refs/heads/main"], path) != stamp["commit"]:
            return None
        return stamp
    except (OSError, ValueError, KeyError, RuntimeError):
        return None


def ensure_repo(fixture: dict[str, Any], repos: Path) -> str:
    """Build one fixture's bare repository unless it is up to date; return its pinned commit."""
    final = repos / f"{fixture['project_id']}.git"
    fingerprint = _fingerprint(fixture)
    stamp = _read_stamp(final) if final.exists() else None
    if stamp and stamp.get("fingerprint") == fingerprint:
        return stamp["commit"]
    tmp = repos / f".{fixture['project_id']}.git.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    commit = _build_repo(fixture, tmp)
    (tmp / STAMP_FILE).write_text(json.dumps({"fingerprint": fingerprint, "commit": commit}) + "\n")
    if final.exists():
        shutil.rmtree(final)
    try:
        tmp.rename(final)
    except OSError:  # built concurrently by someone else: keep theirs if it is the same
        shutil.rmtree(tmp, ignore_errors=True)
        stamp = _read_stamp(final)
        if not stamp or stamp.get("fingerprint") != fingerprint:
            raise
    return commit


def _size_mb(fixture: dict[str, Any]) -> float:
    """Size of the pinned tree's files in MB (10^6 bytes): deterministic, unlike disk usage."""
    tree = _commits(fixture)[-1][1]
    return round(sum(len(b) for b in tree.values()) / 1_000_000, 4)


def candidate(fixture: dict[str, Any], repo: Path, commit: str) -> dict[str, Any]:
    files = _source_files(fixture["project_id"])
    outcome, outcome_norecover = fixture["outcome"]
    return {
        "project_id": fixture["project_id"],
        "repo_url": str(repo.resolve()),
        "commit": commit,
        "language": fixture["language"],
        "licence": fixture["licence"],
        "has_readme": any(p.lower() in ("readme.md", "readme") for p in files),
        "difficulty": fixture["difficulty"],
        "size_mb": _size_mb(fixture),
        "owner_marked_heavy": fixture.get("owner_marked_heavy", False),
        "needs_gpu": fixture.get("needs_gpu", False),
        "popular_since": fixture["popular_since"],
        "paid_account_required": fixture.get("paid_account_required", False),
        "expected_outcome": outcome,
        "expected_outcome_by_agent": (
            {"readme-runner": outcome, "readme-runner-norecover": outcome_norecover} if outcome else None
        ),
    }


def build_forge(
    dest: Path, fixtures: list[dict[str, Any]] | None = None, name: str = "catalogue.json"
) -> Path:
    """Build (or bring up to date) the demo forge under `dest`; return the catalogue path."""
    dest = Path(dest).resolve()
    repos = dest / "repos"
    repos.mkdir(parents=True, exist_ok=True)
    candidates = []
    for fixture in FIXTURES if fixtures is None else fixtures:
        commit = ensure_repo(fixture, repos)
        candidates.append(candidate(fixture, repos / f"{fixture['project_id']}.git", commit))
    catalogue = {"schema": CATALOGUE_SCHEMA, "generated_for": "demo", "candidates": candidates}
    text = json.dumps(catalogue, indent=2) + "\n"
    path = dest / name
    if not path.exists() or path.read_text() != text:
        tmp = dest / f".{name}.tmp-{os.getpid()}"
        tmp.write_text(text)
        tmp.replace(path)
    return path


def build_desktop_forge(dest: Path) -> Path:
    """The desktop applications' repositories in the same forge, and their own catalogue."""
    return build_forge(dest, DESKTOP_FIXTURES, DESKTOP_CATALOGUE)


def build_repair_forge(dest: Path) -> Path:
    """The repair fixtures' repositories (merged pull requests) in the same forge, and their catalogue."""
    return build_forge(dest, REPAIR_FIXTURES, REPAIR_CATALOGUE)


def checkout(repo_url: str, commit: str, dest: Path) -> Path:
    """Fetch only the pinned commit into `dest`, as the attempt container does (tests, local runs)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(dest),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    for args in (
        ["init", "--quiet"],
        ["fetch", "--quiet", "--depth", "1", Path(repo_url).resolve().as_uri(), commit],
        ["-c", "advice.detachedHead=false", "checkout", "--quiet", "FETCH_HEAD"],
    ):
        subprocess.run(["git", "-C", str(dest), *args], env=env, check=True, capture_output=True)
    return dest


if __name__ == "__main__":
    import sys

    print(build_forge(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/forge")))
