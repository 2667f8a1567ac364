"""The agent's changes in an install-and-run attempt (argusic.sandbox.changes): computed on the host against
our repository's pinned commit, the project folder read as hostile."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from argusic.sandbox.changes import CHANGES_FILE, MAX_FILE_BYTES, collect_changes, land_changes

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def pinned(tmp_path: Path) -> tuple[Path, str, Path]:
    """(our repository, the pinned commit, the attempt's project folder checked out from it)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def main():\n    return 1\n\n\nprint(main())\n")
    (repo / "README.md").write_text("# demo\n")
    (repo / ".gitignore").write_text("*.log\ncache/\n")
    (repo / "data.bin").write_bytes(b"\x00\xff\x00")
    (repo / "build").mkdir()
    (repo / "build" / "keep.txt").write_text("tracked in a folder named build\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text("def test_main():\n    assert True\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "pinned")
    commit = git(repo, "rev-parse", "HEAD").strip()
    project = tmp_path / "project"
    git(tmp_path, "clone", "-q", str(repo), str(project))
    return repo, commit, project


def test_no_change_gives_an_empty_patch(pinned) -> None:
    repo, commit, project = pinned
    report = collect_changes(repo, commit, project)
    assert (report.patch, report.files, report.refused) == (b"", [], [])


def test_changes_added_deleted_and_binary_as_a_patch_git_applies(pinned, tmp_path: Path) -> None:
    repo, commit, project = pinned
    (project / "app.py").write_text("def main():\n    return 2\n\n\nprint(main())\n")
    (project / "README.md").unlink()
    (project / "fix.py").write_text("PATCHED = True")  # no newline at the end
    (project / "data.bin").write_bytes(b"\x00\xfe\x00")
    (project / "build" / "keep.txt").write_text("changed in a tracked build folder\n")
    # what an install leaves and what .gitignore ignores: never part of the changes
    for junk in (".venv/lib/site.py", "node_modules/x/index.js", "pkg.egg-info/PKG-INFO", "cache/a.txt",
                 "build/lib/out.py", "__pycache__/app.cpython-311.pyc"):  # fmt: skip
        (project / junk).parent.mkdir(parents=True, exist_ok=True)
        (project / junk).write_text("junk\n")
    (project / "install.log").write_text("ignored by .gitignore\n")

    report = collect_changes(repo, commit, project)

    assert report.files == ["README.md", "app.py", "build/keep.txt", "data.bin", "fix.py"]
    text = report.patch.decode()
    assert "-    return 1\n+    return 2\n" in text
    assert "Binary files a/data.bin and b/data.bin differ" in text
    assert "\\ No newline at end of file" in text
    # the patch is a real one: git applies it (less the binary part, which carries no data)
    applied = tmp_path / "applied"
    git(tmp_path, "clone", "-q", str(repo), str(applied))
    patch = tmp_path / "changes.patch"
    patch.write_bytes(report.patch)
    git(applied, "apply", "--exclude=data.bin", str(patch))
    assert (applied / "app.py").read_text() == (project / "app.py").read_text()
    assert (applied / "fix.py").read_text() == "PATCHED = True"
    assert not (applied / "README.md").exists()


def test_the_project_folder_is_hostile(pinned, tmp_path: Path) -> None:
    repo, commit, project = pinned
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST SECRET\n")
    (project / "app.py").unlink()
    (project / "app.py").symlink_to(secret)  # a tracked file replaced by a link to a host file
    (project / "leak").symlink_to(tmp_path)  # a link to a host folder
    os.link(secret, project / "hard.py")  # a hard link to a host file
    (project / "huge.txt").write_bytes(b"x" * (MAX_FILE_BYTES + 1))

    report = collect_changes(repo, commit, project)

    assert b"HOST SECRET" not in report.patch
    assert "huge.txt" not in report.files
    assert any(r.startswith("hard.py has 2 hard links") for r in report.refused)
    assert any(r.startswith("huge.txt is over") for r in report.refused)
    # the link is not read: app.py counts as deleted (no regular file at its path)
    assert "app.py" in report.files and "leak" not in report.patch.decode()


def test_land_changes_replaces_a_harness_file_and_redacts(pinned, tmp_path: Path) -> None:
    repo, commit, project = pinned
    out = tmp_path / "out"
    out.mkdir()
    (out / CHANGES_FILE).write_text("forged by the agent\n")
    (project / "app.py").write_text("KEY = 'sk-per-run-123'\n")

    report = land_changes("a1", repo, commit, project, out, redactions=[(b"sk-per-run-123", b"[KEY]")])

    landed = (out / CHANGES_FILE).read_bytes()
    assert report is not None and landed == report.patch
    assert b"forged" not in landed and b"sk-per-run" not in landed and b"[KEY]" in landed


def test_land_changes_without_the_commit_is_logged_not_raised(pinned, tmp_path: Path) -> None:
    repo, _, project = pinned
    out = tmp_path / "out"
    out.mkdir()
    assert land_changes("a1", repo, "0" * 40, project, out) is None
    assert not (out / CHANGES_FILE).exists()


# --- the host's collector bounded whatever the commit and the project folder hold (issue 25) --------


def _commit_all(repo: Path) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "more")
    return git(repo, "rev-parse", "HEAD").strip()


