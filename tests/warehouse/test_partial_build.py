"""Builds rebuild only what depends on what changed (issue 27).

A build records what it was built from (the project's fingerprint, one per source table). When only
decision tables changed (a review, a judging review, a verdict request, an approval), the next build
runs dbt on the tables and tests downstream of them alone, and the expectations on their marts: the
marts must be exactly those of a full build of the same warehouse, and the attempt-level models must
not run. New run records rebuild everything downstream of the raw layer, again exactly as a full build.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from argusic.warehouse import decisions
from argusic.warehouse.dbt_build import (
    PROJECT_KEY,
    STATE_TABLE,
    BuildResult,
    BuildSession,
    Changes,
    build_warehouse,
    what_changed,
)
from argusic.warehouse.schema import COLUMNS, migrate_raw
from test_dbt_rules import CYCLE, DBT_PROJECT, STD, insert_decisions, rec, records

# ---------------------------------------------------------------------------------------------------
# Fast: the rule that decides between a full and a partial build
# ---------------------------------------------------------------------------------------------------

BEFORE = {PROJECT_KEY: "p1", "raw.run_records": "r1", "decisions.review_decisions": "d1"}


def test_only_changed_source_tables_of_an_unchanged_project_make_a_partial_build() -> None:
    changed = what_changed(BEFORE, {**BEFORE, "decisions.review_decisions": "d2"}, unit_tests=False)
    assert changed == Changes(("decisions.review_decisions",))
    assert changed.selectors(("table",)) == (
        "source:decisions.review_decisions+,resource_type:model,config.materialized:table",
        "source:decisions.review_decisions+,resource_type:test",
    )
    both = what_changed(BEFORE, {**BEFORE, "raw.run_records": "r2", "decisions.review_decisions": "d2"},
                        unit_tests=False)  # fmt: skip
    assert both.changed == ("decisions.review_decisions", "raw.run_records") and both.partial


@pytest.mark.parametrize(
    ("previous", "current", "unit_tests", "because"),
    [
        ({}, BEFORE, False, "no record"),
        (BEFORE, {**BEFORE, PROJECT_KEY: "p2"}, False, "the project changed"),
        (BEFORE, {**BEFORE, "raw.judge_verdicts": "j1"}, False, "added or removed"),
        ({**BEFORE, "raw.judge_verdicts": "j1"}, BEFORE, False, "added or removed"),
        (BEFORE, {**BEFORE, "decisions.review_decisions": "d2"}, True, "unit tests"),
    ],
)
def test_anything_else_builds_the_whole_project(previous, current, unit_tests, because) -> None:
    changes = what_changed(previous, current, unit_tests=unit_tests)
    assert not changes.partial and because in changes.full_because
    assert changes.selectors() == ()


def test_a_build_of_unchanged_inputs_rebuilds_every_table_and_test_but_keeps_views_and_seeds() -> None:
    """Nothing changed since a recorded build of this very project: a full check (every table, every
    data test, every expectation), without recreating the project's views and seeds (issue 27)."""
    changes = what_changed(BEFORE, BEFORE, unit_tests=False)
    assert not changes.partial and changes.recheck and "nothing changed" in changes.full_because
    assert changes.selectors(("table", "incremental")) == (
        "resource_type:model,config.materialized:table",
        "resource_type:model,config.materialized:incremental",
        "resource_type:test",
    )
    assert not what_changed({}, BEFORE, unit_tests=False).recheck
    assert not what_changed(BEFORE, BEFORE, unit_tests=True).recheck


# ---------------------------------------------------------------------------------------------------
# Slow: the real project on hand-made records (tests/warehouse/test_dbt_rules.py's)
# ---------------------------------------------------------------------------------------------------

# Models over attempts: a decision-only build (no dispute) must leave every one of them as it was.
ATTEMPT_LEVEL = {
    "stg_run_records", "int_attempts_validated", "int_attempt_corrections", "int_attempts_corrected",
    "int_attempt_scores", "int_attempt_costs", "int_judging_attempt_facts", "attempt_scores",
    "attempt_corrections", "attempt_hints", "pair_sets", "stability", "change_similarity",
}  # fmt: skip


def _warehouse(path: Path) -> Path:
    with duckdb.connect(str(path)) as con:
        migrate_raw(con)
        insert_decisions(con)
        _insert_runs(con, records())
    return path


def _insert_runs(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    con.executemany(
        f"INSERT INTO raw.run_records ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})",
        [[row.get(c) for c in COLUMNS] for row in rows],
    )


def _reference_copy(built: Path, copy: Path) -> Path:
    """The same warehouse, without its record of the last build: its next build is a full one."""
    shutil.copy(built, copy)
    with duckdb.connect(str(copy)) as con:
        con.execute(f"DELETE FROM {STATE_TABLE}")
    return copy


def _models(result: BuildResult) -> set[str]:
    return {n.unique_id.split(".")[-1] for n in result.nodes if n.unique_id.startswith("model.")}


def _assert_same_marts(ours: Path, reference: Path) -> int:
    """Every relation of schema marts holds the same rows (as multisets) in both warehouses."""
    with duckdb.connect(str(ours), read_only=True) as con:
        con.execute(f"ATTACH '{reference}' AS ref (READ_ONLY)")
        listed = con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
            "AND table_schema = 'marts' ORDER BY 1"
        ).fetchall()
        theirs = con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'ref' "
            "AND table_schema = 'marts' ORDER BY 1"
        ).fetchall()
        assert listed == theirs
        for (table,) in listed:
            a, b = f'marts."{table}"', f'ref.marts."{table}"'
            counts = con.execute(f"SELECT (SELECT count(*) FROM {a}), (SELECT count(*) FROM {b})").fetchone()
            assert counts[0] == counts[1], (table, counts)
            differ = con.execute(
                f"SELECT count(*) FROM ((SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b}) "
                f"UNION ALL (SELECT * FROM {b} EXCEPT ALL SELECT * FROM {a}))"
            ).fetchone()[0]
            assert differ == 0, f"marts.{table}: {differ} rows differ from a full build"
    return len(listed)


