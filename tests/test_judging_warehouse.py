"""The warehouse side of issue #14 (seed 004): hints documents into raw.attempt_hints, repair patches'
change similarity into raw.change_similarity, and the marts attempt_hints, stability and
change_similarity built from them; plus the guard that no model feeding a score, a verdict or the
board reads a hints or stability model.

The exact variances expected are computed here with Python's fractions.Fraction from the scores the
fixture records are built to have (install 30 + run 30 + depth 20/12 + recovery 20 * fixed / met).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from datetime import datetime, timedelta
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest
from argusic.judging.ingest import (
    MAX_HINTS_BYTES,
    METHOD,
    HintsIngestError,
    compute_change_similarity,
    load_hints,
    migrate_judging,
    nontest_changed_lines,
    similarity,
)
from argusic.warehouse import COLUMNS, IngestError, ingest, migrate_raw
from conftest import write_record

DBT_PROJECT = Path(__file__).resolve().parent.parent / "dbt_project"
CYCLE = "2026-12"
AGENT = "readme-runner"
REVISION = "c" * 64

# ---------------------------------------------------------------------------------------------------
# Documents
# ---------------------------------------------------------------------------------------------------


def hints_doc(attempt_id: str = f"{CYCLE}.board.{AGENT}.wavgen.a1", **changes) -> dict:
    cycle, purpose, agent, project = attempt_id.split(".")[:4]
    doc = {
        "schema": "argusic.hints/1",
        "attempt_id": attempt_id, "cycle_id": cycle, "agent_id": agent, "project_id": project,
        "purpose": purpose, "task_id": "repair" if purpose == "repair" else "install_and_run",
        "task_version": "1", "task_revision": REVISION,
        "needles": {"score": 0.5, "status": "measured", "found": ["wav"], "missing": ["frames"],
                    "sources": ["log", "report"]},
        "rendering": {"score": 0.5, "status": "measured",
                      "pages": [{"path": "index.html", "outcome": "console_errors",
                                 "console_errors": ["TypeError: x is undefined"],
                                 "screenshots": ["d" * 64, "e" * 64], "detail": "loaded"}]},
        "agent_logic": {"score": 1, "status": "measured", "succeeded": True, "in_order": True,
                        "required": ["read", "install", "exec"], "steps": ["read", "install", "exec", "report"],
                        "source": "readme-runner steps"},
    }  # fmt: skip
    doc.update(changes)
    return doc


def write_hints(folder: Path, doc: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hints.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def con(tmp_path: Path):
    with duckdb.connect(str(tmp_path / "w.duckdb")) as connection:
        migrate_raw(connection)
        yield connection


def hint_rows(con) -> list[tuple]:
    return con.execute(
        "SELECT attempt_id, task_revision, needles_score, rendering_status, agent_logic_steps, "
        "rendering_pages FROM raw.attempt_hints ORDER BY ALL"
    ).fetchall()


def test_migrate_raw_creates_both_tables_empty(con):
    migrate_judging(con)  # twice is harmless
    for table in ("attempt_hints", "change_similarity"):
        assert con.execute(f"SELECT count(*) FROM raw.{table}").fetchone() == (0,)


def test_a_good_document_is_flattened_with_lists_as_json(con, tmp_path: Path):
    path = write_hints(tmp_path / "a1", hints_doc())
    assert load_hints(con, [path]) == 1
    (row,) = hint_rows(con)
    assert row[:4] == (f"{CYCLE}.board.{AGENT}.wavgen.a1", REVISION, 0.5, "measured")
    assert json.loads(row[4]) == ["read", "install", "exec", "report"]
    assert json.loads(row[5])[0]["outcome"] == "console_errors"


def test_loading_is_keyed_and_idempotent(con, tmp_path: Path):
    path = write_hints(tmp_path / "a1", hints_doc())
    assert load_hints(con, [path]) == 1
    loaded_at = con.execute("SELECT loaded_at FROM raw.attempt_hints").fetchone()
    assert load_hints(con, [path, path]) == 0  # the same document twice: nothing written
    assert con.execute("SELECT loaded_at FROM raw.attempt_hints").fetchone() == loaded_at
    # recomputed hints of the same attempt and task revision replace the row
    write_hints(tmp_path / "a1", hints_doc(needles={**hints_doc()["needles"], "score": 1, "missing": []}))
    assert load_hints(con, [path]) == 1
    assert [r[2] for r in hint_rows(con)] == [1.0]
    # another task revision is another row
    other = write_hints(tmp_path / "b", hints_doc(task_revision="f" * 64))
    assert load_hints(con, [other]) == 1 and len(hint_rows(con)) == 2


def test_two_different_documents_of_one_key_in_a_batch_are_refused(con, tmp_path: Path):
    first = write_hints(tmp_path / "x", hints_doc())
    second = write_hints(tmp_path / "y", hints_doc(task_version="2"))
    with pytest.raises(HintsIngestError, match=r"y/hints.json: .*also in .*x/hints.json"):
        load_hints(con, [first, second])


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"schema": "argusic.hints/2"}, ["schema", "argusic.hints/1"]),
        ({"extra": 1}, ["extra", "Extra inputs are not permitted"]),
        ({"task_revision": "abc"}, ["task_revision"]),
        ({"agent_id": "someone-else"}, ["attempt_id", "agent_id"]),
        ({"task_id": "repair"}, ["task_id", "board"]),
        ({"needles": {"score": 0.7, "status": "measured", "found": [], "missing": [], "sources": []}},
         ["needles", "1, 0.5 or 0"]),
        ({"needles": {"score": 1, "status": "unavailable", "found": [], "missing": [], "sources": []}},
         ["needles", "null score"]),
        ({"needles": {"score": "1", "status": "measured", "found": [], "missing": [], "sources": []}},
         ["needles.score"]),
        ({"agent_logic": {"score": None, "status": "not_applicable", "required": [], "steps": ["dance"]}},
         ["agent_logic.steps.0"]),
    ],
)  # fmt: skip
def test_a_document_that_breaks_the_schema_is_refused_naming_file_and_field(con, tmp_path, change, needles):
    path = write_hints(tmp_path / "bad", hints_doc(**change))
    with pytest.raises(HintsIngestError) as err:
        load_hints(con, [path])
    message = str(err.value)
    assert str(path) in message, message
    for needle in needles:
        assert needle in message, message
    assert hint_rows(con) == []


def test_hostile_sizes_and_files_are_refused(con, tmp_path: Path):
    big = tmp_path / "big" / "hints.json"
    big.parent.mkdir()
    big.write_bytes(b" " * (MAX_HINTS_BYTES + 1))
    with pytest.raises(HintsIngestError, match=rf"at most {MAX_HINTS_BYTES} bytes.*refused unread"):
        load_hints(con, [big])
    # within the byte cap but over a list cap: 201 pages, 21 console messages, a 501-character one
    page = hints_doc()["rendering"]["pages"][0]
    many = hints_doc(rendering={"score": 0.5, "status": "measured", "pages": [page] * 201})
    with pytest.raises(HintsIngestError, match=r"rendering\.pages"):
        load_hints(con, [write_hints(tmp_path / "many", many)])
    loud = hints_doc(rendering={"score": 0.5, "status": "measured",
                                "pages": [{**page, "console_errors": ["x" * 501]}]})  # fmt: skip
    with pytest.raises(HintsIngestError, match=r"rendering\.pages\.0\.console_errors\.0"):
        load_hints(con, [write_hints(tmp_path / "loud", loud)])
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "hints.json").symlink_to(write_hints(tmp_path / "real", hints_doc()))
    with pytest.raises(HintsIngestError, match="symbolic link"):
        load_hints(con, [linked / "hints.json"])
    (tmp_path / "nan").mkdir()
    (tmp_path / "nan" / "hints.json").write_text('{"schema": NaN}')
    with pytest.raises(HintsIngestError, match="not strict JSON"):
        load_hints(con, [tmp_path / "nan" / "hints.json"])
    (tmp_path / "latin").mkdir()
    (tmp_path / "latin" / "hints.json").write_bytes(b'{"schema": "\xe9"}')
    with pytest.raises(HintsIngestError, match="not UTF-8"):
        load_hints(con, [tmp_path / "latin" / "hints.json"])
    assert hint_rows(con) == []


# ---------------------------------------------------------------------------------------------------
# Ingest: hints.json beside run records; change similarity of repair patches
# ---------------------------------------------------------------------------------------------------

PATCH_A = b"""diff --git a/src/wav.py b/src/wav.py
index 1..2 100644
--- a/src/wav.py
+++ b/src/wav.py
@@ -1,3 +1,3 @@
 import wave
