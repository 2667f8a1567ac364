"""Incremental models keyed by cycle (issue 27): a build after a new cycle's ingest or a dispute ruling
rebuilds the heavy attempt-level models for the changed cycles only, and gives exactly the marts of a
full build of the same inputs.

The models (macros/changed_cycles.sql): int_attempt_scores, int_attempt_costs, int_judging_attempt_facts,
pair_sets, cycle_environments. The build driver fingerprints the cycle-scoped inputs per cycle (run
records, disputes, rulings); a partial build whose changed sources feeding those models are all
cycle-scoped rebuilds the changed cycles' rows; anything else rebuilds them whole.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from argusic.warehouse.dbt_build import (
    CYCLE_PREFIX,
    PROJECT_KEY,
    BuildSession,
    Changes,
    incremental_cycles,
    what_changed,
)
from test_dbt_rules import CYCLE, DBT_PROJECT, STD, rec
from test_partial_build import _assert_same_marts, _insert_runs, _models, _reference_copy, _warehouse

INCREMENTAL = {"int_attempt_scores", "int_attempt_costs", "int_judging_attempt_facts", "pair_sets",
               "cycle_environments"}  # fmt: skip

# ---------------------------------------------------------------------------------------------------
# Fast: which cycles changed, and when the incremental models may rebuild only those
# ---------------------------------------------------------------------------------------------------

BEFORE = {
    PROJECT_KEY: "p1",
    "raw.run_records": "r1",
    "decisions.disputes": "d1",
    "raw.attempt_hints": "h1",
    f"{CYCLE_PREFIX}2026-01": "c1",
    f"{CYCLE_PREFIX}2026-02": "c2",
}


def test_the_changed_cycles_are_those_whose_fingerprint_changed_appeared_or_vanished() -> None:
    now = {**BEFORE, "raw.run_records": "r2", f"{CYCLE_PREFIX}2026-02": "c2'", f"{CYCLE_PREFIX}2026-03": "c3"}
    changes = what_changed(BEFORE, now, unit_tests=False)
    assert changes == Changes(("raw.run_records",), cycles=("2026-02", "2026-03"))
    gone = {k: v for k, v in BEFORE.items() if k != f"{CYCLE_PREFIX}2026-01"}
    assert what_changed(BEFORE, {**gone, "raw.run_records": "r0"}, unit_tests=False).cycles == ("2026-01",)
    # a new cycle key alone is not "a source table added"
    assert what_changed(BEFORE, now, unit_tests=False).partial


# A graph: run records and attempt hints feed the incremental int_attempt_scores; review decisions
# feed only the board table.
NODES = {
    "model.argusic.int_attempt_scores": {"config": {"materialized": "incremental"}},
    "model.argusic.board": {"config": {"materialized": "table"}},
}
CHILDREN = {
    "source.argusic.raw.run_records": ["model.argusic.int_attempt_scores"],
    "source.argusic.decisions.disputes": ["model.argusic.int_attempt_scores"],
    "source.argusic.raw.attempt_hints": ["model.argusic.int_attempt_scores"],
    "source.argusic.decisions.review_decisions": ["model.argusic.board"],
    "model.argusic.int_attempt_scores": ["model.argusic.board"],
}


def test_only_cycle_scoped_changes_build_the_incremental_models_incrementally() -> None:
    graph = (CHILDREN, NODES)
    records = Changes(("decisions.disputes", "raw.run_records"), cycles=("2026-02",))
    assert incremental_cycles(records, graph) == ("2026-02",)
    # a decision that feeds no incremental model does not force a whole rebuild
    review = Changes(("decisions.review_decisions", "raw.run_records"), cycles=("2026-02",))
    assert incremental_cycles(review, graph) == ("2026-02",)
    # an input that is not fingerprinted by cycle and feeds an incremental model: rebuilt whole
    assert (
        incremental_cycles(Changes(("raw.attempt_hints", "raw.run_records"), cycles=("2026-02",)), graph)
        is None
    )
    assert incremental_cycles(Changes(full_because="the project changed"), graph) is None
    assert incremental_cycles(Changes(full_because="nothing", recheck=True), graph) is None
    assert incremental_cycles(records, None) is None  # no manifest to tell: whole


# ---------------------------------------------------------------------------------------------------
# Slow: the real project; after each change the marts equal a full build's of the same inputs
# ---------------------------------------------------------------------------------------------------

NEXT = "2026-11"


@pytest.mark.slow
def test_incremental_builds_after_a_new_cycle_a_dispute_ruling_and_a_review_equal_full_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "dbt_project"
    shutil.copytree(DBT_PROJECT, project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    monkeypatch.setenv("DBT_TARGET_PATH", str(tmp_path / "target"))
    monkeypatch.setenv("DBT_LOG_PATH", str(tmp_path / "logs"))
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "runs"))
    db = _warehouse(tmp_path / "w.duckdb")
    session = BuildSession(project)
    reference_session = BuildSession(project)  # full builds of a copy (one file: parsed once)
    reference = tmp_path / "full_build.duckdb"

    def same_as_a_full_build() -> None:
        _reference_copy(db, reference)  # the same inputs, no record: a full build (--full-refresh)
        full = reference_session.build(reference, analyst=False)
        assert full.incremental_cycles is None and _models(full) >= INCREMENTAL
        assert _assert_same_marts(db, reference) >= 20

    first = session.build(db, analyst=False)
    assert first.incremental_cycles is None and _models(first) >= INCREMENTAL

    # (a) a new cycle's records: the incremental models rebuild that cycle alone
    with duckdb.connect(str(db)) as con:
        _insert_runs(
            con, [rec(f"{NEXT}.board.{STD}.p-new.a{n}", STD, "p-new", n, cycle_id=NEXT) for n in (1, 2, 3)]
        )
    ingested = session.build(db, analyst=False)
    assert ingested.changed_sources == ("raw.run_records",)
    assert ingested.incremental_cycles == (NEXT,) and _models(ingested) >= INCREMENTAL
    assert f"incremental models rebuilt for cycles {NEXT} only" in ingested.note
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute(
            "SELECT count(*) FROM intermediate.int_attempt_scores WHERE cycle_id = ?", [NEXT]
        ).fetchone() == (3,)
        # the list of changed cycles lives only while the driver's dbt runs: dbt run by anyone else
        # later is given none and rebuilds the incremental models whole (macros/changed_cycles.sql)
        assert con.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = 'argusic_build' AND table_name = 'changed_cycles'"
        ).fetchone() == (0,)
    same_as_a_full_build()

    # (b) a dispute ruled environment_at_fault on an attempt of the old cycle, its rerun loaded
    with duckdb.connect(str(db)) as con:
        original, agent, project_id, attempt_no = con.execute(
            "SELECT attempt_id, agent_id, project_id, attempt_no FROM marts.attempt_scores "
            "WHERE cycle_id = ? AND is_valid AND purpose = 'board' ORDER BY attempt_id LIMIT 1",
            [CYCLE],
        ).fetchone()
        rerun = f"{original}.r1"
        _insert_runs(
            con, [rec(rerun, agent, project_id, attempt_no, rerun_of=original, end_reason="timeout")]
        )
        at = datetime(2026, 11, 2, 9)
        con.execute("INSERT INTO decisions.disputes VALUES ('d-1', ?, 'env', 'a@b.org', 'ops', ?, 'n')",
                    [original, at])  # fmt: skip
        con.execute(
            "INSERT INTO decisions.dispute_rulings VALUES "
            "('d-1', 'environment_at_fault', NULL, 'ops', ?, 'n'), "
            "('d-1', 'environment_at_fault', ?, 'ops', ?, 'rerun')",
            [at, rerun, datetime(2026, 11, 3, 9)],
        )
    ruled = session.build(db, analyst=False)
    assert set(ruled.changed_sources) == {
        "decisions.disputes",
        "decisions.dispute_rulings",
        "raw.run_records",
    }
    assert ruled.incremental_cycles == (CYCLE,)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute(
            "SELECT is_valid FROM marts.attempt_scores WHERE attempt_id = ?", [original]
        ).fetchone() == (False,)
    same_as_a_full_build()

    # (c) a review decision: no incremental model runs at all
    with duckdb.connect(str(db)) as con:
        con.execute(
            "INSERT INTO decisions.review_decisions VALUES (?, 'p-env', 'project_at_fault', 'ops', ?, 'n')",
            [CYCLE, datetime(2026, 11, 4, 9)],
        )
    reviewed = session.build(db, analyst=False)
    assert reviewed.changed_sources == ("decisions.review_decisions",)
    assert reviewed.incremental_cycles == () and not _models(reviewed) & INCREMENTAL
    same_as_a_full_build()

    # nothing changed: the recheck rebuilds the incremental models whole, still the same marts
    again = session.build(db, analyst=False)
    assert again.incremental_cycles is None and _models(again) >= INCREMENTAL
    same_as_a_full_build()
