"""The `argusic` CLI's refusals. The whole demo cycle end to end is told in
tests/publication/test_demo_site.py, once
for its output, its records and its public site."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from argusic.cli.main import app
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


def test_cycle_run_refuses_the_local_executor_for_a_real_cycle(isolated, tmp_path, monkeypatch):
    """Local runs the project on this host: named, and for a demo (a scaled cycle) only."""
    monkeypatch.delenv("ARGUSIC_EXECUTOR", raising=False)
    catalogue = tmp_path / "c.json"
    catalogue.write_text("{}")
    args = ["cycle", "run", "--catalogue", str(catalogue), "--cycle", "2027-01", "--agents", "readme-runner"]
    result = runner.invoke(app, [*args, "--executor", "local"])
    assert result.exit_code == 2 and "demo cycles only" in result.output
    monkeypatch.setenv("ARGUSIC_EXECUTOR", "local")
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "ARGUSIC_EXECUTOR=local" in result.output


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("readme-runner", "expected AGENT=CONDITION"),
        ("readme-runner=tuesday", "baseline, variant or external-<name>"),
        ("codex=variant", "conditions name agents this plan does not run: codex"),
    ],
)
def test_cycle_run_refuses_a_bad_condition_before_anything_runs(isolated, tmp_path, given, said):
    """Seed 002's conditions from the command line (issue #31): refused with the reason, exit 2."""
    catalogue = tmp_path / "c.json"
    catalogue.write_text("{}")
    args = ["cycle", "run", "--catalogue", str(catalogue), "--cycle", "2027-01", "--agents", "readme-runner"]
    result = runner.invoke(app, [*args, "--condition", given])
    assert result.exit_code == 2 and said in result.output, result.output


def test_a_path_is_shown_as_named_not_through_its_link(tmp_path, monkeypatch):
    """`make demo` printed the analyst copy's versioned folder (deleted two builds later) because
    shown_path resolved the stable link `warehouse/analyst`: the link is the path to give."""
    from argusic.cli.common import shown_path

    versions = tmp_path / "warehouse" / ".analyst.versions" / "v1"
    versions.mkdir(parents=True)
    (tmp_path / "warehouse" / "analyst").symlink_to(".analyst.versions/v1")
    monkeypatch.chdir(tmp_path)
    assert shown_path(tmp_path / "warehouse" / "analyst") == "warehouse/analyst/"
    assert shown_path(Path("warehouse") / "analyst") == "warehouse/analyst/"
    assert shown_path(Path("/elsewhere/x.json")) == "/elsewhere/x.json"  # outside: absolute, as given