@pytest.mark.slow
def test_a_decision_only_build_gives_a_full_builds_marts_without_the_attempt_layers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "dbt_project"
    shutil.copytree(DBT_PROJECT, project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    monkeypatch.setenv("DBT_TARGET_PATH", str(tmp_path / "target"))
    monkeypatch.setenv("DBT_LOG_PATH", str(tmp_path / "logs"))
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "runs"))  # the decisions' journals
    db = _warehouse(tmp_path / "w.duckdb")
    session = BuildSession(project)  # the build worker's way: the manifest parsed once

    first = session.build(db, analyst=False)
    assert first.changed_sources == () and len(_models(first)) == 47  # no record yet: everything

    # People decide: an environment review, a judging review, a verdict request, an approval.
    at = datetime(2026, 10, 25, 9)
    with duckdb.connect(str(db), read_only=True) as con:
        some_attempt = con.execute("SELECT min(attempt_id) FROM marts.attempt_scores").fetchone()[0]
    for table, row in (
        ("review_decisions", {"cycle_id": CYCLE, "project_id": "p-env", "decision": "project_at_fault"}),
        (
            "judging_reviews",
            {"attempt_id": some_attempt, "task_revision": "r1", "look": 2, "decision": "promote"},
        ),
        ("verdict_requests", {"project_id": "p-env", "commit_sha": "c0ffee", "agent_id": STD}),
        ("publication_decisions", {"cycle_id": CYCLE, "board_sha256": "a" * 64, "decision": "approved"}),
    ):
        assert decisions.record(table, {**row, "decided_by": "ops-ana", "decided_at": at, "note": "why"}, db)
    # not "reference.duckdb": a DuckDB file's catalog is named after it, and a catalog named like one of
    # the warehouse's schemas (the seeds' `reference`) makes two-part names ambiguous to DuckDB's binder
    reference = _reference_copy(db, tmp_path / "full_build.duckdb")

    decided = session.build(db, analyst=False)
    assert decided.changed_sources == (
        "decisions.judging_reviews",
        "decisions.publication_decisions",
        "decisions.review_decisions",
        "decisions.verdict_requests",
    )
    # dbt's run results: the tables downstream of the decisions, nothing over attempts
    assert _models(decided) == {"project_review", "board", "review_queue", "judging_review_divergence",
                                "verdict_plan", "board_publication", "judging_results",
                                "condition_comparison"}  # fmt: skip
    assert not _models(decided) & ATTEMPT_LEVEL
    assert all(n.unique_id.startswith(("model.", "test.")) for n in decided.nodes)  # no seed reloaded
    # the marts downstream with a suite (judging_results and condition_comparison have one since #31)
    assert set(decided.validation.tables) == {"project_review", "board", "judging_review_divergence",
                                              "judging_results", "condition_comparison"}  # fmt: skip
    assert "only decisions.judging_reviews, " in decided.note

    full = build_warehouse(reference, project_dir=project, quiet=True, analyst=False)  # in-process, cold
    assert full.changed_sources == () and len(_models(full)) == 47
    assert _assert_same_marts(db, reference) >= 20
    with duckdb.connect(str(db), read_only=True) as con:  # the decision is in force
        assert con.execute(
            "SELECT decision FROM marts.project_review WHERE cycle_id = ? AND project_id = 'p-env'", [CYCLE]
        ).fetchone() == ("project_at_fault",)

    # New runs: everything downstream of the raw layer is rebuilt (not the seeds), again as a full build.
    new = [rec(f"{CYCLE}.board.{STD}.p-new.a{n}", STD, "p-new", n) for n in (1, 2, 3)]
    for path in (db, reference):
        with duckdb.connect(str(path)) as con:
            _insert_runs(con, new)
    _reference_copy(db, reference)
    ran = session.build(db, analyst=False)
    assert ran.changed_sources == ("raw.run_records",)
    tables_over_attempts = {
        "int_attempt_scores",
        "int_attempt_costs",
        "int_judging_attempt_facts",
        "pair_sets",
    }
    assert tables_over_attempts | {"board", "project_review", "stability"} <= _models(ran)
    build_warehouse(reference, project_dir=project, quiet=True, analyst=False)
    _assert_same_marts(db, reference)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute(
            "SELECT count(*) FROM marts.attempt_scores WHERE project_id = 'p-new'"
        ).fetchone() == (3,)

    # Nothing changed: every table rebuilt and every data test run, no view recreated, no seed
    # reloaded, every expectation; still exactly the marts of a full build.
    again = session.build(db, analyst=False)
    assert again.changed_sources == () and "nothing changed since the last build" in again.note
    views = {n.name for n in session._manifest.nodes.values()
             if n.resource_type == "model" and n.config.materialized == "view"}  # fmt: skip
    assert {"stg_run_records", "int_attempts_validated"} <= views
    assert _models(again) == _models(full) - views and "int_attempt_scores" in _models(again)
    assert not [n for n in again.nodes if n.unique_id.startswith("seed.")]
    assert sum(n.unique_id.startswith("test.") for n in again.nodes) >= 100
    assert set(again.validation.tables) == set(full.validation.tables)
    _assert_same_marts(db, reference)
