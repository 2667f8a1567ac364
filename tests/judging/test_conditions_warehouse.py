"""Issue #31 (seeds 002 and 004): one task run under two conditions, end to end through the
warehouse. Two attempts of the same project carry the real Claude Code session's tool calls and final
output in their records, one planned as the baseline and one as external-claude-code; the task has
seed 002's two checks (output_exact_match, and a tool_calls check that is not applicable to the
baseline). Their hints are computed and ingested, a person rejects one attempt that passed
provisionally, dbt builds, and the marts are read: the checks per condition (marts.condition_comparison)
and the person's decision in force (marts.judging_results)."""

from __future__ import annotations

import copy
import os
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from argusic.attempts.common import final_output_part, tool_calls_part
from argusic.core import tasks as T
from argusic.core.record import parse_record
from argusic.core.tasks import load_task
from argusic.judging.hints import compute_hints, write_hints
from argusic.review.judging import decide
from argusic.warehouse.load_runs import ingest
from conftest import dbt_build_copy, write_record
from test_seed002_checks import CLAUDE, _collected, _task_with

pytestmark = pytest.mark.slow

CHECKS = """
[[checks]]
id = "output-exact"
type = "output_exact_match"
expected_file = "final.txt"

[[checks]]
id = "single-read"
type = "tool_calls"
category = "read"
count = 1
path = "/workspace/project/README.md"
not_applicable = ["baseline"]
"""


def _rows(db: Path, sql: str) -> list[dict]:
    with duckdb.connect(str(db), read_only=True) as con:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def test_one_task_under_two_conditions_reads_its_checks_per_condition(
    record_doc, isolated: Path, tmp_path: Path, monkeypatch
):
    run = _collected("claude-code", CLAUDE)
    folder = _task_with(tmp_path, CHECKS, {"final.txt": run.final_text.encode() + b"\n"})
    monkeypatch.setattr(T, "TASKS_DIR", folder)  # the expected file is read from the tasks' expected/
    task = load_task("install_and_run", tasks_dir=folder)
    runs = isolated / "runs"
    ids = {}
    for no, condition in ((1, "baseline"), (2, "external-claude-code")):
        doc = copy.deepcopy(record_doc)
        doc["attempt_no"] = no
        doc["attempt_id"] = doc["attempt_id"].replace(".a1", f".a{no}")
        doc |= {
            "condition": condition,
            "tool_calls": tool_calls_part(run),
            "final_output": final_output_part(run),
        }
        record = parse_record(doc)
        attempt = runs / doc["cycle_id"] / doc["attempt_id"]
        write_record(attempt, doc)
        write_hints(attempt, compute_hints(attempt, record, task, renderer=lambda pages: []))
        ids[condition] = doc["attempt_id"]
    result = ingest([runs])
    assert (result.inserted, result.hints) == (2, 2)
    # a person rejects the external run, which passes provisionally (completed, installed, ran, tier 1)
    at = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    assert decide(ids["external-claude-code"], 1, "reject", "ana", at, "prints more than the file",
                  task_revision=task.revision)  # fmt: skip
    db = Path(os.environ["ARGUSIC_WAREHOUSE"])
    dbt_build_copy(db, tmp_path / "dbt")

    records = {r["attempt_id"]: r for r in _rows(db, "SELECT * FROM marts.judging_results")}
    assert {a: (r["condition"], r["provisional_result"]) for a, r in records.items()} == {
        ids["baseline"]: ("baseline", "pass"),
        ids["external-claude-code"]: ("external-claude-code", "pass"),
    }
    base, ext = records[ids["baseline"]], records[ids["external-claude-code"]]
    assert (base["final_decision"], base["decided_by_kind"], base["counts_as_result"]) == (
        "promote", "provisional", True,
    )  # fmt: skip
    assert (ext["final_decision"], ext["decided_by_kind"], ext["counts_as_result"], ext["overturned"]) == (
        "reject", "person", False, True,
    )  # fmt: skip

    compared = {
        (r["condition"], r["check_id"]): r
        for r in _rows(db, "SELECT * FROM marts.condition_comparison ORDER BY condition, check_id")
    }
    assert set(compared) == {
        ("baseline", "output-exact"), ("baseline", "single-read"),
        ("external-claude-code", "output-exact"), ("external-claude-code", "single-read"),
    }  # fmt: skip
    outcome = {
        k: (
            r["check_type"],
            r["applicability"],
            r["check_passes"],
            r["check_fails"],
            r["check_not_applicable"],
        )
        for k, r in compared.items()
    }
    assert outcome == {
        ("baseline", "output-exact"): ("output_exact_match", "applies", 1, 0, 0),
        ("baseline", "single-read"): ("tool_calls", "not_applicable", 0, 0, 1),
        ("external-claude-code", "output-exact"): ("output_exact_match", "applies", 1, 0, 0),
        ("external-claude-code", "single-read"): ("tool_calls", "applies", 1, 0, 0),
    }
    runs_per_condition = {
        c: (r["runs"], r["provisional_passes"], r["results"], r["decided_by_people"])
        for (c, _), r in compared.items()
    }
    assert runs_per_condition == {"baseline": (1, 1, 1, 0), "external-claude-code": (1, 1, 0, 1)}
    # the condition is a column of the staging model too, as the record states it
    conditions = {r["attempt_id"]: r for r in _rows(db, "SELECT attempt_id, condition, condition_recorded "
                                                         "FROM staging.stg_run_records")}  # fmt: skip
    assert {a: (r["condition"], r["condition_recorded"]) for a, r in conditions.items()} == {
        ids["baseline"]: ("baseline", True), ids["external-claude-code"]: ("external-claude-code", True),
    }  # fmt: skip
