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
from datetime import datetime, timedelta
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest
from argusic.warehouse.load_judging import (
    MAX_HINTS_BYTES,
    METHOD,
    HintsIngestError,
    compute_change_similarity,
    load_hints,
    nontest_changed_lines,
    similarity,
)
from argusic.warehouse.load_runs import IngestError, ingest
from argusic.warehouse.schema import COLUMNS, migrate_judging, migrate_raw
from conftest import dbt_build_copy, write_record

DBT_PROJECT = Path(__file__).resolve().parents[2] / "dbt_project"
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
                        "required": ["read", "install", "exec"],
                        "steps": ["read", "install", "exec", "report"],
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
    from argusic.core.evidence import open_store

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


def test_install_and_run_changes_are_compared_by_project_and_environment(record_doc, isolated: Path):
    """Board attempts' changes patches (argusic.sandbox.changes), named by their hints and read from the
    evidence store by content address: one group per agent, project and environment."""
    import hashlib

    from argusic.core.evidence import open_store

    store = open_store()
    runs = isolated / "runs" / CYCLE
    patches = {1: PATCH_A, 2: PATCH_A, 3: PATCH_B, 4: PATCH_ONLY_TESTS}
    for no, patch in patches.items():
        doc = copy.deepcopy(record_doc)
        aid = f"{CYCLE}.board.{AGENT}.wavgen.a{no}"
        doc.update(attempt_id=aid, attempt_no=no)
        write_record(runs / aid, doc)
        sha = hashlib.sha256(patch).hexdigest()
        store.put_bytes(store.key_for(sha), patch)
        changes = {"status": "measured", "sha256": sha, "bytes": len(patch), "files": 1}
        write_hints(runs / aid, hints_doc(aid, changes=changes))
    forged = f"{CYCLE}.board.{AGENT}.wavgen.a5"  # its hints name bytes the store does not hold
    doc = copy.deepcopy(record_doc)
    doc.update(attempt_id=forged, attempt_no=5)
    write_record(runs / forged, doc)
    changes = {"status": "measured", "sha256": "f" * 64, "bytes": 10, "files": 1}
    write_hints(runs / forged, hints_doc(forged, changes=changes))

    result = ingest([isolated / "runs"])

    with duckdb.connect(os.environ["ARGUSIC_WAREHOUSE"], read_only=True) as con:
        pairs = con.execute(
            "SELECT attempt_a[-2:], attempt_b[-2:], similarity, identical "
            "FROM raw.change_similarity ORDER BY ALL"
        ).fetchall()
    # a4 changes test files only; a5's patch is not in the store: neither is compared
    assert result.similarity_pairs == 3
    assert pairs == [
        ("a1", "a2", 1.0, True),
        ("a1", "a3", pytest.approx(0.4), False),
        ("a2", "a3", pytest.approx(0.4), False),
    ]


def test_a_bad_hints_file_refuses_the_whole_ingest(record_doc, isolated: Path):
    folder = isolated / "runs" / record_doc["attempt_id"]
    write_record(folder, record_doc)
    path = write_hints(folder, hints_doc(record_doc["attempt_id"], task_revision="nope"))
    with pytest.raises(IngestError, match=re.escape(str(path)) + r": invalid hints document: task_revision"):
        ingest([isolated / "runs"])
    with duckdb.connect(os.environ["ARGUSIC_WAREHOUSE"], read_only=True) as con:
        assert con.execute("SELECT count(*) FROM raw.run_records").fetchone() == (0,)


def test_hints_about_another_attempt_than_the_record_beside_them_are_refused(record_doc, isolated: Path):
    folder = isolated / "runs" / record_doc["attempt_id"]
    write_record(folder, record_doc)
    write_hints(folder, hints_doc(f"{CYCLE}.board.{AGENT}.wavgen.a2"))
    with pytest.raises(IngestError, match=r"attempt_id: .*a2' but it lies beside the run record of .*a1'"):
        ingest([isolated / "runs"])


def test_pairs_are_computed_once_and_a_missing_patch_is_skipped_not_refused(record_doc, isolated: Path):
    from argusic.core.evidence import open_store

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


# ---------------------------------------------------------------------------------------------------
# dbt: the marts on hand-made records; exact variance against fractions.Fraction
# ---------------------------------------------------------------------------------------------------

T0 = datetime(2026, 12, 2, 8, 0, 0)
ENV_1 = {"harness_edition": "2", "scaffold_sha256": "5" * 64, "image_role": "runner",
         "image_digest": "sha256:" + "6" * 64, "instructions_version": "2",
         "instructions_sha256": "7" * 64}  # fmt: skip
