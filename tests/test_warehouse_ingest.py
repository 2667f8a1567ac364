from __future__ import annotations

import duckdb
import pytest
from argusic.warehouse import IngestError, ingest
from conftest import write_record


def _count(db) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT count(*) FROM raw.run_records").fetchone()[0]


def test_ingest_is_idempotent_by_attempt_id(isolated, record_doc):
    db = isolated / "w.duckdb"
    write_record(isolated / "r" / "a1", record_doc)
    second = dict(record_doc, attempt_id="x.a2", attempt_no=2)
    write_record(isolated / "r" / "a2", second)
    first = ingest([isolated / "r"], db_path=db)
    assert (first.inserted, first.already_present) == (2, 0)
    again = ingest([isolated / "r"], db_path=db)
    assert (again.inserted, again.already_present) == (0, 2)
    assert _count(db) == 2
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "SELECT errors_fixed, test_depth, log_sha256 IS NOT NULL FROM raw.run_records WHERE attempt_no=1"
        ).fetchone()
    assert row == (1, "tier1_real", True)


def test_bad_record_refuses_whole_batch(isolated, record_doc):
    db = isolated / "w.duckdb"
    write_record(isolated / "r" / "a1", record_doc)
    bad = dict(record_doc, attempt_id="x.bad", tier="enormous")
    write_record(isolated / "r" / "a2", bad)
    with pytest.raises(IngestError, match="tier"):
        ingest([isolated / "r"], db_path=db)
    assert not db.exists() or _count(db) == 0


def test_unknown_agent_is_refused(isolated, record_doc):
    write_record(isolated / "r", record_doc)
    with pytest.raises(IngestError, match="agent_id: unknown agent 'readme-runner'"):
        ingest([isolated / "r"], db_path=isolated / "w.duckdb", known_agents={"someone-else"})


def test_changed_record_under_same_attempt_id_is_refused(isolated, record_doc):
    db = isolated / "w.duckdb"
    path = write_record(isolated / "r", record_doc)
    ingest([path], db_path=db)
    record_doc["report"]["final_state"] = "rewritten"
    write_record(isolated / "r", record_doc)
    with pytest.raises(IngestError, match="write-once"):
        ingest([path], db_path=db)
    assert _count(db) == 1


def test_not_json_and_missing_path(isolated):
    bad = isolated / "x.record.json"
    bad.write_text("{nope")
    with pytest.raises(IngestError, match="not JSON"):
        ingest([bad], db_path=isolated / "w.duckdb")
    with pytest.raises(IngestError, match="no such file"):
        ingest([isolated / "missing"], db_path=isolated / "w.duckdb")


def test_duplicate_attempt_in_one_batch_is_refused(isolated, record_doc):
    a = write_record(isolated / "a", record_doc)
    b = write_record(isolated / "b", record_doc)
    with pytest.raises(IngestError, match="also in"):
        ingest([a, b], db_path=isolated / "w.duckdb")
