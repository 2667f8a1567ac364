"""Look at the Airflow UI as a person would: start it on 127.0.0.1, run the demo, trigger the cycle
exactly as docs/airflow.md says, and take screenshots in headless Chromium (Debian's package).

    .venv/bin/python scripts/airflow_screenshots.py --out /tmp/shots          # everything in a temp dir
    .venv/bin/python scripts/airflow_screenshots.py --out /tmp/shots --skip-demo   # without the demo
    .venv/bin/python scripts/airflow_screenshots.py --out /tmp/shots --smoke       # what the test runs

--smoke (tests/orchestration/test_airflow_ui.py, part of `make test`): start the UI, log in through
its form in
Chromium, open the home page and read what it shows (health, the DAGs, import errors), one screenshot;
no cycle is run. The screenshots are documentation: `make screenshots` takes them all.

Steps (one UI, started with scripts/airflow_ui.sh on a free port, stopped at the end):

1. `argusic demo` (what `make demo` runs), unless --skip-demo: the state the documented trigger
   must work after (the demo cycle's pool recorded, its attempts measured);
2. the documented trigger, word for word: `airflow dags unpause argusic_cycle`, then `airflow dags
   trigger argusic_cycle --run-id cycle__2026-12-ui__<time> --conf '<the docs' params>'`; a
   screenshot of the attempts while some still wait (labels, not numbers); the publication form
   (approve_publication) read and approved in the browser, as a person does (hitl-approval.png,
   hitl-approved.png); then once it succeeded:
   the grid, the attempts, one attempt's log, the trigger form, the home page (health);
3. the trigger that used to fail slowly: the demo cycle (with --skip-demo, the documented cycle just
   run) with another pool size. It must fail at
   `prepare_pool` on its first try, saying which pool is recorded and how to go on (screenshot of
   that log).

Prints one JSON line (`@@RESULT@@{...}`) with what was checked through the REST API: states, labels,
log lines, ERROR events in the successful run's task logs, the health check, the params' descriptions.
tests/orchestration/test_airflow_ui.py asserts on the --smoke part. The screenshots are PNG files
in --out; the
script exits non-zero when what it shows went wrong (the documented run failed, the conflict did not).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CHROMIUM = os.environ.get("ARGUSIC_CHROMIUM", "/usr/bin/chromium")
DAG = "argusic_cycle"
# docs/airflow.md, "Trigger a cycle": the params of the documented example (kept in step by the test).
DOCS_CONF = {"cycle_id": "2026-12-ui", "demo": True, "pool_size": 3}
# The trigger that must fail at once: a cycle whose pool is recorded, asked for with another pool size
# (the demo's cycle, or with --skip-demo the documented cycle just run).
CONFLICT_CONF = {"cycle_id": "2026-12-demo", "demo": True, "pool_size": 3}
CONFLICT_CONF_WITHOUT_DEMO = {"cycle_id": DOCS_CONF["cycle_id"], "demo": True, "pool_size": 5}
# Nothing is published before a person approves it: the script answers the form in the browser.
APPROVAL_NOTE = "screenshots script: read the changes in this form before approving"
REVIEW_NOTE = "screenshots script: an example answer, not a reading of the logs"
READING_SECONDS = 10.0  # how long the script "reads" a form before answering it
MARK = "@@RESULT@@"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(work: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ARGUSIC_"))}
    env |= {
        "AIRFLOW_HOME": str(work / "airflow"),
        "AIRFLOW_UI_PORT": str(port),
        "ARGUSIC_WAREHOUSE": str(work / "warehouse" / "argusic.duckdb"),
        "ARGUSIC_EVIDENCE_URL": (work / "evidence_store").as_uri(),
        "ARGUSIC_RUNS_DIR": str(work / "runs"),
        "ARGUSIC_PUBLISH_DIR": str(work / "published"),
        "ARGUSIC_FORGE_DIR": str(work / "forge"),
        "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
    }
    dump = subprocess.run(
        ["bash", "-c", f"source {ROOT / 'scripts' / 'airflow_env.sh'} && env -0"],
        env=env,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return dict(item.split("=", 1) for item in dump.split("\0") if "=" in item)


def say(text: str) -> None:
    print(f"[screenshots] {text}", file=sys.stderr, flush=True)


class Api:
    """The public REST API (api/v2) with a token from the simple auth manager."""

    def __init__(self, base: str, password: str) -> None:
        self.base = base
        answer = requests.post(
            f"{base}/auth/token", json={"username": "admin", "password": password}, timeout=30
        )
        answer.raise_for_status()
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {answer.json()['access_token']}"

    def get(self, path: str, **params) -> dict:
        answer = self.session.get(f"{self.base}/api/v2{path}", params=params, timeout=60)
        answer.raise_for_status()
        return answer.json()

    def run(self, run_id: str) -> dict:
        return self.get(f"/dags/{DAG}/dagRuns/{urllib.parse.quote(run_id, safe='')}")

    def task_instances(self, run_id: str) -> list[dict]:
        quoted = urllib.parse.quote(run_id, safe="")
        return self.get(f"/dags/{DAG}/dagRuns/{quoted}/taskInstances", limit=1000)["task_instances"]

    def log_events(self, run_id: str, ti: dict) -> list[dict]:
        quoted = urllib.parse.quote(run_id, safe="")
        path = f"/dags/{DAG}/dagRuns/{quoted}/taskInstances/{ti['task_id']}/logs/{max(1, ti['try_number'])}"
        answer = self.session.get(
            f"{self.base}/api/v2{path}",
            params={"map_index": ti["map_index"], "full_content": "true"},
            headers={"Accept": "application/json"},
            timeout=60,
        )
        answer.raise_for_status()
        content = answer.json().get("content") or []
        return [e for e in content if isinstance(e, dict)]

    def wait_run(self, run_id: str, timeout: float, during=None) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                run = self.run(run_id)
            except requests.HTTPError as err:  # not created yet (the form posts it a moment later)
                if err.response is None or err.response.status_code != 404:
                    raise
                time.sleep(1)
                continue
            if run["state"] in ("success", "failed"):
                return run
            if during:
                during()
            time.sleep(2)
        raise TimeoutError(f"run {run_id} not finished after {timeout:.0f} s")


def airflow(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([str(BIN / "airflow"), *args], env=env, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise RuntimeError(f"airflow {' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return done.stdout


def wait_for_dag(api: Api, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            api.get(f"/dags/{DAG}")
            return
        except requests.HTTPError:
            time.sleep(2)
    raise TimeoutError(f"the DAG processor did not parse {DAG} in {timeout:.0f} s")


def event_text(event: dict) -> str:
    return str(event.get("event", ""))


class Browser:
    """Headless Chromium through Playwright (executable_path: Debian's chromium; nothing downloaded)."""

    def __init__(self, base: str, password: str, out: Path) -> None:
        from playwright.sync_api import sync_playwright

        self.base, self.out = base, out
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        self.page = self.browser.new_page(viewport={"width": 1440, "height": 900})
        self.page.goto(f"{base}/")
        self.page.get_by_label("Username").fill("admin")
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.wait_for_url(lambda url: "/auth/login" not in url, timeout=60_000)

    def shot(
        self, name: str, path: str, wait_text: str | None = None, settle: float = 2.0, keys: str = ""
    ) -> str:
        self.page.goto(f"{self.base}/{path.lstrip('/')}")
        self.page.wait_for_load_state("networkidle")
        if wait_text:
            self.page.get_by_text(wait_text, exact=False).first.wait_for(timeout=60_000)
        time.sleep(settle)
        for key in keys:
            self.page.keyboard.press(key)
        time.sleep(0.5 if keys else 0)
        target = self.out / f"{name}.png"
        self.page.screenshot(path=str(target))
        return str(target)

    def trigger(self, run_id: str, conf: dict) -> dict[str, str]:
        """Trigger the DAG through its trigger form, filled as docs/airflow.md says; screenshots of the
        filled form (params, then the advanced options with the run id)."""
        page = self.page
        page.goto(f"{self.base}/dags/{DAG}")
        page.wait_for_load_state("networkidle")
        page.get_by_role("button", name="Trigger").first.click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_text("Cycle id").first.wait_for(timeout=30_000)
        dialog.locator("[name='element_cycle_id']").fill(conf["cycle_id"])
        dialog.locator("[name='element_pool_size']").fill(str(conf["pool_size"]))
        if conf.get("demo"):
            dialog.locator("label:has([name='element_demo'])").click()  # a switch: its input is hidden
            if not dialog.locator("[name='element_demo']").is_checked():
                raise RuntimeError("the trigger form's demo switch did not turn on")
        time.sleep(1)
        shots = {"trigger": str(self.out / "trigger-form.png")}
        page.screenshot(path=shots["trigger"])
        dialog.get_by_text("Advanced Options").click()
        dialog.locator("[name='dagRunId']").fill(run_id)
        dialog.get_by_text("Configuration JSON").scroll_into_view_if_needed()
        time.sleep(1)
        shots["trigger_advanced"] = str(self.out / "trigger-form-run-id.png")
        page.screenshot(path=shots["trigger_advanced"])
        dialog.get_by_role("button", name="Trigger").last.click()
        return shots

    def approve(self, run_id: str, note: str) -> dict[str, str]:
        """Answer the publication form as a person does: open the task's Required actions page, read
        it (screenshot), write the note, press Approve (screenshot of the answered form)."""
        page = self.page
        page.goto(f"{self.base}/dags/{DAG}/runs/{run_id}/tasks/approve_publication/required_actions")
        page.wait_for_load_state("networkidle")
        page.get_by_text("sha256", exact=False).first.wait_for(timeout=60_000)
        time.sleep(1)
        shots = {"hitl_approval": str(self.out / "hitl-approval.png")}
        page.screenshot(path=shots["hitl_approval"], full_page=True)
        page.locator("[name='element_note']").fill(note)  # Approve and Reject stay disabled until then
        with page.expect_response(
            lambda r: r.url.endswith("/approve_publication/-1/hitlDetails") and r.request.method == "PATCH",
            timeout=60_000,
        ) as answered:
            page.get_by_role("button", name="Approve").click()
        if answered.value.status != 200:
            raise RuntimeError(f"the approval was refused: {answered.value.status} {answered.value.text()}")
        time.sleep(3)
        shots["hitl_approved"] = str(self.out / "hitl-approved.png")
        page.screenshot(path=shots["hitl_approved"])
        return shots

    def review(self, run_id: str, map_index: int, option: str, note: str) -> dict[str, str]:
        """Answer one environment-review form (argusic_review) in the browser, after a screenshot."""
        page = self.page
        page.goto(
            f"{self.base}/dags/argusic_review/runs/{run_id}/tasks/review_project/mapped/{map_index}"
            "/required_actions"
        )
        page.wait_for_load_state("networkidle")
        page.get_by_text("end reason", exact=False).first.wait_for(timeout=60_000)
        time.sleep(1)
        shots = {"hitl_review": str(self.out / "hitl-review.png")}
        page.screenshot(path=shots["hitl_review"], full_page=True)
        page.locator("[name='element_note']").fill(note)
        with page.expect_response(
            lambda r: (
                r.url.endswith(f"/review_project/{map_index}/hitlDetails") and r.request.method == "PATCH"
            ),
            timeout=60_000,
        ) as answered:
            page.get_by_role("button", name=option).click()
        if answered.value.status != 200:
            raise RuntimeError(f"the review was refused: {answered.value.status} {answered.value.text()}")
        return shots

    def close(self) -> None:
        self.browser.close()
        self._pw.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNG files")
    parser.add_argument("--workdir", type=Path, help="Airflow and Argusic state (default: a new temp dir)")
    parser.add_argument("--port", type=int, default=0, help="API server port (default: a free one)")
    parser.add_argument("--skip-demo", action="store_true", help="do not run `argusic demo` first")
    parser.add_argument(
        "--smoke", action="store_true", help="only log in and read the home page (no demo, no cycle)"
    )
    args = parser.parse_args()

    if not Path(CHROMIUM).exists():
        subprocess.run(["bash", str(ROOT / "scripts" / "setup_chromium.sh")], check=True)
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="argusic-ui-"))
    port = args.port or free_port()
    env = environment(work, port)
    base = f"http://127.0.0.1:{port}"
    result: dict = {"base": base, "workdir": str(work), "screenshots": {}}

    if not args.skip_demo and not args.smoke:
        say("argusic demo (what `make demo` runs)")
        started = time.monotonic()
        demo = subprocess.run(
            [str(BIN / "argusic"), "demo"], env=env, capture_output=True, text=True, timeout=900
        )
        result["demo"] = {"exit": demo.returncode, "seconds": round(time.monotonic() - started, 1)}
        if demo.returncode != 0:
            raise RuntimeError(f"argusic demo failed:\n{demo.stdout[-3000:]}\n{demo.stderr[-3000:]}")

    say(f"starting the UI on {base}")
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "airflow_ui.sh"), "--detach"], env=env, check=True, timeout=600
    )
    browser = None
    try:
        password = json.loads(Path(env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]).read_text())[
            "admin"
        ]
        api = Api(base, password)
        result["health"] = requests.get(f"{base}/api/v2/monitor/health", timeout=30).json()
        wait_for_dag(api)
        details = api.get(f"/dags/{DAG}/details")
        result["params"] = {
            name: (p or {}).get("description") for name, p in (details.get("params") or {}).items()
        }
        browser = Browser(base, password, args.out)
        if args.smoke:
            result |= smoke(api, browser)
            return finish(result, args, work)  # the UI is stopped (finally) before the work dir goes

        # The documented trigger (docs/airflow.md, "Trigger a cycle"): unpause, then the trigger form
        # filled as the docs say (run id in the advanced options, the three params), as a person would.
        airflow(env, "dags", "unpause", DAG)
        run_id = f"cycle__2026-12-ui__{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
        say(f"trigger form: run id {run_id}, params {json.dumps(DOCS_CONF)}")
        result["screenshots"] |= browser.trigger(run_id, DOCS_CONF)
        started = time.monotonic()
        pending: list[dict] = []

        approved: dict = {}
        seen_waiting: dict[int, float] = {}  # try number -> when its form was first seen waiting

        def look_while_waiting() -> None:
            form = {t["task_id"]: t for t in api.task_instances(run_id)}.get("approve_publication") or {}
            if form.get("state") == "awaiting_input" and form["try_number"] not in approved.setdefault(
                "tries", []
            ):
                # A person reads the form before answering. Answering within a second or two of the
                # form appearing races Airflow 3.3's scheduler (docs/airflow.md): the answered try is
                # failed and retried, and its form asked again, which is answered again here.
                first = seen_waiting.setdefault(form["try_number"], time.monotonic())
                if time.monotonic() - first < READING_SECONDS:
                    return
                say(f"approve_publication waits (try {form['try_number']}): reading the form, approving it")
                result["screenshots"] |= browser.approve(run_id, APPROVAL_NOTE)
                approved["tries"].append(form["try_number"])
                return
            if pending:
                return
            tis = [
                t for t in api.task_instances(run_id) if t["task_id"] == "run_attempt" and t["map_index"] >= 0
            ]
            if not [t for t in tis if t["state"] in (None, "scheduled", "queued")]:
                return
            shot = browser.shot(
                "attempts-waiting",
                f"dags/{DAG}/runs/{run_id}/tasks/run_attempt/mapped",
                wait_text=" / attempt ",
            )
            tis = [
                t for t in api.task_instances(run_id) if t["task_id"] == "run_attempt" and t["map_index"] >= 0
            ]
            pending.extend({"state": t["state"], "label": t["rendered_map_index"]} for t in tis)
            result["screenshots"]["pending"] = shot

        run = api.wait_run(run_id, timeout=900, during=look_while_waiting)
        result["docs_run"] = {
            "run_id": run_id,
            "state": run["state"],
            "seconds": round(time.monotonic() - started),
        }
        result["pending"] = pending
        quoted_run = urllib.parse.quote(run_id, safe="")
        answered = api.get(
            f"/dags/{DAG}/dagRuns/{quoted_run}/taskInstances/approve_publication/-1/hitlDetails"
        )
        result["approval"] = {
            k: answered.get(k) for k in ("responded_by_user", "chosen_options", "params_input")
        }
        result["approval"]["answered_tries"] = approved.get("tries", [])
        tis = api.task_instances(run_id)
        result["docs_run"]["tis"] = [
            {k: t[k] for k in ("task_id", "map_index", "state", "try_number", "rendered_map_index")}
            for t in tis
        ]
        errors, logs = [], {}
        for ti in tis:
            if ti["try_number"] == 0:  # never ran (the opt-in repair attempts, off): it has no log
                continue
            events = api.log_events(run_id, ti)
            key = ti["task_id"] if ti["map_index"] < 0 else f"{ti['task_id']}[{ti['map_index']}]"
            logs[key] = [event_text(e) for e in events]
            errors += [
                f"{key}: {event_text(e)}"
                for e in events
                if str(e.get("level", "")).lower() in ("error", "critical")
            ]
        result["docs_run"]["error_events"] = errors
        result["docs_run"]["logs"] = logs

        attempts = sorted((t for t in tis if t["task_id"] == "run_attempt"), key=lambda t: t["map_index"])
        shown = next((t for t in attempts if "✗" in (t["rendered_map_index"] or "")), attempts[0])
        result["screenshots"] |= {
            "grid": browser.shot("grid", f"dags/{DAG}/runs/{run_id}", wait_text="run_attempt"),
            "attempts": browser.shot("attempts", f"dags/{DAG}/runs/{run_id}/tasks/run_attempt/mapped"),
            "log": browser.shot(
                "attempt-log",
                f"dags/{DAG}/runs/{run_id}/tasks/run_attempt/mapped/{shown['map_index']}",
                wait_text="served log",
                keys="wt",  # the log viewer's shortcuts: wrap long lines, hide timestamps
            ),
            "home": browser.shot("home", "", wait_text="Health"),
        }

        # Environment review of the same cycle: one form per project every agent failed; the first
        # is read (screenshot) and answered in the browser, the others through the REST API.
        airflow(env, "dags", "unpause", "argusic_review")
        review_id = f"review__2026-12-ui__{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
        airflow(env, "dags", "trigger", "argusic_review", "--run-id", review_id,
                "--conf", json.dumps({"cycle_id": DOCS_CONF["cycle_id"]}))  # fmt: skip
        quoted_review = urllib.parse.quote(review_id, safe="")
        deadline = time.monotonic() + 300
        forms: list[dict] = []
        while time.monotonic() < deadline and not forms:
            try:
                tis = api.get(f"/dags/argusic_review/dagRuns/{quoted_review}/taskInstances", limit=100)
            except requests.HTTPError:
                tis = {"task_instances": []}
            forms = [
                t for t in tis["task_instances"]
                if t["task_id"] == "review_project" and t["state"] == "awaiting_input"
            ]  # fmt: skip
            time.sleep(2)
        if not forms:
            raise TimeoutError("argusic_review: no form waits for an answer")
        time.sleep(READING_SECONDS)  # read before answering (see look_while_waiting above)
        first = min(forms, key=lambda t: t["map_index"])
        result["screenshots"] |= browser.review(
            review_id, first["map_index"], "Environment at fault", REVIEW_NOTE
        )
        for form in api.get(f"/dags/argusic_review/dagRuns/{quoted_review}/hitlDetails")["hitl_details"]:
            if not form["response_received"] and form["task_instance"]["map_index"] != first["map_index"]:
                api.session.patch(
                    f"{base}/api/v2/dags/argusic_review/dagRuns/{quoted_review}/taskInstances/review_project/"
                    f"{form['task_instance']['map_index']}/hitlDetails",
                    json={"chosen_options": ["Project at fault"], "params_input": {"note": REVIEW_NOTE}},
                    timeout=60,
                ).raise_for_status()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            review_run = api.get(f"/dags/argusic_review/dagRuns/{quoted_review}")
            if review_run["state"] in ("success", "failed"):
                break
            time.sleep(2)
        answered = api.get(f"/dags/argusic_review/dagRuns/{quoted_review}/hitlDetails")["hitl_details"]
        result["review"] = {
            "state": review_run["state"],
            "labels": sorted(f["task_instance"]["rendered_map_index"] or "" for f in answered),
            "answers": sorted(
                (f["responded_by_user"]["name"], f["chosen_options"][0])
                for f in answered
                if f["response_received"]
            ),
        }

        # The trigger that used to be retried for 138 s: the demo cycle with another pool size, with
        # the documented command line this time.
        conflict = CONFLICT_CONF_WITHOUT_DEMO if args.skip_demo else CONFLICT_CONF
        conflict_id = f"cycle__{conflict['cycle_id']}__{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
        say(f"airflow dags trigger {DAG} --run-id {conflict_id} --conf '{json.dumps(conflict)}'")
        started = time.monotonic()
        airflow(env, "dags", "trigger", DAG, "--run-id", conflict_id, "--conf", json.dumps(conflict))
        run = api.wait_run(conflict_id, timeout=300)
        tis = {t["task_id"]: t for t in api.task_instances(conflict_id)}
        prepare = tis["prepare_pool"]
        result["conflict_run"] = {
            "run_id": conflict_id,
            "state": run["state"],
            "seconds": round(time.monotonic() - started),
            "prepare_pool": {"state": prepare["state"], "try_number": prepare["try_number"]},
            "log": [event_text(e) for e in api.log_events(conflict_id, prepare)],
        }
        result["screenshots"]["conflict"] = browser.shot(
            "conflict-log",
            f"dags/{DAG}/runs/{conflict_id}/tasks/prepare_pool",
            wait_text="already has a pool",
            keys="wt",
        )
    finally:
        if browser is not None:
            browser.close()
        subprocess.run(["bash", str(ROOT / "scripts" / "airflow_ui.sh"), "--stop"], env=env, timeout=120)
    finish(result, args, work)
    wrong = [
        what
        for what, ok in (
            ("the documented run did not succeed", result["docs_run"]["state"] == "success"),
            ("the publication was not approved in the browser", bool(approved.get("tries"))),
            ("the environment review did not succeed", result["review"]["state"] == "success"),
            ("the conflicting trigger did not fail at prepare_pool on its first try",
             result["conflict_run"]["prepare_pool"] == {"state": "failed", "try_number": 1}),
        )
        if not ok
    ]  # fmt: skip
    for what in wrong:
        say(f"WRONG: {what}")
    return 1 if wrong else 0


def smoke(api: Api, browser: Browser) -> dict:
    """The home page after logging in, read as a person reads it, and what the REST API says beside it:
    the DAGs the processor parsed and its import errors."""
    shot = browser.shot("home", "", wait_text="Health")
    home = browser.page.inner_text("body")
    browser.page.goto(f"{browser.base}/dags")
    browser.page.get_by_text(DAG, exact=True).first.wait_for(timeout=60_000)
    listed = browser.page.inner_text("body")
    return {
        "screenshots": {"home": shot},
        "home_text": home,
        "dags_text": listed,
        "dags": sorted(d["dag_id"] for d in api.get("/dags", limit=100)["dags"]),
        "import_errors": [e.get("filename") for e in api.get("/importErrors")["import_errors"]],
    }


def finish(result: dict, args: argparse.Namespace, work: Path) -> int:
    """Print what was seen; the temp work dir is removed at exit, once the UI has been stopped."""
    print(MARK + json.dumps(result, default=str), flush=True)
    if not args.workdir and os.environ.get("ARGUSIC_KEEP_WORKDIR") != "1":
        atexit.register(shutil.rmtree, work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
