"""The analyst copy: published after each successful build only, atomically, read by every reader
(pandas, DuckDB, `argusic board`, `argusic sql`, dbt docs) while the pipeline keeps writing.

Readers that must not notice a publication are real second processes (a DuckDB connection held open,
a Parquet reader); they report what they saw when the test lets them go, so nothing depends on timing.
"""

from __future__ import annotations

import decimal
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from argusic.cli import sql_shell
from argusic.cli.main import app
from argusic.warehouse import analyst, dbt_build
from argusic.warehouse.analyst import (
    AnalystCopyError,
    AnalystCopyMissing,
    analyst_dir,
    connect_analyst,
    current_copy,
    newer_copy,
    publish_analyst_copy,
    read_manifest,
)
from argusic.warehouse.dbt_build import PublicationBlocked, build_warehouse
from test_expectations import good_frames, write_marts
from typer.testing import CliRunner

runner = CliRunner()
MARTS = [
    "attempt_scores", "board", "cycle_environments", "harness_editions", "hardware_estimates",
    "hardware_speed_bounds", "hardware_tiers", "methodology_editions", "pair_sets", "project_review",
    "project_verdicts", "repair_item_validation", "repair_rates", "repair_runs",
]  # fmt: skip
BIG = 2**62 + 1  # a HUGEINT a DOUBLE cannot hold exactly


