"""GX suites of the marts issue #31 added: paired_review, judging_results, condition_comparison and
repair_item_runs (argusic.warehouse.expectations.suites).

Small consistent frames pass each suite whole (no spec skipped); each rule broken on its own fails,
naming the mart and the rule. And the paired review's mart as dbt builds it from a real review
(test_paired_warehouse's) passes, then fails once a row is planted by hand.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import pandas as pd
import pytest
from argusic.warehouse.expectations import suites
from argusic.warehouse.expectations.validate import validate_frames
from test_expectations import BETWEEN, COMPOUND, IN_SET, NOT_NULL, UNIQUE, _dup, _many, _set

TABLES = ("paired_review", "judging_results", "condition_comparison", "repair_item_runs")
PR, JR, CC, RI = TABLES


def paired_frame() -> pd.DataFrame:
    rows = []
    for n, criterion in enumerate(suites.PAIRED_CRITERIA, start=1):
        # pair 1 judged by two valid judges (of three); pair 2 with one valid judge: insufficient
        rows.append(["c-1.aa", criterion, n, "model-a", "model-b", "ma-1", "mb-2", "a" * 64,
                     0.3, 3, 2, 4.5, 3.0, 1, 2, "judged", 2, 0, 1, 0, 0, 0, 1])  # fmt: skip
        rows.append(["c-2.bb", criterion, n, "model-b", "model-b", "mb-3", "mb-4", "b" * 64, 0.7, 2, 1,
                     None, None, None, None, "insufficient_judges", 0, 1, 0, 0, 0, 1, 0])  # fmt: skip
    columns = ["pair_id", "criterion", "criterion_order", "p_label", "q_label", "p_patch_id", "q_patch_id",
               "draw_seed", "drawn", "judges", "valid_judges", "p_median", "q_median", "p_spread", "q_spread",
               "status", *suites.PAIRED_BUG_COUNTS]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def results_frame() -> pd.DataFrame:
    at = datetime(2026, 12, 2, 10, 0)
    columns = ["attempt_id", "cycle_id", "purpose", "agent_id", "project_id", "attempt_no", "task_id",
               "condition", "provisional_result", "provisional_decision", "person_decision", "look",
               "decided_by", "decided_at", "final_decision", "decided_by_kind", "counts_as_result",
               "overturned"]  # fmt: skip
    rows = [
        ["c1.board.a.p.a1", "c1", "board", "a", "p", 1, "install_and_run", "baseline", "pass", "promote",
         None, None, None, None, "promote", "provisional", True, False],
        ["c1.board.a.p.a2", "c1", "board", "a", "p", 2, "install_and_run", "baseline", "pass", "promote",
         "reject", 1, "ana", at, "reject", "person", False, True],
        ["c1.repair.a.p.a1", "c1", "repair", "a", "p", 1, "repair", "baseline", "fail", "reject",
         "promote", 2, "bo", at, "promote", "person", True, True],
        ["c1.verdict.a.p.a1", "c1", "verdict", "a", "p", 1, "install_and_run", None, None, None,
         None, None, None, None, None, None, False, False],
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def conditions_frame() -> pd.DataFrame:
    columns = ["cycle_id", "project_id", "task_id", "condition", "runs", "agents", "provisional_passes",
               "results", "decided_by_people", "check_id", "check_type", "applicability",
               *suites.CHECK_COUNTS]  # fmt: skip
    rows = [
        ["c1", "p", "install_and_run", "baseline", 3, 1, 2, 2, 1, "out", "output_exact_match", "applies",
         3, 2, 1, 0, 0],
        ["c1", "p", "install_and_run", "variant", 2, 1, 1, 1, 0, "out", "output_exact_match",
         "not_applicable", 2, 0, 0, 2, 0],
        ["c1", "q", "repair", "baseline", 1, 1, 0, 0, 0, None, None, None, None, None, None, None, None],
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def item_runs_frame() -> pd.DataFrame:
    columns = ["agent_label", "track", "source_kind", "source_set", "item_id", "runs", "resolved_runs",
               "runs_set_apart", "runs_planned", "has_every_run", "pass_rate",
               "resolved_every_run"]  # fmt: skip
    rows = [
        ["model-a", "basic", "attempt", "c1", "i1", 3, 2, 0, 3, True, 2 / 3, False],
        ["model-a", "spec", "attempt", "c1", "i2", 3, 3, 1, 3, True, 1.0, True],
        ["model-b", "basic", "predictions", "f" * 64, "i1", 0, 0, 1, 3, False, None, False],
    ]
    return pd.DataFrame(rows, columns=columns)


def frames() -> dict[str, pd.DataFrame]:
    return {PR: paired_frame(), JR: results_frame(), CC: conditions_frame(), RI: item_runs_frame()}


def test_the_four_marts_are_optional_and_pass_whole() -> None:
    assert set(TABLES) <= set(suites.OPTIONAL_TABLES) and set(TABLES) <= set(suites.KEYS)
    report = validate_frames(frames(), only=TABLES)
    assert report.success, report.summary()
    for table in TABLES:
        result = report.tables[table]
        assert result.evaluated == len(suites.SUITES[table]) and not result.skipped, report.summary()


BREAKAGES = [
    ("dup-pair-criterion", _dup(PR, 0), PR, COMPOUND, ["pair_id", "criterion"]),
    ("seventh-criterion", _set(PR, 0, "criterion", "style"), PR, IN_SET, ["criterion", "'style'"]),
    ("median-6", _set(PR, 0, "p_median", 6.0), PR, BETWEEN, ["p_median", "1..5"]),
    ("no-label", _set(PR, 2, "q_label", None), PR, NOT_NULL, ["q_label"]),
    ("judged-with-one", _set(PR, 1, "status", "judged"), PR, IN_SET, ["check_judged_iff_two_valid"]),
    ("median-without-judges", _set(PR, 1, "p_median", 3.0), PR, IN_SET, ["check_medians_iff_judged"]),
    ("same-patch-twice", _set(PR, 0, "q_patch_id", "ma-1"), PR, IN_SET, ["check_two_different_patches"]),
    ("confirmed-unreported", _set(PR, 1, "p_bugs_confirmed", 1), PR, IN_SET, ["check_bugs_add_up"]),
    ("valid-above-judges", _many(_set(PR, 0, "valid_judges", 4)), PR, IN_SET, ["check_valid_within_judges"]),
    ("dup-attempt", _dup(JR, 0), JR, UNIQUE, ["attempt_id"]),
    ("final-not-the-person", _set(JR, 1, "final_decision", "promote"), JR, IN_SET,
     ["check_final_is_person_else_provisional"]),
    ("counts-when-rejected", _set(JR, 1, "counts_as_result", True), JR, IN_SET,
     ["check_counts_iff_promoted"]),
    ("not-overturned", _set(JR, 2, "overturned", False), JR, IN_SET, ["check_overturned_follows"]),
    ("kind-wrong", _set(JR, 0, "decided_by_kind", "person"), JR, IN_SET, ["check_kind_follows_decisions"]),
    ("person-without-who", _set(JR, 2, "decided_by", None), JR, IN_SET, ["check_person_has_who_and_when"]),
    ("repair-as-install", _set(JR, 2, "task_id", "install_and_run"), JR, IN_SET,
     ["check_task_follows_purpose"]),
    ("promote-a-fail", _set(JR, 2, "provisional_decision", "promote"), JR, IN_SET,
     ["check_provisional_decision_follows_result"]),
    ("look-3", _set(JR, 1, "look", 3), JR, IN_SET, ["look"]),
    ("dup-condition-row", _dup(CC, 0), CC, COMPOUND, ["condition", "check_id"]),
    ("outcomes-do-not-add-up", _set(CC, 0, "check_fails", 2), CC, IN_SET, ["check_outcomes_add_up"]),
    ("results-above-runs", _set(CC, 1, "results", 3), CC, IN_SET, ["check_counts_within_runs"]),
    ("type-without-check", _set(CC, 2, "check_type", "tool_calls"), CC, IN_SET,
     ["check_check_fields_together"]),
    ("third-check-type", _set(CC, 0, "check_type", "vibes"), CC, IN_SET, ["check_type", "'vibes'"]),
    ("dup-item-run", _dup(RI, 0), RI, COMPOUND, ["agent_label", "item_id"]),
    ("resolved-above-runs", _set(RI, 0, "resolved_runs", 4), RI, IN_SET, ["check_resolved_within_runs"]),
    ("rate-not-resolved-over-runs", _set(RI, 0, "pass_rate", 0.5), RI, IN_SET,
     ["check_pass_rate_is_resolved_over_runs"]),
    ("every-run-without-runs", _set(RI, 2, "has_every_run", True), RI, IN_SET,
     ["check_has_every_run_follows"]),
    ("all-resolved-wrong", _set(RI, 0, "resolved_every_run", True), RI, IN_SET,
     ["check_resolved_every_run_follows"]),
    ("rate-above-one", _set(RI, 1, "pass_rate", 1.5), RI, BETWEEN, ["pass_rate"]),
    ("third-track", _set(RI, 0, "track", "hard"), RI, IN_SET, ["track", "'hard'"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "table", "expectation", "words"), [pytest.param(*b[1:], id=b[0]) for b in BREAKAGES]
)
def test_each_breakage_is_named(mutate, table, expectation, words) -> None:
    made = frames()
    mutate(made)
    report = validate_frames(made, only=[table])
    assert not report.success
    assert {f.table for f in report.failures} == {table}, report.summary()
    messages = [m for m in report.failure_messages() if expectation in m]
    assert any(all(w in m for w in words) for m in messages), report.summary()
    assert all(m.startswith(f"marts.{table}: ") for m in report.failure_messages())


@pytest.mark.slow
def test_the_built_paired_review_passes_and_a_planted_row_fails(isolated) -> None:
    from argusic.warehouse.load_paired import ingest_paired
    from test_paired_warehouse import dbt_build_paired, reviewed

    reviewed(isolated)
    ingest_paired()
    db = isolated / "warehouse" / "argusic.duckdb"
    dbt_build_paired(db, isolated / "build")
    with duckdb.connect(str(db), read_only=True) as con:
        built = con.execute("SELECT * FROM marts.paired_review").df()
    assert len(built) == 6
    report = validate_frames({PR: built}, only=[PR])
    assert report.success and report.tables[PR].evaluated == len(suites.SUITES[PR]), report.summary()
    planted = pd.concat([built, built.iloc[[0]].assign(criterion="style", p_median=7.0)], ignore_index=True)
    report = validate_frames({PR: planted}, only=[PR])
    assert not report.success
    failed = " ".join(report.failure_messages())
    assert "'style'" in failed and "p_median" in failed, report.summary()
