"""Expectations on the marts (GX) and the build/publish gate (dbt on a stand-in project)."""

from __future__ import annotations

import fcntl
import json
import math
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from argusic.publication.board import publish_board
from argusic.warehouse import dbt_build
from argusic.warehouse.dbt_build import BuildResult, PublicationBlocked, build_warehouse
from argusic.warehouse.expectations import suites, validate
from argusic.warehouse.expectations.validate import validate_frames, validate_warehouse

INF = math.inf


def good_frames() -> dict[str, pd.DataFrame]:
    """A small, consistent cycle that passes every suite (the judging marts' are judging_frames)."""
    cols = [
        "attempt_id", "cycle_id", "purpose", "agent_id", "project_id", "attempt_no", "is_valid",
        "invalid_reason", "install_points", "run_points", "recovery_points", "depth_points", "score",
        "outcome",
    ]  # fmt: skip
    attempts = pd.DataFrame(
        [
            ["a1-p1-1", "c1", "board", "a1", "p1", 1, True, None, 30, 30, 20.0, 20, 100.0, "pass_full"],
            ["a1-p1-2", "c1", "board", "a1", "p1", 2, True, None, 30, 30, 20.0, 12, 92.0, "pass_mock"],
            ["a1-p1-3", "c1", "board", "a1", "p1", 3, True, None, 30, 30, 20.0, 0, 80.0, "fail"],
            [
                "a1-p1-4",
                "c1",
                "board",
                "a1",
                "p1",
                4,
                False,
                "harness_error",
                None,
                None,
                None,
                None,
                None,
                "invalid",
            ],
            ["a2-p1-1", "c1", "board", "a2", "p1", 1, True, None, 0, 0, 0.0, 0, 0.0, "timeout"],
            [
                "a2-p1-2",
                "c1",
                "board",
                "a2",
                "p1",
                2,
                True,
                None,
                30,
                0,
                20 * 5 / 7,
                0,
                30 + 20 * 5 / 7,
                "fail",
            ],
            ["v-p2-1", "c1", "verdict", "a1", "p2", 1, True, None, 30, 30, 20.0, 20, 100.0, "pass_full"],
        ],
        columns=cols,
    )
    pair_sets = pd.DataFrame(
        [
            ["c1", "a1", "p1", 3, 80.0, 92.0, 100.0, 20 / 92 * 100, False, True],
            ["c1", "a2", "p1", 2, 0.0, None, 44.0, None, False, False],
            ["c1", "a3", "p1", 3, 0.0, 0.0, 50.0, INF, True, True],
            ["c1", "a3", "p2", 3, 60.0, 60.0, 78.0, 30.0, False, True],
        ],
        columns=[
            "cycle_id",
            "agent_id",
            "project_id",
            "valid_attempts",
            "low_score",
            "middle_score",
            "high_score",
            "spread_pct",
            "is_unstable",
            "is_complete",
        ],  # fmt: skip
    )
    review = pd.DataFrame(
        [["c1", "p1", False, None], ["c1", "p2", True, "environment_at_fault"]],
        columns=["cycle_id", "project_id", "under_review", "decision"],
    )
    verdicts = pd.DataFrame(
        [
            ["p1", "aaa", "runs", "a1", 1],
            ["p2", "bbb", "runs_with_mocks", "a2", 2],
            ["p3", "ccc", "could_not_verify", None, 2],
            ["p4", "ddd", "not_yet_verified", None, 0],
        ],
        columns=["project_id", "commit_sha", "verdict", "verified_by_agent", "complete_attempts"],
    )
    board = pd.DataFrame(
        [
            ["c1", "a1", 92.0, 1, 2 / 3, 3, 1, 0, 0],
            ["c1", "a2", 50.0, 2, 0.0, 2, 1, 0, 0],
            ["c1", "a4", 50.0, 2, 0.5, 2, 1, 0, 0],
            ["c1", "a3", None, None, 0.0, 3, 0, 1, 1],
        ],
        columns=[
            "cycle_id",
            "agent_id",
            "board_score",
            "rank",
            "pass_rate",
            "valid_attempts",
            "sets_counted",
            "sets_unstable",
            "sets_under_review",
        ],  # fmt: skip
    )
    # marts.pair_sets' invalid attempts and whether an unstable set still counts (the approval form's
    # reasons for a "—" read them): as the attempts above say; the unstable set here does not count
    pair_invalid = attempts[~attempts["is_valid"].astype(bool)].groupby(["agent_id", "project_id"]).size()
    keys = list(zip(pair_sets["agent_id"], pair_sets["project_id"], strict=True))
    pair_sets["invalid_attempts"] = [int(pair_invalid.get(k, 0)) for k in keys]
    pair_sets["unstable_counts_at_middle"] = False
    # marts.board's counts beside the rate (the approval form reads them): passes as the rate says
    # (pass_rate = passes / valid_attempts), invalid board attempts as the attempts above say
    board["passes"] = (board["pass_rate"] * board["valid_attempts"]).round().astype(int)
    board_attempts = attempts[attempts["purpose"] == "board"]
    invalid = board_attempts[~board_attempts["is_valid"].astype(bool)].groupby("agent_id").size()
    board["invalid_attempts"] = board["agent_id"].map(invalid).fillna(0).astype(int)
    tiers = pd.DataFrame({"tier": ["7-8B", "14B", "27-32B", "70B", "120B+"], "required_vram_gb": [7.1] * 5})
    estimates = pd.DataFrame(
        [["m1", "14B", "estimate"], ["m2", None, "unknown"]], columns=["machine_id", "largest_tier", "status"]
    )
    bounds = pd.DataFrame(
        [["m1", "7-8B", 111.5, "estimate"], ["m1", "14B", 63.7, "estimate"], ["m2", "7-8B", None, "unknown"]],
        columns=["machine_id", "tier", "tokens_per_s_max", "status"],
    )
    editions = pd.DataFrame(
        {"version": ["0.2", "0.3", "0.4", "1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7"]}
    )
    environments = pd.DataFrame(
        [["c1", 6, 6, 0, "1", 1, 1, True, None], ["c0", 4, 0, 4, None, 0, 0, None, None]],
        columns=ENV_COLUMNS,
    )
    harness = pd.DataFrame(
        [["1", "2026-11-29", "e" * 64, False, 6]],
        columns=["edition", "written_on", "scaffold_sha256", "effective_before_written", "runs_recorded"],
    )
    return {
        # container_fault (issue #25): a valid attempt the container cut short, and why; none here
        # and the claims beside the observations (edition 1.7): these records predate them (None)
        "attempt_scores": attempts.assign(
            container_fault=None,
            **dict.fromkeys(
                [
                    "claimed_install_ok",
                    "observed_install_ok",
                    "claimed_ran_ok",
                    "observed_ran_ok",
                    "claimed_errors_encountered",
                    "observed_errors_encountered",
                    "claimed_errors_fixed",
                    "observed_errors_fixed",
                    "claimed_test_depth",
                    "observed_verified",
                    "seal_status",
                    "claims_not_shown",
                ]
            ),
        ),
        "pair_sets": pair_sets,
        "project_review": review,
        "project_verdicts": verdicts,
        "board": board,
        "hardware_tiers": tiers,
        "hardware_estimates": estimates,
        "hardware_speed_bounds": bounds,
        "methodology_editions": editions,
        "cycle_environments": environments,
        "harness_editions": harness,
        **repair_frames(),
    }


