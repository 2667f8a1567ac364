"""Layer 1 end to end on fixture attempts: the real renderer (Chromium in its locked container), the
real task definitions, the hints written beside each record and loaded into the warehouse. Slow: it
needs Docker and the render image (`make render-image`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from argusic.judging.hints import hints_for_attempt
from argusic.warehouse.load_judging import load_hints
from argusic.warehouse.schema import migrate_judging
from conftest import VALID_RECORD
from test_judging_hints import SESSIONS, WEATHER

HTML = Path(__file__).resolve().parents[1] / "fixtures" / "judging" / "html"
CYCLE = VALID_RECORD["cycle_id"]

pytestmark = pytest.mark.slow


def _attempt(runs: Path, agent: str, project: str, no: int, **changes) -> Path:
    doc = json.loads(json.dumps(VALID_RECORD))
    doc.update(agent_id=agent, project_id=project, attempt_no=no, **changes)
    doc["attempt_id"] = f"{CYCLE}.board.{agent}.{project}.a{no}"
    folder = runs / CYCLE / doc["attempt_id"]
    (folder / "out").mkdir(parents=True)
    (folder / "run_record.json").write_text(json.dumps(doc))
    return folder


def _page_attempt(runs: Path, no: int, page: str) -> Path:
    folder = _attempt(runs, "readme-runner", "htmlapp", no)
    (folder / "out" / "artifacts").mkdir()
    shutil.copy(HTML / page, folder / "out" / "artifacts" / "index.html")
    for extra in ("app.js", "style.css"):
        shutil.copy(HTML / extra, folder / "out" / "artifacts" / extra)
    return folder


@pytest.fixture(scope="module")
def computed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Hints of one attempt per fixture, computed and written as after a real attempt."""
    runs = tmp_path_factory.mktemp("runs")
    folders: dict[str, Path] = {}
    for no, (name, page) in enumerate(
        [
            ("renders cleanly", "clean.html"),
            ("console errors", "console_errors.html"),
            ("does not render", "empty.html"),
            ("loops forever", "loop_forever.html"),
            ("draw loop", "raf_loop.html"),
        ],
        start=1,
    ):
        folders[name] = _page_attempt(runs, no, page)
    weather = _attempt(
        runs, "readme-runner", "weatherfetch", 1, report=json.loads((WEATHER / "report.json").read_text())
    )
    for name in ("log.txt", "report.json", "harness.json"):
        shutil.copy(WEATHER / name, weather / "out" / name)
    (weather / "out" / "artifacts" / "out").mkdir(parents=True)
    shutil.copy(WEATHER / "forecast.json", weather / "out" / "artifacts" / "out" / "forecast.json")
    folders["weatherfetch needles"] = weather
    for no, (name, session) in enumerate(
        [
            ("claude-code in order", SESSIONS / "claude_code" / "normal.jsonl"),
            ("claude-code out of order", WEATHER.parent / "claude_code_read_last.jsonl"),
        ],
        start=1,
    ):
        folder = _attempt(runs, "claude-code", "greeter", no, harness={"name": "claude-code", "version": "1"})
        shutil.copy(session, folder / "out" / "session.jsonl")
        folders[name] = folder
    return {name: json.loads(hints_for_attempt(folder).read_text()) for name, folder in folders.items()}


def test_each_page_fixture_gets_its_outcome_from_real_chromium(computed: dict[str, dict]) -> None:
    expected = {
        "renders cleanly": ("clean", 1.0),
        "console errors": ("console_errors", 0.5),
        "does not render": ("not_rendered", 0.0),
        "loops forever": ("timeout", 0.0),
        "draw loop": ("timeout", 0.0),
    }
    got = {
        name: (computed[name]["rendering"]["pages"][0]["outcome"], computed[name]["rendering"]["score"])
        for name in expected
    }
    assert got == expected
    clean = computed["renders cleanly"]["rendering"]["pages"][0]
    assert clean["path"] == "index.html" and len(clean["screenshots"]) == 3
    assert computed["console errors"]["rendering"]["pages"][0]["console_errors"]


def test_needles_and_tool_order_from_real_evidence(computed: dict[str, dict]) -> None:
    weather = computed["weatherfetch needles"]
    assert (weather["needles"]["score"], weather["needles"]["missing"]) == (1.0, [])
    assert (weather["agent_logic"]["score"], weather["agent_logic"]["in_order"]) == (1.0, True)
    assert computed["claude-code in order"]["agent_logic"]["score"] == 1.0
    out_of_order = computed["claude-code out of order"]["agent_logic"]
    assert (out_of_order["score"], out_of_order["in_order"]) == (0.5, False)
    assert computed["renders cleanly"]["needles"]["status"] == "not_applicable"


def test_what_is_computed_is_what_the_warehouse_loads(computed: dict[str, dict], tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    migrate_judging(con)
    paths = []
    for n, hints in enumerate(computed.values()):
        path = tmp_path / f"{n}" / "hints.json"
        path.parent.mkdir()
        path.write_text(json.dumps(hints))
        paths.append(path)
    assert load_hints(con, paths) == len(computed)
    rows = con.execute(
        "SELECT attempt_id, rendering_score, needles_score, agent_logic_score FROM raw.attempt_hints"
    ).fetchall()
    by_id = {r[0]: r[1:] for r in rows}
    for hints in computed.values():
        assert by_id[hints["attempt_id"]] == (
            hints["rendering"]["score"],
            hints["needles"]["score"],
            hints["agent_logic"]["score"],
        )
    table = [
        f"{name:26} needles={h['needles']['score']!s:5} rendering={h['rendering']['score']!s:5} "
        f"agent_logic={h['agent_logic']['score']!s:5} "
        f"({h['rendering']['status']}, {h['agent_logic']['status']})"
        for name, h in computed.items()
    ]
    print("\n" + "\n".join(table))
