"""The paired review's person (issue #31, Layer 3) through Airflow, as tests/review/test_review_dags.py
does it (its DAG file's integrity: tests/orchestration/test_dags.py::test_dagbag_integrity):
`argusic_paired_review`
runs with `dag.test()` in a subprocess while two people answer its forms **through the REST API** (a
real `airflow api-server` on 127.0.0.1, users logged in with their passwords, answers sent with
`PATCH .../hitlDetails`): one form per bug the judges reported; an answer without the required note
fails the task and its retry asks again; every re-check lands in decisions.paired_bug_checks (who and
when Airflow's) and, after the DAG's build, in marts.paired_review.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from hitl_people import Answerer, Person, api_server, free_port
from test_dags import PYTHON, airflow_env, dag_test, migrate_metadata_db, states
from test_paired_review import DEBUG
from test_paired_warehouse import reviewed

pytestmark = pytest.mark.slow

USERS = "ana:admin,bo:admin"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("paired")
    port = free_port()
    env = airflow_env(base, AIRFLOW_UI_PORT=str(port), AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=USERS)
    migrate_metadata_db(env)
    subprocess.run(
        [str(Path(PYTHON).parent / "airflow"), "pools", "set", "argusic_warehouse", "1", "single writer"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    with api_server(env, base / "api-server.log", port) as server:
        yield {"env": env, "base": base, **server}


def test_a_person_rechecks_the_reported_bugs_through_the_rest_api(world) -> None:
    pair, doc, _path = reviewed(world["base"])  # three scripted judges; two bugs reported
    ana = Person(world["url"], "ana", world["passwords"]["ana"])
    bo = Person(world["url"], "bo", world["passwords"]["bo"])
    seen: list[str] = []

    def policy(detail: dict):
        assert detail["task_instance"]["task_id"] == "check_bug", detail
        subject = detail["subject"]
        seen.append(subject)
        if "judge-claude" in subject and "judge-claude-2" not in subject:
            if seen.count(subject) == 1:  # through the API, past the form: no note; the retry asks again
                return ana, "Confirmed", ""
            return ana, "Confirmed", "b == 0 returns 0 where the base raised ZeroDivisionError"
        return bo, "Not a bug", "the statement says nothing about a zero divisor"

    with Answerer(ana, policy) as answerer:
        (run,) = dag_test(world["env"], [{"dag_id": "argusic_paired_review", "conf": {}}], timeout=1200)
    assert not answerer.errors, answerer.errors
    assert run["state"] == "success", [t for t in run["tis"] if t["state"] != "success"]
    forms = [t for t in run["tis"] if t["task_id"] == "check_bug"]
    debug = "P" if pair.p.patch == DEBUG else "Q"
    assert sorted(t["label"] for t in forms) == [f"{pair.item.item_id} · {debug} · judge-claude",
                                                 f"{pair.item.item_id} · {debug} · judge-codex"]  # fmt: skip
    assert next(t for t in forms if t["label"].endswith("judge-claude"))["try"] == 2
    assert states(run, "build") == ["success"]
    body = answerer.answered[0]["detail"]["body"]
    assert "if b == 0:" in body and pair.p.label not in body and pair.q.label not in body

    db = world["env"]["ARGUSIC_WAREHOUSE"]
    with duckdb.connect(db, read_only=True) as con:
        checks = con.execute(
            "SELECT b.judge_id, c.finding, c.decided_by, c.decided_at, c.note "
            "FROM decisions.paired_bug_checks c "
            "JOIN raw.paired_bugs b USING (bug_id) ORDER BY b.judge_id"
        ).fetchall()
        mart = con.execute(
            "SELECT DISTINCT p_bugs_reported + q_bugs_reported, p_bugs_confirmed + q_bugs_confirmed, "
            "bugs_not_a_bug, bugs_awaiting_check FROM marts.paired_review"
        ).fetchall()
    assert [c[:3] for c in checks] == [
        ("judge-claude", "confirmed", "ana"),
        ("judge-codex", "not_a_bug", "bo"),
    ]
    ana_answer = next(a for a in answerer.answered if a["by"] == "ana" and a["note"])
    responded = datetime.fromisoformat(ana_answer["response"]["responded_at"]).astimezone(UTC)
    assert checks[0][3] == responded.replace(tzinfo=None)  # when: the time the API server recorded
    assert mart == [(2, 1, 1, 0)]
