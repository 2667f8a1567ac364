"""The warehouse side of repair items (issue #13): ingest of items, validations and grades into
raw.repair_*, and the dbt marts repair_item_validation, repair_runs and repair_rates built from them.

The records here are written by hand in the shapes docs/repair.md gives (items, validations, grades);
the rates and half-widths expected are computed by hand from the verdicts listed beside each grade.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from argusic.repair.items import revision_of
from argusic.repair.labels import blind_attempt_id, label_for
from argusic.warehouse.load_repair import (
    MAX_REPAIR_RECORD_BYTES,
    RepairIngestError,
    ingest_repair,
    ingest_repair_task,
)
from argusic.warehouse.schema import COLUMNS, migrate_raw
from conftest import dbt_build_copy

PROJECT = "demo"
CYCLE = "2026-11"
AGENT = "readme-runner"
AGENT_LABEL = label_for(AGENT)  # what the marts show (repair/labels.toml; issue #31)
MODEL = "claude-sonnet-4-5"  # the model named in the attempts' records (never in a mart)
LABEL = "model-1a2b3c4d"
PREDICTIONS_SHA = "f" * 64
T0 = datetime(2026, 11, 20, 8, 0, 0)
SPEC1_GRADE = f"{LABEL}-{PREDICTIONS_SHA[:12]}.spec1"


# ---------------------------------------------------------------------------------------------------
# Records in the contract's shape
# ---------------------------------------------------------------------------------------------------


def item(item_id: str, ref: str, *, spec: bool = False, split: str | None = None, superseded: bool = False,
         built_at: str = "2026-11-01T10:00:00Z", statement: str = "It breaks.") -> dict:  # fmt: skip
    doc = {
        "schema": "argusic.repair_item/1",
        "item_id": item_id,
        "project_id": PROJECT,
        "repository": "file:///forge/demo.git",
        "base": "1" * 40,
        "source": {"kind": "merge", "ref": ref},
        "track": "spec" if spec else "basic",
        "problem_statement": statement,
        "interface_spec": "def parse(text: str) -> list[str]" if spec else None,
        "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n",
        "gold_patch": "diff --git a/demo/x.py b/demo/x.py\n",
        "test_files": ["tests/test_x.py"],
        "test_command": ["python3", "-m", "pytest", "-p", "no:cacheprovider"],
        "setup_command": None,
        "fail_to_pass": [f"tests.test_x::test_{item_id.replace('-', '_')}"],
        "pass_to_pass": ["tests.test_x::test_old"],
        "split": None
        if split is None
        else {
            "original": split,
            "topic": item_id.removeprefix(split + "-"),
            "match": "test_",
            "files": ["demo/x.py"],
        },
        "superseded_by_split": superseded,
        "states": {"base": {}, "with_tests": {}, "with_gold": {}},
        "built_at": built_at,
        "grader_image": {"reference": "argusic-grader:bookworm", "digest": "sha256:" + "9" * 64},
    }
    doc["revision"] = revision_of(doc)  # the item builder's own hash: ingest checks it
    return doc


def rehashed(doc: dict) -> dict:
    """An item changed after it was made, its revision recomputed: only the field under test is wrong."""
    return {**doc, "revision": revision_of(doc)}


def validation(it: dict, gold=("resolved",) * 3, empty=("unresolved",), partial=(), usable=None) -> dict:
    runs = [
        {"patch": patch, "run_no": no, "verdict": verdict, "failing_tests": []}
        for patch, verdicts in (("gold", gold), ("empty", empty), ("partial_gold", partial))
        for no, verdict in enumerate(verdicts, 1)
    ]
    ok = (
        len(gold) >= 3
        and set(gold) == {"resolved"}
        and set(empty) == {"unresolved"}
        and (it["split"] is None or (partial and set(partial) == {"resolved"}))
    )
    return {
        "schema": "argusic.repair_validation/1",
        "item_id": it["item_id"],
        "revision": it["revision"],
        "validated_at": "2026-11-02T10:00:00Z",
        "grader_image": {"reference": "argusic-grader:bookworm", "digest": "sha256:" + "9" * 64},
        "runs": runs,
        "usable": ok if usable is None else usable,
        "problems": [] if ok else ["gold patch not resolved three times"],
    }


def grade(grade_id: str, it: dict, verdict: str, *, attempt_id: str | None = None, empty: bool = False,
          changed: int = 12, lint: int = 0, suppressions: int = 0) -> dict:  # fmt: skip
    source = (
        {"kind": "attempt", "attempt_id": attempt_id}
        if attempt_id
        else {"kind": "predictions", "file_sha256": PREDICTIONS_SHA, "label": LABEL}
    )
    return {
        "schema": "argusic.repair_grade/1",
        "grade_id": grade_id,
        "item_id": it["item_id"],
        "revision": it["revision"],
        "source": source,
        "patch_sha256": hashlib.sha256(b"" if empty else grade_id.encode()).hexdigest(),
        "patch_bytes": 0 if empty else 400,
        "excluded_paths": [] if empty else ["tests/test_x.py"],
        "verdict": verdict,
        "failing_tests": [] if verdict.startswith("resolved") else ["tests.test_x::test_new"],
        "rerun_files": [{"file": "tests/test_x.py", "tries": 2, "passed": True}]
        if verdict == "resolved_after_rerun"
        else [],
        "results": {"tests.test_x::test_old": "passed"},
        "graded_at": "2026-11-21T10:00:00Z",
        "grader_image": {"reference": "argusic-grader:bookworm", "digest": "sha256:" + "9" * 64},
        "quality": {
            "empty_patch": empty,
            "changed_lines": 0 if empty else changed,
            "gold_changed_lines": 8,
            "lint_new_errors": None if empty else lint,
            "suppressions_added": None if empty else suppressions,
        },
        "detail": "",
    }


def write(folder: Path, name: str, doc: dict) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def write_item(root: Path, it: dict, val: dict | None = None) -> Path:
    path = write(root / "items" / PROJECT, f"{it['item_id']}.json", it)
    if val is not None:
        write(root / "items" / PROJECT, f"{it['item_id']}.validation.json", val)
    return path


def rows(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


# ---------------------------------------------------------------------------------------------------
# Ingest: round trip, idempotence, refusals
# ---------------------------------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> dict:
    solo = item("solo", "b" * 40)
    spec1 = item("spec1", "c" * 40, spec=True)
    write_item(tmp_path, solo, validation(solo))
    write_item(tmp_path, spec1, validation(spec1, gold=("resolved", "resolved")))
    g = grade("pred-solo", solo, "resolved", lint=2)
    write(tmp_path / "grades", "pred-solo.json", g)
    # a grade id as argusic.repair.grader.safe_id makes it: "<source id>.<item_id>"
    write(tmp_path / "grades", "pred-spec1.json", grade(SPEC1_GRADE, spec1, "unresolved", empty=True))
    # files of other kinds in the searched folders: a run record, another JSON (skipped, not refused)
    write(tmp_path / "grades", "run_record.json", {"attempt_id": "x"})
    write(tmp_path / "grades", "notes.json", {"hello": "world"})
    return {"root": tmp_path, "db": tmp_path / "w.duckdb", "solo": solo, "spec1": spec1, "grade": g}


def test_ingest_round_trip(small):
    result = ingest_repair(small["root"], small["db"])
    assert (result.items, result.validations, result.validation_runs, result.grades) == (2, 2, 7, 2)
    assert result.skipped == (str(small["root"] / "grades" / "notes.json"),)
    db = small["db"]
    assert rows(db, "select item_id, track, has_interface_spec, fail_to_pass, superseded_by_split, built_at "
                    "from raw.repair_items order by item_id") == [
        ("solo", "basic", False, ["tests.test_x::test_solo"], False, datetime(2026, 11, 1, 10)),
        ("spec1", "spec", True, ["tests.test_x::test_spec1"], False, datetime(2026, 11, 1, 10)),
    ]  # fmt: skip
    assert rows(db, "select patch, run_no, verdict, usable from raw.repair_validations "
                    "where item_id = 'spec1' order by all") == [
        ("empty", 1, "unresolved", False), ("gold", 1, "resolved", False), ("gold", 2, "resolved", False),
    ]  # fmt: skip
    assert rows(db, "select grade_id, source_kind, predictions_label, predictions_sha256, verdict, "
                    "empty_patch, changed_lines, lint_new_errors from raw.repair_grades order by 1") == [
        (SPEC1_GRADE, "predictions", LABEL, PREDICTIONS_SHA, "unresolved", True, 0, None),
        ("pred-solo", "predictions", LABEL, PREDICTIONS_SHA, "resolved", False, 12, 2),
    ]  # fmt: skip
    (doc,) = rows(db, "select grade_json from raw.repair_grades where grade_id = 'pred-solo'")[0]
    assert json.loads(doc) == small["grade"]


def test_ingest_is_idempotent_and_replaces_the_same_keys(small):
    root, db = small["root"], small["db"]
    ingest_repair(root, db)
    before = rows(db, "select * exclude (item_json) from raw.repair_items order by all")
    ingest_repair(root, db)
    assert rows(db, "select * exclude (item_json) from raw.repair_items order by all") == before
    assert rows(db, "select count(*) from raw.repair_validations") == [(7,)]
    # a regrade of the same grade_id replaces it; a revalidation replaces every run of the revision
    write(root / "grades", "pred-solo.json", grade("pred-solo", small["solo"], "patch_apply_failed"))
    write(root / "items" / PROJECT, "spec1.validation.json", validation(small["spec1"]))
    ingest_repair(root, db)
    assert rows(db, "select verdict from raw.repair_grades where grade_id = 'pred-solo'") == [
        ("patch_apply_failed",)
    ]
    assert rows(
        db, "select count(*), bool_and(usable) from raw.repair_validations where item_id = 'spec1'"
    ) == [(4, True)]
    assert rows(db, "select count(*) from raw.repair_grades") == [(2,)]
    assert ingest_repair_task([str(root)], str(db)) == {
        "items": 2, "validations": 2, "validation_runs": 8, "grades": 2, "skipped": 1,
    }  # fmt: skip


def test_migrate_raw_creates_the_repair_tables_empty(tmp_path: Path):
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        migrate_raw(con)
        for table in ("repair_items", "repair_validations", "repair_grades"):
            assert con.execute(f"select count(*) from raw.{table}").fetchone() == (0,)


def _refused(paths, db: Path, *needles: str) -> str:
    with pytest.raises(RepairIngestError) as err:
        ingest_repair(paths, db)
    message = str(err.value)
    for needle in needles:
        assert needle in message, message
    return message


def test_a_bad_record_refuses_the_whole_batch(small):
    root, db = small["root"], small["db"]
    bad = grade("pred-bad", small["solo"], "passed_somehow")
    path = write(root / "grades", "pred-bad.json", bad)
    _refused(root, db, str(path), "verdict", "passed_somehow")
    assert not db.exists() or rows(db, "select count(*) from raw.repair_items") == [(0,)]


@pytest.mark.parametrize(
    ("name", "content", "needles"),
    [
        ("nan.json", b'{"schema": "argusic.repair_grade/1", "patch_bytes": NaN}', ("not strict JSON", "NaN")),
        ("dup.json", b'{"schema": "argusic.repair_grade/1", "schema": "x"}', ("duplicate key", "schema")),
        ("latin.json", '{"schema": "caf\u00e9"}'.encode("latin-1"), ("not UTF-8",)),
        ("list.json", b"[1, 2]", ("a JSON object is expected",)),
        ("other.json", b'{"schema": "argusic.run_record/1"}', ("schema", "is not a repair record")),
    ],
)
def test_hostile_files_are_refused_naming_the_file(tmp_path: Path, name: str, content: bytes, needles):
    path = tmp_path / name
    path.write_bytes(content)
    _refused([path], tmp_path / "w.duckdb", str(path), *needles)


def test_oversized_and_linked_files_are_refused_unread(tmp_path: Path, small):
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(MAX_REPAIR_RECORD_BYTES + 1)
    _refused([big], small["db"], str(big), f"at most {MAX_REPAIR_RECORD_BYTES} bytes", "refused unread")
    link = tmp_path / "link.json"
    link.symlink_to(small["root"] / "grades" / "pred-solo.json")
    _refused([link], small["db"], str(link), "symbolic link")


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        (lambda g: g.update(grade_id="../../etc"), ("grade_id", "does not match")),
        (lambda g: g.update(item_id="solo x"), ("item_id", "not an id part")),
        (
            lambda g: g.update(source={"kind": "attempt", "attempt_id": "2026-11.repair.a"}),
            ("source.attempt_id",),
        ),
        (lambda g: g["source"].update(label="Claude Opus 9"), ("source.label",)),
        (lambda g: g.update(revision="abc"), ("revision",)),
        (lambda g: g.update(patch_bytes=0), ("quality.empty_patch", "patch_bytes is 0")),
        (lambda g: g.update(grade_id=".hidden"), ("grade_id",)),
        (lambda g: g["quality"].update(changed_lines=-3), ("quality.changed_lines",)),
        (lambda g: g.update(graded_at="2026-11-21 10:00"), ("graded_at", "no time zone")),
        (lambda g: g.update(verdict="resolved_after_rerun"), ("verdict", "no re-run file passed")),
        (lambda g: g.update(results={"t::a": "maybe"}), ("results", "maybe")),
        (lambda g: g.pop("quality"), ("quality", "missing")),
    ],
)
def test_grade_fields_are_checked(small, change, needles):
    g = grade("pred-x", small["solo"], "resolved")
    change(g)
    path = write(small["root"] / "grades", "pred-x.json", g)
    _refused(small["root"], small["db"], str(path), "invalid repair grade", *needles)


def test_item_fields_are_checked(tmp_path: Path):
    db = tmp_path / "w.duckdb"
    it = item("solo", "b" * 40)
    path = write(tmp_path, "other-name.json", it)
    _refused([path], db, str(path), "item_id", "does not agree with the file name")
    spec_without_spec = rehashed(dict(item("solo", "b" * 40), track="spec"))
    path = write(tmp_path / "a", "solo.json", spec_without_spec)
    _refused([path], db, str(path), "track", "interface_spec")
    split_badly = item("solo-x", "b" * 40, split="other")
    path = write(tmp_path / "b", "solo-x.json", split_badly)
    _refused([path], db, str(path), "id", "<original>-<topic>")
    no_f2p = rehashed(dict(item("solo", "b" * 40), fail_to_pass=[]))
    path = write(tmp_path / "c", "solo.json", no_f2p)
    _refused([path], db, str(path), "fail_to_pass", "empty")
    bad_base = rehashed(dict(item("solo", "b" * 40), base="HEAD"))
    path = write(tmp_path / "d", "solo.json", bad_base)
    _refused([path], db, str(path), "base")


def test_validation_and_grade_need_their_item_revision(tmp_path: Path):
    db = tmp_path / "w.duckdb"
    it = item("solo", "b" * 40)
    val = write(tmp_path, "solo.validation.json", validation(it))
    _refused([val], db, str(val), "solo", "is not loaded")
    g = write(tmp_path, "g.json", grade("g", it, "resolved"))
    _refused([g], db, str(g), "is not loaded")
    # the item first (or in the same batch) and they load
    write_item(tmp_path, it)
    assert ingest_repair([tmp_path / "items", val, g], db).grades == 1
    twice = dict(validation(it))
    twice["runs"] = twice["runs"] + [twice["runs"][0]]
    write(tmp_path, "solo.validation.json", twice)
    _refused([val], db, str(val), "runs[4].run_no", "appears twice")


def test_an_empty_folder_is_refused_not_a_silent_zero(tmp_path: Path):
    (tmp_path / "items" / "out").mkdir(parents=True)
    write(tmp_path / "items" / "out", "solo.json", item("solo", "b" * 40))  # agent output: never searched
    _refused([tmp_path / "items"], tmp_path / "w.duckdb", "no repair records found")


# ---------------------------------------------------------------------------------------------------
# dbt: the marts on hand-made records, rates and half-widths computed by hand
# ---------------------------------------------------------------------------------------------------


def attempt_id(item_id: str, no: int = 1) -> str:
    return f"{CYCLE}.repair.{AGENT}.{item_id}.a{no}"


def run_record(aid: str, purpose: str = "repair", end_reason: str = "completed", **kw) -> dict:
    n = len(aid)
    row = {
        "attempt_id": aid, "cycle_id": CYCLE, "purpose": purpose, "agent_id": AGENT, "project_id": PROJECT,
        "commit_sha": "1" * 40, "tier": "standard", "attempt_no": 1, "methodology_version": "1.5",
        "started_at": T0 + timedelta(minutes=n), "ended_at": T0 + timedelta(minutes=n + 20),
        "budget_seconds": 5400, "end_reason": end_reason, "is_demo": False,
        "log_sha256": "a" * 64, "log_uri": f"file:///ev/{aid}/log", "recording_sha256": "b" * 64,
        "recording_uri": f"file:///ev/{aid}/cast", "has_report": end_reason == "completed",
        "install_ok": True, "ran_ok": True, "errors_encountered": 0, "errors_fixed": 0,
        "test_depth": "tier1_real", "harness_name": AGENT, "harness_version": "2.2.0",
        "record_json": json.dumps({"attempt_id": aid, "agent": {"model": MODEL, "harness": AGENT}}),
    }  # fmt: skip
    row.update(kw)
    return row


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    """Items of three PRs and two more, validated or not; an agent's repair attempts in cycle
    2026-11 and a predictions file's grades; one board attempt beside them. Then `dbt build`."""
    tmp = tmp_path_factory.mktemp("repair_dbt")
    root, db = tmp / "records", tmp / "warehouse.duckdb"
    # PR P1 bundled: original "bund" (kept, superseded) split into two topics, both validated
    bund = item("bund", "a" * 40, superseded=True)
    parse = item("bund-parse", "a" * 40, split="bund")
    prnt = item("bund-print", "a" * 40, split="bund")
    solo = item("solo", "b" * 40)  # PR P2
    spec1 = item("spec1", "c" * 40, spec=True)  # PR P3, spec track
    bad = item("bad", "d" * 40)  # the gold patch resolved twice in three runs: not usable
    nova = item("nova", "e" * 40)  # never validated
    stale = item("solo", "b" * 40, statement="older words", built_at="2026-10-01T10:00:00Z")  # old revision
    write_item(root, bund, validation(bund))
    write_item(root, parse, validation(parse, partial=("resolved",)))
    write_item(root, prnt, validation(prnt, partial=("resolved",)))
    write_item(root, solo, validation(solo))
    write_item(root, spec1, validation(spec1))
    write_item(root, bad, validation(bad, gold=("resolved", "unresolved", "resolved")))
    write_item(root, nova)
    write(root / "old", "solo.json", stale)
    g = root / "grades"
    attempts = [  # (grade id, item, verdict, attempt no, empty?)
        ("a-parse", parse, "resolved", 1, False),  # counts: resolved
        ("a-print", prnt, "unresolved", 1, True),  # counts: unresolved, empty patch
        ("a-solo", solo, "resolved", 1, False),  # counts: resolved
        ("a-solo2", solo, "test_patch_conflict", 2, False),  # counts: in n, not resolved
        ("a-bund", bund, "resolved", 1, False),  # original superseded by its split: not counted
        ("a-bad", bad, "resolved", 1, False),  # item not usable: not counted
        ("a-nova", nova, "resolved", 1, False),  # item not validated: not counted
        ("a-spec", spec1, "resolved_after_rerun", 1, False),  # spec: apart
        ("a-spec2", spec1, "resolved", 2, False),  # spec: counts
        ("a-print2", prnt, "unresolved", 2, False),  # its attempt was cut by our tooling: not counted
        ("a-ghost", solo, "resolved", 3, False),  # no run record loaded: not counted
    ]
    for gid, it, verdict, no, empty in attempts:
        write(g, f"{gid}.json", grade(gid, it, verdict, attempt_id=attempt_id(it["item_id"], no), empty=empty,
                                      lint=1 if gid == "a-solo" else 0))  # fmt: skip
    write(g, "a-stale.json", grade("a-stale", stale, "resolved", attempt_id=attempt_id("solo", 4)))
    predictions = [  # a predictions file (label only, no model name)
        ("p-solo", solo, "resolved"),
        ("p-parse", parse, "unresolved"),
        ("p-print", prnt, "patch_apply_failed"),
        ("p-spec", spec1, "env_setup_failed"),
    ]
    for gid, it, verdict in predictions:
        write(g, f"{gid}.json", grade(gid, it, verdict))
    result = ingest_repair(root, db)
    assert (result.items, result.grades) == (8, 16)
    with duckdb.connect(str(db)) as con:
        records = [
            run_record(attempt_id("bund-parse")),
            run_record(attempt_id("bund-print")),
            run_record(attempt_id("solo")),
            run_record(attempt_id("solo", 2), attempt_no=2),
            run_record(attempt_id("bund")),
            run_record(attempt_id("bad")),
            run_record(attempt_id("nova")),
            run_record(attempt_id("spec1")),
            run_record(attempt_id("spec1", 2), attempt_no=2),
            run_record(attempt_id("bund-print", 2), attempt_no=2, end_reason="harness_error"),
            run_record(attempt_id("solo", 4), attempt_no=4),
            run_record(f"{CYCLE}.board.{AGENT}.{PROJECT}.a1", purpose="board"),
        ]
        con.executemany(
            f"INSERT INTO raw.run_records ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})",
            [[r.get(c) for c in COLUMNS] for r in records],
        )
        # two model judges read two repair attempts and the board attempt (Layer 2: judge_panel and
        # the review queue show them; issue #31: under the repair attempts' blinded ids)
        judged = (attempt_id("solo"), attempt_id("spec1"), f"{CYCLE}.board.{AGENT}.{PROJECT}.a1")
        con.executemany(
            "INSERT INTO raw.judge_verdicts VALUES (?, ?, ?, 'r1', ?, 'judge-harness', ?, ?, null, 'valid',"
            " null, ?, '{}', 'reads well', false, ?, ?)",
            [[aid, CYCLE, "install_and_run" if ".board." in aid else "repair", judge, f"{judge}-model",
              "e" * 64, json.dumps({"code_structure": cs, "logic_correctness": 2}),
              hashlib.sha256(f"{aid}{judge}".encode()).hexdigest(), T0]
             for aid in judged for judge, cs in (("j1", 2), ("j2", 1))],
        )  # fmt: skip
    dbt_build_copy(db, tmp)
    # the marts show an attempt's grade by its blinded id: <blinded attempt id>.<item_id> (issue #31)
    raw_of = {f"{blind_attempt_id(attempt_id(it['item_id'], no))}.{it['item_id']}": gid
              for gid, it, _, no, _ in [*attempts, ("a-stale", stale, "resolved", 4, False)]}  # fmt: skip
    raw_of.update({gid: gid for gid, _, _ in predictions})
    return {"db": db, "tmp": tmp, "target": tmp / "target", "raw_of": raw_of}


