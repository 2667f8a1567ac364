"""The demo projects' needles (plugins/argusic/judging/tasks/projects/*.toml) against what real runs of
the reference agent showed (tests/fixtures/judging/needles/, see its README): an honest passing run finds
every needle, a failing or forged one does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from argusic.core.tasks import task_for
from argusic.judging.needles import evaluate_needles, gather_sources

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "judging" / "needles"
PROJECTS = ("banner-sh", "greeter-env", "pixelart-py", "tonegen-sh")


def needles_of(project: str, log: str, report: dict | None, tmp_path: Path) -> dict:
    """The needles hint of a board attempt on `project` with `log` as out/log.txt and `report`."""
    task = task_for("board", project)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    (out / "log.txt").write_text(log, encoding="utf-8")
    wanted = sorted({w for n in task.needles for w in n.where})
    return evaluate_needles(task.needles, gather_sources(out, report, wanted))


def recorded(project: str, prefix: str = "") -> tuple[str, dict]:
    folder = FIXTURES / project
    log = (folder / f"{prefix}log.txt").read_text(encoding="utf-8")
    return log, json.loads((folder / f"{prefix}report.json").read_text(encoding="utf-8"))


def test_every_project_with_a_recorded_run_has_needles_from_its_own_refinement() -> None:
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == sorted(PROJECTS)
    for project in PROJECTS:
        task = task_for("board", project)
        assert task.project_id == project and task.version == "1/1"
        assert len(task.needles) >= 3 and {"log", "report"} <= {w for n in task.needles for w in n.where}
    assert task_for("board", "csvstats").needles == ()  # no honest run passes it: no needles


@pytest.mark.parametrize("project", PROJECTS)
def test_an_honest_passing_run_finds_every_needle(project: str, tmp_path: Path) -> None:
    log, report = recorded(project)
    hint = needles_of(project, log, report, tmp_path)
    assert (hint["score"], hint["status"], hint["missing"]) == (1.0, "measured", [])
    assert hint["found"] == [n.id for n in task_for("board", project).needles]


@pytest.mark.parametrize("project", ["banner-sh", "greeter-env"])
def test_the_real_failing_run_without_recovery_finds_none(project: str, tmp_path: Path) -> None:
    """readme-runner-norecover stops at the first failure (banner.sh without its executable bit,
    greeter without its environment) and reports "not verified"."""
    log, report = recorded(project, "norecover_")
    assert report["verified_how"] == "not verified"
    hint = needles_of(project, log, report, tmp_path)
    assert (hint["score"], hint["status"], hint["found"]) == (0.0, "measured", [])


# Forged runs: a report that claims what the README promises, over a log where the program never
# printed what it prints when it runs (the output was `touch`ed, the tests never ran).
FORGED = {
    "pixelart-py": (
        "[t] STEP run: touch out/gradient.png\n",
        "out/gradient.png is there, a 64x32 image as the README says",
        {"size-decoded"},
    ),
    "tonegen-sh": (
        "[t] STEP run: touch out/tone.wav\n",
        "out/tone.wav is there: one second of a 444 Hz square wave, as the README says",
        set(),
    ),
}


@pytest.mark.parametrize("project", sorted(FORGED))
def test_a_forged_run_does_not_score_full(project: str, tmp_path: Path) -> None:
    log, claim, expected_found = FORGED[project]
    _, report = recorded(project)
    report.update(verified_how=claim, final_state=f"Installed and ran; {claim}.")
    hint = needles_of(project, log, report, tmp_path)
    assert set(hint["found"]) == expected_found
    assert hint["score"] == (0.5 if expected_found else 0.0)
    assert "png-written" in hint["missing"] or "wav-written" in hint["missing"]


def test_no_report_leaves_the_report_needles_undetermined(tmp_path: Path) -> None:
    log, _ = recorded("greeter-env")
    hint = needles_of("greeter-env", log, None, tmp_path)
    assert hint["found"] == ["card-written"] and hint["missing"] == []
    assert hint["status"] == "unavailable" and hint["score"] is None