def repair_frames() -> dict[str, pd.DataFrame]:
    """The repair track's marts (issue #13), consistent: a usable item and one never validated; a
    counted grade, an empty patch's grade, one that does not count; the rates they make."""
    items = pd.DataFrame(
        [
            ["ok", "r1", "basic", True, True, True, 3, 3, 1, 1, 0, 0, 1, 5, None, False, False],
            ["nv", "r2", "spec", False, False, False, 0, 0, 0, 0, 0, 0, 2, 5, "not validated", False, False],
        ],
        columns=[
            "item_id", "revision", "track", "is_validated", "is_usable", "in_main_set", "gold_runs",
            "gold_resolved_runs", "empty_runs", "empty_unresolved_runs", "partial_gold_runs",
            "partial_gold_resolved_runs", "f2p_count", "p2p_count", "why_not_usable", "is_split",
            "superseded_by_split",
        ],
    )  # fmt: skip
    run_columns = [
        "grade_id", "item_id", "revision", "source_kind", "verdict", "is_resolved", "is_empty_patch",
        "track", "patch_bytes", "size_vs_gold", "changed_lines", "lint_new_errors", "suppressions_added",
        "agent_label", "source_set", "item_in_main_set", "is_current_revision", "counts_in_rates",
        "not_counted_reason",
    ]  # fmt: skip
    counted = {"item_in_main_set": True, "is_current_revision": True, "counts_in_rates": True}
    runs = pd.DataFrame(
        [
            {"grade_id": "g1", "item_id": "ok", "revision": "r1", "source_kind": "attempt",
             "verdict": "resolved",
             "is_resolved": True, "is_empty_patch": False, "track": "basic", "patch_bytes": 400,
             "size_vs_gold": 1.5, "changed_lines": 12, "lint_new_errors": 0, "suppressions_added": 0,
             "agent_label": "a1", "source_set": "c1", **counted, "not_counted_reason": None},
            {"grade_id": "g2", "item_id": "ok", "revision": "r1", "source_kind": "predictions",
             "verdict": "unresolved", "is_resolved": False, "is_empty_patch": True, "track": "basic",
             "patch_bytes": 0, "size_vs_gold": None, "changed_lines": None, "lint_new_errors": None,
             "suppressions_added": None, "agent_label": "m-1", "source_set": "f" * 64, **counted,
             "not_counted_reason": None},
            {"grade_id": "g3", "item_id": "nv", "revision": "r2", "source_kind": "attempt",
             "verdict": "resolved",
             "is_resolved": True, "is_empty_patch": False, "track": "spec", "patch_bytes": 100,
             "size_vs_gold": 0.5, "changed_lines": 4, "lint_new_errors": 1, "suppressions_added": 0,
             "agent_label": "a1", "source_set": "c1", "item_in_main_set": False, "is_current_revision": True,
             "counts_in_rates": False, "not_counted_reason": "item not usable: not validated"},
        ],
        columns=run_columns,
    )  # fmt: skip
    half = 1.96 * math.sqrt(0.0)
    rates = pd.DataFrame(
        [
            ["a1", "basic", "attempt", "c1", 1, 1, 1.0, half, 1, 1, 0, 0, 0, 0, 0, 0, 1],
            ["m-1", "basic", "predictions", "f" * 64, 1, 0, 0.0, half, 1, 1, 1, 0, 0, 0, 0, 0, 1],
        ],
        columns=[
            "agent_label", "track", "source_kind", "source_set", "n", "resolved", "rate", "half_width_95",
            "items", "prs", "unresolved", "patch_apply_failed", "test_patch_conflict", "no_report",
            "resolved_after_rerun", "env_setup_failed", "graded",
        ],
    )  # fmt: skip
    return {"repair_item_validation": items, "repair_runs": runs, "repair_rates": rates}