def q(built, sql: str) -> list[dict]:
    with duckdb.connect(str(built["db"]), read_only=True) as con:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


@pytest.mark.slow
def test_item_validation_says_which_items_are_usable_and_why_not(built):
    got = {r["item_id"]: r for r in q(built, "select * from marts.repair_item_validation")}
    assert set(got) == {"bund", "bund-parse", "bund-print", "solo", "spec1", "bad", "nova"}
    assert {i for i, r in got.items() if r["in_main_set"]} == {"bund-parse", "bund-print", "solo", "spec1"}
    assert got["bund"]["is_usable"] and not got["bund"]["in_main_set"]
    assert got["bad"]["why_not_usable"].startswith("gold patch resolved in 2 of 3 runs")
    assert got["nova"]["why_not_usable"] == "not validated (no validation of the current revision)"
    assert got["solo"]["revision"] == item("solo", "b" * 40)["revision"]  # the later built revision
    assert got["bund-parse"]["pr_key"] == got["bund"]["pr_key"] == f"{PROJECT}:{'a' * 40}"


@pytest.mark.slow
def test_runs_flag_empty_patches_and_say_why_a_grade_does_not_count(built):
    got = {built["raw_of"][r["grade_id"]]: r for r in q(built, "select * from marts.repair_runs")}
    assert len(got) == 16
    counted = {g for g, r in got.items() if r["counts_in_rates"]}
    assert counted == {"a-parse", "a-print", "a-solo", "a-solo2", "a-spec", "a-spec2",
                       "p-solo", "p-parse", "p-print", "p-spec"}  # fmt: skip
    empty = got["a-print"]
    assert empty["is_empty_patch"] and empty["changed_lines"] is None and empty["size_vs_gold"] is None
    assert got["a-solo"]["size_vs_gold"] == 12 / 8 and got["a-solo"]["lint_new_errors"] == 1
    assert got["a-solo"]["agent_label"] == AGENT_LABEL and got["a-solo"]["source_set"] == CYCLE
    assert got["a-solo"]["attempt_id"] == f"{CYCLE}.repair.{AGENT_LABEL}.solo.a1"
    assert got["p-solo"]["agent_label"] == LABEL and got["p-solo"]["source_set"] == PREDICTIONS_SHA
    assert got["p-solo"]["cycle_id"] is None
    assert got["a-bund"]["not_counted_reason"] == "original item superseded by its split items"
    assert got["a-bad"]["not_counted_reason"].startswith("item not usable: gold patch resolved in 2 of 3")
    assert got["a-print2"]["not_counted_reason"] == "attempt cut by our tooling (harness_error)"
    assert (
        got["a-ghost"]["not_counted_reason"] == "attempt record not loaded (a run record of purpose repair)"
    )
    assert got["a-stale"]["not_counted_reason"].endswith("not the item's current one")


