"""The `argusic` CLI, and the whole demo cycle end to end (real Docker, DuckDB, dbt, GX)."""

from __future__ import annotations

import hashlib
import json

import duckdb
import pytest
from argusic.cli import app
from argusic.evidence import EvidenceStore
from argusic.executor import docker_available
from argusic.record import load_record_file
from conftest import write_record
from typer.testing import CliRunner

runner = CliRunner()


def test_ingest_refuses_bad_batch_with_field_and_loads_nothing(isolated, record_doc):
    write_record(isolated / "batch" / "ok", record_doc)
    write_record(isolated / "batch" / "bad", dict(record_doc, attempt_id="x.2", attempt_no="two"))
    result = runner.invoke(app, ["ingest", str(isolated / "batch")])
    assert result.exit_code == 2
    assert "attempt_no" in result.output and "nothing of this batch was loaded" in result.output
    assert not (isolated / "warehouse" / "argusic.duckdb").exists()


def test_ingest_refuses_unknown_agent(isolated, record_doc):
    unknown = dict(record_doc, agent_id="mystery-agent", attempt_id="2026-12.board.mystery-agent.wavgen.a1")
    write_record(isolated / "batch", unknown)
    result = runner.invoke(app, ["ingest", str(isolated / "batch")])
    assert result.exit_code == 2 and "unknown agent 'mystery-agent'" in result.output


def test_board_and_build_without_warehouse_say_so(isolated):
    result = runner.invoke(app, ["board", "--cycle", "2026-12"])
    assert result.exit_code == 2 and "does not exist yet" in result.output
    result = runner.invoke(app, ["build"])
    assert result.exit_code == 2 and "run `argusic ingest" in result.output


def test_build_on_warehouse_without_run_records_says_so(isolated):
    import duckdb

    db = isolated / "warehouse" / "argusic.duckdb"
    db.parent.mkdir(parents=True)
    duckdb.connect(str(db)).close()
    result = runner.invoke(app, ["build"])
    assert result.exit_code == 2 and "holds no run records yet" in result.output


def test_demo_with_unknown_executor_names_it(isolated):
    result = runner.invoke(app, ["demo", "--executor", "podman"])
    assert result.exit_code == 2 and "ARGUSIC_EXECUTOR='podman'" in result.output


def test_pool_command_reports_bad_cycle(isolated, tmp_path):
    catalogue = tmp_path / "c.json"
    catalogue.write_text(json.dumps({"candidates": []}))
    result = runner.invoke(app, ["pool", "--cycle", "december", "--catalogue", str(catalogue)])
    assert result.exit_code == 2 and "YYYY-MM" in result.output


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.skipif(not docker_available(), reason="no Docker daemon answers")
def test_demo_cycle_end_to_end_twice(isolated, monkeypatch):
    monkeypatch.setenv("ARGUSIC_FORGE_DIR", str(isolated / "forge"))
    first = runner.invoke(app, ["demo"])
    assert first.exit_code == 0, first.output
    assert "Argusic board" in first.output
    assert "demo cycle 2026-12-demo: 48 attempts" in first.output
    assert "48/48" in first.output and "passes" in first.output and "ETA" in first.output  # the progress bar
    closing = first.output[first.output.index("where things are") :]
    places = ("board", "warehouse", "analyst copy", "notebook", "evidence", "Airflow UI", "make airflow-ui")
    for what in (*places, "what to do next", "cycle__2026-12-ui__"):
        assert what in closing, what
    db = isolated / "warehouse" / "argusic.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        outcomes = {r[0] for r in con.execute("SELECT DISTINCT outcome FROM marts.attempt_scores").fetchall()}
        rows = con.execute("SELECT count(*) FROM raw.run_records").fetchone()[0]
        recovered = con.execute(
            "SELECT count(*) FROM marts.attempt_scores a JOIN raw.run_records r USING (attempt_id) "
            "WHERE r.errors_fixed > 0 AND a.outcome = 'pass_full'"
        ).fetchone()[0]
        install_failed = con.execute(
            "SELECT count(*) FROM raw.run_records WHERE install_ok = false"
        ).fetchone()[0]
        run_failed = con.execute(
            "SELECT count(*) FROM raw.run_records WHERE install_ok AND NOT ran_ok"
        ).fetchone()[0]
        board = con.execute("SELECT agent_id, rank FROM marts.board ORDER BY rank").fetchall()
    assert outcomes == {"pass_full", "pass_mock", "fail", "timeout"}
    assert recovered > 0 and install_failed > 0 and run_failed > 0
    assert [rank for _, rank in board] == [1, 2]
    # The repair track: repairkit's bundled PR split in two, a simple PR, a spec-track PR; the gold
    # stand-in resolves each item of the main set, the empty one none.
    assert "repair track: 5 usable item(s) of repairkit" in first.output
    assert "Repair track — cycle 2026-12-demo" in first.output
    with duckdb.connect(str(db), read_only=True) as con:
        rates = con.execute(
            "SELECT agent_label, track, n, resolved FROM marts.repair_rates "
            "WHERE source_set = '2026-12-demo' ORDER BY agent_label, track"
        ).fetchall()
    assert rates == [
        ("repair-demo-gold", "basic", 3, 3), ("repair-demo-gold", "spec", 1, 1),
        ("repair-demo-none", "basic", 3, 0), ("repair-demo-none", "spec", 1, 0),
    ]  # fmt: skip
    # Every record's fingerprints match the stored bytes.
    store = EvidenceStore()
    records = [load_record_file(p) for p in (isolated / "runs").rglob("run_record.json")]
    assert len(records) == rows
    board_rows = sum(r.purpose == "board" for r in records)
    assert board_rows == 48
    for record in records:
        assert record.executor == "docker" and record.demo
        if record.purpose == "board":
            assert record.budget_seconds >= 5400
        else:  # the repair track's stand-ins, each with its patch and its grade as evidence
            assert record.purpose == "repair" and record.repair is not None, record.attempt_id
            for ref in (record.repair.patch, record.repair.grade):
                assert hashlib.sha256(store.read(ref.uri)).hexdigest() == ref.sha256
        for ref in (record.evidence.log, record.evidence.recording, record.evidence.report):
            if ref is not None:
                assert hashlib.sha256(store.read(ref.uri)).hexdigest() == ref.sha256
    published = isolated / "published" / "2026-12-demo"
    board_bytes = (published / "board.json").read_bytes()
    trace = json.loads((published / "attempts.json").read_text())["attempts"]
    assert len(trace) == board_rows  # the board's trace: repair attempts are never on the board
    # Every published number traces to a served log and recording and the raw fingerprints.
    for attempt in trace:
        assert attempt["served_log_uri"] and attempt["served_recording_uri"], attempt["attempt_id"]
        assert len(attempt["log_sha256"]) == 64 and len(attempt["recording_sha256"]) == 64
        # linked relative to the published file, to the copy the public site holds (never file://)
        link = attempt["served_recording_uri"]
        assert link.startswith("../site/evidence/served/") and "file:" not in json.dumps(attempt)
        assert (published / link).read_bytes().startswith(b'{"version": 2')
    # The same cycle again adds no rows.
    second = runner.invoke(app, ["demo"])
    assert second.exit_code == 0, second.output
    # Nothing measured, nothing repeated: one line says so, then the board and where things are.
    assert "48 attempt(s), 48 already measured: nothing to run" in second.output
    assert " / attempt " not in second.output and "48/48" not in second.output
    assert "where things are" in second.output
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM raw.run_records").fetchone()[0] == rows
    assert (published / "board.json").read_bytes() == board_bytes  # same data, same publication
