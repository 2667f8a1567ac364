"""Layer 3 of issue #14: the person's review queue. The decision table's checks (look and scores
0..2, promote | reject), then one story on hand-made records through dbt: the queue selects by its
rules, the form's body shows the facts, `argusic judging review` records reviews (refusing bad
ones), and marts.judging_review_divergence marks how the person and the judges differ."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from argusic.warehouse.decisions import DecisionError, validate
from argusic.warehouse.schema import COLUMNS, migrate_raw
from conftest import dbt_build_copy
from test_judging_warehouse import CYCLE, board_id, raw_record
from typer.testing import CliRunner

runner = CliRunner()
AT = datetime(2026, 12, 3, 9, 0, 0)


def review_row(**changes) -> dict:
    row = {"attempt_id": board_id(1), "task_revision": "c" * 64, "look": 2, "decision": "promote",
           "decided_by": "ana", "decided_at": AT, "note": "reads well"}  # fmt: skip
    row.update(changes)
    return row


def test_a_review_is_stored_with_integers_and_optional_scores_and_note():
    clean = validate("judging_reviews", review_row(look="1", code_structure=0, note=""))
    assert (clean["look"], clean["code_structure"], clean["logic_correctness"], clean["note"]) == (
        1,
        0,
        None,
        None,
    )
    assert validate("judging_reviews", review_row(look=2.0))["look"] == 2


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"look": 3}, "look: 3 is not in 0..2"),
        ({"look": -1}, "look: -1 is not in 0..2"),
        ({"look": None}, "look: missing"),
        ({"look": True}, "look: True is not an integer"),
        ({"look": 1.5}, "look: '1.5' is not an integer"),
        ({"look": "two"}, "look: 'two' is not an integer"),
        ({"code_structure": 5}, "code_structure: 5 is not in 0..2"),
        ({"logic_correctness": "9" * 40}, "logic_correctness: '" + "9" * 40 + "' is not an integer"),
        ({"decision": "maybe"}, "decision: 'maybe' is not one of promote, reject"),
        ({"decided_by": ""}, "decided_by: missing"),
    ],
)
def test_a_bad_review_is_refused_naming_the_field(changes: dict, problem: str):
    with pytest.raises(DecisionError) as err:
        validate("judging_reviews", review_row(**changes))
    assert problem in str(err.value)


def _verdict(aid: str, judge: str, cs: int | None, lc: int | None, status: str = "valid") -> tuple:
    scores = None if cs is None else json.dumps({"code_structure": cs, "logic_correctness": lc})
    return (aid, CYCLE, "install_and_run", "c" * 64, judge, "claude-code", "m", "e" * 64, "f" * 64, status,
            None, scores, "[]", "summary", True, judge * 8, AT)  # fmt: skip


SERVED_LOG = "https://evidence.example.org/served/log.txt"
AGREED = board_id(1, project="otherproj")


def seed_warehouse(db: Path) -> None:
    """Four board attempts: a1 pass_mock and a2 fail with 80 (near the boundary), a3 whose judges
    disagree (2, 0, 1 on code_structure), and one of another project whose judges agree (in the queue
    but not selected, after the selected ones; a pair set holds three valid attempts at most); raw
    tables only."""
    db.parent.mkdir(parents=True, exist_ok=True)
    records = [
        raw_record(board_id(1), test_depth="tier2_mock", served_log_uri=SERVED_LOG),
        raw_record(board_id(2), test_depth="tier3_none"),  # installed, ran, not verified
        raw_record(board_id(3), final_state="done `rm -rf` [x](javascript:y)"),
        raw_record(AGREED),
    ]
    with duckdb.connect(str(db)) as con:
        migrate_raw(con)
        con.executemany(
            f"INSERT INTO raw.run_records ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})",
            [[r.get(c) for c in COLUMNS] for r in records],
        )
        con.executemany(
            f"INSERT INTO raw.judge_verdicts VALUES ({', '.join('?' * 17)})",
            [
                _verdict(board_id(1), "a", 2, 2), _verdict(board_id(1), "b", 2, 2),
                _verdict(board_id(3), "a", 2, 1), _verdict(board_id(3), "b", 0, 1),
                _verdict(board_id(3), "c", 1, 1),
                _verdict(AGREED, "a", 2, 2), _verdict(AGREED, "b", 2, 2),
                _verdict(AGREED, "c", 0, 0, status="refused"),
            ],
        )  # fmt: skip


def _dag_tasks(monkeypatch) -> dict:
    """The judging review DAG's task functions, its cycle fixed to CYCLE (no Airflow context here)."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "dags" / "argusic_judging_review.py"
    spec = importlib.util.spec_from_file_location("argusic_judging_review_dag", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "_cycle", lambda params: CYCLE)
    dag = module.argusic_judging_review()
    return {t: dag.get_task(t).python_callable for t in ("items_to_review", "queue_for_one_form")}