@pytest.mark.slow
def test_rates_per_agent_track_and_set_by_hand(built):
    got = {
        (r["agent_label"], r["track"], r["source_set"]): r
        for r in q(built, "select * from marts.repair_rates")
    }
    assert set(got) == {(AGENT_LABEL, "basic", CYCLE), (AGENT_LABEL, "spec", CYCLE),
                        (LABEL, "basic", PREDICTIONS_SHA), (LABEL, "spec", PREDICTIONS_SHA)}  # fmt: skip
    # the agent, basic: resolved (parse, solo), unresolved (print, empty), test_patch_conflict (solo 2)
    basic = got[(AGENT_LABEL, "basic", CYCLE)]
    assert (basic["n"], basic["resolved"], basic["items"], basic["prs"]) == (4, 2, 3, 2)
    assert (basic["empty_patches"], basic["test_patch_conflict"], basic["graded"]) == (1, 1, 4)
    assert basic["rate"] == 0.5
    assert basic["half_width_95"] == pytest.approx(1.96 * math.sqrt(0.5 * 0.5 / 4))  # 0.49
    # spec: one resolved; the resolved_after_rerun is apart (neither in n nor in resolved)
    spec = got[(AGENT_LABEL, "spec", CYCLE)]
    assert (spec["n"], spec["resolved"], spec["resolved_after_rerun"], spec["graded"]) == (1, 1, 1, 2)
    assert (spec["rate"], spec["half_width_95"]) == (1.0, 0.0)
    # the predictions file, basic: 1 resolved of 3 (one patch did not apply)
    pred = got[(LABEL, "basic", PREDICTIONS_SHA)]
    assert (pred["n"], pred["resolved"], pred["patch_apply_failed"], pred["prs"]) == (3, 1, 1, 2)
    assert pred["rate"] == pytest.approx(1 / 3)
    assert pred["half_width_95"] == pytest.approx(1.96 * math.sqrt((1 / 3) * (2 / 3) / 3))  # 0.5334
    # its spec grade failed in our environment: no rate at all
    pred_spec = got[(LABEL, "spec", PREDICTIONS_SHA)]
    assert (pred_spec["n"], pred_spec["env_setup_failed"], pred_spec["rate"]) == (0, 1, None)