def test_a_deleted_blob_is_sized_before_it_is_read(pinned, tmp_path: Path) -> None:
    """Before: a 256 MiB blob the agent deleted was read whole by the host (1.3 GB RSS); now it is
    named from its size (ls-tree -l) and never read."""
    import tracemalloc

    repo, _, _ = pinned
    blob_bytes = 32 * 1024**2
    with open(repo / "huge.bin", "wb") as handle:
        handle.write(b"\0" * blob_bytes + b"\xff")
    commit = _commit_all(repo)
    project = tmp_path / "project2"
    git(tmp_path, "clone", "-q", str(repo), str(project))
    (project / "huge.bin").unlink()
    (project / "README.md").write_text("# demo, changed\n")
    tracemalloc.start()
    try:
        report = collect_changes(repo, commit, project)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024**2, f"{peak} bytes held while collecting"
    assert report.files == ["README.md"]  # the rest of the collection went on
    assert any(
        r.startswith(f"huge.bin (deleted): its committed blob is {blob_bytes + 1} bytes")
        for r in report.refused
    )
    assert b"huge.bin" not in report.patch


def test_the_gitignore_is_capped_in_bytes_patterns_and_wildcards(pinned, tmp_path: Path) -> None:
    repo, _, _ = pinned
    backtracking = "*a*a*a*a*a*a*b"  # a pattern whose regular expression backtracks as n**6
    many = [f"generated-{i}.txt" for i in range(3000)]
    (repo / ".gitignore").write_text("\n".join(["*.log", backtracking, *many]) + "\n")
    commit = _commit_all(repo)
    project = tmp_path / "project2"
    git(tmp_path, "clone", "-q", str(repo), str(project))
    (project / ("a" * 200)).write_text("new\n")  # what the backtracking pattern is tried against
    (project / "x.log").write_text("ignored\n")
    (project / "generated-2999.txt").write_text("past the pattern cap: a change\n")
    report = collect_changes(repo, commit, project)
    assert ".gitignore holds more than 1000 patterns: the rest not applied" in report.refused
    assert any(
        "pattern(s) longer than 256 characters or with more than 4 wildcards" in r for r in report.refused
    )
    assert report.files == ["a" * 200, "generated-2999.txt"]  # *.log still applies
    big = tmp_path / "big"
    (big_repo := big / "repo").mkdir(parents=True)
    git(big_repo, "init", "-q", "-b", "main")
    (big_repo / ".gitignore").write_text("*.log\n" + "#" * (1024**2) + "\n")
    big_commit = _commit_all(big_repo)
    git(big, "clone", "-q", str(big_repo), str(big / "project"))
    report = collect_changes(big_repo, big_commit, big / "project")
    assert f".gitignore is {1024**2 + 7} bytes: only its first 65536 read" in report.refused


def test_the_collection_stops_at_its_deadline_and_infers_no_deletion(pinned) -> None:
    repo, commit, project = pinned
    (project / "README.md").unlink()
    report = collect_changes(repo, commit, project, deadline_seconds=0)
    assert report.refused == ["the collection passed its 0 s deadline: stopped there"]
    assert (report.patch, report.files) == (b"", [])  # nothing claimed deleted from a partial walk
