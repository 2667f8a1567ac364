"""The Airflow UI as a person sees it (scripts/airflow_screenshots.py): one UI on 127.0.0.1, the
documented trigger through the trigger form, screenshots in headless Chromium, and what the REST API
says about the same run. Several minutes: one run of the UI for every check.

The script runs here with --skip-demo: the demo cycle is told end to end by tests/test_cli_demo.py, and
`make airflow-screenshots` (the documentation's pictures) runs the whole sequence, demo first. Without
the demo, the trigger that must fail at once asks the documented cycle, just run with a pool of 3, for
a pool of 5."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from argusic.executor import docker_available

ROOT = Path(__file__).resolve().parents[1]
MARK = "@@RESULT@@"


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not docker_available():
        pytest.skip("no Docker daemon answers")
    out = tmp_path_factory.mktemp("screenshots")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "airflow_screenshots.py"), "--out", str(out), "--skip-demo"],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    line = next(x for x in done.stdout.splitlines() if x.startswith(MARK))
    return json.loads(line[len(MARK) :])


pytestmark = [pytest.mark.slow, pytest.mark.docker]


def test_the_health_page_is_green_and_every_param_is_described(shots) -> None:
    assert "demo" not in shots  # --skip-demo
    assert {part: shots["health"][part]["status"] for part in shots["health"]} == {
        "metadatabase": "healthy",
        "scheduler": "healthy",
        "triggerer": "healthy",
        "dag_processor": "healthy",
    }
    assert shots["params"] and all(d and len(d) > 20 for d in shots["params"].values()), shots["params"]


def test_the_documented_trigger_works_and_the_run_id_carries_the_cycle(shots) -> None:
    run = shots["docs_run"]
    assert run["state"] == "success", run["tis"]
    assert run["run_id"].startswith("cycle__2026-12-ui__")
    attempts = [t for t in run["tis"] if t["task_id"] == "run_attempt"]
    assert len(attempts) == 9 and {t["state"] for t in attempts} == {"success"}
    # Every task ran once (no retries); the opt-in repair attempts (repair off) were skipped unrun.
    assert all(t["try_number"] == 1 for t in run["tis"] if t["task_id"] != "run_repair_attempt")
    assert [(t["state"], t["try_number"]) for t in run["tis"] if t["task_id"] == "run_repair_attempt"] == [
        ("skipped", 0)
    ]


def test_attempts_are_labelled_before_they_start_and_with_how_they_ended(shots) -> None:
    waiting = shots["pending"]
    assert waiting, "no moment with attempts waiting was seen"
    assert all(
        re.fullmatch(r"readme-runner / [\w-]+ / attempt [123]( · .*)?", w["label"] or "") for w in waiting
    )
    assert any(w["state"] in (None, "scheduled", "queued") for w in waiting)
    ended = [t["rendered_map_index"] for t in shots["docs_run"]["tis"] if t["task_id"] == "run_attempt"]
    assert all(" · ✓ " in label or " · ✗ " in label for label in ended), ended
    assert any("✗ install failed" in label for label in ended) and any("✓ ran" in label for label in ended)


def test_an_attempt_log_shows_its_own_log_then_how_it_ended(shots) -> None:
    logs = shots["docs_run"]["logs"]
    attempt = logs["run_attempt[0]"]
    live = [line for line in attempt if line.startswith("│ ")]
    assert any("STEP install" in line for line in live), attempt
    summary = "\n".join(attempt[attempt.index(next(x for x in attempt if x.startswith("── "))) :])
    parts = ("final state: completed", "agent's report: installed yes", "served log:", "served recording:")
    for part in (*parts, "raw log: sha256", "run record:", "decided by the rubric"):
        assert part in summary, (part, summary)
    published = "\n".join(logs["publish"])
    assert (
        "as scored by the rubric" in published and "pass_full, points 30+30+20+20, score 100.0" in published
    )
    assert re.search(r"zigfmt / attempt 1: fail, points 0\+0\+0\+0, score 0\.0", published), published


def test_a_successful_run_has_no_error_lines(shots) -> None:
    assert shots["docs_run"]["error_events"] == []
    build = "\n".join(shots["docs_run"]["logs"]["build"])
    assert "leaked semaphore" not in build and "resource_tracker" not in build


def test_a_different_pool_for_the_demo_cycle_fails_at_once_with_the_way_on(shots) -> None:
    conflict = shots["conflict_run"]
    assert conflict["state"] == "failed"
    assert conflict["prepare_pool"] == {"state": "failed", "try_number": 1}
    text = "\n".join(conflict["log"])
    assert "cycle 2026-12-ui already has a pool" in text and "3 projects" in text, text
    assert "leave pool_size and catalogue empty" in text and "new cycle id" in text


def test_the_publication_was_approved_in_the_browser_by_the_logged_in_user(shots) -> None:
    approval = shots["approval"]
    assert approval["chosen_options"] == ["Approve"] and approval["responded_by_user"]["name"] == "admin"
    assert approval["params_input"]["note"].startswith("screenshots script: read the changes")
    assert "publish" in shots["docs_run"]["logs"] and shots["docs_run"]["state"] == "success"
    assert approval["answered_tries"] == [1]  # read, then answered once: no race with the scheduler


def test_an_environment_review_is_answered_in_the_browser_and_the_api(shots) -> None:
    review = shots["review"]
    assert review["state"] == "success", review
    assert review["labels"] and all(label.endswith(" · cycle 2026-12-ui") for label in review["labels"])
    assert ["admin", "Environment at fault"] in review["answers"]  # JSON: pairs come back as lists
    assert len(review["answers"]) == len(review["labels"])


def test_the_screenshots_were_taken(shots) -> None:
    names = {"pending", "grid", "attempts", "log", "home", "trigger", "trigger_advanced", "conflict"}
    names |= {"hitl_approval", "hitl_approved", "hitl_review"}
    assert names <= set(shots["screenshots"])
    for path in shots["screenshots"].values():
        data = Path(path).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 20_000, path