@pytest.mark.slow
def test_repair_attempts_leave_the_scored_marts_alone(built):
    assert q(built, "select purpose, count(*) as n from marts.attempt_scores group by purpose") == [
        {"purpose": "board", "n": 1}
    ]
    (edition,) = q(built, "select runs_recorded from marts.methodology_editions where version = '1.5'")
    assert edition["runs_recorded"] == 1
    assert [r["agent_id"] for r in q(built, "select agent_id from marts.board")] == [AGENT]
    assert q(built, "select count(*) as n from marts.project_verdicts") == [{"n": 1}]


@pytest.mark.slow
def test_expectations_apply_and_pass_on_the_repair_marts(built):
    from argusic.warehouse.expectations.validate import validate_warehouse

    report = validate_warehouse(built["db"])
    assert report.success, report.summary()
    for table in ("repair_item_validation", "repair_runs", "repair_rates"):
        assert report.tables[table].present and not report.tables[table].skipped, report.summary()


@pytest.mark.slow
def test_repair_marts_are_in_the_analyst_copy_as_parquet(built):
    from argusic.warehouse.analyst import descriptions_of, publish_analyst_copy

    manifest = json.loads((built["target"] / "manifest.json").read_text())
    copy = publish_analyst_copy(built["db"], built["tmp"] / "analyst", descriptions_of(manifest))
    parquet = Path(copy.folder) / "parquet"
    for table in ("repair_item_validation", "repair_runs", "repair_rates"):
        assert list((parquet / table).rglob("*.parquet")), table
    assert copy.tables and {t.name for t in copy.tables} >= {"marts.repair_runs", "marts.repair_rates"}
    files = f"read_parquet('{parquet}/repair_runs/**/*.parquet', hive_partitioning = true)"
    with duckdb.connect() as con:
        (n,) = con.execute(f"select count(*) from {files}").fetchone()
        # a grade without a cycle (4 predictions, 1 attempt whose record is not loaded) is partitioned
        # apart and reads back as a null cycle
        (no_cycle,) = con.execute(f"select count(*) from {files} where cycle_id is null").fetchone()
    assert (n, no_cycle) == (16, 5)
    # the raw repair tables (item patches, whole records) stay in the pipeline's warehouse
    folder = Path(copy.folder)
    assert not any("repair_items" in p.parts or "repair_grades" in p.parts for p in folder.rglob("*"))
    with duckdb.connect(str(folder / "argusic.duckdb"), read_only=True) as con:
        raw = {
            r[0]
            for r in con.execute(
                "select table_name from duckdb_tables() where schema_name = 'raw'"
            ).fetchall()
        }
    assert raw == {"run_records"}


