"""Layer 3 of issue #14 end to end: argusic_judging_review runs with `dag.test()` (in a subprocess, as
tests/test_dags.py does) and a person answers each form **through the REST API** (a real `airflow
api-server`, users logged in with their passwords; tests/hitl_people.py, the pattern of
tests/test_review_dags.py). One form per attempt awaiting review, labelled project · attempt; a form
answered without the required look fails and its retry asks again; the reviews land in
decisions.judging_reviews (who and when are Airflow's) and, after the DAG's build,
marts.judging_review_divergence."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from conftest import dbt_build_copy
from hitl_people import Answerer, Person, api_server, free_port
from test_dags import PYTHON, airflow_env, dag_test, migrate_metadata_db, states
from test_judging_review import seed_warehouse
from test_judging_warehouse import CYCLE, board_id

pytestmark = pytest.mark.slow

USERS = "ana:admin,bo:admin"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    """A migrated metadata DB, a warehouse whose review queue holds three attempts, and an API server
    on 127.0.0.1 (stopped at the end)."""
    base = tmp_path_factory.mktemp("judging_review")
    port = free_port()
    env = airflow_env(base, AIRFLOW_UI_PORT=str(port), AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=USERS)
    bin_dir = Path(PYTHON).parent
    migrate_metadata_db(env)
    subprocess.run(
        [str(bin_dir / "airflow"), "pools", "set", "argusic_warehouse", "1", "single writer"],
        env=env,
        check=True,
        capture_output=True,
    )
    db = Path(env["ARGUSIC_WAREHOUSE"])
    seed_warehouse(db)
    dbt_build_copy(db, base / "build0")
    with api_server(env, base / "api-server.log", port) as server:
        yield {"env": env, "base": base, "db": db, **server}


def _q(world, sql: str, *params) -> list[tuple]:
    with duckdb.connect(str(world["db"]), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def test_a_person_reviews_the_queue_through_the_rest_api(world) -> None:
    ana = Person(world["url"], "ana", world["passwords"]["ana"])
    bo = Person(world["url"], "bo", world["passwords"]["bo"])
    seen: list[str] = []

    def policy(detail: dict):
        assert detail["task_instance"]["task_id"] == "review_attempt", detail
        subject = detail["subject"]
        seen.append(subject)
        blank = {"look": None, "code_structure": None, "logic_correctness": None}
        if "board #1" in subject:
            if seen.count(subject) == 1:  # bo forgets the look: the task fails, its retry asks again
                return bo, "Promote", "mock test only, but it runs", blank
            return bo, "Promote", "mock test only, but it runs", {**blank, "look": 2, "code_structure": 1,
                                                                  "logic_correctness": 1}  # fmt: skip
        if "board #2" in subject:
            return ana, "Promote", "", {**blank, "look": 1}  # the note is optional here
        return ana, "Reject", "the page is blank", {"look": 0, "code_structure": 2, "logic_correctness": 2}

    with Answerer(ana, policy) as answerer:
        (run,) = dag_test(
            world["env"], [{"dag_id": "argusic_judging_review", "conf": {"cycle_id": CYCLE}}], timeout=900
        )
    assert not answerer.errors, answerer.errors
    assert run["state"] == "success", [t for t in run["tis"] if t["state"] != "success"]
    forms = [t for t in run["tis"] if t["task_id"] == "review_attempt"]
    assert sorted(t["label"] for t in forms) == [f"wavgen · readme-runner board #{n}" for n in (1, 2, 3)]
    assert states(run, "build") == ["success"]
    first = next(t for t in forms if t["label"].endswith("#1"))
    assert first["try"] == 2  # asked again after the answer without a look

    # the form's body: why selected, the facts, the judges, the evidence links
    body = next(a["detail"]["body"] for a in answerer.answered if "board #3" in a["detail"]["subject"])
    assert "judges_disagree" in body and "**the judges disagree**" in body
    assert "evidence: log: none · recording: none" in body  # no served copy of these hand-made records

    reviews = _q(
        world,
        "SELECT attempt_id, look, decision, code_structure, logic_correctness, decided_by, decided_at, note "
        "FROM decisions.judging_reviews ORDER BY attempt_id",
    )
    assert [r[:6] for r in reviews] == [
        (board_id(1), 2, "promote", 1, 1, "bo"),
        (board_id(2), 1, "promote", None, None, "ana"),
        (board_id(3), 0, "reject", 2, 2, "ana"),
    ]
    # who and when are Airflow's: the logged-in user, the time the API server recorded the response
    bo_answer = next(a for a in answerer.answered if a["by"] == "bo" and a["params"]["look"] == 2)
    responded = datetime.fromisoformat(bo_answer["response"]["responded_at"]).astimezone(UTC)
    assert reviews[0][6] == responded.replace(tzinfo=None)
    assert reviews[1][7] is None and reviews[2][7] == "the page is blank"

    # the DAG's build: every attempt reviewed, the divergence marked
    assert _q(world, "SELECT DISTINCT review_status FROM marts.review_queue") == [("reviewed",)]
    marks = {
        r[0]: r[1:]
        for r in _q(
            world,
            "SELECT attempt_id, divergence, divergence_direction, total_gap, decision_disagrees "
            "FROM marts.judging_review_divergence",
        )
    }
    assert marks == {
        board_id(1): (-1.0, "judges_higher", -2.0, False),
        board_id(2): (None, "not_scored", None, True),
        board_id(3): (1.0, "person_higher", 2.0, True),
    }