def _review(app, attempt: str, look: str, decision: str, by: str, note: str, *more: str):
    args = ["--attempt", attempt, "--look", look, "--decision", decision, "--by", by, "--note", note]
    return runner.invoke(app, ["judging", "review", *args, "--no-build", *more])


def _q(db: Path, sql: str, *params) -> list[dict]:
    with duckdb.connect(str(db), read_only=True) as con:
        cur = con.execute(sql, list(params))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def test_queue_selects_by_its_rules_and_reviews_land_in_the_divergence_mart(isolated: Path, monkeypatch):
    from argusic.cli.main import app
    from argusic.review.judging import ReviewError, awaiting, body_of, subject_of

    monkeypatch.setenv("COLUMNS", "200")
    db = isolated / "warehouse" / "argusic.duckdb"
    seed_warehouse(db)
    dbt_build_copy(db, isolated / "build1")

    queued = {r["attempt_id"]: r for r in _q(db, "SELECT * FROM marts.review_queue")}
    # issue #31: every attempt is in the queue; the rules select (and order), they do not exclude
    assert {a: (r["reasons"], r["is_selected"]) for a, r in queued.items()} == {
        board_id(1): ("near_boundary", True),
        board_id(2): ("near_boundary", True),
        board_id(3): ("judges_disagree", True),
        AGREED: ("", False),
    }
    assert (
        queued[board_id(1)]["provisional_result"] == "pass"
        and queued[board_id(2)]["provisional_result"] == "fail"
    )
    assert queued[board_id(3)]["code_structure_median"] == 1.0 and queued[board_id(3)]["judges_total"] == 2.0

    items = awaiting(CYCLE)
    assert [i.attempt_id for i in items] == [board_id(1), board_id(2), board_id(3), AGREED]  # selected first
    assert [i.attempt_id for i in awaiting(CYCLE, selected_only=True)] == [
        board_id(1),
        board_id(2),
        board_id(3),
    ]
    (agreed,) = awaiting(CYCLE, attempt_ids=[AGREED])  # any attempt can be reached by name
    assert "**Not selected by a rule**" in body_of(agreed) and "counts as a result" in body_of(agreed)
    with pytest.raises(ReviewError, match=r"not awaiting a review in cycle .*: 2026-12\.board\.x\.y\.a9"):
        awaiting(CYCLE, attempt_ids=[AGREED, f"{CYCLE}.board.x.y.a9"])
    # ... and so do the DAG's forms: the selected ones, every one (selected first), the ones named;
    # the one form takes the same attempts, in the queue's order
    items_ids = [board_id(1), board_id(2), board_id(3)]
    forms = _dag_tasks(monkeypatch)
    per_attempt = forms["items_to_review"]
    assert [i["attempt_id"] for i in per_attempt({})] == [board_id(1), board_id(2), board_id(3)]
    assert [i["attempt_id"] for i in per_attempt({"every_attempt": True})][-1] == AGREED
    assert [i["attempt_id"] for i in per_attempt({"attempt_ids": [AGREED]})] == [AGREED]
    one_form = forms["queue_for_one_form"]
    assert [i["attempt_id"] for i in one_form({"bulk": True})["items"]] == items_ids
    every = one_form({"bulk": True, "every_attempt": True})["items"]
    assert [i["attempt_id"] for i in every] == [*items_ids, AGREED]
    assert [i["attempt_id"] for i in one_form({"bulk": True, "attempt_ids": [AGREED]})["items"]] == [AGREED]
    json.dumps([i.to_dict() for i in items])  # XCom carries them
    first, third = items[0], items[2]
    assert subject_of(first) == f"Judging review: wavgen · readme-runner board #1 (cycle {CYCLE})"
    body = body_of(first)
    assert "near_boundary" in body and "provisional result: **pass**" in body
    assert f"[log]({SERVED_LOG})" in body and "recording: none" in body
    assert "outcome: **pass_mock**" in body and "duration: 1,200 s" in body and "cost: unknown" in body
    assert "total 4.0 of 4" in body
    body3 = body_of(third)
    assert "**the judges disagree**" in body3
    assert "`done 'rm -rf' [x](javascript:y)`" in body3  # the agent's text is quoted, never a link

    # the CLI: a bad look is refused naming it; good reviews are recorded
    bad = _review(app, board_id(1), "3", "promote", "ana", "x")
    assert bad.exit_code == 2 and "look: 3 is not in 0..2" in bad.output
    unknown = _review(app, f"{CYCLE}.board.x.y.a9", "1", "reject", "ana", "x")
    assert unknown.exit_code == 2 and "is not in the warehouse" in unknown.output
    for aid, look, decision, *scores in (
        [board_id(1), "2", "promote", "--code-structure", "1", "--logic-correctness", "1"],
        [board_id(2), "1", "promote"],
        [board_id(3), "0", "reject", "--code-structure", "2", "--logic-correctness", "2"],
        [AGREED, "2", "promote"],  # not selected by a rule, reviewed all the same
    ):
        ok = _review(app, aid, look, decision, "bo", f"why {aid}", *scores)
        assert ok.exit_code == 0 and "recorded" in ok.output, ok.output
    assert len((isolated / "runs" / "decisions" / "judging_reviews.jsonl").read_text().splitlines()) == 4
    dbt_build_copy(db, isolated / "build2")

    statuses = {r["attempt_id"]: r["review_status"] for r in _q(db, "SELECT * FROM marts.review_queue")}
    assert set(statuses.values()) == {"reviewed"} and len(statuses) == 4
    assert awaiting(CYCLE) == []
    # the person's promote/reject is the final decision (issue #31): a2's provisional fail promoted
    # counts as a result, a3's provisional pass rejected does not
    results = {r["attempt_id"]: r for r in _q(db, "SELECT * FROM marts.judging_results")}
    assert {
        a: (r["provisional_result"], r["final_decision"], r["counts_as_result"]) for a, r in results.items()
    } == {
        board_id(1): ("pass", "promote", True),
        board_id(2): ("fail", "promote", True),
        board_id(3): ("pass", "reject", False),
        AGREED: ("pass", "promote", True),
    }
    marks = {r["attempt_id"]: r for r in _q(db, "SELECT * FROM marts.judging_review_divergence")}
    one, two, three = marks[board_id(1)], marks[board_id(2)], marks[board_id(3)]
    assert (one["divergence"], one["divergence_direction"], one["total_gap"]) == (-1.0, "judges_higher", -2.0)
    assert (one["decided_by"], one["note"], one["decision_disagrees"]) == ("bo", f"why {board_id(1)}", False)
    assert (two["divergence_direction"], two["total_gap"], two["decision_disagrees"]) == (
        "not_scored",
        None,
        True,
    )
    assert (three["divergence"], three["divergence_direction"], three["total_gap"]) == (
        1.0,
        "person_higher",
        2.0,
    )
    assert three["decision_disagrees"] is True  # rejected a provisional pass
    listed = runner.invoke(app, ["judging", "queue", "--cycle", CYCLE])
    assert listed.exit_code == 0 and "reviewed" in listed.output and board_id(3) in listed.output