def test_expectations_catch_a_rate_that_breaks_its_rules():
    """A repair_rates row whose n is not the sum of its verdicts, whose rate is not resolved / n and
    whose half-width is not the formula's fails the suite, naming each rule."""
    import pandas as pd
    from argusic.warehouse.expectations.validate import validate_frames

    good = {"agent_label": "a", "track": "basic", "source_kind": "attempt", "source_set": "c", "n": 4,
            "resolved": 2, "rate": 0.5, "half_width_95": 0.49, "items": 3, "prs": 2, "unresolved": 2,
            "patch_apply_failed": 0, "test_patch_conflict": 0, "no_report": 0, "resolved_after_rerun": 1,
            "env_setup_failed": 0, "graded": 5}  # fmt: skip
    bad = dict(good, source_set="d", n=5, rate=0.6, half_width_95=0.3, graded=5, track="both")
    report = validate_frames({"repair_rates": pd.DataFrame([good, bad])}, only=["repair_rates"])
    failed = {f.kwargs.get("column") for f in report.failures}
    assert not report.success
    assert {"check_n_is_its_verdicts", "check_rate_is_resolved_over_n", "check_half_width_formula",
            "check_apart_not_in_n", "track"} <= failed, report.summary()  # fmt: skip
    assert validate_frames({"repair_rates": pd.DataFrame([good])}, only=["repair_rates"]).success


