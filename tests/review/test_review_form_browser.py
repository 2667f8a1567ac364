"""The judging review form as a person sees it (issue 29, "forms that cannot mislead"): Airflow 3.3's
Required actions page in headless Chromium (Debian's package, through Playwright), against a real
`airflow api-server` sharing the metadata DB of a running `argusic_judging_review` DAG.

What the form must do: a required look cannot be left out (the buttons stay disabled until one is
chosen: the form refuses, rather than a green "response successful" followed by a failed task); a
score cannot be out of range (a choice of 0, 1 or 2, not a number field that turns 7 into 2); the
optional fields and the optional note do not block the answer; the answer is recorded with who and
when. The other forms of the run are answered through the REST API (tests/hitl_people.py)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import duckdb
import pytest
from conftest import dbt_build_copy
from hitl_people import Answerer, Person, api_server, free_port, sign_in
from test_dags import airflow_env, dag_test, migrate_metadata_db
from test_judging_review import seed_warehouse
from test_judging_warehouse import CYCLE as JUDGED_CYCLE

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("ARGUSIC_CHROMIUM", "/usr/bin/chromium")
DAG = "argusic_judging_review"


def _waiting_forms(person: Person) -> list[dict]:
    return [d for d in person.waiting() if (d.get("task_instance") or {}).get("state") == "awaiting_input"]


def test_the_judging_review_form_refuses_an_answer_without_a_look_and_offers_only_0_to_2(tmp_path):
    from playwright.sync_api import sync_playwright

    port = free_port()
    users = {"AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "ana:admin"}
    env = airflow_env(tmp_path, AIRFLOW_UI_PORT=str(port), **users)
    migrate_metadata_db(env)
    db = Path(env["ARGUSIC_WAREHOUSE"])
    seed_warehouse(db)
    dbt_build_copy(db, tmp_path / "build0")
    results: dict = {}

    def run_dag() -> None:
        try:
            runs = [{"dag_id": DAG, "conf": {"cycle_id": JUDGED_CYCLE}}]
            results["runs"] = dag_test(env, runs, timeout=900)
        except Exception as err:  # reported by the test below
            results["error"] = err

    with api_server(env, tmp_path / "api-server.log", port) as server:
        ana = Person(server["url"], "ana", server["passwords"]["ana"])
        runner = threading.Thread(target=run_dag, daemon=True)
        runner.start()
        deadline = time.monotonic() + 600
        while not (forms := _waiting_forms(ana)):
            assert runner.is_alive() and time.monotonic() < deadline, results
            time.sleep(1)
        ti = forms[0]["task_instance"]
        run_path = f"/dags/{DAG}/runs/{ti['dag_run_id']}"
        page_path = f"{run_path}/tasks/review_attempt/mapped/{ti['map_index']}/required_actions"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1440, "height": 1200})
            sign_in(page, server["url"], "ana", server["passwords"]["ana"])
            page.goto(f"{server['url']}{page_path}")
            page.get_by_text("Look, 0..2 (required)").first.wait_for(timeout=60_000)
            time.sleep(1)

            def enabled() -> dict[str, bool]:
                buttons = ("Promote", "Reject")
                return {name: page.get_by_role("button", name=name).is_enabled() for name in buttons}

            page.screenshot(path=str(tmp_path / "form-unanswered.png"), full_page=True)
            assert enabled() == {"Promote": False, "Reject": False}  # no look chosen: no answer
            # three choice lists (look, code structure, logic correctness), no number field to type 7 in
            assert page.get_by_role("combobox").count() == 3
            assert page.locator("input[type='number']").count() == 0
            page.get_by_role("combobox").first.click()
            options = [o.strip() for o in page.get_by_role("option").all_inner_texts()]
            assert [o for o in options if o[:1].isdigit()] == ["0 poor", "1 acceptable", "2 good"], options
            page.get_by_role("option", name="1 acceptable").first.click()
            time.sleep(1)
            # the optional scores and the optional note left empty do not block the answer
            assert enabled() == {"Promote": True, "Reject": True}
            with page.expect_response(
                lambda r: r.url.endswith("/hitlDetails") and r.request.method == "PATCH", timeout=60_000
            ) as answered:
                page.get_by_role("button", name="Promote").click()
            assert answered.value.status == 200, answered.value.text()
            sent = answered.value.json()["params_input"]
            assert sent["look"] == "1" and sent["code_structure"] is None and sent["note"] is None
            time.sleep(2)
            page.screenshot(path=str(tmp_path / "form-answered.png"), full_page=True)
            browser.close()

        def rest(detail: dict):  # the other forms, through the REST API
            return ana, "Reject", "checked in the log", {"look": "0", "code_structure": None,
                                                          "logic_correctness": None}  # fmt: skip

        with Answerer(ana, rest) as answerer:
            runner.join(timeout=900)
        assert not answerer.errors, answerer.errors
    assert "error" not in results, results.get("error")
    (run,) = results["runs"]
    assert run["state"] == "success", [t for t in run["tis"] if t["state"] != "success"]
    forms_run = [t for t in run["tis"] if t["task_id"] == "review_attempt"]
    assert all(t["try"] == 1 for t in forms_run), forms_run  # no form failed and asked again
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT look, decision, code_structure, note, decided_by FROM decisions.judging_reviews "
            "WHERE decision = 'promote'"
        ).fetchall()
    assert rows == [(1, "promote", None, None, "ana")]