def _warehouse(path: Path, frames: dict | None = None) -> Path:
    """A warehouse as a build leaves it: the raw layer, the marts (with comments), a seed."""
    frames = frames or good_frames()
    frames["board"] = frames["board"].assign(sets_incomplete=0, sets_total=3, is_demo_cycle=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_marts(path, frames)
    with duckdb.connect(str(path)) as con:
        con.execute("ALTER TABLE marts.board ADD COLUMN IF NOT EXISTS board_score_numerator HUGEINT")
        con.execute(f"UPDATE marts.board SET board_score_numerator = {BIG} WHERE agent_id = 'a1'")
        con.execute("COMMENT ON TABLE marts.board IS 'Grain: one row per (cycle_id, agent_id).'")
        con.execute("COMMENT ON COLUMN marts.board.rank IS '1 = best'")
        con.execute("CREATE SCHEMA IF NOT EXISTS reference")
        con.execute("CREATE OR REPLACE TABLE reference.agents AS SELECT 'a1' AS agent_id")
        con.execute("CREATE SCHEMA IF NOT EXISTS staging")
        con.execute("CREATE OR REPLACE VIEW staging.stg AS SELECT 1 AS x")  # dbt's internals
        con.execute(
            "INSERT OR IGNORE INTO raw.run_records (attempt_id, cycle_id, purpose, agent_id, project_id, "
            "commit_sha, tier, attempt_no, methodology_version, started_at, ended_at, budget_seconds, "
            "end_reason, is_demo, has_report, record_json) "
            "VALUES ('a1-p1-1', 'c1', 'board', 'a1', 'p1', 'abc', 'standard', 1, '1.5', "
            "now()::timestamp, now()::timestamp, 5400, 'completed', false, true, "
            """'{"whole": "record"}')"""
        )
    return path


def _versions(target: Path) -> list[Path]:
    return sorted(analyst._versions_dir(target).iterdir())


# ---------------------------------------------------------------------------------------------------
# The copy itself
# ---------------------------------------------------------------------------------------------------


def test_copy_holds_marts_seeds_and_raw_layer_with_comments(tmp_path: Path):
    db = _warehouse(tmp_path / "warehouse" / "argusic.duckdb")
    copy = publish_analyst_copy(db)
    target = tmp_path / "warehouse" / "analyst"  # beside the warehouse file by default
    assert copy.target == target and target.is_symlink() and (target / "argusic.duckdb").is_file()
    assert copy.bytes > 0 and copy.seconds > 0 and "analyst copy" in copy.summary()

    with connect_analyst(target) as con:
        tables = {
            f"{s}.{t}"
            for s, t in con.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall()
        }
        # and the copy's own description, `meta` (issue 29)
        assert tables == {f"marts.{m}" for m in MARTS} | {"reference.agents", "raw.run_records", "main.meta"}
        assert not con.execute(
            "SELECT * FROM duckdb_views() WHERE NOT internal"
        ).fetchall()  # no dbt internals
        # the raw layer slimmed to what attempt_scores does not carry (the agent's report, sizes…)
        raw_columns = {r[0] for r in con.execute("DESCRIBE raw.run_records").fetchall()}
        assert {"attempt_id", "install_ok", "errors_encountered", "harness_name", "log_bytes"} <= raw_columns
        # and the environment each attempt ran under (issue #15)
        assert {
            "harness_edition",
            "image_digest",
            "instructions_sha256",
            "limit_budget_seconds",
            "display",
        } <= (raw_columns)
        assert not raw_columns & {"record_json", "log_uri", "served_log_uri", "log_sha256", "cycle_id"}
        # comments travel with the tables: the marts' (dbt descriptions) and the raw layer's
        (board_comment,) = con.execute(
            "SELECT comment FROM duckdb_tables() WHERE table_name = 'board'"
        ).fetchone()
        assert board_comment == "Grain: one row per (cycle_id, agent_id)."
        assert con.execute(
            "SELECT comment FROM duckdb_columns() WHERE table_name = 'board' AND column_name = 'rank'"
        ).fetchone() == ("1 = best",)
        assert con.execute(
            "SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'raw' AND comment IS NULL"
        ).fetchone() == (0,)
        assert con.execute(
            "SELECT board_score_numerator FROM marts.board WHERE agent_id = 'a1'"
        ).fetchone() == (BIG,)

    manifest = read_manifest(target)
    assert manifest["schema"] == "argusic.analyst_copy/1" and manifest["warehouse"] == str(db.resolve())
    by_name = {t["name"]: t for t in manifest["tables"]}
    scores = by_name["marts.attempt_scores"]
    assert (scores["rows"], scores["parquet"], scores["partitioned_by"]) == (
        7,
        "parquet/attempt_scores",
        "cycle_id",
    )
    assert by_name["marts.project_verdicts"]["partitioned_by"] is None
    assert by_name["raw.run_records"]["parquet"] is None


def _decide(db: Path, *states: tuple[str, str, bool]) -> None:
    """marts.board_publication as dbt builds it (cycle, state, ever published), one row per cycle."""
    with duckdb.connect(str(db)) as con:
        con.execute(
            "CREATE OR REPLACE TABLE marts.board_publication (cycle_id VARCHAR, publication_state VARCHAR, "
            "ever_published BOOLEAN, decided_by VARCHAR, decided_at TIMESTAMP, decision_note VARCHAR, "
            "is_demo_cycle BOOLEAN)"
        )
        for cycle, state, ever in states:
            who, at = (None, None) if state == "pending" else ("ops-ana", "2026-12-02 09:00:00")
            note = {"rejected": "scores wrong", "published": "ok"}.get(state)
            con.execute(
                "INSERT INTO marts.board_publication VALUES (?, ?, ?, ?, ?, ?, false)",
                [cycle, state, ever, who, at, note],
            )


def test_meta_says_which_copy_when_built_and_each_boards_state(tmp_path: Path):
    """Issue 29: the copy describes itself in `meta` (one row, commented): its version, the build time
    the build passed, the stable path, the warehouse and its fingerprint, and every cycle with the
    state of its board; a rejected cycle says it was never published."""
    frames = good_frames()
    frames["attempt_scores"].loc[6, "cycle_id"] = "c2"
    db = _warehouse(tmp_path / "warehouse" / "argusic.duckdb", frames)
    with duckdb.connect(str(db)) as con:
        con.execute("INSERT INTO marts.board SELECT * REPLACE ('c2' AS cycle_id) FROM marts.board")
    _decide(db, ("c1", "published", True), ("c2", "rejected", False))
    built = datetime(2026, 12, 3, 7, 30, tzinfo=UTC)
    copy = publish_analyst_copy(db, built_at=built)
    assert f"analyst copy {copy.target / 'argusic.duckdb'} (version {copy.folder.name})" in copy.summary()
    with connect_analyst(copy.target) as con:
        meta = con.execute("SELECT * FROM meta").fetchall()
        names = [d[0] for d in con.description]
        comments = dict(
            con.execute(
                "SELECT column_name, comment FROM duckdb_columns() WHERE table_name = 'meta'"
            ).fetchall()
        )
        (table_comment,) = con.execute(
            "SELECT comment FROM duckdb_tables() WHERE table_name = 'meta'"
        ).fetchone()
        cycles = con.execute(
            "SELECT cycle_id, publication_state, ever_published, state FROM "
            "(SELECT unnest(cycles, recursive := true) FROM meta)"
        ).fetchall()
    assert len(meta) == 1
    row = dict(zip(names, meta[0], strict=True))
    assert row["copy_version"] == copy.folder.name == copy.version
    assert row["built_at"] == datetime(2026, 12, 3, 7, 30)  # the build's time, UTC, not the copy's
    assert row["published_at"] >= row["built_at"]
    assert row["stable_path"] == str(copy.target.absolute() / "argusic.duckdb")
    assert row["warehouse"] == str(db.resolve()) and len(row["warehouse_fingerprint"]) == 64
    assert row["latest_published_cycle"] == "c1"
    assert [c[:3] for c in cycles] == [("c1", "published", True), ("c2", "rejected", False)]
    assert cycles[1][3].startswith("c2: rejected by ops-ana at 2026-12-02 09:00 UTC")
    assert cycles[1][3].endswith('("scores wrong"): never published')
    assert "c2: rejected" in row["boards"] and "never published" in row["boards"]
    assert set(comments) == set(names) and all(comments.values()) and "one row" in table_comment
    manifest = read_manifest(copy.target)
    assert (manifest["copy_version"], manifest["built_at"]) == (copy.folder.name, "2026-12-03T07:30:00Z")
    assert manifest["warehouse_fingerprint"] == row["warehouse_fingerprint"]
    assert [c["publication_state"] for c in manifest["cycles"]] == ["published", "rejected"]

    # the fingerprint follows the rows: the same warehouse gives the same one, a change another
    assert (
        read_manifest(publish_analyst_copy(db).target)["warehouse_fingerprint"]
        == row["warehouse_fingerprint"]
    )
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE marts.attempt_scores SET score = 1.5 WHERE cycle_id = 'c2'")
    assert (
        read_manifest(publish_analyst_copy(db).target)["warehouse_fingerprint"]
        != row["warehouse_fingerprint"]
    )


def test_a_reader_learns_that_a_newer_copy_was_published(tmp_path: Path):
    db = _warehouse(tmp_path / "warehouse" / "argusic.duckdb")
    first = publish_analyst_copy(db)
    opened = current_copy(first.target)
    assert newer_copy(opened, first.target) is None
    second = publish_analyst_copy(db)
    assert newer_copy(opened, first.target) == second.folder.resolve()
    assert newer_copy(current_copy(first.target), first.target) is None
    assert newer_copy(opened, tmp_path / "nothing" / "published") is None  # no copy: nothing newer


def test_dbt_descriptions_become_the_copys_comments(tmp_path: Path):
    db = _warehouse(tmp_path / "warehouse" / "argusic.duckdb")
    manifest = {
        "nodes": {
            "model.argusic.board": {
                "resource_type": "model", "schema": "marts", "alias": "board", "description": "The board.",
                "columns": {"rank": {"description": "From dbt."}, "no_such_column": {"description": "x"}},
            },
            "test.argusic.something": {"resource_type": "test", "schema": "marts", "alias": "board"},
        }
    }  # fmt: skip
    described = analyst.descriptions_of(manifest)
    assert described == {("marts", "board"): ("The board.", {"rank": "From dbt.", "no_such_column": "x"})}
    target = publish_analyst_copy(db, descriptions=described).target
    with connect_analyst(target) as con:
        assert con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 'board'").fetchone() == (
            "The board.",
        )
        comments = dict(
            con.execute(
                "SELECT column_name, comment FROM duckdb_columns() WHERE table_name = 'board'"
            ).fetchall()
        )
    assert comments["rank"] == "From dbt." and "no_such_column" not in comments