def test_the_item_stores_kept_revisions_load_once_each(tmp_path: Path):
    """The item store keeps every revision as <project>/revisions/<item_id>/<revision>.json beside the
    current <project>/<item_id>.json (argusic.repair.items.store_item): the current one appears in
    both places and loads once; an older one loads as its own row (grades may name it)."""
    old = item("solo", "b" * 40, statement="older words", built_at="2026-10-01T10:00:00Z")
    new = item("solo", "b" * 40)
    folder = tmp_path / "items" / PROJECT
    write_item(tmp_path, new)
    for it in (old, new):
        write(folder / "revisions" / "solo", f"{it['revision']}.json", it)
    db = tmp_path / "w.duckdb"
    assert ingest_repair(tmp_path / "items", db).items == 2
    assert rows(db, "select revision from raw.repair_items order by built_at") == [
        (old["revision"],), (new["revision"],),
    ]  # fmt: skip
    # a kept revision under another revision's name, or another item's folder, is refused
    wrong = write(folder / "revisions" / "solo", f"{'0' * 64}.json", old)
    _refused([wrong], db, str(wrong), "item_id", "does not agree with the file name")
    wrong.unlink()
    # the same revision twice with different content is refused
    changed = dict(new, repository="file:///elsewhere.git")  # its revision no longer its content
    write(folder / "revisions" / "solo", f"{new['revision']}.json", changed)
    _refused([tmp_path / "items"], db, f"{new['revision']}.json", "revision does not match")


def test_the_dags_entry_loads_into_the_configured_warehouse(small, monkeypatch: pytest.MonkeyPatch):
    from argusic.warehouse.load_runs import ingest_repair_records

    monkeypatch.setenv("ARGUSIC_WAREHOUSE", str(small["db"]))
    assert ingest_repair_records([str(small["root"] / "items"), str(small["root"] / "grades")]) == {
        "items": 2, "validations": 2, "validation_runs": 7, "grades": 2, "skipped": 1,
    }  # fmt: skip
    assert rows(small["db"], "select count(*) from raw.repair_grades") == [(2,)]


# ---------------------------------------------------------------------------------------------------
# Blinding (issue #31): labels from repair/labels.toml in everything people reviewing patches read
# ---------------------------------------------------------------------------------------------------

