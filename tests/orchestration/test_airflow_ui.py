"""The Airflow UI in a real browser, as a smoke test (issue 23): `scripts/airflow_screenshots.py --smoke`
starts the UI on 127.0.0.1 (api-server, scheduler, DAG processor, triggerer: scripts/airflow_ui.sh),
logs in through the login form in headless Chromium and reads the home page and the DAG list.

The rest of the UI story (the documented trigger in the trigger form, the publication approved and an
environment review answered in the browser, the failed trigger's log) is documentation:
`make screenshots` runs it and takes the pictures of docs/airflow.md. The same paths are tested below
the browser: a cycle through a real scheduler with its approval over the REST API
(tests/ops/test_cluster_cycle.py), every form answered over REST
(tests/review/test_review_dags.py), labels and
configuration errors (tests/orchestration/test_dags.py, tests/orchestration/test_airflow_story.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARK = "@@RESULT@@"
DAG_IDS = {path.stem for path in (ROOT / "dags").glob("argusic_*.py")}  # one DAG per file, named so

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("ui")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "airflow_screenshots.py"), "--out", str(out), "--smoke"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    line = next(x for x in done.stdout.splitlines() if x.startswith(MARK))
    return json.loads(line[len(MARK) :])


def test_the_home_page_after_logging_in_shows_every_part_healthy(home) -> None:
    assert {part: home["health"][part]["status"] for part in home["health"]} == {
        "metadatabase": "healthy",
        "scheduler": "healthy",
        "triggerer": "healthy",
        "dag_processor": "healthy",
    }
    text = home["home_text"]
    assert "Health" in text and "Sign in" not in text, text[:2000]
    for part in ("MetaDatabase", "Scheduler", "Triggerer", "Dag Processor"):
        assert re.search(part, text, re.IGNORECASE), (part, text[:2000])
    data = Path(home["screenshots"]["home"]).read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000


def test_every_dag_is_listed_without_an_import_error(home) -> None:
    assert home["import_errors"] == []
    assert set(home["dags"]) >= DAG_IDS, home["dags"]
    assert all(dag_id in home["dags_text"] for dag_id in DAG_IDS), home["dags_text"][:2000]


def test_every_param_of_the_cycle_is_described(home) -> None:
    assert home["params"] and all(d and len(d) > 20 for d in home["params"].values()), home["params"]