def test_parquet_is_hive_partitioned_by_cycle_and_exact(tmp_path: Path):
    frames = good_frames()
    frames["attempt_scores"].loc[6, "cycle_id"] = "c2"  # a second cycle
    db = _warehouse(tmp_path / "w" / "argusic.duckdb", frames)
    target = tmp_path / "elsewhere" / "copy"
    publish_analyst_copy(db, target)
    parquet = target / "parquet"
    assert sorted(p.name for p in (parquet / "attempt_scores").iterdir()) == ["cycle_id=c1", "cycle_id=c2"]
    assert [p.name for p in (parquet / "project_verdicts").iterdir()] == ["data.parquet"]
    assert sorted(p.name for p in parquet.iterdir()) == sorted(MARTS)

    # pandas (pyarrow): the partition folder becomes the cycle_id column again
    scores = pd.read_parquet(parquet / "attempt_scores")
    assert len(scores) == 7 and sorted(scores["cycle_id"].astype(str).unique()) == ["c1", "c2"]
    assert set(scores.columns) >= {"attempt_id", "outcome", "score"}
    # HUGEINT numerators are exact DECIMAL(38,0), never a rounded DOUBLE
    board = pd.read_parquet(parquet / "board")
    big = board.loc[board["agent_id"] == "a1", "board_score_numerator"].iloc[0]
    assert isinstance(big, decimal.Decimal) and int(big) == BIG
    # DuckDB with hive partitioning
    with duckdb.connect() as con:
        rows = con.execute(
            f"SELECT cycle_id, count(*) FROM read_parquet('{parquet}/attempt_scores/**/*.parquet', "
            "hive_partitioning = true) GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert rows == [("c1", 6), ("c2", 1)]


def _two_cycle_warehouse(tmp_path: Path) -> Path:
    """The test warehouse with its attempts copied into a second cycle, c2."""
    db = _warehouse(tmp_path / "warehouse" / "argusic.duckdb")
    with duckdb.connect(str(db)) as con:
        con.execute(
            "INSERT INTO marts.attempt_scores SELECT * REPLACE ('c2' AS cycle_id, attempt_id || '-c2' AS "
            "attempt_id) FROM marts.attempt_scores"
        )
    return db


def test_unchanged_cycles_are_linked_and_changed_ones_rewritten(tmp_path: Path):
    """A cycle's Parquet partition is written only when its rows changed (issue 27): an unchanged one
    is the previous copy's very file (a hard link); a changed one is new and holds the new rows."""
    db = _two_cycle_warehouse(tmp_path)
    first = publish_analyst_copy(db)
    old = {
        c: next((first.folder / "parquet" / "attempt_scores" / f"cycle_id={c}").iterdir())
        for c in ("c1", "c2")
    }
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE marts.attempt_scores SET score = 1.5 WHERE cycle_id = 'c2'")
    second = publish_analyst_copy(db)
    parts = second.folder / "parquet" / "attempt_scores"
    c1, c2 = (next((parts / f"cycle_id={c}").iterdir()) for c in ("c1", "c2"))
    assert c1.stat().st_ino == old["c1"].stat().st_ino  # linked: not rewritten
    assert c2.stat().st_ino != old["c2"].stat().st_ino  # rewritten
    entry = next(t for t in read_manifest(second.target)["tables"] if t["name"] == "marts.attempt_scores")
    assert entry["partitions"]["reused"] == 1 and sorted(entry["partitions"]["cycles"]) == ["c1", "c2"]
    query = "SELECT cycle_id, count(*), count(*) FILTER (WHERE score = 1.5) FROM {} GROUP BY ALL ORDER BY ALL"
    with duckdb.connect(str(second.folder / "argusic.duckdb"), read_only=True) as con:
        want = con.execute(query.format("marts.attempt_scores")).fetchall()
        got = con.execute(
            query.format(f"read_parquet('{parts}/**/*.parquet', hive_partitioning = true)")
        ).fetchall()
    assert got == want and want[1][2] > 0 and want[0][2] == 0
    # the first copy is pruned by the next publication: the file it shared with the second stays
    publish_analyst_copy(db)
    assert not first.folder.exists() and c1.exists()
    assert pd.read_parquet(parts).shape[0] == sum(row[1] for row in got)


def _content(db_file: Path) -> dict[str, tuple]:
    """Every table of a DuckDB file but meta: its rows and the sum of their hashes."""
    with duckdb.connect(str(db_file), read_only=True) as con:
        names = con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND table_name <> 'meta' ORDER BY ALL"
        ).fetchall()
        return {
            f"{s}.{t}": con.execute(
                f'SELECT count(*), sum(hash(x)::HUGEINT) FROM "{s}"."{t}" AS x'
            ).fetchone()
            for s, t in names
        }


