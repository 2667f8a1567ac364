"""Run ids that name their subject, against a real Airflow (issue 29, point 10): a real `airflow
api-server` on 127.0.0.1 (its metadata DB migrated, our DAGs serialized into it), with the package's
plugins loaded from their entry points. A person logged in (simple auth manager) triggers each of our
DAGs through the REST API without a run id, as the UI's Trigger button does when Advanced Options →
Run ID is left empty: each run is named after its subject (cycle, attempt, queue), the triggering user
is still the person, and a run id given is kept. In headless Chromium, the Trigger button itself: the
page it opens is the named run's."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from hitl_people import Person, api_server, free_port, sign_in
from test_dags import PYTHON, airflow_env, migrate_metadata_db

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("ARGUSIC_CHROMIUM", "/usr/bin/chromium")
ATTEMPT = "2026-12.board.readme-runner.demo-cli.a2"
TIME = r"\d{8}T\d{6}\.\d{3}Z"


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("runids")
    port = free_port()
    env = airflow_env(base, AIRFLOW_UI_PORT=str(port), AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="ana:admin")
    migrate_metadata_db(env)
    done = subprocess.run(
        [str(Path(PYTHON).parent / "airflow"), "dags", "reserialize"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    with api_server(env, base / "api-server.log", port) as server:
        yield {"env": env, "base": base, **server, "log": base / "api-server.log"}


def _trigger(person: Person, dag_id: str, conf: dict, **body) -> dict:
    got = person.session.post(
        f"{person.url}/api/v2/dags/{dag_id}/dagRuns",
        json={"logical_date": None, "conf": conf, **body},
        timeout=60,
    )
    assert got.status_code == 200, (dag_id, got.status_code, got.text)
    return got.json()


def test_a_trigger_without_a_run_id_is_named_after_its_subject(airflow) -> None:
    ana = Person(airflow["url"], "ana", airflow["passwords"]["ana"])
    plugins = ana.session.get(f"{airflow['url']}/api/v2/plugins", timeout=30).json()["plugins"]
    assert "argusic_run_ids" in {p["name"] for p in plugins}, plugins
    cases = [
        ("argusic_review", {"cycle_id": "2026-12"}, rf"review__2026-12__{TIME}"),
        ("argusic_review", {}, rf"review__all-cycles__{TIME}"),
        ("argusic_judging_review", {"cycle_id": "2026-12", "bulk": True}, rf"judging__2026-12__bulk__{TIME}"),
        ("argusic_judging_review", {"attempt_ids": [ATTEMPT]},
         rf"judging__all-cycles__{re.escape(ATTEMPT)}__{TIME}"),
        ("argusic_disputes", {"attempt_id": ATTEMPT, "claim": "our mirror was stale", "contact": "m@x.org"},
         rf"dispute__{re.escape(ATTEMPT)}__{TIME}"),
        ("argusic_emergency_stop", {"action": "stop", "reason": "drill", "cycle": "2026-12-runids"},
         rf"stop__2026-12-runids__{TIME}"),
        ("argusic_emergency_stop", {"action": "resume", "reason": "drill over"},
         rf"resume__all-cycles__{TIME}"),
        ("argusic_cycle", {"cycle_id": "2026-12-ui", "demo": True, "pool_size": 3},
         rf"cycle__2026-12-ui__{TIME}"),
    ]  # fmt: skip
    for dag_id, conf, pattern in cases:
        run = _trigger(ana, dag_id, conf)
        assert re.fullmatch(pattern, run["dag_run_id"]), (dag_id, run["dag_run_id"])
        assert run["triggering_user_name"] == "ana", run  # who triggered: still the person logged in
        assert run["run_type"] == "manual" and run["conf"] == conf, run
        again = ana.session.get(
            f"{airflow['url']}/api/v2/dags/{dag_id}/dagRuns/{run['dag_run_id']}", timeout=30
        )
        assert again.status_code == 200 and again.json()["triggering_user_name"] == "ana"
    # a run id given is kept; an attempt id unsafe in a run id keeps Airflow's own id (the DAG refuses it)
    given = _trigger(ana, "argusic_review", {"cycle_id": "2026-12"}, dag_run_id="review__2026-12__mine")
    assert given["dag_run_id"] == "review__2026-12__mine"
    unsafe = _trigger(ana, "argusic_disputes", {"attempt_id": "a..b/c", "claim": "x", "contact": "y"})
    assert unsafe["dag_run_id"].startswith("manual__"), unsafe
    # an unauthenticated trigger is still Airflow's to refuse
    anon = ana.session.post(
        f"{airflow['url']}/api/v2/dags/argusic_review/dagRuns",
        json={"logical_date": None, "conf": {}},
        headers={"Authorization": "Bearer nope"},
        timeout=30,
    )
    assert anon.status_code in (401, 403), anon.text  # Airflow 3.3: 403 "Invalid JWT token"


def test_the_ui_trigger_button_opens_the_named_run(airflow) -> None:
    from playwright.sync_api import sync_playwright

    shots = Path(os.environ.get("ARGUSIC_SHOTS_DIR", airflow["base"]))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        sign_in(page, airflow["url"], "ana", airflow["passwords"]["ana"])
        page.goto(f"{airflow['url']}/dags/argusic_judging_review")
        page.get_by_role("button", name="Trigger").first.click()
        dialog = page.get_by_role("dialog")
        dialog.wait_for(timeout=60_000)
        (airflow["base"] / "trigger-dialog.html").write_text(dialog.inner_html())  # when a locator fails
        switch = dialog.locator("[data-scope=switch][data-part=root]").first  # "One form for the queue"
        switch.locator("[data-part=control]").click()
        assert switch.get_attribute("data-state") == "checked"
        page.screenshot(path=str(shots / "trigger-judging-no-run-id.png"))
        dialog.get_by_role("button", name="Trigger").last.click()
        page.wait_for_url(re.compile(r".*/runs/judging__.*"), timeout=60_000)
        url = page.url
        run_id = url.rsplit("/runs/", 1)[1].split("?")[0]
        page.goto(url)  # the run's page, as the UI opened it
        page.get_by_text("Triggering User").wait_for(timeout=60_000)
        page.wait_for_timeout(1500)
        page.screenshot(path=str(shots / "run-named-judging.png"))
        header = page.locator("main, body").first.inner_text()
        browser.close()
    assert re.fullmatch(rf"judging__all-cycles__bulk__{TIME}", run_id), url
    assert run_id in header and "ana" in header, header[:2000]


def test_a_named_stop_runs_under_the_scheduler_and_records_who_when_why(airflow) -> None:
    """The named run is a run like any other: a real scheduler (LocalExecutor, tasks through the API
    server's execution API) runs `stop__<cycle>__…` and `resume__all-cycles__…`; the stop's decision
    records the person who triggered it, the time Airflow recorded and the reason."""
    import json
    import signal
    import time

    env, log = airflow["env"], (airflow["base"] / "scheduler.log").open("w")
    scheduler = subprocess.Popen(
        [str(Path(PYTHON).parent / "airflow"), "scheduler", "--skip-serve-logs"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    ana = Person(airflow["url"], "ana", airflow["passwords"]["ana"])
    dag = f"{airflow['url']}/api/v2/dags/argusic_emergency_stop"
    cycle = "2026-12-runids-e2e"  # a cycle no other test runs: the stop ends nothing of theirs
    try:
        for run in ana.session.get(f"{dag}/dagRuns", timeout=30).json()[
            "dag_runs"
        ]:  # queued by the test above
            assert ana.session.delete(f"{dag}/dagRuns/{run['dag_run_id']}", timeout=30).status_code == 204
        assert ana.session.patch(dag, json={"is_paused": False}, timeout=30).ok
        ended = {}
        for conf in ({"action": "stop", "reason": "drill: named runs", "cycle": cycle},
                     {"action": "resume", "reason": "drill over"}):  # fmt: skip
            run_id = _trigger(ana, "argusic_emergency_stop", conf)["dag_run_id"]
            for _ in range(300):
                state = ana.session.get(f"{dag}/dagRuns/{run_id}", timeout=30).json()["state"]
                if state in ("success", "failed"):
                    break
                time.sleep(2)
            ended[run_id] = state
    finally:
        os.killpg(scheduler.pid, signal.SIGTERM)
        try:
            scheduler.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(scheduler.pid, signal.SIGKILL)
        log.close()
    (stop_id, stop_state), (resume_id, resume_state) = ended.items()
    assert re.fullmatch(rf"stop__{cycle}__{TIME}", stop_id) and stop_state == "success", ended
    assert re.fullmatch(rf"resume__all-cycles__{TIME}", resume_id) and resume_state == "success", ended
    decisions = sorted((Path(env["ARGUSIC_RUNS_DIR"]) / "control" / "decisions").iterdir())
    recorded = [json.loads(p.read_text()) for p in decisions]
    assert [(d["active"], d["by"], d["reason"], d["cycle"]) for d in recorded] == [
        (True, "ana", "drill: named runs", cycle),
        (False, "ana", "drill over", cycle),
    ], recorded
    assert all(d["at"].startswith("20") for d in recorded)
