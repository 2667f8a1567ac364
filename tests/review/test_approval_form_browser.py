"""The publication approval form as a person sees it (issue 29, point 7): Airflow 3.3's Required
actions page in headless Chromium (Debian's package, through Playwright), against a real `airflow
api-server` sharing the metadata DB of a demo `argusic_cycle` run (dag.test, local executor).

What the form must show: each agent's pass rate (with failures, timeouts, invalid attempts), the
reason behind every score shown as "—", what changed, and where the preview of the exact pages is
(built by the site builder into a preview folder, nothing published). The note is required: the
buttons stay disabled until one is written. After answering, the task says what was recorded (its
log's RECORDED line and its result): which button, by whom, the note. The preview itself is opened
in the same browser."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path

import duckdb
import pytest
from hitl_people import Person, api_server, free_port, sign_in
from test_dags import airflow_env, dag_test, migrate_metadata_db

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("ARGUSIC_CHROMIUM", "/usr/bin/chromium")
DAG = "argusic_cycle"
CYCLE = "2026-12-ap"
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def _waiting(person: Person) -> list[dict]:
    return [d for d in person.waiting() if (d.get("task_instance") or {}).get("state") == "awaiting_input"]


def test_the_approval_form_shows_pass_rates_reasons_and_the_preview_and_says_what_was_recorded(tmp_path):
    from argusic.sources.forge import build_forge
    from playwright.sync_api import sync_playwright

    port = free_port()
    forge = build_forge(tmp_path / "forge")
    env = airflow_env(
        tmp_path,
        AIRFLOW_UI_PORT=str(port),
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="ana:admin",
        ARGUSIC_EXECUTOR="local",
        ARGUSIC_REPO_ROOTS=str(forge.parent),
        ARGUSIC_FORGE_DIR=str(tmp_path / "forge"),
    )
    migrate_metadata_db(env)
    conf = {"cycle_id": CYCLE, "catalogue": str(forge), "demo": True, "attempts_per_pair": 1,
            "agents": ["readme-runner"], "pool_size": 2}  # fmt: skip
    results: dict = {}

    def run_dag() -> None:
        try:
            results["runs"] = dag_test(env, [{"dag_id": DAG, "conf": conf}], timeout=1200)
        except Exception as err:  # reported by the test below
            results["error"] = err

    with api_server(env, tmp_path / "api-server.log", port) as server:
        ana = Person(server["url"], "ana", server["passwords"]["ana"])
        runner = threading.Thread(target=run_dag, daemon=True)
        runner.start()
        deadline = time.monotonic() + 1100
        while not (forms := _waiting(ana)):
            assert runner.is_alive() and time.monotonic() < deadline, results
            time.sleep(2)
        (form,) = forms
        body = form["body"]
        # the context a person needs, in the form's own words
        assert "Pass rates of this cycle's board attempts" in body, body
        assert "| agent | pass rate | fail | timeout | invalid (rerun, never counted) |" in body
        assert "| `readme-runner` | " in body
        assert 'Why a score is "—"' in body or 'Every set counts: no score is "—".' in body
        assert "fewer than 3 valid attempts (" in body  # one attempt per pair: no set counts
        assert "First publication of this cycle" in body
        assert "Preview of the exact pages this board publishes" in body
        index = Path(tmp_path / "runs" / "previews" / CYCLE)
        (page,) = index.glob("*/site/index.html")
        assert f"open the preview: `{page}`" in body  # no base URL: the path, to open
        assert not (tmp_path / "published" / CYCLE / "board.json").exists()  # a preview publishes nothing

        ti = form["task_instance"]
        page_path = f"/dags/{DAG}/runs/{ti['dag_run_id']}/tasks/approve_publication/required_actions"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            sign_in(page, server["url"], "ana", server["passwords"]["ana"])
            page.goto(f"{server['url']}{page_path}")
            page.get_by_text("Pass rates of this cycle's board attempts").first.wait_for(timeout=60_000)
            page.get_by_text("Note (required)").first.wait_for(timeout=60_000)
            time.sleep(1)

            def enabled() -> dict[str, bool]:
                return {
                    name: page.get_by_role("button", name=name).is_enabled() for name in ("Approve", "Reject")
                }

            assert page.get_by_role("cell", name="readme-runner").count() >= 1  # the tables render
            assert page.get_by_text("open the preview").count() >= 1
            page.screenshot(path=str(tmp_path / "approval-unanswered.png"), full_page=True)
            assert enabled() == {"Approve": False, "Reject": False}  # the note is required
            page.get_by_role("textbox").last.fill("a demo cycle: one attempt per pair, not for the board")
            time.sleep(1)
            assert enabled() == {"Approve": True, "Reject": True}
            with page.expect_response(
                lambda r: r.url.endswith("/hitlDetails") and r.request.method == "PATCH", timeout=60_000
            ) as answered:
                page.get_by_role("button", name="Reject").click()
            assert answered.value.status == 200, answered.value.text()
            runner.join(timeout=900)
            page.reload()
            time.sleep(3)
            page.screenshot(path=str(tmp_path / "approval-answered.png"), full_page=True)
            # after answering, Airflow's page says who answered and when; the note stays shown
            assert page.get_by_text("Response received at").count() >= 1
            assert page.get_by_text(" from ana").count() >= 1
            # the preview, as the person would open it from the form
            preview = browser.new_page(viewport={"width": 1280, "height": 900})
            preview.goto(page_uri := page_of(index))
            preview.screenshot(path=str(tmp_path / "approval-preview.png"), full_page=False)
            assert CYCLE in preview.content(), page_uri
            browser.close()
    assert "error" not in results, results.get("error")
    (run,) = results["runs"]
    approval = [t for t in run["tis"] if t["task_id"] == "approve_publication"]
    assert [t["state"] for t in approval] == ["success"] and approval[0]["try"] == 1
    assert [t["state"] for t in run["tis"] if t["task_id"] == "publish"] == ["skipped"]
    # what was recorded, as the task's XCom "recorded" (a rejection ends the task by skipping publish:
    # no return value is kept; read from the metadata DB, where Airflow's XCom tab reads it)
    with sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db") as meta:
        (value,) = meta.execute(
            "SELECT value FROM xcom WHERE task_id = 'approve_publication' AND key = 'recorded'"
        ).fetchone()
    result = json.loads(value)
    assert result["decision"] == "rejected" and result["decided_by"] == "ana"
    assert result["recorded"].startswith("RECORDED: Reject (rejected) of the board of cycle " + CYCLE)
    assert "publish is skipped, nothing is published" in result["recorded"]
    with duckdb.connect(env["ARGUSIC_WAREHOUSE"], read_only=True) as con:
        rows = con.execute("SELECT decision, decided_by FROM decisions.publication_decisions").fetchall()
    assert rows == [("rejected", "ana")]
    if os.environ.get("ARGUSIC_KEEP_SCREENSHOTS"):  # refresh the docs' copies (scripts, by hand)
        for name in ("approval-unanswered.png", "approval-answered.png", "approval-preview.png"):
            (SHOTS / name).write_bytes((tmp_path / name).read_bytes())


def page_of(index: Path) -> str:
    (page,) = index.glob("*/site/index.html")
    return page.as_uri()