def _copied(target: Path) -> dict[str, str]:
    return {t["name"]: t["copied"] for t in read_manifest(target)["tables"]}


def test_a_copy_starts_from_the_previous_one_and_writes_only_what_changed(tmp_path: Path):
    """Issue 27: the next copy is the previous copy's file with only what changed written: a table
    with the same rows is kept, a mart's changed cycle replaced, a changed table rewritten. It holds
    exactly what a copy written whole holds, with the same fingerprint, comments and meta."""
    db = _two_cycle_warehouse(tmp_path)
    first = publish_analyst_copy(db)
    assert set(_copied(first.target).values()) == {"written"}
    again = publish_analyst_copy(db)
    assert set(_copied(again.target).values()) == {"kept"}  # nothing changed: nothing written
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE marts.attempt_scores SET score = 1.5 WHERE cycle_id = 'c2'")
        con.execute("UPDATE marts.board SET rank = rank + 10")
    third = publish_analyst_copy(db)
    copied = _copied(third.target)
    assert copied["marts.attempt_scores"] == "cycles" and copied["marts.board"] == "written"
    assert copied["marts.project_verdicts"] == "kept" and copied["raw.run_records"] == "kept"
    whole = publish_analyst_copy(db, tmp_path / "whole")  # the same warehouse, written whole
    assert set(_copied(whole.target).values()) == {"written"}
    assert _content(third.folder / "argusic.duckdb") == _content(whole.folder / "argusic.duckdb")
    assert (
        read_manifest(third.target)["warehouse_fingerprint"]
        == read_manifest(whole.target)["warehouse_fingerprint"]
    )
    with connect_analyst(third.target) as con:
        assert con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 'board'").fetchone() == (
            "Grain: one row per (cycle_id, agent_id).",
        )
        assert con.execute("SELECT count(*), max(copy_version) FROM meta").fetchone() == (1, third.version)
        assert con.execute("SELECT count(*) FROM marts.attempt_scores WHERE score = 1.5").fetchone()[0] > 0
    # a reader of the previous copy still reads the previous rows: the file was copied, never changed
    with duckdb.connect(str(again.folder / "argusic.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM marts.attempt_scores WHERE score = 1.5").fetchone() == (0,)


def test_a_build_keeps_what_its_inputs_did_not_change_without_reading_it(tmp_path: Path):
    """Given the build's inputs (argusic_build.built_from) and its lineage, a relation whose inputs
    are those of the previous copy is kept unread; one downstream of a changed source table is
    measured again; a kept table whose row count moved anyway is measured again too."""
    db = _warehouse(tmp_path / "warehouse" / "argusic.duckdb")
    inputs = {"project": "p1", "raw.run_records": "r1", "decisions.reviews": "d1"}
    marts = {f"marts.{m}" for m in MARTS}
    asked: list[tuple[str, ...]] = []

    def lineage(changed: tuple[str, ...]) -> tuple[set[str], set[str]]:
        asked.append(changed)
        return marts, ({"marts.board"} if "decisions.reviews" in changed else set())

    publish_analyst_copy(db, inputs=inputs, lineage=lineage)
    assert asked == []  # no previous copy: nothing to compare with
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE marts.board SET rank = rank + 10")  # as a build after a review would
        con.execute(  # a row more that no input explains: the row count gives it away
            "INSERT INTO marts.project_verdicts SELECT * FROM marts.project_verdicts LIMIT 1"
        )
    second = publish_analyst_copy(db, inputs={**inputs, "decisions.reviews": "d2"}, lineage=lineage)
    assert asked == [("decisions.reviews",)]
    copied = _copied(second.target)
    assert copied["marts.board"] == "written" and copied["marts.project_verdicts"] == "written"
    assert copied["marts.attempt_scores"] == "kept" and copied["raw.run_records"] == "kept"
    # another project: nothing is taken on trust
    publish_analyst_copy(db, inputs={**inputs, "project": "p2"}, lineage=lineage)
    assert asked == [("decisions.reviews",)]


def test_failed_publication_keeps_the_previous_copy(tmp_path: Path, monkeypatch):
    db = _warehouse(tmp_path / "warehouse" / "argusic.duckdb")
    first = publish_analyst_copy(db)

    def broken(db_path: Path, folder: Path, descriptions=None, previous=None):
        (folder / "argusic.duckdb").write_bytes(b"half a file")
        raise duckdb.IOException("IO Error: No space left on device")

    monkeypatch.setattr(analyst, "_write", broken)
    with pytest.raises(AnalystCopyError, match="No space left on device.*previous copy .* is left as it was"):
        publish_analyst_copy(db)
    assert current_copy(first.target) == first.folder.resolve()
    assert _versions(first.target) == [first.folder]  # the half-written folder is gone


def test_analyst_dir_setting(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("ARGUSIC_ANALYST_DIR", raising=False)
    monkeypatch.setenv("ARGUSIC_WAREHOUSE", str(tmp_path / "wh" / "argusic.duckdb"))
    assert analyst_dir() == tmp_path / "wh" / "analyst"
    monkeypatch.setenv("ARGUSIC_ANALYST_DIR", str(tmp_path / "shared" / "argusic"))
    assert analyst_dir() == tmp_path / "shared" / "argusic"
    with pytest.raises(AnalystCopyMissing, match="does not exist yet: it is published by every successful"):
        connect_analyst()


# ---------------------------------------------------------------------------------------------------
# Only after a successful build; readers keep what they hold
# ---------------------------------------------------------------------------------------------------


def _fake_dbt(frames_for: list):
    """dbt stand-in writing the marts of the next frames (the lock is held by the build)."""

    def run(
        project_dir, db_path, quiet, include_unit_tests=False, manifest=None, exclude=(), full_refresh=True
    ):
        _warehouse(db_path, frames_for.pop(0))
        return [dbt_build.NodeResult("model.argusic.board", "success", "")]

    return run


def test_only_a_successful_build_publishes_and_two_copies_are_kept(tmp_path: Path, monkeypatch):
    db = tmp_path / "warehouse" / "argusic.duckdb"
    broken = good_frames()
    broken["pair_sets"].loc[0, "valid_attempts"] = 4  # an expectation fails
    changed = good_frames()
    changed["attempt_scores"] = changed["attempt_scores"].iloc[:6]
    plan = [good_frames(), broken, changed, good_frames()]
    monkeypatch.setattr(dbt_build, "_run_dbt", _fake_dbt(plan))

    first = build_warehouse(db, project_dir=tmp_path)
    assert first.analyst is not None and first.analyst_seconds > 0
    assert "analyst copy" in first.summary()
    target = first.analyst.target

    with pytest.raises(PublicationBlocked):
        build_warehouse(db, project_dir=tmp_path)
    assert current_copy(target) == first.analyst.folder.resolve()  # the failed build published nothing
    assert _versions(target) == [first.analyst.folder]

    third = build_warehouse(db, project_dir=tmp_path)
    with connect_analyst(target) as con:
        assert con.execute("SELECT count(*) FROM marts.attempt_scores").fetchone() == (6,)
    assert _versions(target) == sorted([first.analyst.folder, third.analyst.folder])  # current + previous

    fourth = build_warehouse(db, project_dir=tmp_path)
    assert _versions(target) == sorted([third.analyst.folder, fourth.analyst.folder])  # the first is gone


HOLD_COPY = """
import json, sys, time
from pathlib import Path
from argusic.warehouse.analyst import connect_analyst
target, release = Path(sys.argv[1]), Path(sys.argv[2])
con = connect_analyst(target)
count = lambda: con.execute("SELECT count(*) FROM marts.attempt_scores").fetchone()[0]
print(json.dumps({"held": count()}), flush=True)
seen, errors = set(), []
while not release.exists():
    try:
        seen.add(count())
    except Exception as err:
        errors.append(repr(err))
    time.sleep(0.05)
seen.add(count())
print(json.dumps({"seen": sorted(seen), "errors": errors}), flush=True)
"""

READ_PARQUET = """
import json, sys, time
from pathlib import Path
import duckdb
target, release = Path(sys.argv[1]), Path(sys.argv[2])
def rows():  # as a fresh reader does: the link resolved once per read (argusic.warehouse.analyst.parquet_dir)
    glob = str(target.resolve() / "parquet" / "attempt_scores" / "**" / "*.parquet")
    with duckdb.connect() as con:
        query = f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning = true)"
        return con.execute(query).fetchone()[0]
print(json.dumps({"held": rows()}), flush=True)
seen, errors, reads = set(), [], 0
while not release.exists():
    try:
        seen.add(rows())
        reads += 1
    except Exception as err:
        errors.append(repr(err))
    time.sleep(0.02)
seen.add(rows())
print(json.dumps({"seen": sorted(seen), "errors": errors, "reads": reads}), flush=True)
"""


def _start_reader(
    tmp_path: Path, name: str, source: str, target: Path
) -> tuple[subprocess.Popen, Path, dict]:
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    release = tmp_path / f"release-{name}"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(target), str(release)], stdout=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline()
    if not line:  # it failed before holding anything: nothing left running
        proc.wait(timeout=60)
        raise AssertionError(f"{name} ended before it held the copy (exit {proc.returncode})")
    return proc, release, json.loads(line)


def _finish_reader(proc: subprocess.Popen, release: Path) -> dict:
    release.touch()
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    return json.loads(out.strip().splitlines()[-1])


def test_a_reader_holding_the_copy_keeps_its_snapshot_across_publications(tmp_path: Path):
    frames = good_frames()
    db = _warehouse(tmp_path / "warehouse" / "argusic.duckdb", frames)
    first = publish_analyst_copy(db)
    holder, release, held = _start_reader(tmp_path, "hold_copy", HOLD_COPY, first.target)
    try:
        assert held == {"held": 7}
        frames["attempt_scores"] = frames["attempt_scores"].iloc[:5]
        _warehouse(db, frames)
        publish_analyst_copy(db)
        publish_analyst_copy(db)  # the copy the reader holds is now deleted from disk
        assert not first.folder.exists()
        with connect_analyst(first.target) as con:  # a new reader sees the new copy
            assert con.execute("SELECT count(*) FROM marts.attempt_scores").fetchone() == (5,)
    finally:
        report = _finish_reader(holder, release)
    assert report == {"seen": [7], "errors": []}  # the old snapshot, whole, to the end


# ---------------------------------------------------------------------------------------------------
# A whole cycle with readers held open
# ---------------------------------------------------------------------------------------------------


def _argusic() -> list[str]:
    script = Path(sys.executable).parent / "argusic"
    return [str(script)] if script.exists() else [sys.executable, "-m", "argusic.cli"]


def _cycle(cycle: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            *_argusic(), "cycle", "run", "--catalogue", env["ARGUSIC_FORGE_DIR"] + "/catalogue.json",
            "--cycle", cycle, "--agents", "readme-runner", "--executor", "local",
            "--budget-scale", "0.003", "--pool-size", "2", "--approve-as", "test", "--note", "a test cycle",
        ],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


@pytest.mark.slow
def test_readers_held_open_change_nothing_for_a_whole_cycle(isolated: Path, tmp_path: Path):
    """A real cycle (demo forge, local executor: pool → attempts → ingest → build → publish) runs while
    one process holds a read-only DuckDB connection on the analyst copy and another reads its Parquet
    files over and over. ARGUSIC_LOCK_TIMEOUT=0 turns any wait for the warehouse into a failure."""
    from argusic.sources.forge import build_forge

    build_forge(isolated / "forge")
    env = dict(
        os.environ,
        ARGUSIC_LOCK_TIMEOUT="0",
        DBT_TARGET_PATH=str(tmp_path / "dbt_target"),
        DBT_LOG_PATH=str(tmp_path / "dbt_logs"),
        COLUMNS="200",
    )
    first = _cycle("2026-12", env)
    assert first.returncode == 0, first.stdout + first.stderr
    target = isolated / "warehouse" / "analyst"
    holder, hold_release, held = _start_reader(tmp_path, "hold_copy", HOLD_COPY, target)
    try:
        reader, read_release, read = _start_reader(tmp_path, "read_parquet", READ_PARQUET, target)
        try:
            # 1 agent x 2 projects x 3 attempts (an invalid attempt and its rerun would add rows)
            assert held == read == {"held": 6}, first.stdout[-3000:]
            second = _cycle("2027-01", env)
        finally:
            read_report = _finish_reader(reader, read_release)
    finally:
        held_report = _finish_reader(holder, hold_release)
    output = second.stdout + second.stderr
    assert second.returncode == 0, output
    assert "waiting" not in output and "gave up" not in output and "Traceback" not in output
    assert "Argusic board — cycle 2027-01" in output and "published " in output
    from argusic.attempts.environment import current_edition

    assert f"harness edition of this cycle: {current_edition().edition}" in output  # its records name it
    assert held_report == {"seen": [6], "errors": []}  # its snapshot, unchanged, no error
    assert read_report["errors"] == [] and set(read_report["seen"]) <= {6, 12}  # old or new copy, never half
    assert 12 in read_report["seen"] and read_report["reads"] > 0
    with connect_analyst(target) as con:
        assert con.execute("SELECT count(*) FROM marts.attempt_scores").fetchone() == (12,)
        assert {r[0] for r in con.execute("SELECT cycle_id FROM marts.board").fetchall()} == {
            "2026-12",
            "2027-01",
        }
        # every mart column carries its dbt description, in the copy analysts open
        undescribed = con.execute(
            "SELECT table_name || '.' || column_name FROM duckdb_columns() "
            "WHERE schema_name = 'marts' AND coalesce(comment, '') = ''"
        ).fetchall()
        assert undescribed == []
        assert con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'marts' AND coalesce(comment, '') = ''"
        ).fetchone() == (0,)
        # the columns analysts asked for, filled from a real cycle
        row = con.execute(
            "SELECT middle_attempt_id FROM marts.pair_sets WHERE cycle_id = '2027-01' AND is_complete LIMIT 1"
        ).fetchone()
        assert row and row[0].startswith("2027-01.board.readme-runner.")
        evidence = con.execute(
            "SELECT served_log_uri, served_recording_uri, log_sha256, budget_seconds, "
            "effective_budget_seconds, final_state FROM marts.attempt_scores WHERE cycle_id = '2027-01'"
        ).fetchall()
        assert all(r[0] and r[1] and len(r[2]) == 64 for r in evidence)
        assert all(r[3] >= 5400 and 1 <= r[4] < r[3] for r in evidence)  # real budget, scaled budget
        assert all(r[5] for r in evidence)
        # the copy says which it is and each board's state (issue 29): both approved and published, the
        # second one's approval built at once after publishing (refresh_after_decision), not left pending
        # until the next cycle's build
        states = con.execute(
            "SELECT cycle_id, publication_state FROM (SELECT unnest(cycles, recursive := true) FROM meta)"
        ).fetchall()
        assert states == [("2027-01", "published"), ("2026-12", "published")]
        assert con.execute("SELECT latest_published_cycle, stable_path FROM meta").fetchone() == (
            "2027-01",
            str(target.absolute() / "argusic.duckdb"),
        )


