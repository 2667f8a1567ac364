from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from argusic.sources.pool import CatalogueError, cycle_window, reveal_private, select_pool, write_pool


def _candidate(i: int, **over) -> dict:
    base = {
        "project_id": f"p{i:02d}",
        "repo_url": f"/forge/p{i:02d}.git",
        "commit": f"{i:040x}",
        "language": ["python", "shell", "go", "rust"][i % 4],
        "licence": "MIT",
        "has_readme": True,
        "difficulty": ["easy", "medium", "hard"][i % 3],
        "size_mb": 1.0,
        "popular_since": "2025-01-01",
    }
    return base | over


@pytest.fixture
def catalogue(tmp_path):
    items = [_candidate(i) for i in range(12)]
    items += [_candidate(i, popular_since="2026-11-20") for i in range(12, 16)]  # within 30 days of 12-01
    items += [
        _candidate(20, licence="GPL-3.0-only"),
        _candidate(21, has_readme=False),
        _candidate(22, paid_account_required=True),
        _candidate(23, popular_since="2026-12-15"),
        _candidate(24, size_mb=900.0),
        _candidate(25, owner_marked_heavy=True, popular_since="2026-11-25"),
        _candidate(26, needs_gpu=True),
    ]
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps({"schema": "argusic.catalogue/1", "candidates": items}))
    return path


def test_pool_is_80_20_and_deterministic(catalogue):
    pool = select_pool(catalogue, "2026-12", size=10)
    assert len(pool.public) == 8 and len(pool.private) == 2
    assert pool == select_pool(catalogue, "2026-12", size=10)
    assert all(e.project_id in {f"p{i}" for i in range(12, 16)} | {"p25"} for e in pool.private)
    assert pool.excluded == {
        "p20": "licence GPL-3.0-only is not permissive",
        "p21": "no README",
        "p22": "needs a paid account",
        "p23": "gained popularity after the cycle starts",
    }


def test_default_size_is_largest_fillable_split(catalogue):
    pool = select_pool(catalogue, "2026-12")
    # 14 established and 5 recent eligible: 18 → 14 public / 4 private fits; 19 would need 15 public.
    assert len(pool.private) == round(len(pool.entries) * 0.2) == 4
    assert len(pool.entries) == 18


def test_tiers(catalogue):
    tiers = {e.project_id: e.tier for e in select_pool(catalogue, "2026-12").entries}
    assert tiers.get("p24") == "heavy" and tiers.get("p26") == "gpu"
    assert tiers.get("p25") == "heavy" and tiers["p00"] == "standard"


def test_spread_of_languages(catalogue):
    pool = select_pool(catalogue, "2026-12", size=5)
    assert len({e.language for e in pool.public}) == 4


def test_too_large_pool_is_refused(catalogue):
    with pytest.raises(CatalogueError, match="at most 18"):
        select_pool(catalogue, "2026-12", size=40)


def test_bad_catalogue_names_the_candidate_and_field(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"candidates": [_candidate(1, commit="abc")]}))
    with pytest.raises(CatalogueError, match="candidate p01: commit"):
        select_pool(path, "2026-12")
    path.write_text("[]")
    with pytest.raises(CatalogueError, match="candidates"):
        select_pool(path, "2026-12")


def test_bad_cycle_id():
    with pytest.raises(ValueError, match="YYYY-MM"):
        cycle_window("december")
    assert cycle_window("2026-12-demo") == (date(2026, 12, 1), date(2026, 12, 31))


def test_publish_public_then_reveal_private_after_cycle(catalogue, tmp_path):
    pool = select_pool(catalogue, "2026-12", size=10)
    paths = write_pool(pool, tmp_path / "pools", tmp_path / "pub")
    public = json.loads(Path(paths["public"]).read_text())
    assert len(public["projects"]) == 8 and public["private_count"] == 2
    assert all(len(p["commit"]) == 40 for p in public["projects"])
    assert "p12" not in json.dumps(public) or all(p["project_id"] != "p12" for p in public["projects"])
    # Writing the same pool again is a no-op; a different one is refused.
    write_pool(pool, tmp_path / "pools", tmp_path / "pub")
    with pytest.raises(CatalogueError, match="different pool"):
        write_pool(select_pool(catalogue, "2026-12", size=5), tmp_path / "pools", tmp_path / "pub")
    with pytest.raises(CatalogueError, match="stays sealed"):
        reveal_private(paths["pool"], tmp_path / "pub", date(2026, 12, 31))
    out = reveal_private(paths["pool"], tmp_path / "pub", date(2027, 1, 1))
    assert len(json.loads(out.read_text())["projects"]) == 2
