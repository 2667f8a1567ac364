"""The judging review queue in one form (issue 29, point 10: "ten judging forms answered one by one"):
`argusic_judging_review` with `bulk: true` runs under dag.test against a real `airflow api-server`,
its one form is looked at in headless Chromium (one required choice list per attempt: nothing to
type, nothing out of range; Record disabled until every attempt has a choice) and answered through
the REST API. Each chosen attempt is recorded as its own review (who and when Airflow's, its own
note); an attempt left for later is not recorded and stays in the queue; an answer that skips a
choice (past the form, through the API) records nothing at all and the retry asks again."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from conftest import dbt_build_copy
from hitl_people import Person, api_server, free_port, sign_in
from test_dags import airflow_env, dag_test, migrate_metadata_db
from test_judging_review import seed_warehouse
from test_judging_warehouse import CYCLE as JUDGED_CYCLE
from test_judging_warehouse import board_id

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("ARGUSIC_CHROMIUM", "/usr/bin/chromium")
DAG = "argusic_judging_review"


def _waiting(person: Person) -> list[dict]:
    return [d for d in person.waiting() if (d.get("task_instance") or {}).get("state") == "awaiting_input"]


def _answer(person: Person, detail: dict, params: dict):
    ti = detail["task_instance"]
    return person.session.patch(
        f"{person.url}/api/v2/dags/{DAG}/dagRuns/{ti['dag_run_id']}/taskInstances/{ti['task_id']}/"
        f"{ti['map_index']}/hitlDetails",
        json={"chosen_options": ["Record"], "params_input": params},
        timeout=30,
    )


def test_one_form_records_each_chosen_attempt_as_its_own_review(tmp_path) -> None:
    from playwright.sync_api import sync_playwright

    port = free_port()
    env = airflow_env(
        tmp_path, AIRFLOW_UI_PORT=str(port), AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="ana:admin"
    )
    migrate_metadata_db(env)
    db = Path(env["ARGUSIC_WAREHOUSE"])
    seed_warehouse(db)
    dbt_build_copy(db, tmp_path / "build0")
    results: dict = {}

    def run_dag() -> None:
        try:
            runs = [{"dag_id": DAG, "conf": {"cycle_id": JUDGED_CYCLE, "bulk": True}}]
            results["runs"] = dag_test(env, runs, timeout=900)
        except Exception as err:  # reported below
            results["error"] = err

    with api_server(env, tmp_path / "api-server.log", port) as server:
        ana = Person(server["url"], "ana", server["passwords"]["ana"])
        runner = threading.Thread(target=run_dag, daemon=True)
        runner.start()

        def one_form() -> dict:
            deadline = time.monotonic() + 600
            while not (forms := _waiting(ana)):
                assert runner.is_alive() and time.monotonic() < deadline, results
                time.sleep(1)
            (form,) = forms
            time.sleep(5)  # answered as a person would, not within the parked event's second (airflow.md)
            return form

        form = one_form()
        assert form["task_instance"]["task_id"] == "review_queue"
        fields = list(form["params"])
        assert fields == ["item_01", "item_01_note", "item_02", "item_02_note", "item_03", "item_03_note"]
        assert form["params"]["item_01"]["schema"]["enum"][1:] == [
            "promote:2", "promote:1", "promote:0", "reject:2", "reject:1", "reject:0", "later",
        ]  # fmt: skip
        body = form["body"]
        assert "**3 attempt(s) to review.**" in body and "#### Item 3:" in body
        assert "judges_disagree" in body  # each item's own body, as its single form shows it

        ti = form["task_instance"]
        page_path = f"/dags/{DAG}/runs/{ti['dag_run_id']}/tasks/review_queue/required_actions"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            sign_in(page, server["url"], "ana", server["passwords"]["ana"])
            page.goto(f"{server['url']}{page_path}")
            page.get_by_text("1. wavgen · readme-runner board #1 (required)").first.wait_for(timeout=60_000)
            time.sleep(1)
            page.screenshot(path=str(tmp_path / "judging-bulk.png"), full_page=True)
            page.get_by_text(
                "3. wavgen · readme-runner board #3 (required)"
            ).first.scroll_into_view_if_needed()
            time.sleep(1)
            page.screenshot(path=str(tmp_path / "judging-bulk-fields.png"))
            assert "Answer: **look**" not in body and "Answer: look" not in page.inner_text("body")
            assert page.get_by_role("combobox").count() == 3  # one choice list per attempt
            assert page.locator("input[type='number']").count() == 0
            assert not page.get_by_role("button", name="Record").is_enabled()  # nothing chosen yet
            browser.close()

        # past the form, one attempt without a choice: nothing recorded, the retry asks again
        skipped = {"item_01": "promote:2", "item_01_note": None, "item_02": "", "item_02_note": None,
                   "item_03": "later", "item_03_note": None}  # fmt: skip
        assert _answer(ana, form, skipped).status_code == 200
        form = one_form()
        answer = {**skipped, "item_01_note": "mock test only, but it runs", "item_02": "reject:0"}
        answered = _answer(ana, form, answer)
        assert answered.status_code == 200, answered.text
        runner.join(timeout=900)
    assert "error" not in results, results.get("error")
    (run,) = results["runs"]
    assert run["state"] == "success", [t for t in run["tis"] if t["state"] != "success"]
    (review,) = [t for t in run["tis"] if t["task_id"] == "review_queue"]
    assert review["try"] == 2  # the answer without a choice failed the first try, nothing recorded
    assert [t["state"] for t in run["tis"] if t["task_id"] == "review_attempt"] == ["skipped"]
    assert [t["state"] for t in run["tis"] if t["task_id"] == "build"] == ["success"]
    result = next(x["value"] for x in run["xcom"] if x["task_id"] == "review_queue")
    assert result["left_for_later"] == 1 and result["decided_by"] == "ana"
    assert result["recorded"][0]["recorded"].startswith(f"RECORDED: judging review of {board_id(1)}: promote")
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT attempt_id, look, decision, decided_by, decided_at, note FROM decisions.judging_reviews "
            "ORDER BY attempt_id"
        ).fetchall()
        statuses = dict(con.execute("SELECT attempt_id, review_status FROM marts.review_queue").fetchall())
    responded = datetime.fromisoformat(answered.json()["responded_at"]).astimezone(UTC).replace(tzinfo=None)
    assert rows == [
        (board_id(1), 2, "promote", "ana", responded, "mock test only, but it runs"),
        (board_id(2), 0, "reject", "ana", responded, None),
    ]
    assert statuses[board_id(3)] == "awaiting" and statuses[board_id(1)] == "reviewed"
