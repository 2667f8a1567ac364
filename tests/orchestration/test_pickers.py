"""Pick lists in the trigger forms (issue #29, "fewer keystrokes"): cycles from the analyst copy's
manifest, attempts as published; untrusted files refused quietly, the field staying free text. The
real DAG files' forms carrying them: tests/orchestration/test_dags.py::test_dagbag_integrity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from argusic.orchestration import pickers
from argusic.orchestration.pickers import Choices, attempt_choices, cycle_choices


def analyst_copy(folder: Path, cycles: list) -> Path:
    """An analyst copy as a build publishes it: a versioned folder behind the stable link."""
    version = folder / ".analyst.versions" / "v1"
    version.mkdir(parents=True)
    (version / "manifest.json").write_text(json.dumps({"schema": "argusic.analyst_copy/1", "cycles": cycles}))
    stable = folder / "analyst"
    stable.symlink_to(version, target_is_directory=True)
    return stable


def published_cycle(root: Path, cycle_id: str, attempt_ids: list[str]) -> None:
    (root / cycle_id).mkdir(parents=True)
    rows = [{"attempt_id": a, "outcome": "pass", "score": 100.0} for a in attempt_ids]
    (root / cycle_id / "attempts.json").write_text(
        json.dumps({"cycle_id": cycle_id, "attempts": rows}, indent=1)
    )


CYCLES = [
    {"cycle_id": "2026-11", "publication_state": "published"},
    {"cycle_id": "2026-12", "publication_state": "pending"},
    {"cycle_id": "2026-10", "publication_state": "rejected"},
    {"cycle_id": "2026-12-demo", "publication_state": "published"},
]


def test_cycles_newest_first_with_their_state(tmp_path: Path) -> None:
    choices = cycle_choices(analyst_copy(tmp_path, CYCLES))
    assert choices.values == ["2026-12-demo", "2026-12", "2026-11", "2026-10"]
    assert choices.display["2026-12"] == "2026-12 (pending)"
    assert choices.display["2026-10"] == "2026-10 (rejected)"
    assert choices.param_schema() == {"examples": choices.values, "values_display": choices.display}


def test_hostile_manifest_entries_are_dropped(tmp_path: Path) -> None:
    cycles = [
        {"cycle_id": "2026-12", "publication_state": "published"},
        {"cycle_id": "../../etc", "publication_state": "published"},
        {"cycle_id": "2026-12\n<script>", "publication_state": "published"},
        {"cycle_id": 202612},
        "2026-09",
        {"cycle_id": "2026-08", "publication_state": "<b>published</b> " * 10},
    ]
    choices = cycle_choices(analyst_copy(tmp_path, cycles))
    assert choices.values == ["2026-12", "2026-08"]
    assert choices.display["2026-08"] == "2026-08 (state unknown)"


@pytest.mark.parametrize("breakage", ["missing", "not json", "a list", "too big", "linked manifest"])
def test_no_usable_manifest_leaves_the_field_free_text(tmp_path: Path, breakage: str) -> None:
    stable = analyst_copy(tmp_path, CYCLES)
    manifest = stable.resolve() / "manifest.json"
    if breakage == "missing":
        manifest.unlink()
    elif breakage == "not json":
        manifest.write_text("{cycles: [")
    elif breakage == "a list":
        manifest.write_text("[]")
    elif breakage == "too big":
        manifest.write_text(json.dumps({"cycles": CYCLES, "pad": "x" * pickers.MANIFEST_MAX_BYTES}))
    else:
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text(json.dumps({"cycles": CYCLES}))
        manifest.unlink()
        manifest.symlink_to(elsewhere)
    assert cycle_choices(stable) == Choices()
    assert cycle_choices(stable).param_schema() == {}
    assert cycle_choices(tmp_path / "no-such-folder") == Choices()


def test_attempts_of_published_cycles_newest_first(tmp_path: Path) -> None:
    stable = analyst_copy(tmp_path, CYCLES)
    published = tmp_path / "published"
    published_cycle(published, "2026-11", ["2026-11.board.A-1.p1.a1", "2026-11.board.A-1.p1.a2"])
    published_cycle(published, "2026-12-demo", ["2026-12-demo.board.A-2.p2.a1"])
    published_cycle(published, "2026-12", ["2026-12.board.A-3.p3.a1"])  # pending: nothing to dispute yet
    published_cycle(published, "2026-10", ["2026-10.board.A-4.p4.a1"])  # rejected: never published
    choices = attempt_choices(published, stable)
    assert choices.values == [
        "2026-12-demo.board.A-2.p2.a1",
        "2026-11.board.A-1.p1.a1",
        "2026-11.board.A-1.p1.a2",
    ]
    assert choices.display["2026-11.board.A-1.p1.a2"] == "2026-11.board.A-1.p1.a2 (cycle 2026-11)"


def test_attempts_capped_and_odd_ids_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stable = analyst_copy(tmp_path, [{"cycle_id": "2026-11", "publication_state": "published"}])
    published = tmp_path / "published"
    ids = [f"2026-11.board.A-1.p{i}.a1" for i in range(20)]
    published_cycle(published, "2026-11", ids)
    text = (published / "2026-11" / "attempts.json").read_text()
    text = text.replace(ids[0], "../" + ids[0]).replace(ids[1], ids[1] + "<x>")
    (published / "2026-11" / "attempts.json").write_text(text)
    monkeypatch.setattr(pickers, "MAX_ATTEMPTS", 5)
    assert attempt_choices(published, stable).values == ids[2:7]
    monkeypatch.setattr(pickers, "ATTEMPTS_MAX_BYTES", 100)
    assert attempt_choices(published, stable) == Choices()
