"""The dbt project end to end: hand-made run records -> `dbt build` -> the marts' numbers.

One `dbt build` per module (seeds, models, data tests and every dbt unit test) into a temporary
DuckDB file, on a temporary copy of dbt_project/, with three people's review decisions in the
warehouse's decisions schema (as argusic.warehouse.decisions records them).
Nothing here computes a score: the expected values are written by hand from METHODOLOGY.md.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import datetime, timedelta
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest
from argusic.warehouse.schema import COLUMNS, RAW_DDL, migrate_raw

pytestmark = pytest.mark.slow

DBT_PROJECT = Path(__file__).resolve().parents[2] / "dbt_project"
CYCLE = "2026-10"
STD = "readme-runner"
NOREC = "readme-runner-norecover"
RIVAL = "rival-agent"  # not in the registry: the marts must not depend on it being there
T0 = datetime(2026, 10, 10, 8, 0, 0)

_counter = iter(range(10_000))
SPONSOR = ("Example Cloud", "compute")  # the no-recovery agent is sponsored in this test's registry
ENVIRONMENT = {
    "harness_edition": "1",
    "scaffold_sha256": "e" * 64,
    "image_role": "runner",
    "image_reference": "argusic-runner:bookworm",
    "image_digest": "sha256:" + "d" * 64,
    "instructions_version": "1",
    "instructions_sha256": "f" * 64,
    "limit_cpus": 2.0,
    "limit_memory_bytes": 4 * 2**30,
    "limit_pids": 512,
    "limit_disk_bytes": 6 * 2**30,
    "network_mode": "none",
    "limit_budget_seconds": 5400,
    "display": "1280x800x24",
}


def rec(attempt_id: str, agent: str, project: str, attempt_no: int, **kw) -> dict:
    """A valid, completed run record (installed, ran, tier1_real, no errors) unless overridden."""
    n = next(_counter)
    started = kw.pop("started_at", T0 + timedelta(minutes=n))
    row = {
        "attempt_id": attempt_id,
        "cycle_id": CYCLE,
        "purpose": "board",
        "agent_id": agent,
        "project_id": project,
        "commit_sha": "c0ffee",
        "tier": "standard",
        "attempt_no": attempt_no,
        "methodology_version": "1.5",
        "started_at": started,
        "ended_at": started + timedelta(minutes=30),
        "budget_seconds": 5400,
        "end_reason": "completed",
        "invalid_reason": None,
        "executor": "local",
        "is_demo": False,
        "rerun_of": None,
        "log_sha256": "a" * 64,
        "log_uri": f"file:///ev/{attempt_id}/log",
        "log_bytes": 10,
        "recording_sha256": "b" * 64,
        "recording_uri": f"file:///ev/{attempt_id}/cast",
        "recording_bytes": 10,
        "report_sha256": "c" * 64,
        "report_uri": f"file:///ev/{attempt_id}/report",
        "report_bytes": 10,
        "has_report": True,
        "install_ok": True,
        "ran_ok": True,
        "errors_encountered": 0,
        "errors_fixed": 0,
        "test_depth": "tier1_real",
        "verified_how": "decoded output",
        "final_state": "It runs.",
        "key_kind": "none",
        "harness_name": "readme-runner",
        "harness_version": "1",
    }
    if kw.get("cycle_id", CYCLE) == CYCLE:  # one environment in the board cycle; the others predate them
        row.update(ENVIRONMENT)
    row.update(kw)
    if row["end_reason"] == "timeout" and "has_report" not in kw:
        row.update(
            has_report=False,
            install_ok=None,
            ran_ok=None,
            errors_encountered=None,
            errors_fixed=None,
            test_depth=None,
        )
    row["record_json"] = json.dumps({"attempt_id": attempt_id})
    return row


def observed(row: dict, observation: dict, seal: dict) -> dict:
    """The record with what the harness observed and its seal (edition 1.7), as its JSON carries them."""
    row["record_json"] = json.dumps({"attempt_id": row["attempt_id"], "observed": observation, "seal": seal})
    return row


def s_502_7(aid, agent, project, no, **kw):  # 60 + 20*41/70 = 502/7, tier3_none -> fail
    return rec(aid, agent, project, no, test_depth="tier3_none", errors_encountered=70, errors_fixed=41, **kw)


def s_500_7(aid, agent, project, no, **kw):  # 60 + 20*40/70 = 500/7, fail
    return rec(aid, agent, project, no, test_depth="tier3_none", errors_encountered=70, errors_fixed=40, **kw)


def s_660_7(aid, agent, project, no, **kw):  # 80 + 20*5/7 = 660/7, pass_full
    return rec(aid, agent, project, no, errors_encountered=7, errors_fixed=5, **kw)


def s_652_7(aid, agent, project, no, **kw):  # 80 + 20*23/35 = 652/7, pass_full
    return rec(aid, agent, project, no, errors_encountered=35, errors_fixed=23, **kw)


def s_fail(aid, agent, project, no, score=80, **kw):
    if score == 80:  # installed and ran, not verified
        return rec(aid, agent, project, no, test_depth="tier3_none", **kw)
    if score == 20:  # nothing installed, no error met: recovery only
        return rec(aid, agent, project, no, install_ok=False, ran_ok=False, test_depth="tier3_none", **kw)
    if score == 0:  # nothing installed, one error not fixed
        return rec(
            aid,
            agent,
            project,
            no,
            install_ok=False,
            ran_ok=False,
            test_depth="tier3_none",
            errors_encountered=1,
            errors_fixed=0,
            **kw,
        )
    raise ValueError(score)


def records() -> list[dict]:
    r: list[dict] = []
    # --- board, standard agent -------------------------------------------------------------------
    # exactly 30% spread: 502/7, 660/7, 100 -> stable, counted (middle 660/7)
    r += [
        s_502_7("std-exact-1", STD, "p-exact", 1),
        s_660_7("std-exact-2", STD, "p-exact", 2),
        rec("std-exact-3", STD, "p-exact", 3),
    ]
    # three full passes on p-inf (the other agent's set there is infinitely unstable)
    r += [rec(f"std-inf-{i}", STD, "p-inf", i) for i in (1, 2, 3)]
    # p-zero: three timeouts (0, 0, 0: stable) ... and every agent fails -> under review, no decision
    r += [rec(f"std-zero-{i}", STD, "p-zero", i, end_reason="timeout") for i in (1, 2, 3)]
    # p-env: every agent fails -> under review, decided environment_at_fault -> excluded
    r += [s_fail(f"std-env-{i}", STD, "p-env", i) for i in (1, 2, 3)]
    # p-proj: every agent fails -> under review, decided project_at_fault -> counted again (80)
    r += [s_fail(f"std-proj-{i}", STD, "p-proj", i) for i in (1, 2, 3)]
    # p-incomplete: attempt 2 invalid (no log) and rerun; attempt 3 cut by our tooling, no rerun yet
    r += [
        rec("std-inc-1", STD, "p-incomplete", 1),
        rec("std-inc-2", STD, "p-incomplete", 2, log_sha256=None, log_uri=None),
        rec("std-inc-2r", STD, "p-incomplete", 2, rerun_of="std-inc-2"),
        rec("std-inc-3", STD, "p-incomplete", 3, end_reason="harness_error", has_report=False),
    ]
    # p-rerun: attempt 2 cancelled, rerun valid -> complete; three mock passes of 92
    r += [
        rec("std-rerun-1", STD, "p-rerun", 1, test_depth="tier2_mock"),
        rec("std-rerun-2", STD, "p-rerun", 2, end_reason="cancelled", has_report=False),
        rec("std-rerun-2r", STD, "p-rerun", 2, test_depth="tier2_mock", rerun_of="std-rerun-2"),
        rec("std-rerun-3", STD, "p-rerun", 3, test_depth="tier2_mock"),
    ]
    # --- board, the no-recovery agent: nothing left for its board score ---------------------------
    r += [
        s_500_7("nr-above-1", NOREC, "p-above", 1),
        s_660_7("nr-above-2", NOREC, "p-above", 2),
        rec("nr-above-3", NOREC, "p-above", 3),
    ]  # 30.30% -> unstable
    r += [
        s_fail("nr-inf-1", NOREC, "p-inf", 1, score=0),
        rec("nr-inf-2", NOREC, "p-inf", 2, end_reason="timeout"),
        s_fail("nr-inf-3", NOREC, "p-inf", 3, score=20),
    ]  # 0, 0, 20 -> +inf
    r += [s_fail(f"nr-zero-{i}", NOREC, "p-zero", i, score=20) for i in (1, 2, 3)]
    r += [s_fail(f"nr-env-{i}", NOREC, "p-env", i) for i in (1, 2, 3)]
    # --- board, a rival whose exact median ties the standard agent's (652/7) -----------------------
    r += [s_652_7(f"rival-rerun-{i}", RIVAL, "p-rerun", i) for i in (1, 2, 3)]
    # our tooling failed (not counted anywhere)
    r += [
        rec(
            "rival-daemon",
            RIVAL,
            "p-rerun",
            1,
            invalid_reason="executor error: the Docker daemon did not answer",
        )
    ]

    # --- verdict purpose ---------------------------------------------------------------------------
    v = {"purpose": "verdict", "cycle_id": "verdicts"}
    r += [rec("v-mock-1", STD, "v-mock", 1, test_depth="tier2_mock", **v)]
    r += [s_fail("v-cnv-1", STD, "v-cnv", 1, **v), rec("v-cnv-2", STD, "v-cnv", 2, end_reason="timeout", **v)]
    r += [
        s_fail("v-nyv-1", STD, "v-nyv", 1, **v),
        rec("v-nyv-2", STD, "v-nyv", 2, end_reason="harness_error", has_report=False, **v),
        rec("v-nyv-3", STD, "v-nyv", 2, invalid_reason="key could not be created: gateway down", **v),
        s_fail("v-nyv-4", NOREC, "v-nyv", 1, **v),
    ]
    # a report that claims more errors fixed than encountered: rejected, a measured failure (#25)
    r += [
        rec(
            "v-claim-1",
            RIVAL,
            "v-claim",
            1,
            errors_encountered=1,
            errors_fixed=2,
            methodology_version="1.6",
            **v,
        )
    ]
    r += [
        s_fail("v-strong-1", STD, "v-strong", 1, started_at=datetime(2026, 10, 1, 8), **v),
        s_fail("v-strong-2", STD, "v-strong", 2, started_at=datetime(2026, 10, 1, 9), **v),
        rec("v-strong-3", NOREC, "v-strong", 1, started_at=datetime(2026, 10, 2, 9), **v),
        rec("v-strong-4", RIVAL, "v-strong", 1, started_at=datetime(2026, 10, 2, 8), **v),
    ]
    # the same project at another commit is judged separately
    r += [rec("v-mock-old", STD, "v-mock", 1, commit_sha="0ld", test_depth="tier3_none", **v)]
    # --- editions: 1.2 measured the day before it was written; 1.3 on its written day ------------
    r += [
        s_fail("ed-12", STD, "v-ed", 1, methodology_version="1.2", started_at=datetime(2026, 9, 4, 21), **v)
    ]
    r += [
        s_fail("ed-13", STD, "v-ed", 2, methodology_version="1.3", started_at=datetime(2026, 9, 5, 12), **v)
    ]
    # --- edition 1.7 (issue #25): points from what the harness observed, read from the record's
    # `observed` and `seal` parts. An honest full pass; a forged pass (the report claims a verified
    # run with no errors, the harness saw the install succeed, the run fail, 2 failed commands and 1
    # fixed, no verifying command, and a report replaced after it was sealed); no observation at all
    e = {**v, "methodology_version": "1.7", "started_at": datetime(2026, 12, 2, 12)}
    seen = {"source": "harness", "install_ok": True, "ran_ok": True, "errors_encountered": 0,
            "errors_fixed": 0, "verified": True, "verify_command": "python decode.py out.wav"}  # fmt: skip
    r += [
        observed(rec("v-evid-1", STD, "v-evid", 1, **e), seen, {"status": "intact", "altered": []}),
        observed(
            rec("v-evid-2", RIVAL, "v-evid", 1, **e),
            seen | {"ran_ok": False, "errors_encountered": 2, "errors_fixed": 1, "verified": False},
            {"status": "altered", "altered": ["report.json"], "report_replaced": True},
        ),
        rec("v-evid-3", NOREC, "v-evid", 1, **e),
    ]
    # --- a dispute (cycle CORR): attempt 2 timed out (0); the maintainer's dispute was ruled our
    # environment's fault and the attempt rerun (2c, rerun_of 2: a pass, 100) -> the set counts
    # 100, 100, 100 with the rerun in the original's place; the original stays, marked corrected
    c = {"cycle_id": CORR}
    r += [
        rec("corr-1", STD, "p-corr", 1, **c),
        rec("corr-2", STD, "p-corr", 2, end_reason="timeout", **c),
        rec("corr-2c", STD, "p-corr", 2, rerun_of="corr-2", **c),
        rec("corr-3", STD, "p-corr", 3, **c),
    ]
    # --- a repair attempt (issue #13) in the board cycle, on a board project, a full pass by its
    # report, started before every other record, under edition 1.0: scored, it would change
    # p-exact's set, the board, the verdicts and both editions marts; graded apart (marts.repair_*),
    # it changes none of them: every number asserted below is the same without it
    r += [
        rec(
            "repair-exact-1", STD, "p-exact", 1, purpose="repair", methodology_version="1.0",
            started_at=T0 - timedelta(days=30),
        )
    ]  # fmt: skip
    return r + veto_records()


# Issue #25's veto routes, replayed as three cycles of edition 1.7 records that differ only in how the
# standard agent's attempts at p-b ended: honestly failed (80: installed and ran, not verified), cut
# inside the container every time (the project killed the harness: "self-invalidation"), or cut and
# failed in turn (randomising between two ways of failing to have the set dropped as unstable).
VETO_CYCLES = {"honest": "2026-v-honest", "cut": "2026-v-cut", "random": "2026-v-random"}


def _seen(row: dict, fault: str | None = None) -> dict:
    """A 1.7 record whose observation is what its report says (the reference harness), or a run the
    container cut (no report, no observation, its fault)."""
    if fault is not None:
        row["record_json"] = json.dumps({"attempt_id": row["attempt_id"], "container_fault": fault})
        return row
    seen = {"source": "harness", "install_ok": row["install_ok"], "ran_ok": row["ran_ok"],
            "errors_encountered": row["errors_encountered"], "errors_fixed": row["errors_fixed"],
            "verified": row["test_depth"] in ("tier1_real", "tier2_mock")}  # fmt: skip
    return observed(row, seen, {"status": "intact", "altered": [], "report_replaced": False})


def veto_records() -> list[dict]:
    r: list[dict] = []
    cut = dict(end_reason="harness_error", has_report=False, install_ok=None, ran_ok=None,
               errors_encountered=None, errors_fixed=None, test_depth=None)  # fmt: skip
    for how, cycle in VETO_CYCLES.items():
        v = dict(cycle_id=cycle, methodology_version="1.7")
        for agent in (STD, RIVAL):  # both pass p-a; the rival passes p-b
            r += [_seen(rec(f"{cycle}-{agent}-a{i}", agent, "p-a", i, **v)) for i in (1, 2, 3)]
        r += [_seen(rec(f"{cycle}-{RIVAL}-b{i}", RIVAL, "p-b", i, **v)) for i in (1, 2, 3)]
        for i in (1, 2, 3):
            aid = f"{cycle}-{STD}-b{i}"
            if how == "cut" or (how == "random" and i != 2):
                r.append(_seen(rec(aid, STD, "p-b", i, **v, **cut), fault="harness exited with code 137"))
            else:
                r.append(_seen(s_fail(aid, STD, "p-b", i, **v)))
    return r


CORR = "2026-10-corr"
DISPUTE = ("dispute-1", "corr-2", "the runner lost its network mid-install", "m@example.org")
RULINGS = [  # the ruling, then the row naming its rerun once it exists
    ("dispute-1", "environment_at_fault", None, "ops-ana", datetime(2026, 10, 20, 9), "mirror down"),
    ("dispute-1", "environment_at_fault", "corr-2c", "ops-ana", datetime(2026, 10, 20, 11), "mirror down"),
]

PUBLICATIONS = [  # (cycle_id, board_sha256, decision, decided_by, decided_at, note)
    (CYCLE, "a" * 64, "approved", "ops-ana", datetime(2026, 10, 14, 9), "checked the logs"),
    (CORR, "b" * 64, "approved", "ops-ana", datetime(2026, 10, 18, 9), "first board"),
    (CORR, "c" * 64, "rejected", "ops-bo", datetime(2026, 10, 21, 9), "wait for the rerun"),
]

DECISIONS = [  # (project_id, decision, decided_by, decided_at)
    ("p-env", "environment_at_fault", "ops-ana", datetime(2026, 10, 12, 9)),
    ("p-proj", "environment_at_fault", "ops-ana", datetime(2026, 10, 12, 9)),
    ("p-proj", "project_at_fault", "ops-bo", datetime(2026, 10, 13, 10)),
]


def insert_decisions(con) -> None:
    """People's decisions of the cycle: the project reviews, a dispute and its rulings."""
    con.executemany(
        "INSERT INTO decisions.review_decisions VALUES (?, ?, ?, ?, ?, ?)",
        [(CYCLE, p, d, who, at, f"{who}: read the logs") for p, d, who, at in DECISIONS],
    )
    con.execute(
        "INSERT INTO decisions.disputes VALUES (?, ?, ?, ?, 'maintainer', ?, 'filed')",
        [*DISPUTE, datetime(2026, 10, 19)],
    )
    con.executemany("INSERT INTO decisions.dispute_rulings VALUES (?, ?, ?, ?, ?, ?)", RULINGS)


