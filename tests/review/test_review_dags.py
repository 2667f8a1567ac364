"""People's decisions end to end: the DAGs run with `dag.test()` (in a subprocess, as
tests/orchestration/test_dags.py
does) and every form is answered **through the REST API, as a person would**: a real `airflow
api-server` on 127.0.0.1 shares the test's metadata DB; two users (ana, bo) log in with their
passwords (simple auth manager, `POST /auth/token`) and answer the waiting forms with
`PATCH /api/v2/dags/{dag}/dagRuns/{run}/taskInstances/{task}/{map_index}/hitlDetails`.

Why a real server rather than Airflow's test client for the FastAPI app: `dag.test()` runs in its own
process and waits for the answer in the metadata DB; a server in a third process is exactly how a
person's answer reaches a waiting task, with real authentication (the answer's user is the logged-in
one), and it needs no Airflow import in the pytest process (tests/orchestration/test_dags.py's rule).

Both stories with human-in-the-loop forms share one metadata DB and one API server (issue 23), each
with its own warehouse and folders: the decisions of issue 8 (below), then the judging review of
issue 14 (argusic_judging_review: one form per attempt awaiting review, labelled project · attempt; a
form answered without the required look fails and its retry asks again; the reviews land in
decisions.judging_reviews, who and when Airflow's, and after the DAG's build in
marts.judging_review_divergence).

The decisions, in order: a demo cycle (local executor) waits for approval → ana approves → published;
argusic_review → one form per project under review, answered once each way; the cycle again →
bo rejects → publish skipped, nothing new published; argusic_disputes → ana rules environment at
fault → the attempt is rerun and the rerun counts in its place (marts.attempt_corrections).
"""

from __future__ import annotations

import hashlib
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from conftest import dbt_build_copy
from hitl_people import Answerer, Person, api_server, free_port
from test_dags import PYTHON, airflow_env, dag_test, env_for, migrate_metadata_db, states
from test_judging_review import seed_warehouse
from test_judging_warehouse import CYCLE as JUDGED_CYCLE
from test_judging_warehouse import board_id

pytestmark = pytest.mark.slow

CYCLE = "2026-12-rv"
USERS = "ana:admin,bo:admin"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    """A migrated metadata DB, the demo forge, and an API server on 127.0.0.1 (stopped at the end)."""
    from argusic.sources.forge import build_forge

    base = tmp_path_factory.mktemp("review")
    port = free_port()
    forge = build_forge(base / "forge")
    env = airflow_env(
        base,
        AIRFLOW_UI_PORT=str(port),
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=USERS,
        ARGUSIC_EXECUTOR="local",
        ARGUSIC_REPO_ROOTS=str(forge.parent),
        ARGUSIC_FORGE_DIR=str(base / "forge"),
    )
    bin_dir = Path(PYTHON).parent
    migrate_metadata_db(env)
    subprocess.run(
        [str(bin_dir / "airflow"), "pools", "set", "argusic_warehouse", "1", "single writer"],
        env=env,
        check=True,
        capture_output=True,
    )
    with api_server(env, base / "api-server.log", port) as server:
        yield {"env": env, "base": base, "forge": forge, **server}


class Story:
    def __init__(self, world) -> None:
        self.ana = Person(world["url"], "ana", world["passwords"]["ana"])
        self.bo = Person(world["url"], "bo", world["passwords"]["bo"])
        self.approve = True
        self.reviewed: list[str] = []

    def policy(self, detail: dict):
        task_id = detail["task_instance"]["task_id"]
        if task_id == "approve_publication":
            if self.approve:
                return self.ana, "Approve", "checked the changes against the attempts"
            return self.bo, "Reject", "hold: the review decisions of this cycle need a second look"
        if task_id == "review_project":
            self.reviewed.append(detail["subject"])
            if len(self.reviewed) == 1:  # a person forgets the note: the task fails, its retry asks again
                return self.bo, "Project at fault", ""
            if detail["subject"] == self.reviewed[0]:  # the same form again, on its retry
                return self.bo, "Project at fault", "the README's install step is wrong; every agent hit it"
            return self.ana, "Environment at fault", "the runner image lacks the tool this project needs"
        if task_id == "rule":
            return self.ana, "Environment at fault", "the log shows our mirror served a stale commit"
        raise AssertionError(f"unexpected form {task_id}")


def _run(world, story: Story, runs: list[dict], timeout: float = 900) -> list[dict]:
    with Answerer(story.ana, story.policy) as answerer:
        results = dag_test(world["env"], runs, timeout=timeout)
    story.last_answers = answerer.answered
    assert not answerer.errors, answerer.errors
    return results


