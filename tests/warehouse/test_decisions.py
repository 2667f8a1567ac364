"""People's decisions as data: validated, appended (journal + warehouse), idempotent by key."""

from __future__ import annotations

from datetime import datetime

import duckdb
import pytest
from argusic.warehouse import decisions


@pytest.fixture
def places(tmp_path, monkeypatch):
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("ARGUSIC_WAREHOUSE", str(tmp_path / "wh.duckdb"))
    return tmp_path


def review(**over):
    row = {"cycle_id": "2026-12", "project_id": "spark", "decision": "environment_at_fault",
           "decided_by": "ops:kim", "decided_at": datetime(2026, 12, 2, 9, 30),
           "note": "mirror was down"}  # fmt: skip
    return {**row, **over}


def test_a_decision_is_journalled_and_stored_once(places):
    assert decisions.record("review_decisions", review()) is True
    assert decisions.record("review_decisions", review()) is False  # a retried task changes nothing
    con = duckdb.connect(str(places / "wh.duckdb"), read_only=True)
    rows = con.execute(
        "select project_id, decision, decided_by, note from decisions.review_decisions"
    ).fetchall()
    assert rows == [("spark", "environment_at_fault", "ops:kim", "mirror was down")]
    lines = decisions.journal_path("review_decisions").read_text().splitlines()
    assert len(lines) == 1 and '"decided_at": "2026-12-02T09:30:00"' in lines[0]


def test_a_rebuilt_warehouse_gets_every_decision_back_from_the_journal(places):
    decisions.record("review_decisions", review())
    decisions.record(
        "review_decisions", review(decision="project_at_fault", decided_at="2026-12-03T10:00:00+02:00")
    )
    con = duckdb.connect(str(places / "fresh.duckdb"))
    assert decisions.replay_journals(con) == {"review_decisions": 2}
    assert decisions.replay_journals(con) == {"review_decisions": 0}
    times = con.execute("select decided_at from decisions.review_decisions order by 1").fetchall()
    assert [t[0] for t in times] == [datetime(2026, 12, 2, 9, 30), datetime(2026, 12, 3, 8, 0)]  # UTC


def test_bad_decisions_are_refused_naming_every_problem_and_nothing_is_written(places):
    with pytest.raises(decisions.DecisionError) as err:
        decisions.record(
            "review_decisions", review(decision="maybe", note=" ", decided_by="x" * 400, extra=1)
        )
    text = str(err.value)
    for part in (
        "'maybe' is not one of",
        "note: missing",
        "decided_by: 400 characters",
        "unknown field 'extra'",
    ):
        assert part in text
    assert not decisions.journal_path("review_decisions").exists()
    assert not (places / "wh.duckdb").exists()
    with pytest.raises(decisions.DecisionError, match="unknown decision table 'votes'"):
        decisions.record("votes", {})


def test_optional_fields_may_be_empty_and_others_may_not(places):
    ruling = {"dispute_id": "d1", "ruling": "result_stands", "decided_by": "ops:kim",
              "decided_at": datetime(2026, 12, 2), "note": "log shows the agent stopped"}  # fmt: skip
    assert decisions.record("dispute_rulings", ruling)
    with pytest.raises(decisions.DecisionError, match="dispute_id: missing"):
        decisions.record("dispute_rulings", {**ruling, "dispute_id": ""})