def judging_frames() -> dict[str, pd.DataFrame]:
    """The judging marts (issue #14), consistent: hints of a board attempt (every hint measured), a
    repair attempt (graded apart), an invalid verdict attempt and one without a loaded record; two
    stability groups with exact fractions and one beyond HUGEINT; three change similarity groups;
    three judge panels (judges disagree, a halfway median, insufficient judges) and a person's review
    of each (judges higher, person higher, not scored)."""
    hint_columns = [
        "attempt_id", "cycle_id", "purpose", "agent_id", "project_id", "task_id", "task_version",
        "task_revision", "task_revisions", "needles_score", "needles_status", "needles_found",
        "needles_missing", "rendering_score", "rendering_status", "rendering_page_count", "rendering_pages",
        "agent_logic_score", "agent_logic_status", "agent_logic_succeeded", "agent_logic_in_order",
        "agent_logic_steps", "has_run_record", "end_reason", "is_valid", "invalid_reason", "outcome",
        "loaded_at",
    ]  # fmt: skip
    page = '[{"path": "index.html", "outcome": "console_errors"}]'
    loaded = pd.Timestamp("2026-12-01 08:00:00")
    hints = pd.DataFrame(
        [
            ["h-board", "c1", "board", "a1", "p1", "install_and_run", "1", "r" * 64, 2,
             0.5, "measured", '["wav"]', '["frames"]', 0.5, "measured", 1, page,
             1.0, "measured", True, True, '["read", "exec"]', True, "completed", True, None, "pass_full",
             loaded],
            ["h-repair", "c1", "repair", "a1", "p1", "repair", "1", "s" * 64, 1,
             None, "not_applicable", "[]", "[]", None, "not_applicable", 0, "[]",
             0.5, "measured", True, False, '["exec", "read"]', True, "timeout", None, None, None, loaded],
            ["h-invalid", "c1", "verdict", "a2", "p2", "install_and_run", "1", "r" * 64, 1,
             0.0, "measured", "[]", '["frames"]', None, "unavailable", 0, "[]",
             0.0, "measured", False, None, "[]", True, "harness_error", False, "harness_error", "invalid",
             loaded],
            ["h-no-record", "c1", "board", "a2", "p1", "install_and_run", "1", "r" * 64, 1,
             1.0, "measured", '["wav", "frames"]', "[]", 0.0, "measured", 2, page + page,
             None, "unavailable", True, None, "[]", False, None, None, None, None, loaded],
        ],
        columns=hint_columns,
    )  # fmt: skip
    environment = f"2 | scaffold {'5' * 64} | sha256:{'6' * 64} | instructions {'7' * 64}"
    stability_columns = [
        "agent_id", "project_id", "environment", "harness_edition", "scaffold_sha256", "image_digest",
        "instructions_sha256", "attempts", "cycles", "mean_numerator", "mean_denominator", "mean_score",
        "variance_numerator", "variance_denominator", "variance", "min_score", "max_score", "is_exact",
    ]  # fmt: skip
    stability = pd.DataFrame(
        [
            # scores 100, 80, 60: mean 80, sample variance 400
            ["a1", "p1", environment, "2", "5" * 64, "sha256:" + "6" * 64, "7" * 64, 3, 2,
             80, 1, 80.0, 400, 1, 400.0, 60.0, 100.0, True],
            # scores 502/7 and 100: mean 601/7, variance 19602/49 (n = 2: the spread's bound exactly)
            ["a1", "p2", environment, "2", "5" * 64, "sha256:" + "6" * 64, "7" * 64, 2, 1,
             601, 7, 601 / 7, 19602, 49, 19602 / 49, 502 / 7, 100.0, True],
            # beyond HUGEINT's reach: DOUBLE figures only
            ["a1", "p3", "2 | scaffold s | no image | instructions x", "2", "5" * 64, None, "7" * 64, 2, 1,
             None, None, 0.0, None, None, 0.0, 0.0, 0.0, False],
        ],
        columns=stability_columns,
    )  # fmt: skip
    similarity = pd.DataFrame(
        [
            ["repair", "a1", "p1", "i1", "9" * 64, environment, "indel_nontest_lines/1", 3, 3,
             (1 + 0.5 + 0.25) / 3, 0.25, 1.0, 1],
            ["install_and_run", "a1", "p1", None, None, environment, "indel_nontest_lines/1", 2, 1,
             0.4, 0.4, 0.4, 0],
            ["install_and_run", "a2", "p1", None, None, environment, "indel_nontest_lines/1", 2, 1,
             1.0, 1.0, 1.0, 1],
        ],
        columns=list(suites.SIMILARITY_GRAIN) + [
            "attempts", "pairs", "mean_similarity", "min_similarity", "max_similarity", "identical_pairs",
        ],
    )  # fmt: skip
    panel = pd.DataFrame(
        [
            # three valid judges, 2/2/0 and 2/1/0: medians 2 and 1, one judge off the rails
            ["j-disagree", "c1", "install_and_run", 3, 3, "judged", 2.0, 1.0, 3.0, 4, 2, 2, True, 0],
            # two valid (the halfway value) and one refused
            ["j-halfway", "c1", "repair", 3, 2, "judged", 1.5, 2.0, 3.5, 4, 1, 0, False, 1],
            # one valid judge: no figures
            ["j-insufficient", "c1", "install_and_run", 3, 1, "insufficient_judges", None, None, None, 4,
             None, None, False, 1],
        ],
        columns=[
            "attempt_id", "cycle_id", "task_id", "judges", "valid_judges", "status", "code_structure_median",
            "logic_correctness_median", "judges_total", "judges_total_max", "code_structure_spread",
            "logic_correctness_spread", "judges_disagree", "refused_judges",
        ],
    )  # fmt: skip
    decided = pd.Timestamp("2026-12-02 09:00:00")
    divergence = pd.DataFrame(
        [
            # person 1/2 against medians 2.0/1.0: gaps -1 and +1, the tie goes to code_structure
            ["j-disagree", "c1", "board", "a1", "p1", "r" * 64, 2, "promote", "ana", decided, "clean", 1,
             1, 2, "judged", 2.0, 1.0, 3.0, -1.0, 1.0, -1.0, "judges_higher", 0.0, "pass", False],
            # person 2/2 against 2.0/1.5: +0.5 on logic; a provisional pass rejected
            ["j-halfway", "c1", "repair", "a1", "p1", "s" * 64, 1, "reject", "bo", decided, "copied", 2,
             2, 2, "judged", 2.0, 1.5, 3.5, 0.0, 0.5, 0.5, "person_higher", 0.5, "pass", True],
            # not scored by the person, no judges' figures, no note (optional on the review form)
            ["j-insufficient", "c1", "board", "a2", "p1", "r" * 64, 0, "reject", "ana", decided, None, 1,
             None, None, "insufficient_judges", None, None, None, None, None, None, "not_scored", None,
             "fail", False],
        ],
        columns=[
            "attempt_id", "cycle_id", "purpose", "agent_id", "project_id", "task_revision", "look",
            "decision", "decided_by", "decided_at", "note", "reviews", "person_code_structure",
            "person_logic_correctness", "judges_status", "code_structure_median", "logic_correctness_median",
            "judges_total",
            "code_structure_gap", "logic_correctness_gap", "divergence", "divergence_direction", "total_gap",
            "provisional_result", "decision_disagrees",
        ],
    )  # fmt: skip
    return {
        "attempt_hints": hints,
        "stability": stability,
        "change_similarity": similarity,
        "judge_panel": panel,
        "judging_review_divergence": divergence,
    }