def _q(world, sql: str, *params) -> list[tuple]:
    with duckdb.connect(world["env"]["ARGUSIC_WAREHOUSE"], read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def test_decisions_answered_through_the_rest_api(world) -> None:
    story = Story(world)
    conf = {
        "cycle_id": CYCLE,
        "catalogue": str(world["forge"]),
        "demo": True,
        "attempts_per_pair": 1,
        "agents": ["readme-runner"],
    }
    published = world["base"] / "published" / CYCLE / "board.json"

    # 1. the cycle waits for a person; ana approves the exact board; it is published
    (first,) = _run(world, story, [{"dag_id": "argusic_cycle", "conf": conf}])
    assert first["state"] == "success", [t for t in first["tis"] if t["state"] != "success"]
    assert states(first, "approve_publication") == ["success"] and states(first, "publish") == ["success"]
    (approval,) = story.last_answers
    assert approval["by"] == "ana" and approval["response"]["responded_by"]["name"] == "ana"
    assert "First publication of this cycle" in approval["detail"]["body"]
    prepared = next(x["value"] for x in first["xcom"] if x["task_id"] == "prepare_publication")
    assert prepared["board_sha256"] in approval["detail"]["body"]
    assert hashlib.sha256(published.read_bytes()).hexdigest() == prepared["board_sha256"]
    rows = _q(world, "SELECT decision, decided_by, note, board_sha256 FROM decisions.publication_decisions")
    assert rows == [("approved", "ana", "checked the changes against the attempts", prepared["board_sha256"])]

    # 2. environment review: one form per project under review, labelled by project
    waiting = _q(
        world,
        "SELECT project_id FROM marts.project_review WHERE cycle_id = ? AND "
        "review_status = 'awaiting_decision' ORDER BY project_id",
        CYCLE,
    )
    assert len(waiting) >= 2, waiting  # the forge has projects no agent can run
    (review,) = _run(world, story, [{"dag_id": "argusic_review", "conf": {"cycle_id": CYCLE}}])
    assert review["state"] == "success", review
    forms = [t for t in review["tis"] if t["task_id"] == "review_project"]
    assert sorted(t["label"] for t in forms) == sorted(f"{p} · cycle {CYCLE}" for (p,) in waiting)
    assert states(review, "build") == ["success"]
    # the form answered without a note failed (nothing recorded) and was asked again on its retry
    first = story.last_answers[0]
    assert first["note"] == "" and story.reviewed.count(first["detail"]["subject"]) == 2
    retried = [
        t for t in forms if t["label"].startswith(first["detail"]["subject"].split(": ")[1].split(" ")[0])
    ]
    assert [t["try"] for t in retried] == [2]
    body = first["detail"]["body"]
    assert "final state" in body and "end reason" in body and "log" in body
    decided = _q(
        world,
        "SELECT project_id, review_status, decided_by, decision_note, excluded_from_board "
        "FROM marts.project_review WHERE cycle_id = ? AND under_review ORDER BY decided_by",
        CYCLE,
    )
    kinds = {(status, by, excluded) for _, status, by, _, excluded in decided}
    assert ("project_at_fault", "bo", False) in kinds and ("environment_at_fault", "ana", True) in kinds
    # who and when are Airflow's: the logged-in user, the time the API server recorded the response
    bo = next(a for a in story.last_answers if a["by"] == "bo" and a["note"])
    responded = datetime.fromisoformat(bo["response"]["responded_at"]).astimezone(UTC).replace(tzinfo=None)
    assert bo["response"]["responded_by"]["name"] == "bo"
    assert _q(
        world, "SELECT decided_by, decided_at FROM decisions.review_decisions WHERE decided_by = 'bo'"
    ) == [("bo", responded)]

    # 3. the cycle again: the board changed (a project counts again); bo rejects; nothing published
    before = published.read_bytes()
    story.approve = False
    (second,) = _run(world, story, [{"dag_id": "argusic_cycle", "conf": conf}])
    assert second["state"] == "success", second
    assert states(second, "approve_publication") == ["success"]
    assert states(second, "publish") == ["skipped"]
    assert published.read_bytes() == before
    (rejection,) = story.last_answers
    assert "Changes since the last publication" in rejection["detail"]["body"]
    assert _q(
        world, "SELECT decided_by, note FROM decisions.publication_decisions WHERE decision = 'rejected'"
    ) == [("bo", "hold: the review decisions of this cycle need a second look")]

    # 4. a dispute: ana rules environment at fault; the attempt is rerun and counts in its place
    (attempt_id,) = _q(
        world,
        "SELECT attempt_id FROM marts.attempt_scores WHERE cycle_id = ? AND is_valid "
        "ORDER BY attempt_id LIMIT 1",
        CYCLE,
    )[0]
    dispute_conf = {
        "attempt_id": attempt_id,
        "claim": "our CI passes; the run was cut short",
        "contact": "maintainer@example.org",
    }
    (dispute,) = _run(world, story, [{"dag_id": "argusic_disputes", "conf": dispute_conf}])
    assert dispute["state"] == "success", dispute
    assert [states(dispute, t) for t in ("file_dispute", "rule", "correct", "build")] == [["success"]] * 4
    assert "our CI passes" in story.last_answers[0]["detail"]["body"]
    rerun = f"{attempt_id}.r1"
    corrections = _q(
        world, "SELECT attempt_id, note, decided_by, rerun_attempt_id FROM marts.attempt_corrections"
    )
    assert corrections == [(attempt_id, "the log shows our mirror served a stale commit", "ana", rerun)]
    scores = dict(
        _q(
            world,
            "SELECT attempt_id, invalid_reason FROM marts.attempt_scores WHERE attempt_id IN (?, ?)",
            attempt_id,
            rerun,
        )
    )
    assert scores[rerun] is None and scores[attempt_id].startswith("corrected: dispute ")
    (rerun_of,) = _q(world, "SELECT rerun_of FROM raw.run_records WHERE attempt_id = ?", rerun)[0]
    assert rerun_of == attempt_id


@pytest.fixture(scope="module")
def judging(world, tmp_path_factory: pytest.TempPathFactory):
    """The judging review's own warehouse (its queue holds three attempts) and folders, on the same
    metadata DB and API server."""
    base = tmp_path_factory.mktemp("judging_review")
    env = env_for(Path(world["env"]["AIRFLOW_HOME"]), base, AIRFLOW_UI_PORT=world["env"]["AIRFLOW_UI_PORT"])
    db = Path(env["ARGUSIC_WAREHOUSE"])
    seed_warehouse(db)
    dbt_build_copy(db, base / "build0")
    return {"env": env, "base": base}


def test_a_person_reviews_the_judging_queue_through_the_rest_api(world, judging) -> None:
    ana = Person(world["url"], "ana", world["passwords"]["ana"])
    bo = Person(world["url"], "bo", world["passwords"]["bo"])
    seen: list[str] = []

    def policy(detail: dict):
        assert detail["task_instance"]["task_id"] == "review_attempt", detail
        subject = detail["subject"]
        seen.append(subject)
        # The form sends its choices as the strings it lists ("0".."2"; "" for a look not chosen,
        # null for an optional score left empty): what a browser sends (test_review_form_browser.py).
        blank = {"look": "", "code_structure": None, "logic_correctness": None}
        if "board #1" in subject:
            if seen.count(subject) == 1:  # through the API, past the form: no look; the retry asks again
                return bo, "Promote", "mock test only, but it runs", blank
            return bo, "Promote", "mock test only, but it runs", {**blank, "look": "2", "code_structure": "1",
                                                                  "logic_correctness": "1"}  # fmt: skip
        if "board #2" in subject:
            return ana, "Promote", "", {**blank, "look": "1"}  # the note is optional here
        return (
            ana,
            "Reject",
            "the page is blank",
            {"look": "0", "code_structure": "2", "logic_correctness": "2"},
        )

    with Answerer(ana, policy) as answerer:
        (run,) = dag_test(
            judging["env"],
            [{"dag_id": "argusic_judging_review", "conf": {"cycle_id": JUDGED_CYCLE}}],
            timeout=900,
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
        judging,
        "SELECT attempt_id, look, decision, code_structure, logic_correctness, decided_by, decided_at, note "
        "FROM decisions.judging_reviews ORDER BY attempt_id",
    )
    assert [r[:6] for r in reviews] == [
        (board_id(1), 2, "promote", 1, 1, "bo"),
        (board_id(2), 1, "promote", None, None, "ana"),
        (board_id(3), 0, "reject", 2, 2, "ana"),
    ]
    # who and when are Airflow's: the logged-in user, the time the API server recorded the response
    bo_answer = next(a for a in answerer.answered if a["by"] == "bo" and a["params"]["look"] == "2")
    responded = datetime.fromisoformat(bo_answer["response"]["responded_at"]).astimezone(UTC)
    assert reviews[0][6] == responded.replace(tzinfo=None)
    assert reviews[1][7] is None and reviews[2][7] == "the page is blank"

    # the DAG's build: every selected attempt reviewed, the divergence marked (since issue #31 every
    # attempt is in the queue; the ones no rule selects wait there unless asked for: every_attempt)
    assert _q(judging, "SELECT DISTINCT review_status FROM marts.review_queue WHERE is_selected") == [
        ("reviewed",)
    ]
    marks = {
        r[0]: r[1:]
        for r in _q(
            judging,
            "SELECT attempt_id, divergence, divergence_direction, total_gap, decision_disagrees "
            "FROM marts.judging_review_divergence",
        )
    }
    assert marks == {
        board_id(1): (-1.0, "judges_higher", -2.0, False),
        board_id(2): (None, "not_scored", None, True),
        board_id(3): (1.0, "person_higher", 2.0, True),
    }
