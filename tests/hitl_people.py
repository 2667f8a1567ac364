"""People answering Airflow's human-in-the-loop forms through the REST API, as a person would: a real
`airflow api-server` on 127.0.0.1 sharing a test's metadata DB, users logged in with their passwords
(simple auth manager, `POST /auth/token`), answers sent with
`PATCH /api/v2/dags/{dag}/dagRuns/{run}/taskInstances/{task}/{map_index}/hitlDetails`.

Used by tests/review/test_review_dags.py (every decision) and tests/ops/test_cluster_cycle.py (the
cycle's approval)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import requests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def api_server(env: dict[str, str], log_path: Path, port: int) -> Iterator[dict]:
    """Start `airflow api-server` on 127.0.0.1:`port` with `env` (its AIRFLOW_HOME migrated); yields
    {"url", "passwords"}; stops its process group at the end."""
    airflow = Path(sys.executable).parent / "airflow"
    log = log_path.open("w")
    server = subprocess.Popen(
        [str(airflow), "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(180):
            try:
                if requests.get(f"{url}/api/v2/monitor/health", timeout=2).ok:
                    break
            except (requests.ConnectionError, requests.Timeout):
                pass  # not listening yet, or too busy starting to answer within 2 s (a loaded host)
            if server.poll() is not None:
                break
            time.sleep(1)
        else:
            server.poll()
        if server.returncode is not None:
            raise AssertionError("the API server stopped: " + log_path.read_text()[-3000:])
        passwords = json.loads(Path(env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]).read_text())
        yield {"url": url, "passwords": passwords}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()


def sign_in(page, url: str, name: str, password: str) -> None:
    """Sign `name` in through Airflow's own login page in a browser page (Playwright), as a person does."""
    page.goto(f"{url}/")
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda at: "/auth/login" not in at, timeout=60_000)


class Person:
    """One user of the REST API, logged in with their password."""

    def __init__(self, url: str, name: str, password: str) -> None:
        self.url, self.name = url, name
        self.session = requests.Session()
        answer = self.session.post(
            f"{url}/auth/token", json={"username": name, "password": password}, timeout=30
        )
        assert answer.status_code in (200, 201), answer.text
        self.session.headers["Authorization"] = f"Bearer {answer.json()['access_token']}"

    def waiting(self) -> list[dict]:
        got = self.session.get(
            f"{self.url}/api/v2/dags/~/dagRuns/~/hitlDetails",
            params={"response_received": "false"},
            timeout=30,
        )
        got.raise_for_status()
        return list(got.json()["hitl_details"])

    def answer(self, detail: dict, option: str, note: str, params: dict | None = None) -> requests.Response:
        """Choose `option` with the note and, for a form with more fields, their values (`params`)."""
        ti = detail["task_instance"]
        return self.session.patch(
            f"{self.url}/api/v2/dags/{ti['dag_id']}/dagRuns/{ti['dag_run_id']}/taskInstances/"
            f"{ti['task_id']}/{ti['map_index']}/hitlDetails",
            json={"chosen_options": [option], "params_input": {"note": note, **(params or {})}},
            timeout=30,
        )


class Answerer(threading.Thread):
    """While a DAG runs: every second, list the waiting forms (as `watcher`) and answer each with
    `policy(detail) -> (person, option, note)` or `(person, option, note, params)` (a form with more
    fields than the note). `answered` and `errors` are read after `stop`."""

    def __init__(self, watcher: Person, policy: Callable[[dict], tuple[Person, str, str]]) -> None:
        super().__init__(daemon=True)
        self.watcher, self.policy = watcher, policy
        self.answered: list[dict] = []
        self.errors: list = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                for detail in self.watcher.waiting():
                    # A person answers a form shown as awaiting input. Airflow 3.3 resumes a task on
                    # an answer only when it is already parked (awaiting_input or deferred): an answer
                    # sent while the operator is still creating its form is stored but never resumes
                    # the task (seen here: answered 0.2 s after the form appeared, waited forever).
                    if (detail.get("task_instance") or {}).get("state") != "awaiting_input":
                        continue
                    person, option, note, *more = self.policy(detail)
                    params = more[0] if more else None
                    got = person.answer(detail, option, note, params)
                    if got.status_code != 200:
                        self.errors.append((got.status_code, got.text))
                    self.answered.append(
                        {"detail": detail, "by": person.name, "option": option, "note": note,
                         "params": params, "response": got.json() if got.ok else None}
                    )  # fmt: skip
            except Exception as err:  # keep answering; the test reports what went wrong
                self.errors.append(repr(err))
            self.stop.wait(1.0)

    def __enter__(self) -> Answerer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.join(timeout=10)