-frames = 0
+frames = read_frames(path)
 return frames
diff --git a/tests/test_wav.py b/tests/test_wav.py
--- a/tests/test_wav.py
+++ b/tests/test_wav.py
@@ -1 +1 @@
-assert frames == 0
+assert True
"""
# the same source change, different test edits: identical by the method (tests never count)
PATCH_A_OTHER_TESTS = PATCH_A.replace(b"+assert True", b"+assert frames >= 0")
PATCH_B = b"""diff --git a/src/wav.py b/src/wav.py
--- a/src/wav.py
+++ b/src/wav.py
@@ -1,3 +1,4 @@
 import wave
-frames = 0
+frames = count(path)
+log(frames)
 return frames
"""
PATCH_ONLY_TESTS = b"""diff --git a/tests/test_wav.py b/tests/test_wav.py
--- a/tests/test_wav.py
+++ b/tests/test_wav.py
@@ -1 +1 @@
-assert frames == 0
+assert True
"""


def test_nontest_changed_lines_leave_test_files_and_headers_out():
    assert nontest_changed_lines(PATCH_A) == ["-frames = 0", "+frames = read_frames(path)"]
    assert nontest_changed_lines(PATCH_ONLY_TESTS) == []
    assert nontest_changed_lines(b"\xff\xfe not a diff") == []


def test_similarity_identical_is_one_and_different_patches_are_below():
    a, b = nontest_changed_lines(PATCH_A), nontest_changed_lines(PATCH_B)
    assert similarity(a, a) == 1.0
    assert similarity(a, nontest_changed_lines(PATCH_A_OTHER_TESTS)) == 1.0
    # one line shared of 2 + 3: Indel distance 3 -> 1 - 3/5
    assert similarity(a, b) == pytest.approx(1 - 3 / 5)
    assert 0 <= similarity(a, ["+x"]) < 1


def repair_record(base: dict, store, no: int, patch: bytes | None, tmp: Path, item: str = "item1") -> dict:
    doc = copy.deepcopy(base)
    aid = f"{CYCLE}.repair.{AGENT}.wavgen.a{no}"
    doc.update(attempt_id=aid, purpose="repair", attempt_no=no)
    ref = None
    if patch is not None:
        src = tmp / f"patch-{no}.diff"
        src.write_bytes(patch)
        ref = store.put_file(src).as_ref()
    doc["repair"] = {
        "item_id": item,
        "item_revision": "9" * 64,
        "track": "basic",
        "patch": ref,
        "grade": None,
    }
    return doc


def test_ingest_loads_hints_beside_records_and_compares_repair_patches(record_doc, isolated: Path):
    from argusic.evidence import open_store

    store = open_store()
    runs = isolated / "runs" / CYCLE
    board = runs / record_doc["attempt_id"]
    write_record(board, record_doc)
    write_hints(board, hints_doc(record_doc["attempt_id"]))
    write_hints(board / "out", hints_doc(record_doc["attempt_id"], task_version="forged"))  # never read
    patches = {1: PATCH_A, 2: PATCH_A_OTHER_TESTS, 3: PATCH_B, 4: PATCH_ONLY_TESTS, 5: b"", 6: None}
    for no, patch in patches.items():
        doc = repair_record(record_doc, store, no, patch, isolated)
        write_record(runs / doc["attempt_id"], doc)
    other_item = repair_record(record_doc, store, 7, PATCH_A, isolated, item="item2")  # another group
    write_record(runs / other_item["attempt_id"], other_item)
    write_hints(runs / f"{CYCLE}.repair.{AGENT}.wavgen.a1", hints_doc(f"{CYCLE}.repair.{AGENT}.wavgen.a1"))

    result = ingest([isolated / "runs"])
    assert (result.inserted, result.hints, result.similarity_pairs) == (8, 2, 3)
    with duckdb.connect(os.environ["ARGUSIC_WAREHOUSE"], read_only=True) as con:
        pairs = con.execute(
            "SELECT attempt_a[-2:], attempt_b[-2:], method, similarity, identical "
            "FROM raw.change_similarity ORDER BY ALL"
        ).fetchall()
        versions = con.execute("SELECT DISTINCT task_version FROM raw.attempt_hints").fetchall()
    # a1, a2, a3 have non-test lines; a4 (tests only), a5 (empty), a6 (no patch) are not compared
    assert pairs == [
        ("a1", "a2", METHOD, 1.0, True),
        ("a1", "a3", METHOD, pytest.approx(0.4), False),
        ("a2", "a3", METHOD, pytest.approx(0.4), False),
    ]
    assert versions == [("1",)]  # out/ is the agent's: never searched
    again = ingest([isolated / "runs"])
    assert (again.inserted, again.already_present, again.hints, again.similarity_pairs) == (0, 8, 0, 0)


def test_a_bad_hints_file_refuses_the_whole_ingest(record_doc, isolated: Path):
    folder = isolated / "runs" / record_doc["attempt_id"]
    write_record(folder, record_doc)
    path = write_hints(folder, hints_doc(record_doc["attempt_id"], task_revision="nope"))
    with pytest.raises(IngestError, match=re.escape(str(path)) + r": invalid hints document: task_revision"):
        ingest([isolated / "runs"])
    with duckdb.connect(os.environ["ARGUSIC_WAREHOUSE"], read_only=True) as con:
        assert con.execute("SELECT count(*) FROM raw.run_records").fetchone() == (0,)


def test_pairs_are_computed_once_and_a_missing_patch_is_skipped_not_refused(record_doc, isolated: Path):
    from argusic.evidence import open_store

    store = open_store()
    runs = isolated / "runs"
    for no, patch in ((1, PATCH_A), (2, PATCH_B)):
        doc = repair_record(record_doc, store, no, patch, isolated)
        write_record(runs / doc["attempt_id"], doc)
    assert ingest([runs]).similarity_pairs == 1
    # a third attempt whose stored patch is gone: its pairs are skipped (the audit reports the loss)
    lost = repair_record(record_doc, store, 3, PATCH_A + b"+more\n", isolated)
    Path(store._path(store.key_of_uri(lost["repair"]["patch"]["uri"]))).unlink()
    write_record(runs / lost["attempt_id"], lost)
    result = ingest([runs])
    assert (result.inserted, result.similarity_pairs) == (1, 0)
    with duckdb.connect(os.environ["ARGUSIC_WAREHOUSE"]) as con:
        assert compute_change_similarity(con) == 0  # the pair already compared is not compared again
        assert con.execute("SELECT count(*) FROM raw.change_similarity").fetchone() == (1,)