def sponsor(registry: Path, agent_id: str, name: str, what: str) -> None:
    """This test's registry: ``agent_id`` sponsored by ``name`` (``what`` was given)."""
    import csv

    with open(registry, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert any(r["agent_id"] == agent_id for r in rows)
    for r in rows:
        if r["agent_id"] == agent_id:
            r["sponsor"], r["sponsorship"] = name, what
    with open(registry, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    from dbt.cli.main import dbtRunner

    tmp = tmp_path_factory.mktemp("dbt_rules")
    project = tmp / "dbt_project"
    shutil.copytree(DBT_PROJECT, project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    sponsor(project / "seeds" / "agents.csv", NOREC, *SPONSOR)
    db = tmp / "warehouse.duckdb"
    with duckdb.connect(str(db)) as con:
        migrate_raw(con)  # raw layer, pool entries and the (empty) decision tables
        insert_decisions(con)
        con.executemany("INSERT INTO decisions.publication_decisions VALUES (?, ?, ?, ?, ?, ?)", PUBLICATIONS)
        rows = records()
        con.executemany(
            f"INSERT INTO raw.run_records ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})",
            [[row.get(c) for c in COLUMNS] for row in rows],  # columns a rule does not read stay NULL
        )
    old = os.environ.get("ARGUSIC_WAREHOUSE")
    os.environ["ARGUSIC_WAREHOUSE"] = str(db)
    try:
        started = time.perf_counter()
        res = dbtRunner().invoke(
            [
                "--quiet",
                "build",
                "--project-dir",
                str(project),
                "--profiles-dir",
                str(project),
                "--target-path",
                str(tmp / "target"),
                "--log-path",
                str(tmp / "logs"),
            ]
        )
        seconds = time.perf_counter() - started
    finally:
        if old is None:
            os.environ.pop("ARGUSIC_WAREHOUSE", None)
        else:
            os.environ["ARGUSIC_WAREHOUSE"] = old
    results = list(getattr(res.result, "results", None) or [])
    print(f"dbt build: {len(results)} nodes in {seconds:.1f} s")
    # dbt-duckdb keeps its connection to the file open in this process: share its configuration
    con = duckdb.connect(str(db))
    yield {"res": res, "results": results, "con": con, "seconds": seconds, "target": tmp / "target"}
    con.close()


def q(built, sql: str, *params) -> list[dict]:
    cur = built["con"].execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def one(built, sql: str, *params) -> dict:
    rows = q(built, sql, *params)
    assert len(rows) == 1, rows
    return rows[0]


def frac(row: dict, prefix: str) -> Fraction | None:
    n, d = row[f"{prefix}_numerator"], row[f"{prefix}_denominator"]
    return None if n is None else Fraction(int(n), int(d))


# ------------------------------------------------------------------------------------------------


def test_build_passes_every_node_including_unit_tests(built):
    failed = [
        (r.node.unique_id, str(r.status), r.message)
        for r in built["results"]
        if str(getattr(r.status, "value", r.status)) not in ("success", "pass")
    ]
    assert not failed, failed
    assert built["res"].success
    kinds = {}
    for r in built["results"]:
        kinds[r.node.resource_type] = kinds.get(r.node.resource_type, 0) + 1
    assert kinds.get("unit_test", 0) >= 30
    # review decisions are data now (decisions schema), not a seed; model_prices is one (issue #13);
    # repair_labels, generated from repair/labels.toml, is one (issue #31: blinding)
    assert kinds.get("seed") == 8
    # 12 + verdict_plan and its two staging views + int_attempt_corrections, int_attempts_corrected,
    # attempt_corrections + cycle_environments, harness_editions + the repair track's three staging
    # views, int_repair_grades_attributed, int_attempt_costs and three marts (issue #13) + the hints and
    # change similarity staging views and the attempt_hints, stability, change_similarity marts (issue #14)
    # + Layer 2's stg_judge_verdicts and judge_panel + Layer 3's int_judging_attempt_facts, review_queue
    # and judging_review_divergence (issue #14) + board_publication (issue #29: each board's state)
    # + repair_item_runs (issue #31: how many of an item's three runs resolved it)
    # + stg_attempt_checks, judging_results and condition_comparison (issue #31: conditions, the
    # person's final decision) + stg_paired_judgements, stg_paired_bugs, paired_review (issue #31: the
    # paired patch review)
    # + repair_label_key (issue #31: the key of unlisted names' blinding labels, a Python model)
    assert kinds.get("model") == 47


def test_every_expectation_applies_and_passes_on_the_built_marts(built):
    """The marts' column checks live in the GX suites (not in dbt): on these hand-made records every
    one of them applies (no column missing, nothing skipped) and passes."""
    from argusic.warehouse.expectations.validate import validate_connection

    report = validate_connection(built["con"])
    assert report.success, report.summary()
    assert all(t.present for t in report.tables.values()), report.summary()
    assert [line for t in report.tables.values() for line in t.skipped] == []


def test_marts_live_in_schema_marts(built):
    tables = {
        r["table_name"]
        for r in q(built, "select table_name from information_schema.tables where table_schema = 'marts'")
    }
    assert {
        "attempt_scores",
        "pair_sets",
        "project_review",
        "project_verdicts",
        "board",
        "methodology_editions",
        "hardware_tiers",
        "hardware_estimates",
        "hardware_speed_bounds",
        "cycle_environments",
        "harness_editions",
    } <= tables


def test_attempt_scores_points_and_exact_fractions(built):
    rows = {r["attempt_id"]: r for r in q(built, "select * from marts.attempt_scores")}
    assert len(rows) == len([r for r in records() if r["purpose"] != "repair"])  # repair: graded apart
    assert "repair-exact-1" not in rows
    assert frac(rows["std-exact-1"], "score") == Fraction(502, 7) and rows["std-exact-1"]["outcome"] == "fail"
    assert frac(rows["std-exact-2"], "score") == Fraction(660, 7)
    assert rows["std-exact-2"]["outcome"] == "pass_full"
    assert rows["std-exact-2"]["recovery_points"] == pytest.approx(100 / 7)
    full = rows["std-exact-3"]
    assert (full["install_points"], full["run_points"], full["recovery_points"], full["depth_points"]) == (
        30,
        30,
        20.0,
        20,
    )
    assert full["score"] == 100.0
    mock = rows["std-rerun-1"]
    assert (frac(mock, "score"), mock["depth_points"], mock["outcome"]) == (92, 12, "pass_mock")
    not_verified = rows["std-env-1"]
    assert (frac(not_verified, "score"), not_verified["outcome"]) == (80, "fail")
    no_install = rows["nr-inf-3"]  # nothing installed, no error met: run and depth need install
    assert (no_install["run_points"], no_install["depth_points"], frac(no_install, "score")) == (0, 0, 20)
    timeout = rows["nr-inf-2"]
    assert timeout["outcome"] == "timeout"
    assert [
        timeout[k] for k in ("install_points", "run_points", "recovery_points", "depth_points", "score")
    ] == [0, 0, 0.0, 0, 0.0]


def test_invalid_attempts_are_kept_with_reason_and_never_scored(built):
    expected = {
        "std-inc-2": "missing log evidence",
        "std-inc-3": "cut by our tooling (harness_error): not a complete attempt",
        "std-rerun-2": "cancelled: not a complete attempt",
        "rival-daemon": "executor error: the Docker daemon did not answer",
        "v-nyv-2": "cut by our tooling (harness_error): not a complete attempt",
        "v-nyv-3": "key could not be created: gateway down",
        # corrected after a dispute: kept, never scored, its reason names the dispute and the rerun
        "corr-2": "corrected: dispute dispute-1 found our environment at fault; rerun corr-2c counts "
        "in its place",
    }
    rows = {r["attempt_id"]: r for r in q(built, "select * from marts.attempt_scores where not is_valid")}
    assert set(rows) == set(expected)
    for aid, reason in expected.items():
        row = rows[aid]
        assert row["invalid_reason"] == reason
        assert row["outcome"] == "invalid"  # said outright, never a null to guess from
        assert all(
            row[k] is None
            for k in (
                "install_points",
                "run_points",
                "recovery_points",
                "depth_points",
                "score",
                "score_numerator",
            )
        )
    # a report's rejected claim is not a veto: the attempt is valid, scores 0 and fails, with its reason
    claim = q(built, "select * from marts.attempt_scores where attempt_id = 'v-claim-1'")[0]
    assert (claim["is_valid"], claim["outcome"], frac(claim, "score")) == (True, "fail", 0)
    assert claim["container_fault"] == "report rejected: claims more errors fixed than encountered"
    # no valid attempt is called invalid, and every attempt has an outcome
    mislabelled = q(
        built, "select attempt_id from marts.attempt_scores where is_valid = (outcome = 'invalid')"
    )
    assert mislabelled == []


def test_edition_1_7_scores_what_the_harness_observed(built):
    """Edition 1.7, end to end from the record's JSON: an honest pass scores as before; a forged pass
    earns only what the harness saw (install 30, recovery 20 x 1/2), fails, and names each claim not
    shown, its report's claims published beside the observation; no observation earns nothing."""
    rows = {
        r["attempt_id"]: r for r in q(built, "select * from marts.attempt_scores where project_id = 'v-evid'")
    }
    honest, forged, unseen = rows["v-evid-1"], rows["v-evid-2"], rows["v-evid-3"]
    assert (frac(honest, "score"), honest["outcome"], honest["claims_not_shown"]) == (100, "pass_full", None)
    assert (honest["seal_status"], honest["observed_verified"]) == ("intact", True)
    assert (forged["install_points"], forged["run_points"], forged["recovery_points"]) == (30, 0, 10.0)
    assert (forged["depth_points"], frac(forged, "score"), forged["outcome"]) == (0, 40, "fail")
    assert forged["claims_not_shown"] == (
        "ran_ok claimed, not observed; 0 errors encountered claimed, 2 observed; "
        "tier1_real claimed, no verifying command observed"
    )
    claims = (
        "claimed_ran_ok",
        "observed_ran_ok",
        "claimed_errors_encountered",
        "observed_errors_encountered",
    )
    assert [forged[c] for c in claims] == [True, False, 0, 2]
    assert (forged["claimed_test_depth"], forged["observed_verified"], forged["seal_status"]) == (
        "tier1_real",
        False,
        "altered",
    )
    assert (frac(unseen, "score"), unseen["outcome"], unseen["observed_install_ok"]) == (0, "fail", None)
    assert unseen["claims_not_shown"] == "no observation recorded: no claim is shown, none earns points"
    # older editions are scored on the claim: nothing is named as not shown
    assert q(built, "select attempt_id from marts.attempt_scores where methodology_version <> '1.7' "
             "and claims_not_shown is not null") == []  # fmt: skip


def test_pair_sets_spread_edges(built):
    sets = {(r["agent_id"], r["project_id"]): r for r in q(built, "select * from marts.pair_sets")}
    exact = sets[(STD, "p-exact")]
    assert exact["is_complete"] and exact["spread_pct"] == 30.0 and exact["is_unstable"] is False
    assert frac(exact, "middle") == Fraction(660, 7)
    assert (frac(exact, "low"), frac(exact, "high")) == (Fraction(502, 7), 100)
    above = sets[(NOREC, "p-above")]
    assert above["is_unstable"] is True and above["spread_pct"] == pytest.approx(30.303030303)
    inf = sets[(NOREC, "p-inf")]
    assert inf["spread_pct"] == float("inf") and inf["is_unstable"] is True and inf["middle_score"] == 0.0
    zero = sets[(STD, "p-zero")]
    assert zero["spread_pct"] == 0.0 and zero["is_unstable"] is False and zero["is_complete"]
    incomplete = sets[(STD, "p-incomplete")]
    assert (incomplete["is_complete"], incomplete["valid_attempts"], incomplete["invalid_attempts"]) == (
        False,
        2,
        2,
    )
    assert incomplete["middle_score"] is None and incomplete["is_unstable"] is False
    rerun = sets[(STD, "p-rerun")]
    assert (rerun["is_complete"], rerun["valid_attempts"], rerun["middle_score"]) == (True, 3, 92.0)
    # the attempts behind the scores: three equal scores in attempt order, the valid rerun in place of
    # the cancelled attempt 2; 502/7 < 660/7 < 100 on p-exact
    assert (rerun["low_attempt_id"], rerun["middle_attempt_id"], rerun["high_attempt_id"]) == (
        "std-rerun-1",
        "std-rerun-2r",
        "std-rerun-3",
    )
    assert (exact["low_attempt_id"], exact["middle_attempt_id"], exact["high_attempt_id"]) == (
        "std-exact-1",
        "std-exact-2",
        "std-exact-3",
    )
    assert incomplete["middle_attempt_id"] is None and incomplete["low_attempt_id"] is not None
    assert sets[(RIVAL, "p-rerun")]["valid_attempts"] == 3  # the invalid attempt is not counted
    assert not any(p.startswith("v-") for _, p in sets)  # verdict attempts form no board sets


def test_project_review_and_decisions(built):
    review = {
        r["project_id"]: r for r in q(built, "select * from marts.project_review where cycle_id = ?", CYCLE)
    }
    assert (
        review["p-zero"]["under_review"],
        review["p-zero"]["decision"],
        review["p-zero"]["excluded_from_board"],
    ) == (True, None, True)
    assert (review["p-env"]["decision"], review["p-env"]["excluded_from_board"]) == (
        "environment_at_fault",
        True,
    )
    # the latest decision wins: environment, then project at fault -> counted again
    assert review["p-proj"]["under_review"] is True
    assert (review["p-proj"]["decision"], review["p-proj"]["excluded_from_board"]) == (
        "project_at_fault",
        False,
    )
    for project in ("p-exact", "p-inf", "p-above", "p-rerun", "p-incomplete"):
        assert review[project]["under_review"] is False, project
        assert review[project]["excluded_from_board"] is False, project


def test_a_dispute_ruled_against_our_environment_puts_the_rerun_in_the_original_place(built):
    corrections = q(built, "select * from marts.attempt_corrections")
    assert corrections == [
        {"attempt_id": "corr-2", "dispute_id": "dispute-1", "note": "mirror down", "decided_by": "ops-ana",
         "decided_at": datetime(2026, 10, 20, 9), "rerun_attempt_id": "corr-2c"}
    ]  # fmt: skip
    scores = {
        r["attempt_id"]: r for r in q(built, "select * from marts.attempt_scores where cycle_id = ?", CORR)
    }
    assert scores["corr-2"]["is_valid"] is False and scores["corr-2"]["score"] is None
    assert scores["corr-2"]["invalid_reason"] == (
        "corrected: dispute dispute-1 found our environment at fault; rerun corr-2c counts in its place"
    )
    assert scores["corr-2c"]["is_valid"] is True and scores["corr-2c"]["score"] == 100
    (pair,) = q(built, "select * from marts.pair_sets where cycle_id = ?", CORR)
    chosen = {pair["low_attempt_id"], pair["middle_attempt_id"], pair["high_attempt_id"]}
    assert "corr-2" not in chosen and chosen <= {"corr-1", "corr-2c", "corr-3"}
    assert pair["is_complete"] and pair["valid_attempts"] == 3 and pair["invalid_attempts"] == 1
    (board,) = q(built, "select * from marts.board where cycle_id = ?", CORR)
    assert board["board_score"] == 100 and board["sets_counted"] == 1  # not 0: the timeout no longer counts


def test_the_board_does_not_move_when_the_container_cuts_or_randomises_its_runs(built):
    """Issue #25: a project that fails an agent and then kills the harness (or alternates between
    killing it and failing) used to make those attempts invalid, drop the set and lift the agent
    from 65 points and rank 2 to 100 and rank 1. Now every such attempt is a valid measured failure
    (0), the set counts, and the agent is never better off than when it failed honestly."""
    boards = {
        how: {r["agent_id"]: r for r in q(built, "select * from marts.board where cycle_id = ?", cycle)}
        for how, cycle in VETO_CYCLES.items()
    }
    honest, cut, random = (boards[h][STD] for h in ("honest", "cut", "random"))
    assert frac(honest, "board_score") == 90  # (100 + 80) / 2, rank 2 behind the rival's 100
    for moved in (cut, random):
        assert moved["invalid_attempts"] == 0 and moved["sets_counted"] == 2, moved
        assert frac(moved, "board_score") <= frac(honest, "board_score")
        assert moved["rank"] >= honest["rank"] == 2
    assert frac(cut, "board_score") == 50  # the cut set counts at 0
    assert random["sets_unstable"] == 1 and frac(random, "board_score") == 50  # unstable: its middle, 0
    scores = q(built, "select outcome, container_fault from marts.attempt_scores where cycle_id = ? "
               "and agent_id = ? and project_id = 'p-b'", VETO_CYCLES["cut"], STD)  # fmt: skip
    assert {(s["outcome"], s["container_fault"]) for s in scores} == {
        ("fail", "harness exited with code 137")
    }


def test_board_scores_ranks_and_pass_rates(built):
    board = {r["agent_id"]: r for r in q(built, "select * from marts.board where cycle_id = ?", CYCLE)}
    std = board[STD]
    # counted middles: 660/7 (p-exact), 100 (p-inf), 80 (p-proj), 92 (p-rerun) -> (92 + 660/7)/2
    assert frac(std, "board_score") == Fraction(652, 7)
    assert std["board_score"] == pytest.approx(652 / 7)
    assert (std["sets_counted"], std["sets_unstable"], std["sets_under_review"], std["sets_incomplete"]) == (
        4,
        0,
        2,
        1,
    )
    # the rival's single set has middle 652/7: an exact tie shares rank 1
    assert frac(board[RIVAL], "board_score") == Fraction(652, 7)
    assert std["rank"] == 1 and board[RIVAL]["rank"] == 1
    # nothing left for the no-recovery agent: unstable (p-above, p-inf) or under review (p-env, p-zero)
    nr = board[NOREC]
    assert nr["board_score"] is None and nr["rank"] is None
    assert (nr["sets_counted"], nr["sets_unstable"], nr["sets_under_review"]) == (0, 2, 2)
    assert nr["display_position"] == max(r["display_position"] for r in board.values())
    # pass rate: every valid board attempt, failures and timeouts included
    assert (nr["passes"], nr["valid_attempts"]) == (2, 12) and nr["pass_rate"] == pytest.approx(2 / 12)
    # std: passes = exact-2, exact-3, inf x3, inc-1, inc-2r, rerun x3 = 10; valid = 3+3+3+3+3+2+3 = 20
    assert (std["passes"], std["valid_attempts"], std["invalid_attempts"]) == (10, 20, 3)
    assert std["pass_rate"] == pytest.approx(0.5)
    assert (board[RIVAL]["valid_attempts"], board[RIVAL]["invalid_attempts"]) == (3, 1)


def test_every_board_is_published_rejected_or_pending(built):
    """Issue #29: a board's publication state comes from the people's publication decisions, the
    latest in force; a cycle whose board was approved before a later rejection was published once."""
    states = {r["cycle_id"]: r for r in q(built, "select * from marts.board_publication")}
    boards = {r["cycle_id"] for r in q(built, "select distinct cycle_id from marts.board")}
    assert set(states) == boards and {CYCLE, CORR} <= boards
    assert (states[CYCLE]["publication_state"], states[CYCLE]["ever_published"]) == ("published", True)
    assert (states[CYCLE]["decided_by"], states[CYCLE]["board_sha256"]) == ("ops-ana", "a" * 64)
    corr = states[CORR]
    assert (corr["publication_state"], corr["ever_published"], corr["decisions"]) == ("rejected", True, 2)
    assert (corr["decision_note"], corr["last_approved_board_sha256"]) == ("wait for the rerun", "b" * 64)
    for cycle in boards - {CYCLE, CORR}:  # nobody decided
        assert (states[cycle]["publication_state"], states[cycle]["ever_published"]) == ("pending", False)
        assert states[cycle]["decision"] is None and states[cycle]["decisions"] == 0


def test_project_verdicts_paths(built):
    verdicts = {
        (r["project_id"], r["commit_sha"]): r for r in q(built, "select * from marts.project_verdicts")
    }
    assert verdicts[("v-mock", "c0ffee")]["verdict"] == "runs_with_mocks"
    assert verdicts[("v-mock", "c0ffee")]["verified_by_agent"] == STD
    assert verdicts[("v-mock", "0ld")]["verdict"] == "not_yet_verified"
    cnv = verdicts[("v-cnv", "c0ffee")]
    assert (cnv["verdict"], cnv["complete_attempts"], cnv["verified_by_agent"]) == (
        "could_not_verify",
        2,
        None,
    )
    nyv = verdicts[("v-nyv", "c0ffee")]  # one complete standard attempt; the invalid ones and another agent's
    assert (nyv["verdict"], nyv["complete_attempts"]) == ("not_yet_verified", 1)
    strong = verdicts[("v-strong", "c0ffee")]  # the earliest full pass names the agent, registry or not
    assert (strong["verdict"], strong["verified_by_agent"], strong["complete_attempts"]) == ("runs", RIVAL, 2)
    # board attempts count too: p-env failed three complete times with the standard agent
    assert verdicts[("p-env", "c0ffee")]["verdict"] == "could_not_verify"
    assert verdicts[("p-exact", "c0ffee")]["verdict"] == "runs"


def test_methodology_editions_effective_dates(built):
    editions = {r["version"]: r for r in q(built, "select * from marts.methodology_editions")}
    assert list(sorted(editions)) == [
        "0.2",
        "0.3",
        "0.4",
        "1.0",
        "1.1",
        "1.2",
        "1.3",
        "1.4",
        "1.5",
        "1.6",
        "1.7",
    ]
    assert str(editions["1.2"]["effective_on"]) == "2026-09-04"
    assert editions["1.2"]["effective_before_written"] is True
    assert str(editions["1.3"]["effective_on"]) == "2026-09-05"
    assert editions["1.3"]["effective_before_written"] is False
    assert editions["1.0"]["effective_on"] is None
    budgets = {
        v: (e["budget_standard_min"], e["budget_heavy_min"], e["budget_gpu_min"]) for v, e in editions.items()
    }
    assert budgets["1.2"] == (45, 120, 120) and budgets["1.1"][1] is None and budgets["1.3"] == (90, 120, 120)


def test_cycle_environments_and_the_board_say_which_harness_ran(built):
    """The board cycle's valid attempts all carry one environment: uniform, edition 1, on the board of
    every agent. The other cycles' records predate environments: nothing compared, no edition."""
    envs = {r["cycle_id"]: r for r in q(built, "select * from marts.cycle_environments")}
    assert set(envs) == {CYCLE, "verdicts", CORR, *VETO_CYCLES.values()}
    board_cycle = envs[CYCLE]
    valid = one(
        built, "select count(*) as n from marts.attempt_scores where cycle_id = ? and is_valid", CYCLE
    )
    assert board_cycle["valid_attempts"] == board_cycle["attempts_with_environment"] == valid["n"]
    assert (board_cycle["attempts_without_environment"], board_cycle["harness_edition"]) == (0, "1")
    assert (board_cycle["environments"], board_cycle["is_uniform"], board_cycle["disagrees_on"]) == (
        1,
        True,
        None,
    )
    older = envs["verdicts"]
    assert older["attempts_with_environment"] == 0 and older["attempts_without_environment"] > 0
    assert (older["harness_edition"], older["is_uniform"], older["environments"]) == (None, None, 0)
    editions = {
        r["agent_id"]: r["harness_edition"]
        for r in q(built, "select * from marts.board where cycle_id = ?", CYCLE)
    }
    assert editions == {STD: "1", NOREC: "1", RIVAL: "1"}
    assert {r["harness_edition"] for r in q(built, "select * from marts.board where cycle_id = ?", CORR)} == {
        None
    }


def test_harness_editions_effective_date_comes_from_the_records(built):
    from argusic.attempts.environment import harness_editions

    editions = {r["edition"]: r for r in q(built, "select * from marts.harness_editions")}
    assert set(editions) == {e.edition for e in harness_editions()}  # one row per changelog entry
    first = editions["1"]  # the edition these hand-made records ran under
    board_cycle = one(
        built,
        "select count(*) as n, min(started_at) as t from raw.run_records "
        "where cycle_id = ? and purpose <> 'repair'",  # repair attempts are graded apart, not counted
        CYCLE,
    )
    assert (first["runs_recorded"], first["cycles_recorded"], first["first_run_at"]) == (
        board_cycle["n"],
        1,
        board_cycle["t"],
    )
    assert str(first["effective_on"]) == "2026-10-10" and str(first["written_on"]) == "2026-11-29"
    assert first["effective_before_written"] is True  # these hand-made runs predate the entry
    assert len(first["scaffold_sha256"]) == 64 and first["summary"]
    for unused in (e for name, e in editions.items() if name != "1"):  # no run recorded under it yet
        facts = (unused["runs_recorded"], unused["effective_on"], unused["effective_before_written"])
        assert facts == (0, None, False)


def test_a_sponsored_agent_says_so_on_the_board(built):
    rows = {r["agent_id"]: r for r in q(built, "select * from marts.board where cycle_id = ?", CYCLE)}
    assert (rows[NOREC]["sponsor"], rows[NOREC]["sponsorship"]) == SPONSOR
    assert (rows[STD]["sponsor"], rows[STD]["sponsorship"]) == (None, None)
    assert (rows[RIVAL]["sponsor"], rows[RIVAL]["display_name"]) == (None, None)  # not in the registry


def test_agents_registry_has_exactly_one_standard(built):
    rows = q(built, "select agent_id from reference.agents where is_standard")
    assert [r["agent_id"] for r in rows] == [STD]


def test_hardware_table_comes_out_of_the_computation(built):
    tiers = q(built, "select * from marts.hardware_tiers order by tier_order")
    assert [t["tier"] for t in tiers] == ["7-8B", "14B", "27-32B", "70B", "120B+"]
    assert [round(t["required_gb"], 2) for t in tiers] == [7.10, 10.91, 22.73, 46.51, 77.37]
    assert [round(t["required_unified_gb"], 2) for t in tiers] == [9.47, 14.54, 30.30, 62.01, 103.16]
    assert round(tiers[3]["weights_gb"], 2) == 42.83  # "a 70B model needs 42.8 GB of weights"


def test_hardware_estimates_and_speed_bounds(built):
    est = {r["machine_id"]: r for r in q(built, "select * from marts.hardware_estimates")}
    assert (est["rtx-4090-24gb"]["model_memory_gb"], est["rtx-4090-24gb"]["largest_tier"]) == (24.0, "27-32B")
    assert (est["mac-mini-m4pro-64gb"]["model_memory_gb"], est["mac-mini-m4pro-64gb"]["largest_tier"]) == (
        48.0,
        "70B",
    )
    unknown = est["framework-desktop-395-128gb"]
    assert unknown["status"] == "unknown" and unknown["missing_inputs"] == "bandwidth_gb_per_s"
    assert (
        unknown["model_memory_gb"] is None
        and unknown["largest_tier"] is None
        and unknown["gb_per_dollar"] is None
    )
    assert est["mbp16-m4max-128gb"]["gb_per_dollar"] is None  # no price, no guess
    assert est["rtx-4090-24gb"]["gb_per_dollar"] == pytest.approx(24 / 1599)
    bound = one(
        built,
        "select * from marts.hardware_speed_bounds where machine_id = ? and tier = '7-8B'",
        "mbp16-m4max-48gb",
    )
    assert round(bound["tokens_per_s_max"]) == 112 and int(bound["tokens_per_s_max"]) == 111
    nulls = q(
        built, "select * from marts.hardware_speed_bounds where machine_id = 'framework-desktop-395-128gb'"
    )
    assert nulls and all(r["tokens_per_s_max"] is None and r["fits"] is None for r in nulls)


def test_raw_run_records_without_its_primary_key_fails_the_source_test(tmp_path: Path):
    """attempt_id's uniqueness rests on the raw table's PRIMARY KEY: a raw table without it fails."""
    from argusic.warehouse.dbt_build import _release_dbt_duckdb
    from dbt.cli.main import dbtRunner

    db = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(RAW_DDL.replace("PRIMARY KEY", ""))
    os.environ["ARGUSIC_WAREHOUSE"], old = str(db), os.environ.get("ARGUSIC_WAREHOUSE")
    try:
        project = ["--project-dir", str(DBT_PROJECT), "--profiles-dir", str(DBT_PROJECT)]
        paths = ["--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")]
        res = dbtRunner().invoke(["--quiet", "test", "--select", "source:raw", *project, *paths])
    finally:
        _release_dbt_duckdb()
        if old is None:
            os.environ.pop("ARGUSIC_WAREHOUSE", None)
        else:
            os.environ["ARGUSIC_WAREHOUSE"] = old
    failed = [r.node.name for r in res.result.results if str(r.status) == "fail"]
    assert failed == ["source_enforced_primary_key_raw_run_records_attempt_id"], res.result.results


def test_every_mart_and_column_is_described(built):
    """Every mart and every one of its columns has a description (they become the DuckDB comments of
    the analyst copy, argusic.warehouse.analyst.descriptions_of), and no yml describes a column its
    mart does not have (a typo would leave the real column undescribed, silently)."""
    import yaml
    from argusic.warehouse.analyst import descriptions_of

    columns = {
        (r["table_name"], r["column_name"])
        for r in q(built, "select table_name, column_name from duckdb_columns() where schema_name = 'marts'")
    }
    described = descriptions_of(json.loads((built["target"] / "manifest.json").read_text()))
    tables = {table for table, _ in columns}
    for table in tables:
        doc, column_docs = described[("marts", table)]
        assert doc, table
        missing = sorted(c for t, c in columns if t == table and not column_docs.get(c))
        assert missing == [], f"marts.{table}: columns without a description"
    for path in sorted((DBT_PROJECT / "models" / "marts").glob("*.yml")):
        for model in yaml.safe_load(path.read_text())["models"]:
            table = model["name"].removeprefix("mart_")  # mart_<x>: alias <x> (a seed holds the name)
            declared = {(table, c["name"]) for c in model.get("columns", [])}
            assert declared - columns == set(), path.name


def test_a_warehouse_built_before_a_seed_gained_columns_takes_the_new_ones(tmp_path: Path):
    """A registry column added later (sponsor) reaches a warehouse whose seed table has the old shape:
    seeds are reloaded whole (+full_refresh), not truncated and refilled with the new column count."""
    from dbt.cli.main import dbtRunner

    project = tmp_path / "dbt_project"
    shutil.copytree(DBT_PROJECT, project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    db = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(db)) as con:  # reference.agents as the release before sponsors built it
        con.execute("CREATE SCHEMA reference")
        con.execute(
            "CREATE TABLE reference.agents (agent_id VARCHAR, display_name VARCHAR, model VARCHAR, "
            "model_version VARCHAR, harness VARCHAR, harness_version VARCHAR, key_kind VARCHAR, "
            "is_standard BOOLEAN)"
        )
        con.execute("INSERT INTO reference.agents VALUES ('old', 'Old', NULL, NULL, 'x', '1', 'none', true)")
    old = os.environ.get("ARGUSIC_WAREHOUSE")
    os.environ["ARGUSIC_WAREHOUSE"] = str(db)
    try:
        res = dbtRunner().invoke(
            ["--quiet", "seed", "--select", "agents", "--project-dir", str(project), "--profiles-dir",
             str(project), "--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")]
        )  # fmt: skip
    finally:
        if old is None:
            os.environ.pop("ARGUSIC_WAREHOUSE", None)
        else:
            os.environ["ARGUSIC_WAREHOUSE"] = old
    assert res.success, [r.message for r in res.result.results]
    with duckdb.connect(str(db)) as con:  # dbt-duckdb's connection is still open: same configuration
        columns = [r[0] for r in con.execute("DESCRIBE reference.agents").fetchall()]
        agents = {r[0] for r in con.execute("SELECT agent_id FROM reference.agents").fetchall()}
    assert columns[-2:] == ["sponsor", "sponsorship"]
    assert "old" not in agents and "readme-runner" in agents