ENV_2 = {**ENV_1, "harness_edition": "1"}


def raw_record(aid: str, **kw) -> dict:
    cycle, purpose, agent, project, no = aid.split(".")[:5]
    n = len(aid) + int(no[1:])
    row = {
        "attempt_id": aid, "cycle_id": cycle, "purpose": purpose, "agent_id": agent, "project_id": project,
        "commit_sha": "1" * 40, "tier": "standard", "attempt_no": int(no[1:]), "methodology_version": "1.5",
        "started_at": T0 + timedelta(minutes=n), "ended_at": T0 + timedelta(minutes=n + 20),
        "budget_seconds": 5400, "end_reason": "completed", "is_demo": False,
        "log_sha256": "a" * 64, "log_uri": f"file:///ev/{aid}/log", "recording_sha256": "b" * 64,
        "recording_uri": f"file:///ev/{aid}/cast", "has_report": True,
        "install_ok": True, "ran_ok": True, "errors_encountered": 0, "errors_fixed": 0,
        "test_depth": "tier1_real", "record_json": json.dumps({"attempt_id": aid}), **ENV_1,
    }  # fmt: skip
    row.update(kw)
    return row


def board_id(no: int, cycle: str = CYCLE, project: str = "wavgen") -> str:
    return f"{cycle}.board.{AGENT}.{project}.a{no}"


def repair_id(no: int) -> str:
    return f"{CYCLE}.repair.{AGENT}.wavgen.a{no}"


# (record, its exact score by the rules of int_attempt_scores, or None: not counted)
STABILITY_RECORDS = [
    (raw_record(board_id(1)), Fraction(100)),  # 30 + 30 + 20 + 20
    (raw_record(board_id(2), test_depth="tier2_mock", errors_encountered=7, errors_fixed=5),
     Fraction(72) + Fraction(100, 7)),  # 30 + 30 + 12 + 20 * 5/7
    (raw_record(board_id(1, cycle="2027-01"), ran_ok=False, test_depth="tier3_none", errors_encountered=3,
                errors_fixed=1), Fraction(30) + Fraction(20, 3)),  # installed only, recovery 20/3
    (raw_record(board_id(3), end_reason="harness_error", invalid_reason="our tooling"), None),  # invalid
    (raw_record(board_id(1, cycle="2027-02"), **ENV_2), None),  # another environment, alone: no row
    (raw_record(f"{CYCLE}.verdict.{AGENT}.wavgen.a1", test_depth="tier3_none"), Fraction(80)),
]  # fmt: skip


def repair_raw(no: int, **kw) -> dict:
    block = {"repair": {"item_id": "item1", "item_revision": "9" * 64, "track": "basic"}}
    return raw_record(repair_id(no), record_json=json.dumps({"attempt_id": repair_id(no), **block}), **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):

    tmp = tmp_path_factory.mktemp("judging_dbt")
    db = tmp / "warehouse.duckdb"
    records = [r for r, _ in STABILITY_RECORDS] + [
        repair_raw(1),
        repair_raw(2),
        repair_raw(3),
        repair_raw(4, end_reason="harness_error"),
    ]
    a, b = nontest_changed_lines(PATCH_A), nontest_changed_lines(PATCH_B)
    with duckdb.connect(str(db)) as con:
        migrate_raw(con)
        con.executemany(
            f"INSERT INTO raw.run_records ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})",
            [[r.get(c) for c in COLUMNS] for r in records],
        )
        con.executemany(
            "INSERT INTO raw.change_similarity VALUES (?, ?, ?, ?, ?)",
            [
                (repair_id(1), repair_id(2), METHOD, similarity(a, a), True),
                (repair_id(1), repair_id(3), METHOD, similarity(a, b), False),
                (repair_id(2), repair_id(3), METHOD, similarity(a, b), False),
                (repair_id(1), repair_id(4), METHOD, 0.9, False),  # a4 was cut by our tooling
            ],
        )
        load_hints(
            con,
            [
                write_hints(tmp / "h1", hints_doc(board_id(1))),
                write_hints(tmp / "h2", hints_doc(repair_id(1))),
            ],
        )
    dbt_build_copy(db, tmp)
    return {"db": db, "target": tmp / "target"}