# What people reviewing patches read of the warehouse: the repair marts (also in the analyst copy),
# and the judging marts the review queue, its forms and the run page are made of (issue #31), where
# only the rows of repair attempts are a patch's (the install-and-run board names its agents).
REVIEWED_MARTS = ("repair_runs", "repair_rates", "repair_item_runs", "repair_item_validation")
JUDGING_MARTS = {  # table: the rows of repair attempts (a condition on its columns)
    "review_queue": "purpose = 'repair'",
    "judge_panel": "task_id = 'repair'",
    "judging_review_divergence": "purpose = 'repair'",
    "judging_results": "purpose = 'repair'",
    "condition_comparison": "task_id = 'repair'",
    "paired_review": "true",  # every paired review is of repair patches
}


def _names(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Every agent id, model name and harness name the warehouse knows: the agents registry, the run
    records (their agent ids, harness names and the model their record names) and this module's."""
    names = {AGENT, MODEL}
    for sql in (
        "select agent_id, model, model_version, harness from reference.agents",
        "select agent_id, harness_name, record_json ->> '$.agent.model' from raw.run_records",
    ):
        names |= {v for row in con.execute(sql).fetchall() for v in row if v}
    return names


def _hits(con: duckdb.DuckDBPyConnection, names: set[str], tables=REVIEWED_MARTS) -> list[str]:
    """'<table>.<column>: <name> in <value>' for every text value of the tables naming one of them."""
    hits = []
    for table in tables:
        columns = [
            c for c, t in con.execute(
                "select column_name, data_type from information_schema.columns "
                "where table_schema = 'marts' and table_name = ?", [table]
            ).fetchall() if t in ("VARCHAR", "JSON") or t.startswith(("VARCHAR", "STRUCT", "LIST"))
        ]  # fmt: skip
        assert columns, table
        where = JUDGING_MARTS.get(table, "true")
        for column in columns:
            sql = f'select distinct "{column}"::varchar from marts.{table} where {where}'
            for (value,) in con.execute(sql).fetchall():
                hits += [
                    f"{table}.{column}: {n} in {value!r}"
                    for n in names
                    if value and n.lower() in value.lower()
                ]
    return hits


@pytest.mark.slow
def test_no_agent_model_or_harness_name_in_what_reviewers_read(built, monkeypatch: pytest.MonkeyPatch):
    """Grades of a named agent whose records name its model and harness: every text column of every
    repair mart, and the board's repair table, hold none of those names -- only labels."""
    from argusic.cli import board

    with duckdb.connect(str(built["db"]), read_only=True) as con:
        names = _names(con)
        assert {AGENT, MODEL} <= names and len(names) > 3
        # the names are there to find: in the raw layer (and staging) only
        assert con.execute("select count(*) from raw.run_records where agent_id = ?", [AGENT]).fetchone()[0]
        assert _hits(con, names) == []
        labels = {r[0] for r in con.execute("select distinct agent_label from marts.repair_runs").fetchall()}
    assert labels == {AGENT_LABEL, LABEL, None}  # None: the attempt whose record is not loaded
    # the board's repair table (argusic board / make demo), read from the same marts
    monkeypatch.setattr(board, "_analyst", lambda: duckdb.connect(str(built["db"]), read_only=True))
    with board.console.capture() as captured:
        board.print_repair_rates(CYCLE)
    page = captured.get()
    assert AGENT_LABEL in page and "Repair track" in page
    assert [n for n in names if n.lower() in page.lower()] == []


def _dbt(project: Path, db: Path, tmp: Path, *args: str) -> None:
    from argusic.warehouse.dbt_build import _release_dbt_duckdb
    from dbt.cli.main import dbtRunner

    monkey = pytest.MonkeyPatch()
    monkey.setenv("ARGUSIC_WAREHOUSE", str(db))
    try:
        res = dbtRunner().invoke(
            ["--quiet", "build", "--project-dir", str(project), "--profiles-dir", str(project),
             "--target-path", str(tmp / "target"), "--log-path", str(tmp / "logs"), *args]
        )  # fmt: skip
    finally:
        _release_dbt_duckdb()
        monkey.undo()
    failed = [
        (r.node.unique_id, r.message) for r in res.result.results if str(r.status) not in ("success", "pass")
    ]
    assert res.success and not failed, failed


@pytest.mark.slow
def test_changing_a_label_in_labels_toml_changes_it_everywhere(built, tmp_path: Path):
    """One mapping: label the agent in a labels.toml, regenerate the seed from it (as
    `python -m argusic.repair.labels` does), rebuild what reads it: every mart shows the new label,
    in agent_label and inside the blinded ids, and Python's label_for says the same."""
    import shutil

    from argusic.repair.labels import load_labels, write_seed

    toml = tmp_path / "labels.toml"
    toml.write_text(f'[labels]\n"{AGENT}" = "lab-zz"\n"{MODEL}" = "lab-yy"\n')
    labels = load_labels(toml)
    project, db = tmp_path / "dbt_project", tmp_path / "warehouse.duckdb"
    shutil.copytree(built["tmp"] / "dbt_project", project)
    shutil.copyfile(built["db"], db)
    write_seed(toml, project / "seeds" / "repair_labels.csv")
    _dbt(project, db, tmp_path, "--select", "repair_labels+")
    assert label_for(AGENT, labels) == "lab-zz"
    with duckdb.connect(str(db), read_only=True) as con:
        runs = con.execute(
            "select agent_label, attempt_id, grade_id from marts.repair_runs where source_kind = 'attempt' "
            "and agent_label is not null"
        ).fetchall()
        assert runs and {r[0] for r in runs} == {"lab-zz"}
        assert all(".repair.lab-zz." in aid and gid.startswith(aid + ".") for _, aid, gid in runs)
        assert {aid for _, aid, _ in runs} <= {
            blind_attempt_id(attempt_id(i, n), labels) for i in ("bund-parse", "bund-print", "solo", "bund",
                                                                  "bad", "nova", "spec1") for n in (1, 2, 4)
        }  # fmt: skip
        for table in ("repair_rates", "repair_item_runs"):
            shown = {r[0] for r in con.execute(f"select distinct agent_label from marts.{table} "
                                               "where source_kind = 'attempt'").fetchall()}  # fmt: skip
            assert shown == {"lab-zz"}, table
        assert _hits(con, _names(con) | {AGENT_LABEL}) == []  # nor the old label anywhere


def test_the_review_form_of_a_repair_attempt_names_no_agent_or_model():
    """The judging review form (Airflow HITL and `argusic judging review`) shows what the queue gives
    it: for a repair attempt, marts.review_queue's blinded facts (the agent's label, the blinded id,
    no served log or recording, no final state); the form adds nothing that names the agent, even
    when a fact it does not show would. An install-and-run attempt's form is as before."""
    from argusic.review.judging import QUEUE_COLUMNS, Item, body_of, bulk_body, subject_of

    aid = blind_attempt_id(attempt_id("solo"))
    facts = dict.fromkeys(QUEUE_COLUMNS) | {
        "attempt_id": aid, "cycle_id": CYCLE, "purpose": "repair", "agent_id": AGENT_LABEL,
        "project_id": PROJECT, "attempt_no": 1, "task_id": "repair", "reasons": "sampled",
        "repair_verdict": "resolved", "end_reason": "completed", "final_state": f"{MODEL} wrote the patch",
    }  # fmt: skip
    repair = Item(facts)
    text = "\n".join((body_of(repair), subject_of(repair), bulk_body([repair]), repair.attempt_label))
    assert "resolved" in text and AGENT_LABEL in text and aid in text
    assert AGENT not in text and MODEL not in text
    raw = f"{CYCLE}.board.{AGENT}.{PROJECT}.a1"
    board = Item(facts | {"purpose": "board", "agent_id": AGENT, "attempt_id": raw,
                          "served_log_uri": f"file:///served/{raw}/log.txt"})  # fmt: skip
    assert AGENT in body_of(board) and "log" in body_of(board)


@pytest.mark.slow
def test_a_patch_reviewer_sees_labels_only_from_queue_to_decision(built, tmp_path: Path):
    """Issue #31, checked as the issue will be: on the repair warehouse, a person takes the review
    queue's repair attempts (argusic.review.judging.awaiting, as the Airflow form and the CLI do),
    reads their forms and records a decision under the shown id; the marts are rebuilt. Then every
    text value of every relation a patch reviewer sees (the repair marts; review_queue, judge_panel,
    judging_review_divergence, judging_results, condition_comparison and paired_review for repair
    attempts) and every form holds no agent id, model name or harness name of the raw layer, while
    the raw layer holds them and the person's decision is recorded under the raw id and counts."""
    import shutil

    from argusic.review import judging

    db = tmp_path / "warehouse.duckdb"
    shutil.copyfile(built["db"], db)
    items = [i for i in judging.awaiting(CYCLE, db) if i.facts["purpose"] == "repair"]
    assert len(items) == 11  # every repair attempt with a record is reachable
    solo = blind_attempt_id(attempt_id("solo"))
    by_id = {i.attempt_id: i for i in items}
    assert solo in by_id and by_id[solo].facts["judges"] == 2  # the judges found under the shown id
    assert {i.facts["agent_id"] for i in items} == {AGENT_LABEL}
    forms = "\n".join(
        [judging.body_of(i) for i in items]
        + [judging.subject_of(i) for i in items]
        + [judging.bulk_body(items)]
    )
    assert judging.decide(
        solo, 2, "Reject", "ana", datetime(2026, 11, 30, 9), "the tests pass but it is wrong", db_path=db
    )
    with duckdb.connect(str(db), read_only=True) as con:
        recorded = con.execute("select attempt_id, decision from decisions.judging_reviews").fetchall()
    assert recorded == [(attempt_id("solo"), "reject")]  # under the raw id: the raw layer's
    _dbt(built["tmp"] / "dbt_project", db, tmp_path,
         "--select", "review_queue+", "judging_results+", "judging_review_divergence")  # fmt: skip
    with duckdb.connect(str(db), read_only=True) as con:
        names = _names(con)
        assert {AGENT, MODEL} <= names
        assert con.execute("select count(*) from raw.run_records where agent_id = ?", [AGENT]).fetchone()[0]
        tables = (*REVIEWED_MARTS, *JUDGING_MARTS)
        assert _hits(con, names, tables) == []
        result = con.execute(
            "select agent_id, final_decision, decided_by_kind from marts.judging_results "
            "where attempt_id = ?",
            [solo],
        ).fetchone()
        assert result == (AGENT_LABEL, "reject", "person")
        diverge = con.execute("select attempt_id, agent_id from marts.judging_review_divergence").fetchall()
        assert diverge == [(solo, AGENT_LABEL)]
        panel = {r[0] for r in con.execute("select attempt_id from marts.judge_panel").fetchall()}
        assert panel == {solo, blind_attempt_id(attempt_id("spec1")), f"{CYCLE}.board.{AGENT}.{PROJECT}.a1"}
    # the forms as a person reads them after the decision (one reviewed, the rest still awaiting)
    after = [i for i in judging.awaiting(CYCLE, db) if i.facts["purpose"] == "repair"]
    assert len(after) == 10 and solo not in {i.attempt_id for i in after}
    forms += "\n".join(judging.body_of(i) for i in after)
    assert AGENT_LABEL in forms
    assert [n for n in names if n.lower() in forms.lower()] == []