ENV_COLUMNS = [
    "cycle_id", "valid_attempts", "attempts_with_environment", "attempts_without_environment",
    "harness_edition", "runner_images", "environments", "is_uniform", "disagrees_on",
]  # fmt: skip


def test_good_frames_pass() -> None:
    from test_paired_expectations import frames as issue31_frames  # deferred: it imports this module

    report = validate_frames({**good_frames(), **judging_frames(), **issue31_frames()})
    assert report.success, report.summary()
    assert set(report.tables) == set(suites.REQUIRED_TABLES) | set(suites.OPTIONAL_TABLES)
    assert all(t.present and t.evaluated > 0 for t in report.tables.values())
    # Every spec of the contract tables ran (none skipped for lack of a column).
    assert report.tables["hardware_estimates"].skipped == []
    assert "expectations passed" in report.summary()


def _set(table: str, row: int, column: str, value) -> Callable[[dict], None]:
    def mutate(frames: dict) -> None:
        frames[table].loc[row, column] = value

    return mutate


def _dup(table: str, row: int) -> Callable[[dict], None]:
    def mutate(frames: dict) -> None:
        frames[table] = pd.concat([frames[table], frames[table].iloc[[row]]], ignore_index=True)

    return mutate


def _add(table: str, column: str, values: list) -> Callable[[dict], None]:
    """Give a mart one of the columns our marts add beyond the contract (its checks then apply)."""

    def mutate(frames: dict) -> None:
        frames[table][column] = pd.Series(values, dtype=object)

    return mutate


def _many(*mutations: Callable[[dict], None]) -> Callable[[dict], None]:
    def mutate(frames: dict) -> None:
        for m in mutations:
            m(frames)

    return mutate


UNIQUE = "expect_column_values_to_be_unique"
COMPOUND = "expect_compound_columns_to_be_unique"
NOT_NULL = "expect_column_values_to_not_be_null"
BETWEEN = "expect_column_values_to_be_between"
IN_SET = "expect_column_values_to_be_in_set"  # also the pandas check columns (expected true)
ROW_COUNT = "expect_table_row_count_to_equal"
A = "attempt_scores"
E = "cycle_environments"

