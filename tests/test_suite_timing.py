"""The suite's own clock (tests/suite_timing.py, scripts/suite_budget.py): files ordered slowest first,
bad durations files ignored, growth reported. No timing of this machine is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from suite_timing import known_durations, slowest_first

ROOT = Path(__file__).resolve().parents[1]


class Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


def ids(items) -> list[str]:
    return [i.nodeid for i in items]


def test_files_go_slowest_first_keeping_their_own_order_and_unknown_files_count_as_the_median() -> None:
    items = [Item(n) for n in ("a.py::1", "b.py::1", "a.py::2", "c.py::1", "d.py::1", "b.py::2")]
    durations = {"a.py": 5.0, "b.py": 50.0, "c.py": 1.0}  # median 5: d.py ties with a.py, after it
    assert ids(slowest_first(items, durations)) == [
        "b.py::1", "b.py::2", "a.py::1", "a.py::2", "d.py::1", "c.py::1",
    ]  # fmt: skip
    assert ids(slowest_first(items, {})) == ids(items)  # nothing known: pytest's own order


def test_a_missing_or_broken_durations_file_never_stops_the_suite(tmp_path: Path) -> None:
    assert known_durations(tmp_path / "missing.json") == {}
    for text in ("not json", "[1, 2]", '{"files": [1]}', '{"files": {"a.py": "slow", "b.py": -1}}'):
        (tmp_path / "d.json").write_text(text)
        assert known_durations(tmp_path / "d.json") == {}
    (tmp_path / "d.json").write_text('{"files": {"a.py": 3, "b.py": "x"}}')
    assert known_durations(tmp_path / "d.json") == {"a.py": 3.0}


def test_the_committed_durations_file_is_readable_and_names_test_files() -> None:
    durations = known_durations()
    assert durations and all(
        name.startswith("tests/") and Path(name).name.startswith("test_") and name.endswith(".py")
        for name in durations
    )


def test_the_budget_script_shows_what_grew_and_refuses_what_is_not_a_timings_file(tmp_path: Path) -> None:
    before = {"wall_seconds": 100, "workers": {"gw0": 90}, "files": {"tests/a.py": 50, "tests/b.py": 40}}
    after = {"wall_seconds": 130, "workers": {"gw0": 120}, "files": {"tests/a.py": 80, "tests/b.py": 41,
                                                                      "tests/c.py": 30}}  # fmt: skip
    (tmp_path / "before.json").write_text(json.dumps(before))
    (tmp_path / "after.json").write_text(json.dumps(after))
    script = [sys.executable, str(ROOT / "scripts" / "suite_budget.py")]
    shown = subprocess.run(
        [*script, "--last", str(tmp_path / "after.json"), "--against", str(tmp_path / "before.json")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    grew = shown[shown.index("grew against") :]
    assert "tests/a.py" in grew and "tests/c.py" in grew and "tests/b.py" not in grew  # +1 s: noise
    (tmp_path / "bad.json").write_text("[]")
    refused = subprocess.run([*script, "--last", str(tmp_path / "bad.json")], capture_output=True, text=True)
    assert refused.returncode != 0 and "not written by tests/suite_timing.py" in refused.stderr