# ---------------------------------------------------------------------------------------------------
# argusic sql and argusic docs
# ---------------------------------------------------------------------------------------------------


@pytest.fixture
def published(isolated: Path) -> Path:
    db = _warehouse(isolated / "warehouse" / "argusic.duckdb")
    return publish_analyst_copy(db).target


def test_sql_one_shot(published: Path):
    result = runner.invoke(app, ["sql", "SELECT agent_id, rank FROM marts.board ORDER BY agent_id"])
    assert result.exit_code == 0, result.output
    assert "agent_id" in result.output and "a1" in result.output and "4 row(s)" in result.output
    csv = runner.invoke(
        app, ["sql", "--format", "csv", "SELECT agent_id, valid_attempts FROM marts.board ORDER BY 1"]
    )
    assert csv.output.splitlines()[:3] == ["agent_id,valid_attempts", "a1,3", "a2,2"]
    as_json = runner.invoke(
        app, ["sql", "--format", "json", "SELECT board_score_numerator AS n FROM marts.board"]
    )
    assert {"n": BIG} in json.loads(as_json.output)  # exact, not a float
    tables = runner.invoke(app, ["sql", ".tables"])
    assert "marts.board" in tables.output and "one row per (cycle_id, agent_id)" in tables.output
    schema = runner.invoke(app, ["sql", ".schema", "board"])
    assert "rank" in schema.output and "1 = best" in schema.output
    refused = runner.invoke(app, ["sql", "DELETE FROM marts.board"])
    assert refused.exit_code == 2 and "read-only" in refused.output
    unknown = runner.invoke(app, ["sql", ".dump"])
    assert unknown.exit_code == 2 and ".dump: unknown command" in unknown.output


