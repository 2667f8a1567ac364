"""The demo forge: reproducible bare repositories, pinned-commit fetches, the candidate catalogue."""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import date
from pathlib import Path

import pytest
from argusic.sources.forge import CATALOGUE_FIELDS, CATALOGUE_SCHEMA, FIXTURES, build_forge, checkout


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    dest = tmp_path_factory.mktemp("forge")
    path = build_forge(dest)
    return dest, json.loads(path.read_text())


def by_id(catalogue: dict) -> dict[str, dict]:
    return {c["project_id"]: c for c in catalogue["candidates"]}


def test_hashes_reproducible_across_builds(forge, tmp_path):
    _, first = forge
    second = json.loads(build_forge(tmp_path / "elsewhere").read_text())
    assert [(c["project_id"], c["commit"]) for c in first["candidates"]] == [
        (c["project_id"], c["commit"]) for c in second["candidates"]
    ]
    strip = [{k: v for k, v in c.items() if k != "repo_url"} for c in first["candidates"]]
    assert strip == [{k: v for k, v in c.items() if k != "repo_url"} for c in second["candidates"]]


def test_rebuild_is_idempotent_and_skips(forge):
    dest, catalogue = forge
    stamps = {p: p.stat().st_mtime_ns for p in (dest / "repos").glob("*.git/argusic-forge.json")}
    assert len(stamps) == len(FIXTURES)
    assert json.loads(build_forge(dest).read_text()) == catalogue
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # nothing rebuilt


def test_changed_repo_is_rebuilt_to_the_same_hash(forge):
    dest, catalogue = forge
    repo = dest / "repos" / "csvstats.git"
    git(
        "--git-dir",
        str(repo),
        "update-ref",
        "refs/heads/main",
        git("--git-dir", str(repo), "rev-parse", "main~1"),
    )
    assert json.loads(build_forge(dest).read_text()) == catalogue
    assert git("--git-dir", str(repo), "rev-parse", "main") == by_id(catalogue)["csvstats"]["commit"]


def test_each_repo_has_two_commits_and_pins_the_latest(forge):
    dest, catalogue = forge
    for c in catalogue["candidates"]:
        repo = Path(c["repo_url"])
        assert repo == dest.resolve() / "repos" / f"{c['project_id']}.git"
        assert git("--git-dir", str(repo), "rev-list", "--count", "main") == "2"
        assert git("--git-dir", str(repo), "rev-parse", "main") == c["commit"]
        assert git("--git-dir", str(repo), "config", "uploadpack.allowAnySHA1InWant") == "true"
        assert git("--git-dir", str(repo), "rev-parse", "--is-bare-repository") == "true"
        assert git("--git-dir", str(repo), "log", "-1", "--format=%an <%ae>") == (
            "Argusic Demo Forge <forge@argusic.invalid>"
        )


def test_shallow_fetch_of_the_pinned_commit_has_no_history(forge, tmp_path):
    _, catalogue = forge
    c = by_id(catalogue)["tonegen-sh"]
    work = tmp_path / "ws"
    work.mkdir()
    # Exactly what the container does.
    git("init", "-q", cwd=work)
    git("fetch", "-q", "--depth", "1", "file://" + c["repo_url"], c["commit"], cwd=work)
    git("-c", "advice.detachedHead=false", "checkout", "-q", "FETCH_HEAD", cwd=work)
    assert git("rev-list", "--count", "HEAD", cwd=work) == "1"
    assert git("rev-parse", "HEAD", cwd=work) == c["commit"]
    assert (work / "README.md").exists()
    assert os.access(work / "bin" / "tonegen.sh", os.X_OK)


def test_checkout_helper_and_file_modes(forge, tmp_path):
    _, catalogue = forge
    c = by_id(catalogue)["banner-sh"]
    project = checkout(c["repo_url"], c["commit"], tmp_path / "banner")
    assert git("rev-list", "--count", "HEAD", cwd=project) == "1"
    assert not os.access(project / "bin" / "banner.sh", os.X_OK)  # on purpose: the recovery fixture
    assert "0.2.0" in (project / "CHANGELOG.md").read_text()


def test_catalogue_fields(forge):
    _, catalogue = forge
    assert catalogue["schema"] == CATALOGUE_SCHEMA == "argusic.catalogue/1"
    assert catalogue["generated_for"] == "demo"
    for c in catalogue["candidates"]:
        assert set(CATALOGUE_FIELDS) <= set(c), c["project_id"]
        assert re.fullmatch(r"[0-9a-f]{40}", c["commit"])
        assert Path(c["repo_url"]).is_absolute()
        assert c["difficulty"] in {"easy", "medium", "hard"}
        assert isinstance(c["size_mb"], float) and 0 < c["size_mb"] < 1
        assert isinstance(c["has_readme"], bool) and isinstance(c["owner_marked_heavy"], bool)
        assert c["needs_gpu"] is False
        date.fromisoformat(c["popular_since"])
        assert c["expected_outcome"] in {
            "pass_full",
            "pass_mock",
            "fail_run",
            "fail_install",
            "recovered",
            "timeout",
            None,
        }


def test_catalogue_covers_every_outcome_and_some_ineligible(forge):
    _, catalogue = forge
    cands = by_id(catalogue)
    eligible = [c for c in cands.values() if c["expected_outcome"]]
    assert 7 <= len(eligible) <= 9
    outcomes = {c["expected_outcome"] for c in eligible}
    assert outcomes == {"pass_full", "pass_mock", "fail_run", "fail_install", "recovered", "timeout"}
    full_languages = {c["language"] for c in eligible if c["expected_outcome"] == "pass_full"}
    assert {"shell", "python"} <= full_languages
    # Recovery fixtures: the two agents differ.
    assert any(
        c["expected_outcome_by_agent"]["readme-runner-norecover"]
        != c["expected_outcome_by_agent"]["readme-runner"]
        for c in eligible
    )
    assert cands["nodocs-tool"]["has_readme"] is False
    assert cands["gpl-widget"]["licence"] == "GPL-3.0-only"
    assert cands["cloudsync-paid"]["paid_account_required"] is True
    assert all(c["has_readme"] and not c["paid_account_required"] for c in eligible)
    # Popularity: some within the 30 days before 2026-12-01, some long before.
    recent = [
        c for c in eligible if date(2026, 11, 1) <= date.fromisoformat(c["popular_since"]) < date(2026, 12, 1)
    ]
    old = [c for c in eligible if date.fromisoformat(c["popular_since"]) < date(2026, 6, 1)]
    assert recent and old


def test_catalogue_loads_in_pool_selection(forge):
    dest, _ = forge
    from argusic.sources.pool import select_pool

    pool = select_pool(dest / "catalogue.json", "2026-12-demo")
    assert set(pool.excluded) == {"nodocs-tool", "gpl-widget", "cloudsync-paid"}
    assert len(pool.entries) == 8
    assert {e.visibility for e in pool.entries} == {"public", "private"}