BREAKAGES = [
    # (id, mutation, table, expectation, words that must be in the message)
    ("dup-attempt", _dup(A, 0), A, UNIQUE, ["a1-p1-1"]),
    ("null-key", _set(A, 1, "agent_id", None), A,
     NOT_NULL, ["agent_id"]),
    ("score-101", _many(_set(A, 0, "score", 101.0), _set(A, 0, "depth_points", 21)),
     A, BETWEEN, ["score", "101", "a1-p1-1"]),
    ("bad-outcome", _set(A, 2, "outcome", "passed"), A,
     IN_SET, ["outcome", "passed"]),
    ("depth-15", _set(A, 1, "depth_points", 15), A,
     IN_SET, ["depth_points"]),
    ("install-10", _set(A, 1, "install_points", 10), A,
     IN_SET, ["install_points"]),
    ("recovery-25", _set(A, 1, "recovery_points", 25.0), A,
     BETWEEN, ["recovery_points"]),
    ("invalid-scored", _set(A, 3, "score", 0.0), A,
     IN_SET, ["check_invalid_unscored", "a1-p1-4"]),
    ("invalid-outcome", _set(A, 3, "outcome", "fail"), A,
     IN_SET, ["check_invalid_unscored"]),
    ("invalid-outcome-null", _set(A, 3, "outcome", None), A,
     NOT_NULL, ["outcome", "a1-p1-4"]),
    ("valid-called-invalid", _set(A, 2, "outcome", "invalid"), A,
     IN_SET, ["check_valid_scored", "a1-p1-3"]),
    ("score-not-sum", _set(A, 0, "score", 99.0), A,
     IN_SET, ["check_score_is_sum", "a1-p1-1"]),
    ("timeout-points", _many(_set(A, 4, "install_points", 30), _set(A, 4, "score", 30.0)),
     A, IN_SET, ["check_timeout_zero", "a2-p1-1"]),
    ("four-valid", _set("pair_sets", 0, "valid_attempts", 4), "pair_sets", BETWEEN,
     ["valid_attempts", "more than three"]),
    ("dup-set", _dup("pair_sets", 1), "pair_sets", COMPOUND,
     ["cycle_id", "agent_id", "project_id"]),
    ("low-above-middle", _set("pair_sets", 0, "low_score", 95.0), "pair_sets", IN_SET,
     ["check_scores_ordered"]),
    ("unstable-flag", _set("pair_sets", 0, "is_unstable", True), "pair_sets", IN_SET,
     ["check_unstable_is_spread"]),
    ("negative-spread", _set("pair_sets", 0, "spread_pct", -1.0), "pair_sets", BETWEEN,
     ["spread_pct"]),
    ("dup-set-null-in-key", _many(_set("pair_sets", 1, "project_id", None), _dup("pair_sets", 1)),
     "pair_sets", COMPOUND, ["cycle_id", "agent_id", "project_id", "2 unexpected"]),
    ("dup-review", _dup("project_review", 0), "project_review", COMPOUND,
     ["project_id"]),
    ("bad-verdict", _set("project_verdicts", 0, "verdict", "broken"), "project_verdicts",
     IN_SET, ["verdict", "broken"]),
    ("dup-verdict", _dup("project_verdicts", 0), "project_verdicts", COMPOUND,
     ["commit_sha"]),
    ("runs-no-agent", _set("project_verdicts", 0, "verified_by_agent", None), "project_verdicts",
     IN_SET, ["check_pass_names_agent"]),
    ("cnv-one-attempt", _set("project_verdicts", 2, "complete_attempts", 1), "project_verdicts",
     IN_SET, ["check_could_not_verify_two"]),
    ("dup-board", _dup("board", 0), "board", COMPOUND, ["agent_id"]),
    ("rank-order", _many(_set("board", 0, "rank", 2), _set("board", 1, "rank", 1)), "board",
     IN_SET, ["check_rank_follows_score"]),
    ("rank-0", _set("board", 0, "rank", 0), "board", BETWEEN, ["rank"]),
    ("rank-without-score", _set("board", 3, "rank", 3), "board", IN_SET,
     ["check_rank_null_iff_no_score", "a3"]),
    ("score-without-rank", _set("board", 1, "rank", None), "board", IN_SET,
     ["check_rank_null_iff_no_score"]),
    ("pass-rate-1.5", _set("board", 0, "pass_rate", 1.5), "board", BETWEEN,
     ["pass_rate"]),
    ("four-tiers", lambda f: f.__setitem__("hardware_tiers", f["hardware_tiers"].iloc[:4]), "hardware_tiers",
     ROW_COUNT, ["observed 4"]),
    ("bad-decision", _set("project_review", 1, "decision", "agent_at_fault"), "project_review", IN_SET,
     ["decision", "agent_at_fault"]),
    ("dup-machine", _dup("hardware_estimates", 0), "hardware_estimates", UNIQUE, ["machine_id"]),
    ("dup-bound", _dup("hardware_speed_bounds", 1), "hardware_speed_bounds", COMPOUND, ["m1"]),
    ("negative-bound", _set("hardware_speed_bounds", 0, "tokens_per_s_max", -1.0), "hardware_speed_bounds",
     BETWEEN, ["tokens_per_s_max"]),
    ("bad-status", _set("hardware_estimates", 0, "status", "guess"), "hardware_estimates",
     IN_SET, ["status", "guess"]),
    ("dup-edition", _dup("methodology_editions", 0), "methodology_editions", UNIQUE,
     ["version"]),
    # columns beyond the contract, checked whenever a mart has them (always in a dbt build)
    ("bad-review-status", _add("project_review", "review_status", ["not_under_review", "pending"]),
     "project_review", IN_SET, ["review_status", "pending"]),
    ("null-excluded", _add("project_review", "excluded_from_board", [False, None]), "project_review",
     NOT_NULL, ["excluded_from_board"]),
    ("dup-display-position", _add("board", "display_position", [1, 2, 2, 4]), "board", COMPOUND,
     ["display_position"]),
    ("null-demo-flag", _add("board", "is_demo_cycle", [False, None, False, False]), "board", NOT_NULL,
     ["is_demo_cycle"]),
    ("dup-tier-order", _add("hardware_tiers", "tier_order", [1, 2, 3, 4, 4]), "hardware_tiers", UNIQUE,
     ["tier_order"]),
    ("null-weights", _add("hardware_tiers", "weights_gb", [4.9, None, 19.6, 42.8, 73.4]), "hardware_tiers",
     NOT_NULL, ["weights_gb"]),
    ("null-machine", _set("hardware_estimates", 1, "machine_id", None), "hardware_estimates", NOT_NULL,
     ["machine_id"]),
    ("null-bound-tier", _set("hardware_speed_bounds", 2, "tier", None), "hardware_speed_bounds", NOT_NULL,
     ["tier"]),
    ("null-written-on", _add("methodology_editions", "written_on", [None] + ["2026-01-01"] * 10),
     "methodology_editions", NOT_NULL, ["written_on"]),
    ("scaled-budget-above-budget", _many(_add(A, "budget_seconds", [5400] * 7),
                                         _add(A, "effective_budget_seconds", [15] * 6 + [6000])),
     A, IN_SET, ["check_effective_budget_within_budget", "v-p2-1"]),
    ("null-effective-budget", _many(_add(A, "budget_seconds", [5400] * 7),
                                    _add(A, "effective_budget_seconds", [15] * 6 + [None])),
     A, NOT_NULL, ["effective_budget_seconds", "v-p2-1"]),
    ("negative-duration", _add(A, "duration_seconds", [1.0] * 6 + [-2.0]), A, BETWEEN,
     ["duration_seconds", "v-p2-1"]),
    ("incomplete-set-names-a-middle", _add("pair_sets", "middle_attempt_id", ["m1", "m2", "m3", "m4"]),
     "pair_sets", IN_SET, ["check_middle_named_iff_complete", "a2"]),
    ("complete-set-names-no-middle", _add("pair_sets", "middle_attempt_id", ["m1", None, None, "m4"]),
     "pair_sets", IN_SET, ["check_middle_named_iff_complete", "a3"]),
    # one harness per cycle (issue #15): a cycle whose valid attempts disagree is named with what differs
    ("mixed-image-digests", _many(_set(E, 0, "runner_images", 2), _set(E, 0, "environments", 2),
                                  _set(E, 0, "is_uniform", False),
                                  _set(E, 0, "disagrees_on", "runner_image")),
     E, IN_SET, ["is_uniform", "one environment", "'cycle_id': 'c1'", "'disagrees_on': 'runner_image'"]),
    ("mixed-instructions", _many(_set(E, 0, "environments", 2), _set(E, 0, "is_uniform", False),
                                 _set(E, 0, "disagrees_on", "instructions")),
     E, IN_SET, ["is_uniform", "'cycle_id': 'c1'", "'disagrees_on': 'instructions'"]),
    ("uniform-but-two-environments", _set(E, 0, "environments", 2), E, IN_SET,
     ["check_uniform_is_one_environment", "c1"]),
    ("environment-counts", _set(E, 1, "attempts_without_environment", 3), E, IN_SET,
     ["check_environment_counts_add_up", "c0"]),
    ("dup-cycle-environment", _dup(E, 0), E, UNIQUE, ["cycle_id"]),
    ("dup-harness-edition", _dup("harness_editions", 0), "harness_editions", UNIQUE, ["edition"]),
    ("no-harness-edition", lambda f: f.__setitem__("harness_editions", f["harness_editions"].iloc[:0]),
     "harness_editions", "expect_table_row_count_to_be_between", ["observed 0"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "table", "expectation", "words"),
    [pytest.param(*b[1:], id=b[0]) for b in BREAKAGES],
)
def test_each_breakage_is_named(mutate, table, expectation, words) -> None:
    frames = good_frames()
    mutate(frames)
    report = validate_frames(frames, only=[table])  # suites are per table
    assert list(report.tables) == [table]
    assert not report.success
    failing_tables = {f.table for f in report.failures}
    assert failing_tables == {table}, report.summary()
    messages = [m for m in report.failure_messages() if expectation in m]
    assert messages, report.summary()
    assert any(all(w in m for w in words) for m in messages), messages
    assert all(m.startswith(f"marts.{table}: ") for m in report.failure_messages())
    failure = next(f for f in report.failures if f.expectation == expectation)
    assert failure.kwargs and failure.observed and failure.why


def test_missing_required_table_fails_optional_is_skipped() -> None:
    from test_paired_expectations import frames as issue31_frames  # deferred: it imports this module

    frames = {**good_frames(), **judging_frames(), **issue31_frames()}
    del frames["board"]
    del frames["hardware_speed_bounds"]
    report = validate_frames(frames)
    assert not report.success
    assert report.failure_messages() == [
        "marts.board: table_exists() failed [every mart of the contract is built]: could not be evaluated: "
        "marts.board does not exist"
    ]
    assert report.skipped_tables == ["hardware_speed_bounds"]
    assert "marts.hardware_speed_bounds: skipped (optional table" in report.summary()


def test_missing_column_is_named() -> None:
    frames = good_frames()
    frames["board"] = frames["board"].drop(columns=["board_score"])
    report = validate_frames(frames)
    assert not report.success
    text = "\n".join(report.failure_messages())
    assert "marts.board" in text and "board_score" in text


def test_columns_outside_the_contract_are_skipped_and_reported() -> None:
    frames = good_frames()
    frames["hardware_estimates"] = frames["hardware_estimates"].drop(columns=["machine_id"])
    report = validate_frames(frames)
    assert report.success, report.summary()
    skipped = report.tables["hardware_estimates"].skipped
    assert len(skipped) == 2 and all("machine_id" in line for line in skipped)  # unique, not null
    assert "marts.hardware_estimates: ok (3 expectations on 2 rows; 2 not applicable)" in report.summary()


def write_marts(db_path: Path, frames: dict[str, pd.DataFrame]) -> None:
    from argusic.warehouse.schema import RAW_DDL

    with duckdb.connect(str(db_path)) as con:
        con.execute(RAW_DDL)  # marts never exist without the raw layer they are built from
        con.execute("CREATE SCHEMA IF NOT EXISTS marts")
        for name, df in frames.items():
            con.register("frame", df)
            con.execute(f"CREATE OR REPLACE TABLE marts.{name} AS SELECT * FROM frame")
            con.unregister("frame")


def test_validate_warehouse_reads_duckdb(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    frames = {**good_frames(), **judging_frames()}
    write_marts(db, frames)
    assert validate_warehouse(db).success
    frames["attempt_scores"].loc[0, "score"] = 101.0
    frames["attempt_scores"].loc[0, "depth_points"] = 21
    write_marts(db, {"attempt_scores": frames["attempt_scores"]})
    report = validate_warehouse(db)
    assert any(
        "marts.attempt_scores: expect_column_values_to_be_between(column='score'" in m
        for m in report.failure_messages()
    )


def test_publish_board_writes_json_atomically(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    write_marts(db, good_frames())
    path = publish_board("c1", tmp_path / "out", db_path=db)
    assert path == tmp_path / "out" / "c1" / "board.json"
    data = json.loads(path.read_text())
    assert data["cycle_id"] == "c1"
    assert [r["configuration"]["agent_id"] for r in data["rows"]] == ["a1", "a2", "a4", "a3"]  # unranked last
    assert data["rows"][-1]["rank"] is None and data["rows"][-1]["board_score"] is None
    # no temporary left behind; the per-attempt trace is published beside the board
    assert sorted(p.name for p in path.parent.iterdir()) == ["attempts.json", "board.json"]
    assert data["attempts_file"] == "attempts.json" and "published_at" not in data


def test_publish_board_blocked_by_failed_expectation(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    frames = good_frames()
    frames["board"].loc[0, "rank"] = 3
    write_marts(db, frames)
    with pytest.raises(PublicationBlocked, match=r"marts\.board: .*check_rank_follows_score"):
        publish_board("c1", tmp_path / "out", db_path=db)
    assert not (tmp_path / "out" / "c1" / "board.json").exists()


def test_publish_board_unknown_cycle(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    write_marts(db, good_frames())
    with pytest.raises(PublicationBlocked, match="no board rows for cycle 'c9'"):
        publish_board("c9", tmp_path / "out", db_path=db)


def test_build_holds_writer_lock_and_blocks_on_expectations(tmp_path: Path, monkeypatch) -> None:
    """Without dbt: the runner is replaced; the lock must be held while it runs."""
    db = tmp_path / "w.duckdb"
    seen = {}

    def fake_dbt(
        project_dir: Path,
        db_path: Path,
        quiet: bool,
        include_unit_tests: bool = False,
        manifest=None,
        exclude=(),
        full_refresh: bool = True,
    ) -> list[dbt_build.NodeResult]:
        with open(db_path.with_suffix(db_path.suffix + ".lock"), "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                seen["locked"] = False
            except BlockingIOError:
                seen["locked"] = True
        frames = good_frames()
        frames["pair_sets"].loc[0, "valid_attempts"] = 4
        write_marts(db_path, frames)
        return [dbt_build.NodeResult("model.x.pair_sets", "success", "")]

    monkeypatch.setattr(dbt_build, "_run_dbt", fake_dbt)
    with pytest.raises(PublicationBlocked) as err:
        build_warehouse(db, project_dir=tmp_path)
    assert seen["locked"] is True
    assert "marts.pair_sets: expect_column_values_to_be_between(column='valid_attempts'" in str(err.value)


# ---------------------------------------------------------------------------------------------------
# A stand-in dbt project (the real one is written elsewhere): seeds for the marts, one model.
# ---------------------------------------------------------------------------------------------------


def standin_project(root: Path, frames: dict[str, pd.DataFrame], board_sql: str | None = None) -> Path:
    project = root / "standin"
    (project / "seeds").mkdir(parents=True)
    (project / "models").mkdir()
    (project / "dbt_project.yml").write_text(
        textwrap.dedent(
            """
            name: standin
            version: "1.0.0"
            config-version: 2
            profile: argusic
            seeds:
              standin:
                +schema: marts
            models:
              standin:
                +schema: marts
                +materialized: table
            """
        )
    )
    (project / "profiles.yml").write_text(
        textwrap.dedent(
            """
            argusic:
              target: dev
              outputs:
                dev:
                  type: duckdb
                  path: "{{ env_var('ARGUSIC_WAREHOUSE') }}"
                  schema: main
                  threads: 1
            """
        )
    )
    (project / "macros").mkdir()
    (project / "macros" / "schema.sql").write_text(
        "{% macro generate_schema_name(custom_schema_name, node) -%}"
        "{{ custom_schema_name | trim if custom_schema_name else target.schema }}"
        "{%- endmacro %}"
    )
    for name, df in frames.items():
        if name == "board":
            df.to_csv(project / "seeds" / "board_seed.csv", index=False)
        else:
            df.to_csv(project / "seeds" / f"{name}.csv", index=False)
    (project / "models" / "board.sql").write_text(board_sql or "select * from {{ ref('board_seed') }}")
    return project


@pytest.mark.slow
def test_build_warehouse_runs_dbt_and_publishes(tmp_path: Path) -> None:
    from argusic.warehouse.schema import RAW_DDL

    db = tmp_path / "w.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(RAW_DDL)  # what ingest leaves behind: publication traces attempts to it
    project = standin_project(tmp_path, good_frames())
    result = build_warehouse(db, project_dir=project, quiet=True)
    assert isinstance(result, BuildResult)
    assert result.validation.success
    assert "model.standin.board" in [n.unique_id for n in result.nodes]
    out = publish_board("c1", tmp_path / "out", build_result=result)
    assert json.loads(out.read_text())["rows"][0]["configuration"]["agent_id"] == "a1"
    with pytest.raises(ValueError, match="build_result is for"):
        publish_board("c1", tmp_path / "out", db_path=tmp_path / "other.duckdb", build_result=result)


@pytest.mark.slow
def test_build_warehouse_blocks_on_dbt_failure(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    project = standin_project(tmp_path, good_frames(), board_sql="select * from no_such_table")
    with pytest.raises(PublicationBlocked, match=r"dbt build failed: model\.standin\.board \(error\)"):
        build_warehouse(db, project_dir=project, quiet=True)


@pytest.mark.slow
def test_build_warehouse_blocks_on_expectation_after_dbt(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    frames = good_frames()
    frames["attempt_scores"] = pd.concat([frames["attempt_scores"], frames["attempt_scores"].iloc[[0]]])
    project = standin_project(tmp_path, frames)
    with pytest.raises(PublicationBlocked, match=r"marts\.attempt_scores: expect_column_values_to_be_unique"):
        build_warehouse(db, project_dir=project, quiet=True)


@pytest.mark.slow
def test_importing_gx_stays_quiet_under_a_configured_root_logger() -> None:
    code = (
        "import logging; logging.basicConfig(level=logging.INFO)\n"
        "from argusic.warehouse.expectations.validate import validate_frames\n"
        "import pandas as pd\n"
        "r = validate_frames({'hardware_speed_bounds': pd.DataFrame({'x': [1]})})\n"
        "print('tables', len(r.tables))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    every = len(suites.REQUIRED_TABLES) + len(suites.OPTIONAL_TABLES)  # 17 with the repair and judging marts
    assert f"tables {every}" in proc.stdout
    assert "Skipping registering function" not in proc.stderr + proc.stdout
    assert "Calculating Metrics" not in proc.stderr + proc.stdout


@pytest.mark.slow
def test_build_warehouse_blocks_on_failed_dbt_test(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    project = standin_project(tmp_path, good_frames())
    (project / "models" / "schema.yml").write_text(
        "version: 2\nmodels:\n  - name: board\n    columns:\n"
        "      - name: rank\n        data_tests: [not_null]\n"
    )
    with pytest.raises(
        PublicationBlocked, match=r"dbt build failed: test\.standin\.not_null_board_rank\S* \(fail\)"
    ):
        build_warehouse(db, project_dir=project, quiet=True)


# ---------------------------------------------------------------------------------------------------
# GX judges a reduced frame: only the rows that could break a row-local expectation
# ---------------------------------------------------------------------------------------------------


def _big_attempts(n: int = 5000) -> pd.DataFrame:
    base = good_frames()["attempt_scores"].iloc[[0]]
    df = pd.concat([base] * n, ignore_index=True)
    df["attempt_id"] = [f"a-{i}" for i in range(n)]
    return df


def _frames_seen_by_gx(monkeypatch) -> list[tuple[int, bool]]:
    seen: list[tuple[int, bool]] = []
    original = validate._table_frame

    def spy(*args, **kwargs):
        frame, rows, errors, reduced = original(*args, **kwargs)
        seen.append((len(frame), reduced))
        return frame, rows, errors, reduced

    monkeypatch.setattr(validate, "_table_frame", spy)
    return seen


def test_reduced_frame_counts_every_broken_row_of_a_large_table(monkeypatch) -> None:
    seen = _frames_seen_by_gx(monkeypatch)
    df = _big_attempts()
    assert validate_frames({"attempt_scores": df}, only=["attempt_scores"]).success
    assert seen[-1] == (0, True)  # nothing could break: GX judges an empty frame
    df.loc[[10, 20, 30], "score"] = 99.0  # not the sum of the points
    df.loc[40, "outcome"] = "passed"
    df.loc[[50, 60], "attempt_id"] = "a-1"  # three rows share a-1
    report = validate_frames({"attempt_scores": df}, only=["attempt_scores"])
    assert not report.success
    assert report.tables["attempt_scores"].rows == 5000
    by_kind = {(f.expectation, f.kwargs.get("column")): f.observed for f in report.failures}
    assert by_kind[(IN_SET, "check_score_is_sum")]["unexpected_count"] == 3
    assert by_kind[(IN_SET, "outcome")]["unexpected_count"] == 1
    assert by_kind[(IN_SET, "outcome")]["sample"] == ["passed"]
    assert by_kind[(UNIQUE, "attempt_id")]["unexpected_count"] == 3
    assert len(report.failures) == 3, report.summary()
    assert seen[-1] == (7, True)  # 3 + 1 + 3 suspect rows of 5,000


def test_gx_is_not_asked_when_no_row_could_break_an_expectation(monkeypatch) -> None:
    """Every expectation row-local and no suspect row: every one holds without GX (as GX finds on the
    empty frame); one suspect row and GX judges the suite; an absent column still goes to GX."""
    asked: list[str] = []
    original = validate._GXObjects.definition

    def spy(self, context, table, applied):
        asked.append(table)
        return original(self, context, table, applied)

    monkeypatch.setattr(validate._GXObjects, "definition", spy)
    df = _big_attempts(200)
    report = validate_frames({"attempt_scores": df}, only=["attempt_scores"])
    assert report.success and asked == []
    applicable = [s for s in suites.SUITES["attempt_scores"] if set(s["when_columns"]) <= set(df.columns)]
    assert report.tables["attempt_scores"].evaluated == len(applicable)
    df.loc[7, "outcome"] = "passed"
    report = validate_frames({"attempt_scores": df}, only=["attempt_scores"])
    assert not report.success and asked == ["attempt_scores"]
    assert "expect_column_values_to_be_in_set(column='outcome'" in report.summary()
    report = validate_frames(
        {"attempt_scores": _big_attempts(200).drop(columns=["purpose"])}, only=["attempt_scores"]
    )
    assert not report.success and asked == ["attempt_scores", "attempt_scores"]


def test_table_level_expectations_see_every_row(monkeypatch) -> None:
    seen = _frames_seen_by_gx(monkeypatch)
    report = validate_frames(good_frames(), only=["hardware_tiers"])
    assert report.success
    assert seen == [(5, False)]  # the row count is judged on the whole table


def test_gx_objects_are_reused_then_renewed(monkeypatch) -> None:
    """A long-lived process reuses GX's context and definitions, and starts afresh every
    RENEW_AFTER validations (GX keeps each run's result in its in-memory store)."""
    monkeypatch.setattr(validate, "_GX_OBJECTS", validate._GXObjects())
    monkeypatch.setattr(validate._GXObjects, "RENEW_AFTER", 2)
    objects = validate._GX_OBJECTS
    frames = {"board": good_frames()["board"]}
    seen = []
    for _ in range(3):
        assert validate_frames(frames, only=["board"]).success
        seen.append((objects._context, dict(objects._definitions)))
    assert seen[0][0] is seen[1][0] and seen[0][1] == seen[1][1]  # reused
    assert seen[2][0] is not seen[1][0]  # renewed after two validations
    broken = good_frames()["board"]
    broken.loc[0, "rank"] = 0
    report = validate_frames({"board": broken}, only=["board"])  # a reused definition still judges
    assert not report.success and "expect_column_values_to_be_between(column='rank'" in report.summary()


def _environment(digest: str, instructions: str = "f" * 64) -> dict:
    return {
        "harness_edition": "1",
        "scaffold_sha256": "e" * 64,
        "images": [{"role": "runner", "reference": "argusic-runner:bookworm", "digest": "sha256:" + digest}],
        "instructions": {"version": "1", "sha256": instructions},
        "limits": {"cpus": 2.0, "memory_bytes": 2**32, "pids": 512, "disk_bytes": 2**32, "network": "none",
                   "budget_seconds": 5400},
        "display": {"kind": "xvfb", "width": 1280, "height": 800, "depth": 24},
    }  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("second", "disagrees_on"),
    [
        pytest.param(_environment("2" * 64), "runner_image", id="image-rebuilt-mid-cycle"),
        pytest.param(
            _environment("1" * 64, instructions="9" * 64), "instructions", id="instructions-changed"
        ),
    ],
)
def test_argusic_build_blocks_a_cycle_whose_attempts_ran_under_two_environments(
    isolated: Path, record_doc: dict, second: dict, disagrees_on: str
) -> None:
    """`argusic ingest` then `argusic build` on the real dbt project: a cycle whose two valid attempts
    ran in one image (and one set of instructions) builds and is uniform; a third attempt under a
    rebuilt image, or under changed instructions, blocks the build, naming the cycle and the part."""
    from argusic.cli.main import app
    from conftest import write_record
    from typer.testing import CliRunner

    cli = CliRunner()
    runs = isolated / "runs" / "2026-12"
    for no in (1, 2):
        doc = dict(record_doc, attempt_id=f"2026-12.board.readme-runner.wavgen.a{no}", attempt_no=no)
        write_record(runs / f"a{no}", dict(doc, environment=_environment("1" * 64)))
    for command in (["ingest", str(runs)], ["build"]):
        result = cli.invoke(app, command)
        assert result.exit_code == 0, result.output
    with duckdb.connect(str(isolated / "warehouse" / "argusic.duckdb"), read_only=True) as con:
        row = con.execute(
            "SELECT is_uniform, environments, harness_edition FROM marts.cycle_environments"
        ).fetchone()
        board = con.execute("SELECT DISTINCT harness_edition FROM marts.board").fetchall()
    assert row == (True, 1, "1") and board == [("1",)]

    doc = dict(record_doc, attempt_id="2026-12.board.readme-runner.wavgen.a3", attempt_no=3)
    write_record(runs / "a3", dict(doc, environment=second))
    assert cli.invoke(app, ["ingest", str(runs)]).exit_code == 0
    result = cli.invoke(app, ["build"])
    assert result.exit_code != 0
    output = " ".join(result.output.split())
    assert "publication blocked" in output and "marts.cycle_environments" in output, output
    assert f"{{'cycle_id': '2026-12', 'disagrees_on': '{disagrees_on}'}}" in output, output