def _flat(result) -> str:
    """A command's output with its line wrapping undone (rich wraps notes at the terminal's width)."""
    return " ".join(result.output.split())


def _three_cycles(db: Path) -> None:
    """c1 (oldest) published, c2 rejected, c3 (latest) pending; each cycle's attempts end a day apart."""
    with duckdb.connect(str(db)) as con:
        for column, value in (("harness_edition", "'2'"), ("sponsor", "NULL"), ("sponsorship", "NULL")):
            con.execute(f"ALTER TABLE marts.board ADD COLUMN IF NOT EXISTS {column} VARCHAR DEFAULT {value}")
        con.execute("ALTER TABLE marts.attempt_scores ADD COLUMN IF NOT EXISTS ended_at TIMESTAMP")
        con.execute("UPDATE marts.attempt_scores SET ended_at = TIMESTAMP '2026-12-01 10:00:00'")
        for day, cycle in ((2, "c2"), (3, "c3")):
            con.execute(
                f"INSERT INTO marts.board SELECT * REPLACE ('{cycle}' AS cycle_id) FROM marts.board "
                "WHERE cycle_id = 'c1'"
            )
            con.execute(
                f"INSERT INTO marts.attempt_scores SELECT * REPLACE ('{cycle}' AS cycle_id, attempt_id || "
                f"'-{cycle}' AS attempt_id, TIMESTAMP '2026-12-0{day} 10:00:00' AS ended_at) "
                "FROM marts.attempt_scores WHERE cycle_id = 'c1'"
            )
    _decide(db, ("c1", "published", True), ("c2", "rejected", False), ("c3", "pending", False))