def q(built, sql: str) -> list[dict]:
    with duckdb.connect(str(built["db"]), read_only=True) as con:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def sample_variance(scores: list[Fraction]) -> Fraction:
    mean = sum(scores, Fraction(0)) / len(scores)
    return sum(((s - mean) ** 2 for s in scores), Fraction(0)) / (len(scores) - 1)


@pytest.mark.slow
def test_stability_variance_is_exact(built):
    scores = [s for _, s in STABILITY_RECORDS if s is not None]
    (row,) = q(built, "SELECT * FROM marts.stability")
    assert (row["agent_id"], row["project_id"], row["attempts"], row["cycles"]) == (AGENT, "wavgen", 4, 2)
    assert row["environment"] == f"2 | scaffold {'5' * 64} | sha256:{'6' * 64} | instructions {'7' * 64}"
    variance = sample_variance(scores)
    assert Fraction(int(row["variance_numerator"]), int(row["variance_denominator"])) == variance
    assert (row["variance_numerator"], row["variance_denominator"]) == (
        variance.numerator,
        variance.denominator,
    )
    mean = sum(scores, Fraction(0)) / len(scores)
    assert (row["mean_numerator"], row["mean_denominator"]) == (mean.numerator, mean.denominator)
    assert row["variance"] == pytest.approx(float(variance)) and row["is_exact"] is True
    scored = {r["attempt_id"]: r for r in q(built, "SELECT attempt_id, score_numerator, score_denominator, "
                                                   "is_valid FROM marts.attempt_scores")}  # fmt: skip
    for record, score in STABILITY_RECORDS:  # the fixture's scores are the rules' scores
        if score is not None:
            s = scored[record["attempt_id"]]
            assert Fraction(int(s["score_numerator"]), int(s["score_denominator"])) == score


@pytest.mark.slow
def test_attempt_hints_sit_beside_the_outcome_never_a_score(built):
    rows = {r["attempt_id"]: r for r in q(built, "SELECT * FROM marts.attempt_hints")}
    assert set(rows) == {board_id(1), repair_id(1)}
    assert (rows[board_id(1)]["outcome"], rows[board_id(1)]["is_valid"]) == ("pass_full", True)
    assert rows[repair_id(1)]["outcome"] is None and rows[repair_id(1)]["end_reason"] == "completed"
    assert rows[board_id(1)]["needles_score"] == 0.5 and rows[board_id(1)]["rendering_page_count"] == 1
    columns = {c for r in rows.values() for c in r}
    assert not {c for c in columns if re.fullmatch(r"score(_numerator|_denominator)?|points", c)}


@pytest.mark.slow
def test_change_similarity_summarises_standing_pairs(built):
    (row,) = q(built, "SELECT * FROM marts.change_similarity")
    low = similarity(nontest_changed_lines(PATCH_A), nontest_changed_lines(PATCH_B))
    assert (row["item_id"], row["method"], row["attempts"], row["pairs"], row["identical_pairs"]) == (
        "item1",
        METHOD,
        3,
        3,
        1,
    )
    assert row["max_similarity"] == 1.0 and row["min_similarity"] == pytest.approx(low) and low < 1
    assert row["mean_similarity"] == pytest.approx((1 + 2 * low) / 3)


# ---------------------------------------------------------------------------------------------------
# The guard: hints and stability never feed a score, a verdict or the board
# ---------------------------------------------------------------------------------------------------

JUDGING_MODELS = {
    "stg_attempt_hints",
    "attempt_hints",
    "stability",
    "stg_change_similarity",
    "change_similarity",
    # Layer 2: model judges are advisory (never a score, a verdict, a rate or the board)
    "stg_judge_verdicts",
    "judge_panel",
    # Layer 3: the person's review queue and how their reviews diverge from the judges
    "int_judging_attempt_facts",
    "review_queue",
    "judging_review_divergence",
    # the paired patch review (issue #31): judges' medians on two patches, a person's bug re-checks
    "stg_paired_judgements",
    "stg_paired_bugs",
    "paired_review",
    # issue #31: seed 002's checks per condition, the person's final decision, and the conditions
    # compared (advice beside the rules, never a score)
    "stg_attempt_checks",
    "judging_results",
    "condition_comparison",
}
JUDGING_SOURCES = {"attempt_hints", "change_similarity", "judge_verdicts", "paired_judgements", "paired_bugs"}
# people's judging reviews (look, promote/reject, their criterion scores) are advice too
JUDGING_DECISIONS = {"judging_reviews", "paired_bug_checks"}
# What a score, verdict, rate or the board is made of: every mart and intermediate model but the
# judging marts themselves.
REF_RE = re.compile(r"""\bref\(\s*['"]([A-Za-z0-9_]+)['"]\s*\)""")
SOURCE_RE = re.compile(r"""\bsource\(\s*['"]raw['"]\s*,\s*['"]([A-Za-z0-9_]+)['"]\s*\)""")
DECISIONS_RE = re.compile(r"""\bsource\(\s*['"]decisions['"]\s*,\s*['"]([A-Za-z0-9_]+)['"]\s*\)""")


