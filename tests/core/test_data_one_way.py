"""Data goes one way (issue 24): within a task a run record is parsed once and handed on (never its path
for the next step to parse again), an attempt's spec is read once, and an ingest takes one writer lock
and one transaction, with a cycle's repair grades loaded under the same lock as its run records.

The counts are taken with spies: every validation of a RunRecord (from a file, a string or a dict), every
AttemptSpec read from JSON, every writer-lock acquisition and every BEGIN on a warehouse connection."""

from __future__ import annotations

import collections
from pathlib import Path

import duckdb
import pytest
from argusic.attempts.run import measure_attempt, run_attempt
from argusic.attempts.story import attempt_story, story_of
from argusic.core.evidence import EvidenceStore
from argusic.core.record import RecordFile, RunRecord, load_record_file
from argusic.core.spec import AttemptSpec
from argusic.sandbox.executor import LocalExecutor
from argusic.warehouse import db as db_mod
from argusic.warehouse import lock as lock_mod
from argusic.warehouse.load_repair import RepairIngestError
from argusic.warehouse.load_runs import ingest, ingest_cycle_records
from conftest import write_record
from test_attempt import _spec, scripted  # noqa: F401  (the scripted harness fixture)
from test_executor import make_repo
from test_repair_warehouse import grade, item, validation, write, write_item


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> collections.Counter:
    """Counts of record parses, spec reads, writer locks taken and transactions begun."""
    counts: collections.Counter = collections.Counter()

    def spy(owner, name: str, key: str) -> None:
        original = getattr(owner, name)

        def counting(*args, **kwargs):
            counts[key] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counting)

    spy(RunRecord, "model_validate", "record parsed")
    spy(RunRecord, "model_validate_json", "record parsed")
    spy(AttemptSpec, "model_validate_json", "spec read")
    spy(lock_mod, "_write_holder", "writer lock")  # once per acquisition, by whichever module takes it

    class Counted:  # a warehouse connection that counts the transactions begun on it
        def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
            self._con = con

        def __getattr__(self, name: str):
            return getattr(self._con, name)

        def __enter__(self) -> Counted:
            return self

        def __exit__(self, *exc) -> None:
            self._con.__exit__(*exc)

        def execute(self, sql: str, *args):
            if sql.strip().upper() == "BEGIN":
                counts["transaction"] += 1
            return self._con.execute(sql, *args)

    opened = db_mod.open_duckdb
    monkeypatch.setattr(db_mod, "open_duckdb", lambda *a, **k: Counted(opened(*a, **k)))
    return counts


# --- an attempt task -------------------------------------------------------------------------------


@pytest.mark.usefixtures("scripted")
def test_an_attempt_parses_its_record_once_and_its_story_reads_nothing_again(
    tmp_path: Path, counted: collections.Counter
) -> None:
    """Measured: built and validated once (with its served copies: copied, not parsed again); the
    story is told from the record and spec the task holds. Before: the record was validated twice
    while built (the presentation re-parsed it whole), and the story read the spec and parsed every
    record again."""
    repo, commit = make_repo(tmp_path, "ok")
    spec = _spec(repo, commit, "ok")
    store, runs = EvidenceStore((tmp_path / "evidence").as_uri()), tmp_path / "runs"
    measured = measure_attempt(spec, LocalExecutor(), store, runs)
    assert counted == {"record parsed": 1}
    assert measured.record == load_record_file(measured.path)  # what was written is what is handed on
    assert measured.record.presentation is not None and measured.record.invalid_reason is None
    counted.clear()
    story = story_of(spec, [measured])
    assert counted == {}  # neither the spec nor the record read again
    assert story.label.startswith(spec.label) and story.lines[-1] == f"   run record: {measured.path}"
    # Resumed (the record exists): parsed once, and handed on as it is
    again = measure_attempt(spec, LocalExecutor(), store, runs)
    assert counted == {"record parsed": 1} and again == measured
    # The callers that hold only paths read each file once
    counted.clear()
    assert run_attempt(spec, LocalExecutor(), store, runs) == measured.path
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.model_dump_json())
    assert attempt_story(spec_path, [str(measured.path)]) == story
    assert counted == {"record parsed": 2, "spec read": 1}  # run_attempt's 1 + the story's 1


# --- an ingest task --------------------------------------------------------------------------------


@pytest.fixture
def cycle_files(isolated: Path, record_doc: dict) -> dict:
    """Two run records of a cycle (one a valid rerun of the other) and a repair items folder with a
    grade: what the cycle's ingest step loads."""
    first = dict(record_doc, invalid_reason="report unreadable", report=None)
    rerun = dict(record_doc, attempt_id=record_doc["attempt_id"] + ".r1", rerun_of=record_doc["attempt_id"])
    records = [str(write_record(isolated / "runs" / doc["attempt_id"], doc)) for doc in (first, rerun)]
    solo = item("solo", "b" * 40)
    write_item(isolated, solo, validation(solo))
    write(isolated / "grades", "pred-solo.json", grade("pred-solo", solo, "resolved"))
    return {"records": records, "repair": [str(isolated / "items"), str(isolated / "grades")]}


def _count(db: Path, table: str) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"select count(*) from raw.{table}").fetchone()[0]


def test_a_cycle_ingest_loads_runs_and_repair_grades_under_one_lock_in_one_transaction(
    isolated: Path, cycle_files: dict, counted: collections.Counter
) -> None:
    """Before: the run records took the writer lock and committed, then the repair grades took it
    again and committed a second transaction (2 locks, 2 transactions)."""
    loaded = ingest_cycle_records("2026-12", cycle_files["records"], cycle_files["repair"])
    assert loaded == {
        "files": 2, "inserted": 2, "already_present": 0,
        "repair_items": 1, "repair_validations": 1, "repair_validation_runs": 4, "repair_grades": 1,
        "repair_skipped": 0,
    }  # fmt: skip
    assert (counted["writer lock"], counted["transaction"]) == (1, 1)
    db = isolated / "warehouse" / "argusic.duckdb"
    assert (_count(db, "run_records"), _count(db, "repair_grades")) == (2, 1)


def test_a_refused_repair_record_loads_none_of_the_run_records_either(
    isolated: Path, cycle_files: dict
) -> None:
    """One transaction: a grade whose item is not there refuses the whole ingest."""
    (isolated / "items").rename(isolated / "elsewhere")
    with pytest.raises(RepairIngestError, match="is not loaded"):
        ingest_cycle_records("2026-12", cycle_files["records"], [str(isolated / "grades")])
    db = isolated / "warehouse" / "argusic.duckdb"
    assert _count(db, "run_records") == 0


def test_ingest_parses_each_record_once_and_records_parsed_before_not_at_all(
    isolated: Path, cycle_files: dict, counted: collections.Counter
) -> None:
    ingest([Path(p) for p in cycle_files["records"]])
    assert counted["record parsed"] == 2  # one parse per record, checks and load included
    counted.clear()
    parsed = [RecordFile.load(p) for p in cycle_files["records"]]
    assert counted["record parsed"] == 2
    counted.clear()
    result = ingest(parsed, db_path=isolated / "other.duckdb")  # a step of the same task parsed them
    assert counted["record parsed"] == 0 and result.inserted == 2
    assert (counted["writer lock"], counted["transaction"]) == (1, 1)