def test_board_shows_the_latest_published_board_and_says_each_state(published: Path, isolated: Path):
    """Issue 29: `argusic board` shows the latest *published* board unless asked (`--cycle`,
    `--any-state`), and its header says the state; a rejected cycle says it was never published."""
    db = isolated / "warehouse" / "argusic.duckdb"
    _three_cycles(db)
    publish_analyst_copy(db, built_at=datetime(2026, 12, 4, 8, 0, tzinfo=UTC))
    default = runner.invoke(app, ["board"])
    assert default.exit_code == 0, default.output
    assert "Argusic board — cycle c1 — PUBLISHED" in _flat(default)
    assert "publication: published (approved by ops-ana at 2026-12-02 09:00 UTC)" in _flat(default)
    assert "as of this analyst copy's build at 2026-12-04 08:00:00 UTC" in _flat(default)
    latest = runner.invoke(app, ["board", "--any-state"])
    assert latest.exit_code == 0 and "Argusic board — cycle c3 — PENDING" in _flat(latest), latest.output
    assert "pending (no publication decision yet): not published" in _flat(latest)
    rejected = runner.invoke(app, ["board", "--cycle", "c2"])
    assert "Argusic board — cycle c2 — REJECTED" in _flat(rejected), rejected.output
    assert 'rejected by ops-ana at 2026-12-02 09:00 UTC ("scores wrong"): never published' in _flat(rejected)
    # with nothing published, the default says what the latest board is and how to see it
    _decide(db, ("c1", "rejected", False), ("c2", "rejected", False), ("c3", "pending", False))
    publish_analyst_copy(db)
    none = runner.invoke(app, ["board"])
    assert none.exit_code == 2 and "no published board in the analyst copy" in _flat(none), none.output
    assert "argusic board --cycle c3" in _flat(none)


