"""Readers never crash: our commands wait for the warehouse writer (and for DuckDB connections held
by other processes), say whom they wait for, and give up after ARGUSIC_LOCK_TIMEOUT with a clear error.

Every holder here is a real second process: one holding our writer lock, one holding a DuckDB
connection of its own (as an analyst's would). Holders let go when the test creates a release file,
after the waiting command has said it is waiting: no test depends on timing.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest
from argusic.warehouse.lock import LOCK_TIMEOUT_ENV, lock_path, lock_timeout, writer_lock
from argusic.warehouse.schema import RAW_DDL
from conftest import write_record

HOLD_WRITER = """
import sys, time
from pathlib import Path
from argusic.warehouse.lock import writer_lock
db, release = Path(sys.argv[1]), Path(sys.argv[2])
with writer_lock(db):
    print("held", flush=True)
    while not release.exists():
        time.sleep(0.05)
"""

HOLD_DUCKDB = """
import sys, time
from pathlib import Path
import duckdb
db, release, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
con = duckdb.connect(db, read_only=(mode == "read_only"))
print("held", flush=True)
while not release.exists():
    time.sleep(0.05)
con.close()
"""


def _argusic() -> list[str]:
    script = Path(sys.executable).parent / "argusic"
    return [str(script)] if script.exists() else [sys.executable, "-m", "argusic.cli"]


def _start_holder(tmp_path: Path, source: str, *args: str) -> tuple[subprocess.Popen, Path]:
    """A second process holding the warehouse; returns it (once it holds) and its release file."""
    script = tmp_path / ("hold_writer.py" if "writer_lock" in source else "hold_duckdb.py")
    script.write_text(source)
    release = tmp_path / f"release-{script.stem}"
    holder = subprocess.Popen(
        [sys.executable, str(script), args[0], str(release), *args[1:]], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    return holder, release


def _stop(holder: subprocess.Popen, release: Path) -> None:
    release.touch()
    holder.wait(timeout=60)
    holder.stdout.close()


def _run(args: list[str], timeout_seconds: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **{LOCK_TIMEOUT_ENV: timeout_seconds, "COLUMNS": "200"})
    return subprocess.run([*_argusic(), *args], env=env, capture_output=True, text=True, timeout=300)


def _wait_until_waiting(args: list[str]) -> tuple[subprocess.Popen, str]:
    """Start a command and read its stderr until it says it is waiting; returns it and what it said."""
    env = dict(os.environ, **{LOCK_TIMEOUT_ENV: "600", "COLUMNS": "200"})
    proc = subprocess.Popen(
        [*_argusic(), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    said = ""
    while "waiting for" not in said:
        line = proc.stderr.readline()
        assert line, f"ended without waiting: {said}{proc.stdout.read()}"
        said += line
    return proc, said


def _finish(proc: subprocess.Popen, said: str) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, said + err


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def warehouse(isolated: Path) -> Path:
    """A warehouse with the raw layer and no records (enough for `audit` to succeed)."""
    db = isolated / "warehouse" / "argusic.duckdb"
    db.parent.mkdir(parents=True)
    with duckdb.connect(str(db)) as con:
        con.execute(RAW_DDL)
    return db


def test_writer_lock_names_its_holder_in_the_lock_file(warehouse):
    with writer_lock(warehouse):
        holder = json.loads(lock_path(warehouse).read_text())
        assert holder["pid"] == os.getpid() and holder["since"].endswith("Z") and holder["host"]
        assert holder["command"]
        with pytest.raises(RuntimeError, match="not re-entrant"), writer_lock(warehouse):
            pass  # the same thread again: refused at once, not a wait for itself
    assert lock_path(warehouse).read_text() == ""  # released: nobody is named any more


def test_another_thread_waits_for_the_writer(warehouse):
    order = []
    with writer_lock(warehouse):
        other = threading.Thread(target=lambda: order.append(_take(warehouse)))
        other.start()
        other.join(timeout=0.5)
        order.append("first released")
    other.join(timeout=60)
    assert order == ["first released", "second held"]


def _take(db: Path) -> str:
    with writer_lock(db):
        return "second held"


def test_lock_timeout_setting(monkeypatch):
    monkeypatch.delenv(LOCK_TIMEOUT_ENV, raising=False)
    assert lock_timeout() == 300
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, "2.5")
    assert lock_timeout() == 2.5
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match="ARGUSIC_LOCK_TIMEOUT='soon'"):
        lock_timeout()


@pytest.mark.parametrize("command", [["audit"], ["build"]])
def test_readers_wait_for_a_writer_in_another_process_then_give_up(tmp_path, warehouse, command):
    holder, release = _start_holder(tmp_path, HOLD_WRITER, str(warehouse))
    try:
        result = _run(command, timeout_seconds="1")
    finally:
        _stop(holder, release)
    err = _flat(result.stderr)
    assert result.returncode == 2, result
    assert f"waiting for the warehouse writer: pid {holder.pid} (hold_writer.py {warehouse}" in err
    assert "since" in err and "UTC" in err
    assert f"error: gave up after 1 s waiting for the warehouse writer: pid {holder.pid}" in err
    assert "ARGUSIC_LOCK_TIMEOUT" in err and "Traceback" not in result.stderr + result.stdout


def test_reader_and_second_writer_go_on_once_the_writer_is_done(tmp_path, warehouse, record_doc):
    # The record's evidence is in the store: whichever of the two waiters goes first once the writer
    # is done (the audit, on an empty warehouse, or the ingest), the audit then passes.
    for text in ("log", "rec", "rep"):
        sha = hashlib.sha256(text.encode()).hexdigest()
        stored = tmp_path / "evidence_store" / "sha256" / sha[:2] / sha
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_text(text)
    holder, release = _start_holder(tmp_path, HOLD_WRITER, str(warehouse))
    try:
        audit, audit_said = _wait_until_waiting(["audit"])
        record = write_record(tmp_path / "batch", record_doc)
        second, second_said = _wait_until_waiting(["ingest", str(record.parent)])
    finally:
        _stop(holder, release)
    code, out, err = _finish(audit, audit_said)
    assert code == 0, err
    assert "audited 0 evidence object(s)" in out or "audited 3 evidence object(s): 0 problem(s)" in out, out
    assert f"waiting for the warehouse writer: pid {holder.pid}" in _flat(err)
    code, out, err = _finish(second, second_said)
    assert code == 0 and "1 new" in out, err
    assert f"waiting for the warehouse writer: pid {holder.pid}" in _flat(err)


def test_reader_waits_for_a_duckdb_writer_outside_our_lock(tmp_path, warehouse):
    """A process that opened the file read-write itself (not through Argusic) is named, with what
    to do, and the reader gives up after the timeout instead of a DuckDB traceback."""
    holder, release = _start_holder(tmp_path, HOLD_DUCKDB, str(warehouse), "read_write")
    try:
        result = _run(["audit"], timeout_seconds="1")
        audit = _run(["build"], timeout_seconds="0")
    finally:
        _stop(holder, release)
    for outcome in (result, audit):
        err = _flat(outcome.stderr)
        assert outcome.returncode == 2, outcome
        assert f"pid {holder.pid} (hold_duckdb.py {warehouse}" in err
        assert (
            "has the warehouse open for writing outside Argusic's writer lock: close that connection" in err
        )
        assert "gave up after" in err and "Traceback" not in outcome.stderr + outcome.stdout
    assert "waiting for the warehouse: pid" in _flat(result.stderr)


def test_analysts_never_wait_for_the_pipeline(tmp_path, warehouse):
    """`argusic board` and `argusic sql` read the analyst copy, never the pipeline's file: with a
    writer holding the lock and another process holding the warehouse open for writing, they answer
    at once (a timeout of 0 would make any wait an error)."""
    from argusic.warehouse.analyst import publish_analyst_copy
    from test_expectations import good_frames, write_marts

    frames = good_frames()
    frames["board"] = frames["board"].assign(
        sets_incomplete=0,
        sets_total=3,
        is_demo_cycle=False,
        harness_edition="2",
        sponsor=None,
        sponsorship=None,
    )
    write_marts(warehouse, frames)
    publish_analyst_copy(warehouse)
    writer, writer_release = _start_holder(tmp_path, HOLD_WRITER, str(warehouse))
    try:
        duck, duck_release = _start_holder(tmp_path, HOLD_DUCKDB, str(warehouse), "read_write")
        try:
            board = _run(["board", "--cycle", "c1"], timeout_seconds="0")
            query = _run(["sql", "SELECT count(*) AS n FROM marts.attempt_scores"], timeout_seconds="0")
        finally:
            _stop(duck, duck_release)
    finally:
        _stop(writer, writer_release)
    assert board.returncode == 0 and "Argusic board — cycle c1" in board.stdout, board
    assert query.returncode == 0 and "│ 7 │" in query.stdout, query
    for result in (board, query):
        assert "waiting" not in result.stderr and "Traceback" not in result.stderr


def test_writer_waits_for_an_analysts_read_only_connection(tmp_path, warehouse, record_doc):
    """The issue's case: an analyst's read-only connection made `ingest` fail with `Could not set
    lock`. Now ingest says whom it waits for, gives up after the timeout, or goes on once it closes."""
    record = write_record(tmp_path / "batch", record_doc)
    holder, release = _start_holder(tmp_path, HOLD_DUCKDB, str(warehouse), "read_only")
    try:
        refused = _run(["ingest", str(record.parent)], timeout_seconds="1")
        waiting, said = _wait_until_waiting(["ingest", str(record.parent)])
    finally:
        _stop(holder, release)
    err = _flat(refused.stderr)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr + refused.stdout
    assert f"pid {holder.pid} (hold_duckdb.py {warehouse}" in err
    assert "(a read-only connection keeps writers out too): close that connection" in err
    assert "gave up after 1 s" in err
    code, out, err = _finish(waiting, said)
    assert code == 0 and "1 new" in out, err
    assert f"waiting for the warehouse: pid {holder.pid}" in _flat(err)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM raw.run_records").fetchone() == (1,)


def test_build_waits_for_an_analysts_connection_before_dbt_opens_the_file(tmp_path, warehouse, monkeypatch):
    from argusic.warehouse.dbt_build import build_warehouse
    from argusic.warehouse.lock import WarehouseBusy

    monkeypatch.setenv(LOCK_TIMEOUT_ENV, "0")
    holder, release = _start_holder(tmp_path, HOLD_DUCKDB, str(warehouse), "read_only")
    try:
        with pytest.raises(WarehouseBusy, match=rf"pid {holder.pid} \(hold_duckdb.py"):
            build_warehouse(warehouse, quiet=True)
    finally:
        _stop(holder, release)