def _sql_graph() -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, Path]]:
    refs, sources, files = {}, {}, {}
    for path in sorted((DBT_PROJECT / "models").rglob("*.sql")):
        text = path.read_text()
        refs[path.stem], sources[path.stem], files[path.stem] = (
            set(REF_RE.findall(text)),
            set(SOURCE_RE.findall(text)) | {f"decisions.{t}" for t in DECISIONS_RE.findall(text)},
            path,
        )
    return refs, sources, files


def _upstream(model: str, refs: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), [model]
    while todo:
        for parent in refs.get(todo.pop(), ()):
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def test_no_score_verdict_or_board_model_reads_hints_or_stability():
    """From the SQL: every model other than the judging ones, and everything upstream of it, is free of
    the judging models and of raw.attempt_hints / raw.change_similarity."""
    refs, sources, files = _sql_graph()
    assert set(refs) >= JUDGING_MODELS, "a judging model was renamed: update this guard"
    protected = [m for m in refs if m not in JUDGING_MODELS]
    assert {"board", "attempt_scores", "int_attempt_scores", "pair_sets", "project_verdicts",
            "verdict_plan", "repair_rates"} <= set(protected)  # fmt: skip
    offenders = []
    for model in protected:
        for node in {model} | _upstream(model, refs):
            judging_inputs = JUDGING_SOURCES | {f"decisions.{t}" for t in JUDGING_DECISIONS}
            if node in JUDGING_MODELS or sources.get(node, set()) & judging_inputs:
                offenders.append(f"{files[model].relative_to(DBT_PROJECT)} reads {node}")
    assert offenders == [], offenders


def test_the_guard_sees_a_model_reading_the_judging_reviews():
    """A protected model reading decisions.judging_reviews would be an offender (the SQL graph)."""
    text = "select * from {{ source('decisions', 'judging_reviews') }}"
    assert DECISIONS_RE.findall(text) == ["judging_reviews"]
    assert SOURCE_RE.findall(text) == []


def test_the_guard_sees_a_reference_to_a_hints_model():
    refs = {"board": {"pair_sets"}, "pair_sets": {"int_attempt_scores"}, "int_attempt_scores": {"stability"}}
    assert "stability" in _upstream("board", refs)
    refs["int_attempt_scores"] = {"judge_panel"}
    assert "judge_panel" in _upstream("board", refs) and "judge_panel" in JUDGING_MODELS


@pytest.mark.slow
def test_no_score_verdict_or_board_node_depends_on_hints_in_the_manifest(built):
    """The same guard on dbt's own graph (the built manifest), sources and macros' refs included."""
    manifest = json.loads((built["target"] / "manifest.json").read_text())
    nodes = {**manifest["nodes"], **manifest["sources"]}
    judging = {
        uid for uid, node in nodes.items()
        if (node["resource_type"] == "model" and node["name"] in JUDGING_MODELS)
        or (node["resource_type"] == "source" and node["source_name"] == "raw"
            and node["name"] in JUDGING_SOURCES)
        or (node["resource_type"] == "source" and node["source_name"] == "decisions"
            and node["name"] in JUDGING_DECISIONS)
    }  # fmt: skip
    assert len(judging) == len(JUDGING_MODELS) + len(JUDGING_SOURCES) + len(JUDGING_DECISIONS)

    def upstream(uid: str) -> set[str]:
        seen, todo = set(), [uid]
        while todo:
            for parent in nodes.get(todo.pop(), {}).get("depends_on", {}).get("nodes", []):
                if parent not in seen:
                    seen.add(parent)
                    todo.append(parent)
        return seen

    protected = [
        uid for uid, node in manifest["nodes"].items()
        if node["resource_type"] == "model" and node["name"] not in JUDGING_MODELS
    ]  # fmt: skip
    assert any(uid.endswith(".board") for uid in protected)
    assert {uid: sorted(upstream(uid) & judging) for uid in protected if upstream(uid) & judging} == {}