def test_sql_warns_when_a_newer_copy_exists(published: Path):
    """Issue 29: a reader of an older copy is told, with both versions and the stable path to reopen."""
    opened = current_copy(published)
    assert sql_shell.stale_warning(opened, published) is None
    newer = publish_analyst_copy(published.parent / "argusic.duckdb", built_at=datetime(2026, 12, 4, 8, 0))
    warning = sql_shell.stale_warning(opened, published)
    assert warning is not None and f"version {newer.folder.name}, built at 2026-12-04 08:00:00 UTC" in warning
    assert f"still reads version {opened.name}" in warning and str(published / "argusic.duckdb") in warning
    assert sql_shell.stale_warning(current_copy(published), published) is None


def test_harlequins_catalog_menu_shows_a_tables_descriptions(published: Path):
    """Harlequin's catalog has no place for a comment: a table's menu gets "Show Descriptions", which
    opens the query of its comments in a new editor tab; that query, run on the copy, gives them."""
    from harlequin_duckdb import DuckDbAdapter
    from harlequin_duckdb.catalog import TableCatalogItem

    sql_shell.harlequin_app(published)  # adds the menu entry
    action = dict(TableCatalogItem.INTERACTIONS)["Show Descriptions"]
    texts: list[str] = []
    driver = type("Driver", (), {"insert_text_in_new_buffer": lambda self, text: texts.append(text)})()
    connection = DuckDbAdapter(conn_str=(str(published / "argusic.duckdb"),), read_only=True).connect()
    try:
        (database,) = connection.get_catalog().items
        marts = next(s for s in database.fetch_children() if s.label == "marts")
        board = next(t for t in marts.fetch_children() if t.label == "board")
        assert isinstance(board, TableCatalogItem)
        action(board, driver)
        # run on the session's own connection (DuckDB allows one configuration per file in a process)
        columns, table = (
            connection.conn.execute(q).fetchall() for q in texts[0].strip().rstrip(";").split(";\n")
        )
    finally:
        connection.close()
    assert any(c[0] == "rank" and c[2] == "1 = best" for c in columns)
    assert table == [("Grain: one row per (cycle_id, agent_id).",)]


def test_sql_without_a_copy_says_how_to_make_one(isolated: Path):
    result = runner.invoke(app, ["sql", "SELECT 1"])
    assert (
        result.exit_code == 2 and "does not exist yet" in result.output and "argusic build" in result.output
    )


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def _screen_until(session: str, words: list[str], seconds: float = 120) -> str:
    deadline = time.monotonic() + seconds
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux("capture-pane", "-p", "-t", session)
        if all(w in screen for w in words):
            return screen
        time.sleep(0.5)
    raise AssertionError(f"never showed {words}:\n{screen}")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by `make test` (terminal-tools)")
def test_sql_opens_harlequin_on_the_copy_in_a_terminal(published: Path, tmp_path: Path):
    """As a person would: `argusic sql` in a terminal (tmux), a query typed and run, the answer on screen."""
    session = f"argusic-sql-{os.getpid()}"
    settings = {
        "ARGUSIC_WAREHOUSE": os.environ["ARGUSIC_WAREHOUSE"],
        "HOME": str(tmp_path),
        "TERM": "xterm-256color",
    }
    env = " ".join(f"{k}={v}" for k, v in settings.items())
    _tmux(
        "new-session", "-d", "-s", session, "-x", "160", "-y", "40", f"env {env} {' '.join(_argusic())} sql"
    )
    try:
        screen = _screen_until(session, ["Query Editor", "Data Catalog", "Database Connected"])
        assert "argusic db" in screen  # the copy's file, in the catalog
        _tmux("send-keys", "-t", session, "SELECT agent_id || '!' AS shout FROM marts.board WHERE rank = 1")
        _tmux("send-keys", "-t", session, "C-j")
        screen = _screen_until(session, ["a1!", "executed successfully"])
        assert "Newer analyst copy" not in screen
        # a copy published while the session is open: the next query says so (issue 29)
        publish_analyst_copy(published.parent / "argusic.duckdb")
        _tmux("send-keys", "-t", session, "F2")  # back to the editor (the results have the focus)
        _tmux("send-keys", "-t", session, "C-j")
        warned = _screen_until(session, ["Newer analyst copy", "this session still"])
        _tmux("send-keys", "-t", session, "C-q")
        deadline = time.monotonic() + 60
        while "Query Editor" in _tmux("capture-pane", "-p", "-t", session) and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    assert "shout" in screen and "this session still" in warned


@pytest.mark.slow
def test_docs_are_generated_and_served_on_localhost(published: Path, tmp_path: Path):
    env = dict(os.environ, COLUMNS="300")
    env.pop("ARGUSIC_DBT_PROJECT", None)
    proc = subprocess.Popen(
        [*_argusic(), "docs", "--out", str(tmp_path / "site")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        said = ""
        while "serving dbt docs at " not in said:
            line = proc.stdout.readline()
            assert line, said
            said += line
        url = said.split("serving dbt docs at ", 1)[1].split()[0]
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=30) as page:
            assert page.status == 200 and b"dbt" in page.read()
        with urllib.request.urlopen(url + "catalog.json", timeout=30) as page:
            catalog = json.loads(page.read())
        with urllib.request.urlopen(url + "manifest.json", timeout=30) as page:
            manifest = json.loads(page.read())
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    pair_sets = manifest["nodes"]["model.argusic.pair_sets"]
    assert "middle score" in pair_sets["columns"]["middle_attempt_id"]["description"]
    assert catalog["nodes"]["model.argusic.board"]["metadata"]["comment"].startswith("Grain:")
    assert (tmp_path / "site" / "static_index.html").is_file()
