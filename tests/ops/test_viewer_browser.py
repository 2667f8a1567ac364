"""The evidence viewer as ops and analysts meet it (issue 29): a real `airflow api-server` loading the
argusic plugin (entry point `airflow.plugins`), a person signed in with Airflow's own login page in
headless Chromium (Debian's, through Playwright), the "Argusic cycles" entry in Airflow's navigation,
the cycle table built by dbt from two landed attempts, and an attempt's page whose recording loads in
the vendored asciinema-player. Without Airflow's session or token, nothing is served."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
import requests
from conftest import dbt_build_copy
from hitl_people import api_server, free_port, sign_in
from test_dags import airflow_env, migrate_metadata_db
from test_replay import ATTEMPT_ID, HOSTILE_CAST, HOSTILE_LOG, land_attempt
from test_viewer import FAILED_ID

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("ARGUSIC_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = os.environ.get("ARGUSIC_SCREENSHOTS")  # a folder: keep the pages' screenshots there


def test_the_viewer_in_airflow_lists_the_cycle_and_plays_a_recording(
    record_doc, isolated, monkeypatch, tmp_path
):
    import json

    from argusic.core.settings import runs_dir, warehouse_path
    from argusic.publication.attempt_page import load_player_assets
    from argusic.warehouse.load_runs import ingest
    from playwright.sync_api import sync_playwright

    load_player_assets()  # vendored by `make player`: fails with the command to run when missing
    record = land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    failed_doc = json.loads(json.dumps(record_doc)) | {"attempt_id": FAILED_ID, "project_id": "csvstats"}
    failed_doc |= {"attempt_no": 2}
    failed_doc["report"] |= {"install_ok": False, "ran_ok": False, "final_state": "npm install failed"}
    land_attempt(failed_doc, b"npm ERR! install failed\n", HOSTILE_CAST)
    ingest([runs_dir()])
    dbt_build_copy(warehouse_path(), tmp_path / "build")
    analyst = isolated / "analyst"
    analyst.mkdir()
    shutil.copy(warehouse_path(), analyst / "argusic.duckdb")  # what a build publishes

    port = free_port()
    env = airflow_env(
        tmp_path,
        AIRFLOW_UI_PORT=str(port),
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="ana:viewer",
        ARGUSIC_EVIDENCE_URL=os.environ["ARGUSIC_EVIDENCE_URL"],
        ARGUSIC_RUNS_DIR=str(runs_dir()),
        ARGUSIC_WAREHOUSE=str(warehouse_path()),
        ARGUSIC_ANALYST_DIR=str(analyst),
    )
    migrate_metadata_db(env)
    shots = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path
    with api_server(env, tmp_path / "api-server.log", port) as server:
        url = server["url"]
        served_log = record.presentation.log.uri.split("/served/", 1)[1]
        # nothing without Airflow's session or token, nor with a forged one
        for path in ("/argusic/", f"/argusic/attempts/{ATTEMPT_ID}", f"/argusic/served/{served_log}"):
            assert requests.get(url + path, timeout=30, allow_redirects=False).status_code == 401, path
            forged = {"Authorization": "Bearer eyJhbGciOiJIUzUxMiJ9.e30.x"}
            got = requests.get(url + path, headers=forged, timeout=30, allow_redirects=False)
            assert got.status_code in (401, 403), (path, got.status_code)
        # a browser without a session is sent to the login page
        got = requests.get(
            url + "/argusic/", headers={"Accept": "text/html"}, timeout=30, allow_redirects=False
        )
        assert got.status_code == 303 and "login" in got.headers["location"], got.headers
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1200, "height": 760})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            sign_in(page, url, "ana", server["passwords"]["ana"])

            # the viewer inside Airflow: its navigation entry opens it in the UI
            page.get_by_role("button", name="Browse").click()
            page.get_by_role("menuitem", name="Argusic cycles").click()
            page.wait_for_url("**/plugin/argusic-cycles", timeout=30_000)
            frame = page.frame_locator("iframe").first
            frame.locator("table#attempts").wait_for(timeout=60_000)
            time.sleep(1)
            page.screenshot(path=str(shots / "viewer-in-airflow.png"))

            # the cycle table on its own: failures first, filter, sort
            page.goto(f"{url}/argusic/")
            rows = page.locator("table#attempts tbody tr")
            rows.first.wait_for(timeout=30_000)
            assert rows.count() == 2
            outcomes = [rows.nth(i).get_attribute("data-outcome") for i in range(2)]
            assert outcomes[1].startswith("pass") and not outcomes[0].startswith("pass"), outcomes
            assert rows.first.get_attribute("data-attempt") == FAILED_ID
            page.locator("#filter-text").fill("wavgen")
            assert page.locator("#shown-count").inner_text() == "1 of 2 shown"
            page.locator("#filter-text").fill("")
            page.get_by_role("columnheader", name="project").click()
            assert rows.first.get_attribute("data-attempt") == FAILED_ID  # csvstats < wavgen
            page.get_by_role("columnheader", name="project").click()
            assert rows.first.get_attribute("data-attempt") == ATTEMPT_ID

            # one click to the attempt's recording: it loads in the vendored player
            page.locator(f'tr[data-attempt="{ATTEMPT_ID}"] a', has_text="recording").click()
            page.wait_for_url(f"**/argusic/attempts/{ATTEMPT_ID}#recording", timeout=30_000)
            page.wait_for_function(
                "() => !!(window.argusicPlayer && document.querySelector('#player .ap-player'))",
                timeout=60_000,
            )
            page.wait_for_function(
                "() => document.querySelector('#player').textContent.length > 0 || "
                "!!document.querySelector('#player .ap-terminal')",
                timeout=30_000,
            )
            assert "<script>alert(3)</script>" in page.locator("#log").inner_text()  # the hostile log: text
            page.evaluate("() => window.argusicPlayer.play()")
            page.wait_for_function(
                "() => document.querySelector('#player').textContent.includes('hello from the recording')",
                timeout=30_000,
            )  # the recording's own text, drawn by the player
            page.evaluate("() => window.scrollTo(0, 0)")
            time.sleep(2)
            page.screenshot(path=str(shots / "viewer-attempt.png"), full_page=True)

            # the served log by its content address, from the page's link
            with page.expect_navigation():
                page.get_by_role("link", name="served log (text)").click()
            assert "STEP run" in page.locator("body").inner_text()
            browser.close()
        assert not [e for e in errors if "Content Security Policy" in e], errors
