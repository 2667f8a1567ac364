"""Expectations (Great Expectations, GX Core 1.x) on the warehouse marts: the gate before publication.

The suites are data: ``SUITES`` maps each mart of the contract (DESIGN.md, schema ``marts``) to a list
of expectation specs, each a dict with the GX expectation type, its keyword arguments and the rule it
guards (``why``). They are the one place where the marts' column checks live (unique keys, not null,
allowed values, ranges): dbt's data tests guard the inputs (source, staging, seeds) and the exact-
fraction invariants, and neither repeats the other. Rules that involve several columns or rows (ranks
ordered by score, null exactly when…) are computed as boolean check columns (``CHECKS``) and expected
to be true.

GX has no DuckDB datasource: each mart is read with a read-only DuckDB connection into pandas and
validated through GX's pandas route (ephemeral context → pandas data source → dataframe asset →
whole-dataframe batch definition → suite → ``ValidationDefinition.run``).

Importing ``great_expectations`` is slow (~6 s) and, under a configured root logger (Airflow's
structlog), prints hundreds of "Skipping registering function" lines: it is imported lazily and its
loggers are set to WARNING before and after the import.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

import pandas as pd

SCHEMA = "marts"

# ---------------------------------------------------------------------------------------------------
# Suites as data
# ---------------------------------------------------------------------------------------------------

OUTCOMES = ["pass_full", "pass_mock", "fail", "timeout", "invalid"]
VERDICTS = ["runs", "runs_with_mocks", "could_not_verify", "not_yet_verified"]
ESTIMATE_STATUSES = ["estimate", "unknown"]
# The repair track (issue #13, seed 001): the seven verdicts of the grader and the two tracks.
REPAIR_VERDICTS = [
    "resolved", "resolved_after_rerun", "unresolved", "patch_apply_failed", "test_patch_conflict",
    "no_report", "env_setup_failed",
]  # fmt: skip
REPAIR_TRACKS = ["basic", "spec"]
# Judging (issue #14): the task kinds, the three Layer 1 hints and their statuses, the run record's
# end reasons, the change similarity methods (argusic.judging.ingest.METHOD) and that mart's grain.
JUDGING_TASKS = ["install_and_run", "repair"]
HINTS = ("needles", "rendering", "agent_logic")
HINT_STATUSES = ["measured", "not_applicable", "unavailable"]
END_REASONS = ["completed", "timeout", "cancelled", "harness_error"]
SIMILARITY_METHODS = ["indel_nontest_lines/1"]
PANEL_STATUSES = ["judged", "insufficient_judges"]
JUDGED_CRITERIA = ("code_structure", "logic_correctness")  # the [judging] criteria of every task
CRITERION_MEDIANS = [0, 0.5, 1, 1.5, 2]
SIMILARITY_GRAIN = ("task_id", "agent_id", "project_id", "item_id", "item_revision", "environment", "method")


def _e(kind: str, why: str, when_columns: tuple[str, ...] = (), **kwargs: Any) -> dict[str, Any]:
    """One expectation spec: GX type (snake case), the rule it guards, GX kwargs.

    ``when_columns``: only for marts whose columns the contract does not list (hardware, editions):
    the expectation is skipped, and the skip reported, when one of these columns is absent.
    """
    return {"type": kind, "why": why, "when_columns": when_columns, "kwargs": kwargs}


def _unique(*columns: str) -> dict[str, Any]:
    if len(columns) == 1:
        return _e("expect_column_values_to_be_unique", f"one row per {columns[0]}", column=columns[0])
    return _e(
        "expect_compound_columns_to_be_unique",
        f"one row per ({', '.join(columns)})",
        column_list=list(columns),
    )


def _not_null(*columns: str) -> list[dict[str, Any]]:
    return [_e("expect_column_values_to_not_be_null", f"{c} is never null", column=c) for c in columns]


def _between(column: str, lo: float | None, hi: float | None, why: str) -> dict[str, Any]:
    return _e("expect_column_values_to_be_between", why, column=column, min_value=lo, max_value=hi)


def _in_set(column: str, values: list[Any], why: str) -> dict[str, Any]:
    return _e("expect_column_values_to_be_in_set", why, column=column, value_set=values)


def _if_present(*specs: dict[str, Any]) -> list[dict[str, Any]]:
    """Expectations on a column our marts add beyond the contract (DESIGN.md): applied whenever the
    column is there (always, in a build of dbt_project/), reported as not applicable otherwise."""
    for spec in specs:
        kwargs = spec["kwargs"]
        spec["when_columns"] = tuple(kwargs.get("column_list") or [kwargs["column"]])
    return list(specs)


def _check(column: str, why: str, when_columns: tuple[str, ...] = ()) -> dict[str, Any]:
    """Expect a boolean check column computed in SQL (see CHECKS) to be true on every row.

    ``when_columns``: for a check on columns beyond the contract, skipped (and reported) when one of
    them is absent."""
    return _e("expect_column_values_to_be_in_set", why, when_columns, column=column, value_set=[True])


def _judges_figures() -> list[dict[str, Any]]:
    """The judges' medians and total as marts.judge_panel gives them (and beside a person's review)."""
    return [
        *[
            _in_set(f"{c}_median", CRITERION_MEDIANS, "a median of 0..2 scores is 0, 0.5, 1, 1.5 or 2")
            for c in JUDGED_CRITERIA
        ],
        _between("judges_total", 0, 4, "the judges' total is between 0 and 4"),
    ]


SUITES: dict[str, list[dict[str, Any]]] = {
    "attempt_scores": [
        _unique("attempt_id"),
        *_not_null(
            "attempt_id", "cycle_id", "purpose", "agent_id", "project_id", "attempt_no", "is_valid", "outcome"
        ),
        _in_set("purpose", ["board", "verdict"], "purpose is board or verdict"),
        _between("attempt_no", 1, None, "attempt numbers start at 1"),
        _in_set("outcome", OUTCOMES, "outcome is pass_full, pass_mock, fail, timeout or invalid"),
        _between("score", 0, 100, "a score is out of 100"),
        _in_set("install_points", [0, 30], "install earns 0 or 30"),
        _in_set("run_points", [0, 30], "run or test earns 0 or 30"),
        _between("recovery_points", 0, 20, "error recovery earns 0 to 20"),
        _in_set("depth_points", [0, 12, 20], "verification depth earns 0, 12 or 20"),
        _check("check_invalid_unscored", "an invalid attempt has a null score and the outcome invalid"),
        _check("check_invalid_has_reason", "an invalid attempt keeps its reason"),
        _check("check_valid_scored", "a valid attempt has a score and an outcome other than invalid"),
        _check("check_score_is_sum", "score = install + run + recovery + depth points"),
        _check("check_timeout_zero", "a timeout scores 0 in every category"),
        *_if_present(
            *_not_null("budget_seconds", "effective_budget_seconds", "served_copy_withheld"),
            _between("duration_seconds", 0, None, "an attempt never ends before it starts"),
        ),
        _check(
            "check_effective_budget_within_budget",
            "a scaled budget is never above the recorded budget",
            ("budget_seconds", "effective_budget_seconds"),
        ),
    ],
    "pair_sets": [
        _unique("cycle_id", "agent_id", "project_id"),
        *_not_null("cycle_id", "agent_id", "project_id", "valid_attempts", "is_unstable", "is_complete"),
        _between("valid_attempts", 0, 3, "a set never holds more than three valid attempts"),
        _between("low_score", 0, 100, "scores are out of 100"),
        _between("middle_score", 0, 100, "scores are out of 100"),
        _between("high_score", 0, 100, "scores are out of 100"),
        _between("spread_pct", 0, None, "a spread is never negative (+infinity allowed)"),
        _check("check_scores_ordered", "low_score <= middle_score <= high_score"),
        _check("check_complete_is_three", "a complete set holds three valid attempts"),
        _check("check_unstable_is_spread", "a set is unstable exactly when its spread is above 30%"),
        _check(
            "check_middle_named_iff_complete",
            "a complete set names its middle attempt, an incomplete one does not",
            ("middle_attempt_id", "is_complete"),
        ),
    ],
    "project_review": [
        _unique("cycle_id", "project_id"),
        *_not_null("cycle_id", "project_id", "under_review"),
        _in_set(
            "decision", ["project_at_fault", "environment_at_fault"], "a person's decision (or none yet)"
        ),
        *_if_present(
            *_not_null("review_status", "excluded_from_board"),
            _in_set(
                "review_status",
                ["not_under_review", "awaiting_decision", "project_at_fault", "environment_at_fault"],
                "review status is one of the four states of a review",
            ),
        ),
    ],
    "project_verdicts": [
        _unique("project_id", "commit_sha"),
        *_not_null("project_id", "commit_sha", "verdict", "complete_attempts"),
        _in_set(
            "verdict", VERDICTS, "verdict is runs, runs_with_mocks, could_not_verify or not_yet_verified"
        ),
        _between("complete_attempts", 0, None, "complete attempts are counted from 0"),
        _check("check_pass_names_agent", "a passing verdict names the agent that verified it, no other does"),
        _check("check_could_not_verify_two", "could_not_verify needs at least two complete attempts"),
    ],
    "board": [
        _unique("cycle_id", "agent_id"),
        *_not_null("cycle_id", "agent_id", "valid_attempts"),
        _between("board_score", 0, 100, "a board score is out of 100"),
        _between("rank", 1, None, "ranks start at 1"),
        _between("pass_rate", 0, 1, "a pass rate is a share between 0 and 1"),
        _between("valid_attempts", 0, None, "counts are never negative"),
        _between("sets_counted", 0, None, "counts are never negative"),
        _between("sets_unstable", 0, None, "counts are never negative"),
        _between("sets_under_review", 0, None, "counts are never negative"),
        _check("check_rank_null_iff_no_score", "rank is null exactly when board_score is null"),
        _check("check_rank_follows_score", "a higher board score never gets a worse rank (same cycle)"),
        _check("check_rank_starts_at_one", "each cycle with a score has a rank 1"),
        *_if_present(
            *_not_null("display_position", "is_demo_cycle"), _unique("cycle_id", "display_position")
        ),
    ],
    "hardware_tiers": [
        _e("expect_table_row_count_to_equal", "five model-size tiers (7-8B … 120B+)", value=5),
        _unique("tier"),
        *_not_null("tier"),
        *_if_present(
            _unique("tier_order"),
            *_not_null("tier_order", "weights_gb", "context_gb", "required_gb", "required_unified_gb"),
        ),
    ],
    "hardware_estimates": [
        _e("expect_table_row_count_to_be_between", "estimates exist", min_value=1),
        *_not_null("status"),
        _in_set("status", ESTIMATE_STATUSES, "an estimate is shown only when every input is known"),
        _e(
            "expect_column_values_to_be_unique",
            "one row per machine",
            when_columns=("machine_id",),
            column="machine_id",
        ),
        *_if_present(*_not_null("machine_id")),
    ],
    "hardware_speed_bounds": [
        _e("expect_table_row_count_to_be_between", "bounds exist", min_value=1),
        _e(
            "expect_compound_columns_to_be_unique",
            "one row per (machine_id, tier)",
            when_columns=("machine_id", "tier"),
            column_list=["machine_id", "tier"],
        ),
        _e(
            "expect_column_values_to_be_in_set",
            "a bound is shown only when every input is known",
            when_columns=("status",),
            column="status",
            value_set=ESTIMATE_STATUSES,
        ),
        _e(
            "expect_column_values_to_be_between",
            "a speed bound is never negative",
            when_columns=("tokens_per_s_max",),
            column="tokens_per_s_max",
            min_value=0,
        ),
        *_if_present(*_not_null("machine_id", "tier", "status")),
    ],
    "methodology_editions": [
        _e("expect_table_row_count_to_be_between", "editions v0.2 … v1.5 (nine)", min_value=9),
        _e(
            "expect_column_values_to_be_unique",
            "one row per edition",
            when_columns=("version",),
            column="version",
        ),
        _e(
            "expect_column_values_to_not_be_null",
            "every edition has a version",
            when_columns=("version",),
            column="version",
        ),
        *_if_present(*_not_null("written_on", "effective_before_written")),
    ],
    # One harness per cycle (methodology sections 4 and 14, issue #15): a cycle whose valid attempts
    # ran under two environments is flagged here, and its board is not published.
    "cycle_environments": [
        _unique("cycle_id"),
        *_not_null(
            "cycle_id",
            "valid_attempts",
            "attempts_with_environment",
            "attempts_without_environment",
            "environments",
        ),
        _e(
            "expect_column_values_to_be_in_set",
            "a cycle's valid attempts ran under one environment (harness edition, scaffold, instructions, "
            "executor, limits; images within a role, budgets within a tier): disagrees_on names what differs",
            column="is_uniform",
            value_set=[True],
        ),
        _between("environments", 0, None, "counts are never negative"),
        _check(
            "check_environment_counts_add_up",
            "valid attempts = those with an environment + those recorded before environments were",
        ),
        _check("check_uniform_is_one_environment", "a cycle is uniform exactly when it saw one environment"),
    ],
    "harness_editions": [
        _e("expect_table_row_count_to_be_between", "the harness changelog has an entry", min_value=1),
        _unique("edition"),
        _unique("scaffold_sha256"),
        *_not_null("edition", "written_on", "scaffold_sha256", "effective_before_written", "runs_recorded"),
        _between("runs_recorded", 0, None, "counts are never negative"),
    ],
    # The repair track (issue #13): items the grader was validated on, graded patches, rates.
    "repair_item_validation": [
        _unique("item_id"),
        *_not_null("item_id", "revision", "track", "is_validated", "is_usable", "in_main_set"),
        _in_set("track", REPAIR_TRACKS, "an item is on the basic or the spec track"),
        *[
            _between(c, 0, None, "counts are never negative")
            for c in ("gold_runs", "empty_runs", "partial_gold_runs", "f2p_count", "p2p_count")
        ],
        _check("check_usable_iff_no_reason", "an item is usable exactly when no validation rule fails"),
        _check(
            "check_usable_is_validated",
            "a usable item's gold patch resolved in three of three runs or more, its empty patch "
            "unresolved in every run (at least one), a split item's partial gold resolved in every run",
        ),
        _check(
            "check_main_set_is_usable", "the main set holds usable items only, never a superseded original"
        ),
    ],
    "repair_runs": [
        _unique("grade_id"),
        *_not_null(
            "grade_id", "item_id", "revision", "source_kind", "verdict", "is_empty_patch", "counts_in_rates"
        ),
        _in_set("verdict", REPAIR_VERDICTS, "a grade has one of the seven verdicts"),
        _in_set("source_kind", ["attempt", "predictions"], "a grade is an attempt's or a predictions file's"),
        _in_set("track", REPAIR_TRACKS, "an item is on the basic or the spec track"),
        _between("patch_bytes", 0, None, "sizes are never negative"),
        _between("size_vs_gold", 0, None, "a size ratio is never negative"),
        _check(
            "check_counts_iff_no_reason", "a grade counts in the rates exactly when no reason says otherwise"
        ),
        _check("check_empty_patch_not_measured", "an empty patch's quality figures are not measured (null)"),
        _check(
            "check_counted_is_attributed",
            "a counted grade names whom it measures, in which set, on a usable item of the main set",
        ),
        _check("check_resolved_is_verdict", "is_resolved exactly when the verdict is resolved"),
    ],
    "repair_rates": [
        _unique("agent_label", "track", "source_kind", "source_set"),
        *_not_null("agent_label", "track", "source_kind", "source_set", "n", "resolved", "graded"),
        _in_set("track", REPAIR_TRACKS, "rates are per track, basic or spec"),
        _between("rate", 0, 1, "a rate is a share between 0 and 1"),
        _between("half_width_95", 0, 0.98, "a 95% half-width is between 0 and 1.96 * sqrt(1/4)"),
        _between("n", 0, None, "counts are never negative"),
        _between("prs", 0, None, "counts are never negative"),
        _check(
            "check_n_is_its_verdicts",
            "n = resolved + unresolved + patch_apply_failed + test_patch_conflict + no_report",
        ),
        _check(
            "check_apart_not_in_n",
            "resolved_after_rerun and env_setup_failed are counted apart: graded = n + both",
        ),
        _check("check_rate_is_resolved_over_n", "rate = resolved / n (null exactly when n = 0)"),
        _check("check_half_width_formula", "half_width_95 = 1.96 * sqrt(rate * (1 - rate) / n)"),
        _check("check_prs_items_n_ordered", "distinct PRs <= distinct items <= n"),
    ],
    # Judging (issue #14, seed 004): hints beside the outcome, score stability, change similarity.
    # Informational marts, never read by a score, a verdict or the board; still, an analyst reads
    # them, so a hint scored outside its scale or a variance below zero blocks publication as well.
    "attempt_hints": [
        _unique("attempt_id"),
        *_not_null(
            "attempt_id",
            "cycle_id",
            "purpose",
            "agent_id",
            "project_id",
            "task_id",
            "task_version",
            "task_revision",
            "task_revisions",
            "needles_status",
            "rendering_status",
            "agent_logic_status",
            "rendering_page_count",
            "has_run_record",
            "loaded_at",
        ),
        _in_set(
            "purpose", ["board", "verdict", "repair"], "hints are computed for board, verdict and repair"
        ),
        _in_set("task_id", JUDGING_TASKS, "a task kind is install_and_run or repair (argusic.core.tasks)"),
        _between("task_revisions", 1, None, "the row shows one of the attempt's task revisions"),
        *[
            _in_set(f"{hint}_status", HINT_STATUSES, "a hint is measured, not_applicable or unavailable")
            for hint in HINTS
        ],
        *[
            _in_set(f"{hint}_score", [0, 0.5, 1], "a measured hint scores exactly 1, 0.5 or 0")
            for hint in HINTS
        ],
        _between("rendering_page_count", 0, 200, "at most 200 pages (the ingest's cap)"),
        _in_set("end_reason", END_REASONS, "end_reason is completed, timeout, cancelled or harness_error"),
        _in_set("outcome", OUTCOMES, "outcome is pass_full, pass_mock, fail, timeout or invalid"),
        *[
            _check(f"check_{hint}_null_iff_unmeasured", f"the {hint} score is null exactly when not measured")
            for hint in HINTS
        ],
        _check(
            "check_needles_score_follows_lists",
            "a measured needles score is 1 when none is missing, 0 when none is found, 0.5 otherwise",
        ),
        _check("check_rendering_pages_iff_measured", "a rendering hint lists pages exactly when measured"),
        _check(
            "check_agent_logic_score_follows",
            "measured agent logic is 0 when the run did not succeed, 0.5 when out of order, 1 otherwise",
        ),
        _check("check_task_agrees_with_purpose", "a repair attempt has the repair task, no other does"),
        _check("check_end_reason_iff_record", "end_reason is there exactly when the run record is loaded"),
        _check(
            "check_repair_not_scored_here",
            "repair attempts are graded apart (repair_runs): no validity or outcome here",
        ),
        _check(
            "check_outcome_follows_validity",
            "outcome is there exactly when validity is, and is invalid exactly when the attempt is",
        ),
        _check("check_scored_has_record", "validity and outcome come from a loaded run record"),
        _check("check_invalid_has_reason", "an invalid attempt keeps its reason"),
    ],
    "stability": [
        _unique("agent_id", "project_id", "environment"),
        *_not_null(
            "agent_id",
            "project_id",
            "environment",
            "harness_edition",
            "scaffold_sha256",
            "instructions_sha256",
            "attempts",
            "cycles",
            "mean_score",
            "variance",
            "min_score",
            "max_score",
            "is_exact",
        ),
        _between("attempts", 2, None, "a group has at least two counted attempts"),
        _between("mean_score", 0, 100, "scores are out of 100"),
        _between("min_score", 0, 100, "scores are out of 100"),
        _between("max_score", 0, 100, "scores are out of 100"),
        _between("variance", 0, None, "a variance is never negative"),
        _between("variance_numerator", 0, None, "a variance is never negative"),
        _between("mean_denominator", 1, None, "a reduced fraction's denominator is positive"),
        _between("variance_denominator", 1, None, "a reduced fraction's denominator is positive"),
        _check("check_cycles_within_attempts", "1 <= cycles <= attempts"),
        _check("check_mean_within_range", "min_score <= mean_score <= max_score"),
        _check(
            "check_fractions_iff_exact",
            "the exact fractions are there exactly when is_exact (null otherwise)",
        ),
        _check("check_mean_fraction_is_mean_score", "exact: mean_numerator / mean_denominator = mean_score"),
        _check(
            "check_variance_fraction_is_variance",
            "exact: variance_numerator / variance_denominator = variance",
        ),
        _check(
            "check_variance_zero_iff_scores_equal",
            "exact: the variance is 0 exactly when every score of the group is the same",
        ),
        _check(
            "check_variance_within_spread",
            "a sample variance is at most n / (n - 1) * (max - min)^2 / 4 (Popoviciu)",
        ),
    ],
    "change_similarity": [
        _unique(*SIMILARITY_GRAIN),
        *_not_null(
            "task_id",
            "agent_id",
            "project_id",
            "environment",
            "method",
            "attempts",
            "pairs",
            "mean_similarity",
            "min_similarity",
            "max_similarity",
            "identical_pairs",
        ),
        _in_set("task_id", JUDGING_TASKS, "changes are compared for repair or install_and_run attempts"),
        _in_set("method", SIMILARITY_METHODS, "a similarity method documented in docs/judging.md"),
        _between("attempts", 2, None, "a compared pair has two attempts"),
        _between("pairs", 1, None, "a group has at least one compared pair"),
        _between("identical_pairs", 0, None, "counts are never negative"),
        _between("mean_similarity", 0, 1, "a similarity is between 0 and 1"),
        _between("min_similarity", 0, 1, "a similarity is between 0 and 1"),
        _between("max_similarity", 0, 1, "a similarity is between 0 and 1"),
        _check("check_similarity_ordered", "min_similarity <= mean_similarity <= max_similarity"),
        _check("check_identical_within_pairs", "identical_pairs <= pairs"),
        _check(
            "check_pairs_fit_attempts",
            "every attempt is in a pair and no pair repeats: "
            "attempts <= 2 * pairs <= attempts * (attempts - 1)",
        ),
        _check(
            "check_identical_is_similarity_one",
            "a pair is identical exactly when its similarity is 1: "
            "some identical iff max is 1, all iff min is 1",
        ),
        _check(
            "check_item_iff_repair", "a repair group names its item and revision, an install_and_run one none"
        ),
    ],
    # Layer 2's panel: advisory, but an analyst and the review queue read it; a median off the
    # judges' scale or a panel called judged with one valid judge blocks publication as well.
    "judge_panel": [
        _unique("attempt_id"),
        *_not_null(
            "attempt_id",
            "cycle_id",
            "task_id",
            "judges",
            "valid_judges",
            "refused_judges",
            "status",
            "judges_total_max",
            "judges_disagree",
        ),
        _in_set("task_id", JUDGING_TASKS, "a task kind is install_and_run or repair (argusic.core.tasks)"),
        _in_set("status", PANEL_STATUSES, "a panel is judged or insufficient_judges"),
        _between("judges", 1, None, "a panel has at least one judgement"),
        _between("valid_judges", 0, None, "counts are never negative"),
        _between("refused_judges", 0, None, "counts are never negative"),
        _in_set("judges_total_max", [4], "two criteria of 0..2: the highest total is 4"),
        *_judges_figures(),
        *[
            _in_set(f"{criterion}_spread", [0, 1, 2], "a spread of 0..2 scores is 0, 1 or 2")
            for criterion in JUDGED_CRITERIA
        ],
        _check("check_counts_within_judges", "valid_judges + refused_judges <= judges"),
        _check("check_judged_iff_two_valid", "a panel is judged exactly when at least two judges are valid"),
        _check(
            "check_figures_iff_judged",
            "medians, spreads and the total are there exactly when the panel is judged",
        ),
        _check(
            "check_total_is_sum_of_medians", "judges_total = code_structure_median + logic_correctness_median"
        ),
        _check(
            "check_disagree_follows_spreads",
            "judges disagree exactly when a judged panel has a criterion's spread of 2",
        ),
    ],
    # Layer 3's divergence marker: a person's review beside the judges' medians (docs/judging.md).
    "judging_review_divergence": [
        _unique("attempt_id"),
        *_not_null(
            "attempt_id",
            "task_revision",
            "look",
            "decision",
            "decided_by",
            "decided_at",  # the note is optional: the task's review form says so
            "reviews",
            "decision_disagrees",
        ),
        _in_set("look", [0, 1, 2], "a person's look is 0, 1 or 2"),
        _in_set("decision", ["promote", "reject"], "a decision is promote or reject"),
        _between("reviews", 1, None, "a reviewed attempt has at least one review"),
        *[
            _in_set(f"person_{criterion}", [0, 1, 2], "a person's criterion score is 0, 1 or 2")
            for criterion in JUDGED_CRITERIA
        ],
        _in_set("judges_status", PANEL_STATUSES, "a panel is judged or insufficient_judges"),
        *_judges_figures(),
        *[
            _between(f"{criterion}_gap", -2, 2, "a gap on a 0..2 criterion is within ±2")
            for criterion in JUDGED_CRITERIA
        ],
        _between("divergence", -2, 2, "a gap on a 0..2 criterion is within ±2"),
        _between("total_gap", -4, 4, "a gap of two totals of 0..4 is within ±4"),
        _in_set(
            "divergence_direction",
            ["person_higher", "judges_higher", "agree", "not_scored"],
            "the direction is person_higher, judges_higher, agree or not_scored",
        ),
        _in_set("provisional_result", ["pass", "fail"], "a provisional result is pass or fail"),
        _check(
            "check_gap_is_person_minus_median",
            "a gap = the person's score − the judges' median, when both are there",
        ),
        _check("check_divergence_is_the_largest_gap", "the divergence is the gap of largest absolute value"),
        _check(
            "check_direction_follows_divergence",
            "not_scored without a person's score, else the divergence's sign names the direction",
        ),
        _check(
            "check_total_gap_when_all_scored",
            "total_gap = the person's total − the judges' total, there exactly when both are complete",
        ),
        _check(
            "check_decision_disagrees_follows",
            "a decision disagrees when it promotes a provisional fail or rejects a provisional pass",
        ),
    ],
}

REQUIRED_TABLES = [
    "attempt_scores", "pair_sets", "project_review", "project_verdicts", "board",
    "hardware_tiers", "hardware_estimates",
]  # fmt: skip
OPTIONAL_TABLES = [
    "hardware_speed_bounds", "methodology_editions", "cycle_environments", "harness_editions",
    "repair_item_validation", "repair_runs", "repair_rates", "attempt_hints", "stability",
    "change_similarity", "judge_panel", "judging_review_divergence",
]  # fmt: skip

# Key columns named in failure messages (which rows broke an expectation).
KEYS: dict[str, list[str]] = {
    "attempt_scores": ["attempt_id"],
    "pair_sets": ["cycle_id", "agent_id", "project_id"],
    "project_review": ["cycle_id", "project_id"],
    "project_verdicts": ["project_id", "commit_sha"],
    "board": ["cycle_id", "agent_id"],
    "hardware_tiers": ["tier"],
    "hardware_estimates": ["machine_id"],
    "hardware_speed_bounds": ["machine_id", "tier"],
    "methodology_editions": ["version"],
    "cycle_environments": ["cycle_id", "disagrees_on"],
    "harness_editions": ["edition"],
    "repair_item_validation": ["item_id"],
    "repair_runs": ["grade_id"],
    "repair_rates": ["agent_label", "track", "source_kind", "source_set"],
    "attempt_hints": ["attempt_id"],
    "stability": ["agent_id", "project_id", "environment"],
    "change_similarity": ["task_id", "agent_id", "project_id", "item_id", "environment", "method"],
    "judge_panel": ["attempt_id"],
    "judging_review_divergence": ["attempt_id"],
}

# ---------------------------------------------------------------------------------------------------
# Cross-column and cross-row rules, computed in DuckDB SQL (each is one boolean per row)
# ---------------------------------------------------------------------------------------------------
#
# A check is a SQL expression over the mart (alias ``t``; window functions allowed) and the columns
# it reads. ``{null:c}`` is "c is null" (a floating NaN counts as null, as in pandas), so a check
# says exactly what the pandas rule it replaced said. Its value is handed to GX as a boolean column
# ``check_*`` expected to be true on every row (SUITES).

_TOL = 1e-6


@dataclass(frozen=True)
class Check:
    sql: str
    columns: tuple[str, ...]


_PARTS = ("install_points", "run_points", "recovery_points", "depth_points")

CHECKS: dict[str, dict[str, Check]] = {
    "attempt_scores": {
        "check_invalid_unscored": Check(
            "coalesce(t.is_valid, false) or ({null:score} and coalesce(t.outcome = 'invalid', false))",
            ("is_valid", "score", "outcome"),
        ),
        "check_invalid_has_reason": Check(
            "coalesce(t.is_valid, false) or not {null:invalid_reason}", ("is_valid", "invalid_reason")
        ),
        "check_valid_scored": Check(
            "not coalesce(t.is_valid, false) "
            "or (not {null:score} and coalesce(t.outcome <> 'invalid', false))",
            ("is_valid", "score", "outcome"),
        ),
        "check_score_is_sum": Check(
            "{null:score} or coalesce(abs(t.score::double - ("
            + " + ".join(f"t.{c}::double" for c in _PARTS)
            + f")) <= {_TOL}, false)",
            ("score", *_PARTS),
        ),
        "check_timeout_zero": Check(
            "coalesce(t.outcome <> 'timeout', true) or ("
            + " and ".join(
                f"abs(coalesce(nullif_nan(t.{c}::double), 0)) <= {_TOL}" for c in ("score", *_PARTS)
            )
            + ")",
            ("outcome", "score", *_PARTS),
        ),
        "check_effective_budget_within_budget": Check(
            "{null:effective_budget_seconds} or {null:budget_seconds} "
            "or t.effective_budget_seconds::double <= t.budget_seconds::double",
            ("budget_seconds", "effective_budget_seconds"),
        ),
    },
    "pair_sets": {
        "check_scores_ordered": Check(
            "{null:low_score} or {null:middle_score} or {null:high_score} or ("
            f"t.low_score::double <= t.middle_score::double + {_TOL} "
            f"and t.middle_score::double <= t.high_score::double + {_TOL})",
            ("low_score", "middle_score", "high_score"),
        ),
        "check_complete_is_three": Check(
            "not coalesce(t.is_complete, false) or coalesce(t.valid_attempts, 0) = 3",
            ("is_complete", "valid_attempts"),
        ),
        # The exact 30% comparison is dbt's (fractions); a float copy this close to 30 is not judged.
        "check_unstable_is_spread": Check(
            f"{{null:spread_pct}} or abs(t.spread_pct::double - 30) <= {_TOL} "
            "or coalesce(t.is_unstable, false) = (t.spread_pct::double > 30)",
            ("spread_pct", "is_unstable"),
        ),
        "check_middle_named_iff_complete": Check(
            "(t.middle_attempt_id is not null) = coalesce(t.is_complete, false)",
            ("middle_attempt_id", "is_complete"),
        ),
    },
    "project_verdicts": {
        "check_pass_names_agent": Check(
            "coalesce(t.verdict in ('runs', 'runs_with_mocks'), false) = (not {null:verified_by_agent})",
            ("verdict", "verified_by_agent"),
        ),
        "check_could_not_verify_two": Check(
            "coalesce(t.verdict <> 'could_not_verify', true) "
            "or coalesce(nullif_nan(t.complete_attempts::double), 0) >= 2",
            ("verdict", "complete_attempts"),
        ),
    },
    "cycle_environments": {
        "check_environment_counts_add_up": Check(
            "t.valid_attempts = t.attempts_with_environment + t.attempts_without_environment",
            ("valid_attempts", "attempts_with_environment", "attempts_without_environment"),
        ),
        "check_uniform_is_one_environment": Check(
            "{null:is_uniform} or t.is_uniform = (t.environments = 1)", ("is_uniform", "environments")
        ),
    },
    "repair_item_validation": {
        "check_usable_iff_no_reason": Check(
            "coalesce(t.is_usable, false) = {null:why_not_usable}", ("is_usable", "why_not_usable")
        ),
        "check_usable_is_validated": Check(
            "not coalesce(t.is_usable, false) or (t.is_validated and t.gold_runs >= 3 "
            "and t.gold_resolved_runs = t.gold_runs and t.empty_runs >= 1 "
            "and t.empty_unresolved_runs = t.empty_runs and (not t.is_split or ("
            "t.partial_gold_runs >= 1 and t.partial_gold_resolved_runs = t.partial_gold_runs)))",
            (
                "is_usable",
                "is_validated",
                "is_split",
                "gold_runs",
                "gold_resolved_runs",
                "empty_runs",
                "empty_unresolved_runs",
                "partial_gold_runs",
                "partial_gold_resolved_runs",
            ),
        ),  # fmt: skip
        "check_main_set_is_usable": Check(
            "not coalesce(t.in_main_set, false) or (t.is_usable and not t.superseded_by_split)",
            ("in_main_set", "is_usable", "superseded_by_split"),
        ),
    },
    "repair_runs": {
        "check_counts_iff_no_reason": Check(
            "coalesce(t.counts_in_rates, false) = {null:not_counted_reason}",
            ("counts_in_rates", "not_counted_reason"),
        ),
        "check_empty_patch_not_measured": Check(
            "not coalesce(t.is_empty_patch, false) or ({null:changed_lines} and {null:size_vs_gold} "
            "and {null:lint_new_errors} and {null:suppressions_added})",
            ("is_empty_patch", "changed_lines", "size_vs_gold", "lint_new_errors", "suppressions_added"),
        ),
        "check_counted_is_attributed": Check(
            "not coalesce(t.counts_in_rates, false) or (not {null:agent_label} and not {null:source_set} "
            "and coalesce(t.item_in_main_set, false) and coalesce(t.is_current_revision, false))",
            ("counts_in_rates", "agent_label", "source_set", "item_in_main_set", "is_current_revision"),
        ),
        "check_resolved_is_verdict": Check(
            "coalesce(t.is_resolved, false) = coalesce(t.verdict = 'resolved', false)",
            ("is_resolved", "verdict"),
        ),
    },
    "repair_rates": {
        "check_n_is_its_verdicts": Check(
            "t.n = t.resolved + t.unresolved + t.patch_apply_failed + t.test_patch_conflict + t.no_report",
            ("n", "resolved", "unresolved", "patch_apply_failed", "test_patch_conflict", "no_report"),
        ),
        "check_apart_not_in_n": Check(
            "t.graded = t.n + t.resolved_after_rerun + t.env_setup_failed",
            ("graded", "n", "resolved_after_rerun", "env_setup_failed"),
        ),
        "check_rate_is_resolved_over_n": Check(
            "case when t.n = 0 then {null:rate} "
            f"else not {{null:rate}} and abs(t.rate::double - t.resolved::double / t.n) <= {_TOL} end",
            ("n", "resolved", "rate"),
        ),
        "check_half_width_formula": Check(
            "case when t.n = 0 then {null:half_width_95} "
            "else not {null:half_width_95} and abs(t.half_width_95::double - 1.96 * sqrt("
            f"(t.resolved::double / t.n) * (1 - t.resolved::double / t.n) / t.n)) <= {_TOL} end",
            ("n", "resolved", "half_width_95"),
        ),
        "check_prs_items_n_ordered": Check("t.prs <= t.items and t.items <= t.n", ("prs", "items", "n")),
    },
    "attempt_hints": {
        **{
            f"check_{hint}_null_iff_unmeasured": Check(
                f"{{null:{hint}_score}} = coalesce(t.{hint}_status <> 'measured', true)",
                (f"{hint}_score", f"{hint}_status"),
            )
            for hint in HINTS
        },
        # argusic.judging.needles.evaluate_needles: 1 none missing, 0 none found, 0.5 some of each.
        # Lists that are not JSON fail the check (CASE keeps json_array_length from raising on them).
        "check_needles_score_follows_lists": Check(
            "coalesce(t.needles_status <> 'measured', true) or coalesce(t.needles_score::double = case "
            "when not json_valid(t.needles_missing) or not json_valid(t.needles_found) then null "
            "when json_array_length(t.needles_missing) = 0 then 1 "
            "when json_array_length(t.needles_found) = 0 then 0 else 0.5 end, false)",
            ("needles_status", "needles_score", "needles_found", "needles_missing"),
        ),
        # The score is the lowest page's: no page, no score; a hint not measured rendered none.
        "check_rendering_pages_iff_measured": Check(
            "coalesce(t.rendering_page_count >= 1, false) = coalesce(t.rendering_status = 'measured', false)",
            ("rendering_page_count", "rendering_status"),
        ),
        # argusic.judging.hints.agent_logic_hint: in_order is null when the task requires no order.
        "check_agent_logic_score_follows": Check(
            "coalesce(t.agent_logic_status <> 'measured', true) or coalesce("
            "t.agent_logic_score::double = case when not t.agent_logic_succeeded then 0 "
            "when t.agent_logic_in_order = false then 0.5 else 1 end, false)",
            ("agent_logic_status", "agent_logic_score", "agent_logic_succeeded", "agent_logic_in_order"),
        ),
        "check_task_agrees_with_purpose": Check(
            "(t.task_id = 'repair') = (t.purpose = 'repair')", ("task_id", "purpose")
        ),
        "check_end_reason_iff_record": Check(
            "t.has_run_record = (t.end_reason is not null)", ("has_run_record", "end_reason")
        ),
        "check_repair_not_scored_here": Check(
            "coalesce(t.purpose <> 'repair', true) or (t.is_valid is null and t.outcome is null)",
            ("purpose", "is_valid", "outcome"),
        ),
        "check_outcome_follows_validity": Check(
            "(t.is_valid is null) = (t.outcome is null) "
            "and (t.is_valid is null or (not t.is_valid) = (t.outcome = 'invalid'))",
            ("is_valid", "outcome"),
        ),
        "check_scored_has_record": Check(
            "t.is_valid is null or coalesce(t.has_run_record, false)", ("is_valid", "has_run_record")
        ),
        "check_invalid_has_reason": Check(
            "coalesce(t.is_valid, true) or t.invalid_reason is not null", ("is_valid", "invalid_reason")
        ),
    },
    "stability": {
        "check_cycles_within_attempts": Check(
            "t.cycles >= 1 and t.cycles <= t.attempts", ("cycles", "attempts")
        ),
        "check_mean_within_range": Check(
            f"t.min_score::double <= t.mean_score::double + {_TOL} "
            f"and t.mean_score::double <= t.max_score::double + {_TOL}",
            ("min_score", "mean_score", "max_score"),
        ),
        "check_fractions_iff_exact": Check(
            "t.is_exact = (not {null:mean_numerator} and not {null:mean_denominator} "
            "and not {null:variance_numerator} and not {null:variance_denominator}) "
            "and (t.is_exact or ({null:mean_numerator} and {null:mean_denominator} "
            "and {null:variance_numerator} and {null:variance_denominator}))",
            ("is_exact", "mean_numerator", "mean_denominator", "variance_numerator", "variance_denominator"),
        ),
        # The DOUBLE copies are the fractions divided in floating point: equal to a relative 1e-6.
        "check_mean_fraction_is_mean_score": Check(
            "not coalesce(t.is_exact, false) or abs(t.mean_numerator::double / t.mean_denominator::double "
            f"- t.mean_score::double) <= {_TOL} * greatest(1, abs(t.mean_score::double))",
            ("is_exact", "mean_numerator", "mean_denominator", "mean_score"),
        ),
        "check_variance_fraction_is_variance": Check(
            "not coalesce(t.is_exact, false) or abs(t.variance_numerator::double "
            f"/ t.variance_denominator::double - t.variance::double) <= {_TOL} "
            "* greatest(1, abs(t.variance::double))",
            ("is_exact", "variance_numerator", "variance_denominator", "variance"),
        ),
        "check_variance_zero_iff_scores_equal": Check(
            "not coalesce(t.is_exact, false) "
            "or (t.variance_numerator = 0) = (t.min_score::double = t.max_score::double)",
            ("is_exact", "variance_numerator", "min_score", "max_score"),
        ),
        # Popoviciu: a population variance is at most (max - min)^2 / 4; the sample one n / (n - 1) that.
        "check_variance_within_spread": Check(
            "t.variance::double <= t.attempts::double / (t.attempts - 1) "
            f"* power(t.max_score::double - t.min_score::double, 2) / 4 + {_TOL}",
            ("variance", "attempts", "min_score", "max_score"),
        ),
    },
    "change_similarity": {
        "check_similarity_ordered": Check(
            f"t.min_similarity::double <= t.mean_similarity::double + {_TOL} "
            f"and t.mean_similarity::double <= t.max_similarity::double + {_TOL}",
            ("min_similarity", "mean_similarity", "max_similarity"),
        ),
        "check_identical_within_pairs": Check("t.identical_pairs <= t.pairs", ("identical_pairs", "pairs")),
        "check_pairs_fit_attempts": Check(
            "t.attempts <= 2 * t.pairs and 2 * t.pairs <= t.attempts * (t.attempts - 1)",
            ("attempts", "pairs"),
        ),
        # identical: the two sequences of changed lines are equal, i.e. similarity exactly 1.
        "check_identical_is_similarity_one": Check(
            f"(t.identical_pairs > 0) = (t.max_similarity::double >= 1 - {_TOL}) "
            f"and (t.identical_pairs = t.pairs) = (t.min_similarity::double >= 1 - {_TOL})",
            ("identical_pairs", "pairs", "min_similarity", "max_similarity"),
        ),
        "check_item_iff_repair": Check(
            "case when t.task_id = 'repair' then t.item_id is not null and t.item_revision is not null "
            "else t.item_id is null and t.item_revision is null end",
            ("task_id", "item_id", "item_revision"),
        ),
    },
    "judge_panel": {
        "check_counts_within_judges": Check(
            "t.valid_judges + t.refused_judges <= t.judges", ("valid_judges", "refused_judges", "judges")
        ),
        "check_judged_iff_two_valid": Check(
            "(t.status = 'judged') = (t.valid_judges >= 2)", ("status", "valid_judges")
        ),
        "check_figures_iff_judged": Check(
            "case when t.status = 'judged' then not ({null:code_structure_median} "
            "or {null:logic_correctness_median} or {null:judges_total} or {null:code_structure_spread} "
            "or {null:logic_correctness_spread}) else {null:code_structure_median} "
            "and {null:logic_correctness_median} and {null:judges_total} and {null:code_structure_spread} "
            "and {null:logic_correctness_spread} end",
            (
                "status",
                "code_structure_median",
                "logic_correctness_median",
                "judges_total",
                "code_structure_spread",
                "logic_correctness_spread",
            ),
        ),  # fmt: skip
        "check_total_is_sum_of_medians": Check(
            "t.status <> 'judged' or coalesce(abs(t.judges_total::double - t.code_structure_median::double "
            f"- t.logic_correctness_median::double) <= {_TOL}, false)",
            ("status", "judges_total", "code_structure_median", "logic_correctness_median"),
        ),
        "check_disagree_follows_spreads": Check(
            "t.judges_disagree = coalesce(t.status = 'judged' "
            "and (t.code_structure_spread >= 2 or t.logic_correctness_spread >= 2), false)",
            ("judges_disagree", "status", "code_structure_spread", "logic_correctness_spread"),
        ),
    },
    "judging_review_divergence": {
        "check_gap_is_person_minus_median": Check(
            " and ".join(
                f"case when {{null:person_{c}}} or {{null:{c}_median}} then {{null:{c}_gap}} "
                f"else coalesce(abs(t.{c}_gap::double - (t.person_{c}::double - t.{c}_median::double)) "
                f"<= {_TOL}, false) end"
                for c in JUDGED_CRITERIA
            ),
            tuple(
                f"{kind}{c}{tail}"
                for c in JUDGED_CRITERIA
                for kind, tail in (("person_", ""), ("", "_median"), ("", "_gap"))
            ),
        ),
        "check_divergence_is_the_largest_gap": Check(
            "case when {null:code_structure_gap} and {null:logic_correctness_gap} then {null:divergence} "
            "else not {null:divergence} and (coalesce(t.divergence = t.code_structure_gap, false) "
            "or coalesce(t.divergence = t.logic_correctness_gap, false)) "
            "and abs(t.divergence) >= coalesce(abs(t.code_structure_gap), 0) "
            "and abs(t.divergence) >= coalesce(abs(t.logic_correctness_gap), 0) end",
            ("divergence", "code_structure_gap", "logic_correctness_gap"),
        ),
        "check_direction_follows_divergence": Check(
            "case when {null:person_code_structure} and {null:person_logic_correctness} "
            "then coalesce(t.divergence_direction = 'not_scored', false) "
            "when {null:divergence} then {null:divergence_direction} "
            "else coalesce(t.divergence_direction = case when t.divergence > 0 then 'person_higher' "
            "when t.divergence < 0 then 'judges_higher' else 'agree' end, false) end",
            ("divergence_direction", "divergence", "person_code_structure", "person_logic_correctness"),
        ),
        "check_total_gap_when_all_scored": Check(
            "case when {null:person_code_structure} or {null:person_logic_correctness} "
            "or {null:judges_total} then {null:total_gap} "
            "else coalesce(abs(t.total_gap::double - (t.person_code_structure "
            f"+ t.person_logic_correctness - t.judges_total::double)) <= {_TOL}, false) end",
            ("total_gap", "person_code_structure", "person_logic_correctness", "judges_total"),
        ),
        "check_decision_disagrees_follows": Check(
            "t.decision_disagrees = coalesce((t.decision = 'promote' and t.provisional_result = 'fail') "
            "or (t.decision = 'reject' and t.provisional_result = 'pass'), false)",
            ("decision_disagrees", "decision", "provisional_result"),
        ),
    },
    "board": {
        "check_rank_null_iff_no_score": Check("{null:rank} = {null:board_score}", ("rank", "board_score")),
        # Out of order: another agent of the cycle has a strictly higher score and a rank no better,
        # or a strictly lower score and a rank no worse.
        "check_rank_follows_score": Check(
            "{null:board_score} or {null:rank} or t.cycle_id is null or not exists ("
            "select 1 from {relation} as o where o.cycle_id = t.cycle_id "
            "and not {null:o.board_score} and not {null:o.rank} and ("
            f"(o.board_score::double > t.board_score::double + {_TOL} "
            "and o.rank::double >= t.rank::double) "
            f"or (o.board_score::double < t.board_score::double - {_TOL} "
            "and o.rank::double <= t.rank::double)))",
            ("cycle_id", "board_score", "rank"),
        ),
        "check_rank_starts_at_one": Check(
            "t.cycle_id is null "
            "or coalesce(min(nullif_nan(t.rank::double)) over (partition by t.cycle_id) = 1, true)",
            ("cycle_id", "rank"),
        ),
    },
}

# GX expectations whose result on a table is decided by its rows one at a time (or by groups of
# equal values): such a suite can be run on only the rows that could break one of them (below).
_ROW_LOCAL = {
    "expect_column_values_to_not_be_null",
    "expect_column_values_to_be_in_set",
    "expect_column_values_to_be_between",
    "expect_column_values_to_be_unique",
    "expect_compound_columns_to_be_unique",
}

# ---------------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailedExpectation:
    table: str
    expectation: str  # GX type, e.g. expect_column_values_to_be_unique
    kwargs: dict[str, Any]
    why: str
    observed: dict[str, Any]  # observed_value / unexpected_count / sample / rows / error

    def message(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        obs = self.observed
        if "error" in obs:
            seen = f"could not be evaluated: {obs['error']}"
        elif "unexpected_count" in obs:
            seen = f"{obs['unexpected_count']} unexpected row(s)"
            if obs.get("sample"):
                seen += f", e.g. {obs['sample']}"
            if obs.get("rows"):
                seen += f" at {obs['rows']}"
        else:
            seen = f"observed {obs.get('observed_value')!r}"
        return f"marts.{self.table}: {self.expectation}({args}) failed [{self.why}]: {seen}"


@dataclass
class TableResult:
    table: str
    present: bool
    rows: int = 0
    evaluated: int = 0
    failures: list[FailedExpectation] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # expectations not applicable (column absent)
    note: str = ""

    @property
    def success(self) -> bool:
        return not self.failures


@dataclass
class ValidationReport:
    tables: dict[str, TableResult]
    seconds: float = 0.0

    @property
    def success(self) -> bool:
        return all(t.success for t in self.tables.values())

    @property
    def failures(self) -> list[FailedExpectation]:
        return [f for t in self.tables.values() for f in t.failures]

    @property
    def skipped_tables(self) -> list[str]:
        return [name for name, t in self.tables.items() if not t.present and t.success]

    def failure_messages(self) -> list[str]:
        return [f.message() for f in self.failures]

    def summary(self) -> str:
        lines = []
        for name, t in self.tables.items():
            if not t.present:
                lines.append(f"marts.{name}: {'MISSING' if t.failures else 'skipped'} ({t.note})")
                continue
            state = "ok" if t.success else f"FAILED {len(t.failures)}"
            extra = f"; {len(t.skipped)} not applicable" if t.skipped else ""
            lines.append(f"marts.{name}: {state} ({t.evaluated} expectations on {t.rows} rows{extra})")
        lines.extend(self.failure_messages())
        lines.append(f"expectations {'passed' if self.success else 'FAILED'} in {self.seconds:.2f} s")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# GX plumbing
# ---------------------------------------------------------------------------------------------------


def _quiet_gx_loggers() -> None:
    for name in ["great_expectations", *logging.root.manager.loggerDict]:
        if name.startswith("great_expectations"):
            logging.getLogger(name).setLevel(logging.WARNING)


@cache
def _gx() -> tuple[Any, Any]:
    """Import great_expectations once, quietly (no info logs, no usage statistics)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    _quiet_gx_loggers()
    import great_expectations as gx
    import great_expectations.expectations as gxe

    _quiet_gx_loggers()  # some GX modules set their own level to INFO on import
    return gx, gxe


def load_gx() -> None:
    """Import GX now (once per process), e.g. when a long-lived build worker starts."""
    _gx()


def _gx_class(gxe: Any, kind: str) -> Any:
    return getattr(gxe, "".join(part.capitalize() for part in kind.split("_")))


def _context() -> Any:
    gx, _ = _gx()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    _quiet_gx_loggers()
    return context


def _sql_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _ident(column: str, alias: str = "t") -> str:
    return f'{alias}."{column}"'


def _render(sql: str, relation: str, floats: set[str]) -> str:
    """Resolve ``{null:col}`` / ``{null:alias.col}`` (NaN counts as null) and ``{relation}``."""

    def null(match: re.Match[str]) -> str:
        alias, _, column = match.group(1).rpartition(".")
        ref = _ident(column, alias or "t")
        return f"({ref} is null or isnan({ref}))" if column in floats else f"({ref} is null)"

    sql = re.sub(r"\{null:([\w.]+)\}", null, sql)
    sql = sql.replace("nullif_nan(", "_argusic_nullif_nan(")
    sql = re.sub(r"_argusic_nullif_nan\(([^()]*)\)", r"(case when isnan(\1) then null else \1 end)", sql)
    return sql.replace("{relation}", relation)


def _duplicated(key: list[str], duplicates: list[list[str]]) -> str:
    """True for every row whose key (NULLs equal, as GROUP BY has them) occurs more than once.

    The duplicated keys are grouped once (a CTE ``_dup_<n>``) and rows are matched against them: a
    window count over the whole mart would have to hold every selected column of every row."""
    duplicates.append(key)
    match = " and ".join(f"{_ident(c, 'd')} is not distinct from {_ident(c)}" for c in key)
    return f"exists (select 1 from _dup_{len(duplicates) - 1} as d where {match})"


def _suspect(
    spec: dict[str, Any], columns: set[str], floats: set[str], duplicates: list[list[str]]
) -> str | None:
    """SQL that is true for every row that could break the (row-local) expectation.

    It may be true for more rows (GX judges them again), never for fewer. None: the column is
    absent (GX reports it) or nothing to select.
    """
    kind, kwargs = spec["type"], spec["kwargs"]
    if kind == "expect_compound_columns_to_be_unique":
        cols = kwargs["column_list"]
        if not set(cols) <= columns:
            return None
        return _duplicated(list(cols), duplicates)
    column = kwargs.get("column")
    if column not in columns:
        return None
    ref = _ident(column)
    null = f"({ref} is null or isnan({ref}))" if column in floats else f"({ref} is null)"
    if kind == "expect_column_values_to_not_be_null":
        return null
    if kind == "expect_column_values_to_be_unique":
        return _duplicated([column], duplicates)
    if kind == "expect_column_values_to_be_in_set":
        values = ", ".join(_sql_literal(v) for v in kwargs["value_set"])
        return f"not {null} and not coalesce({ref} in ({values}), false)"
    if kind == "expect_column_values_to_be_between":
        bounds = []
        if kwargs.get("min_value") is not None:
            bounds.append(f"{ref} >= {_sql_literal(kwargs['min_value'])}")
        if kwargs.get("max_value") is not None:
            bounds.append(f"{ref} <= {_sql_literal(kwargs['max_value'])}")
        if not bounds:
            return None
        return f"not {null} and not coalesce({' and '.join(bounds)}, false)"
    raise ValueError(f"{kind} is not row-local")  # pragma: no cover - guarded by _ROW_LOCAL


def _table_frame(
    con: Any, table: str, relation: str, specs: list[dict[str, Any]], columns: list[str], floats: set[str]
) -> tuple[pd.DataFrame, int, dict[str, str], bool]:
    """The frame GX validates for one mart: the columns the suite reads, the SQL check columns, and
    (when every expectation is row-local) only the rows that could break one of them.

    Returns (frame, rows in the mart, check errors, reduced?).
    """
    present = set(columns)
    rows = con.execute(f"SELECT count(*) FROM {relation}").fetchone()[0]
    errors: dict[str, str] = {}
    checks: list[str] = []
    for name, check in CHECKS.get(table, {}).items():
        missing = [c for c in check.columns if c not in present]
        if missing:
            errors[name] = f"column {missing[0]!r} is missing from marts.{table}"
            continue
        expr = f"coalesce(({_render(check.sql, relation, floats)}), false) AS {name}"
        try:
            con.execute(f"SELECT {expr} FROM {relation} AS t LIMIT 0")
        except Exception as err:  # noqa: BLE001 - reported as a failed expectation, never swallowed
            errors[name] = f"{type(err).__name__}: {err}"
            continue
        checks.append(expr)

    wanted: list[str] = [k for k in KEYS.get(table, []) if k in present]
    for spec in specs:
        kw = spec["kwargs"]
        for c in [kw.get("column"), *kw.get("column_list", [])]:
            if c in present and c not in wanted:
                wanted.append(c)
    base = ", ".join([*(_ident(c) for c in wanted), *checks]) or "1 AS _row"
    inner = f"SELECT {base} FROM {relation} AS t"
    frame_cols = ", ".join([f'"{c}"' for c in wanted] + [e.rsplit(" AS ", 1)[1] for e in checks]) or "_row"

    reduced = all(spec["type"] in _ROW_LOCAL for spec in specs)
    if reduced:
        duplicates: list[list[str]] = []
        predicates = []
        for spec in specs:
            column = spec["kwargs"].get("column")
            if column in CHECKS.get(table, {}):
                if column not in errors:
                    predicates.append(f'not t."{column}"')
                continue
            pred = _suspect(spec, present, floats, duplicates)
            if pred is not None:
                predicates.append(pred)
        ctes = ", ".join(
            f"_dup_{i} AS (SELECT {', '.join(_ident(c) for c in key)} FROM {relation} AS t "
            "GROUP BY ALL HAVING count(*) > 1)"
            for i, key in enumerate(duplicates)
        )
        where = " OR ".join(f"({p})" for p in predicates) or "false"
        sql = f"{'WITH ' + ctes + ' ' if ctes else ''}SELECT {frame_cols} FROM ({inner}) AS t WHERE {where}"
        try:
            return con.execute(sql).df(), rows, errors, True
        except Exception:  # noqa: BLE001 - e.g. a value of the wrong type: GX judges every row
            pass
    return con.execute(f"SELECT {frame_cols} FROM ({inner}) AS t").df(), rows, errors, False


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):
        with contextlib.suppress(ValueError, AttributeError):
            value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _observed(result: Any, kwargs: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    info = result.exception_info or {}
    if info.get("raised_exception"):
        return {"error": str(info.get("exception_message") or "exception")}
    res = dict(result.result or {})
    if "unexpected_count" in res:
        obs: dict[str, Any] = {"unexpected_count": res["unexpected_count"]}
        sample = res.get("partial_unexpected_list") or []
        if sample and kwargs.get("value_set") != [True]:
            obs["sample"] = _json_safe(sample[:5])
        rows = [
            {k: _json_safe(v) for k, v in row.items() if k in keys}
            for row in (res.get("partial_unexpected_index_list") or [])[:5]
            if isinstance(row, dict)
        ]
        if any(rows):
            obs["rows"] = rows
        return obs
    return {"observed_value": _json_safe(res.get("observed_value"))}


class _GXObjects:
    """GX objects kept across validations in one process (a build worker validates every build).

    Building a context, suites, data sources and validation definitions is a good part of GX's time
    on small frames: they are built once per (table, expectations applied) and reused. GX keeps each
    run's result in the context's in-memory store, so everything starts afresh every
    ``RENEW_AFTER`` validations: a long-lived process does not grow without bound.
    """

    RENEW_AFTER = 50

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._context: Any = None
        self._definitions: dict[tuple[str, tuple[int, ...]], Any] = {}
        self._validations = 0

    def context(self) -> Any:
        """The context for one validation (of every table); call with ``lock`` held."""
        if self._context is None or self._validations >= self.RENEW_AFTER:
            self._context, self._definitions, self._validations = _context(), {}, 0
        self._validations += 1
        return self._context

    def definition(self, context: Any, table: str, applied: list[dict[str, Any]]) -> Any:
        """The validation definition of ``table`` with exactly the ``applied`` specs (in that order)."""
        gx, gxe = _gx()
        key = (table, tuple(next(i for i, s in enumerate(SUITES[table]) if s is spec) for spec in applied))
        found = self._definitions.get(key)
        if found is not None:
            return found
        name = f"{table}_{len(self._definitions)}"
        suite = gx.ExpectationSuite(name=f"marts.{name}")
        for number, spec in enumerate(applied):
            kind = _gx_class(gxe, spec["type"])
            suite.add_expectation(kind(**spec["kwargs"], meta={"argusic_spec": number}))
        suite = context.suites.add(suite)  # one store write for the whole suite
        asset = context.data_sources.add_pandas(f"marts_{name}").add_dataframe_asset(table)
        batch = asset.add_batch_definition_whole_dataframe("whole")
        found = context.validation_definitions.add(
            gx.ValidationDefinition(name=f"validate_{name}", data=batch, suite=suite)
        )
        self._definitions[key] = found
        return found


_GX_OBJECTS = _GXObjects()


@dataclass
class _Prepared:
    """One mart's share of the work done in DuckDB: what GX is then given to judge."""

    out: TableResult
    applied: list[dict[str, Any]]
    frame: pd.DataFrame
    keys: list[str]


def _prepare(con: Any, table: str, relation: str) -> _Prepared:
    """SQL checks and row selection in DuckDB for one mart's suite (no GX: may run in a thread)."""
    described = con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
    columns = [row[0] for row in described]
    floats = {row[0] for row in described if str(row[1]).upper() in {"DOUBLE", "FLOAT", "REAL"}}
    out = TableResult(table=table, present=True)
    applicable: list[dict[str, Any]] = []
    for spec in SUITES[table]:
        absent = [c for c in spec["when_columns"] if c not in columns]
        if absent:
            out.skipped.append(f"{spec['type']}({spec['kwargs']}): column(s) {absent} not in marts.{table}")
            continue
        applicable.append(spec)
    frame, out.rows, check_errors, _ = _table_frame(con, table, relation, applicable, columns, floats)
    keys = [k for k in KEYS.get(table, []) if k in frame.columns]

    applied: list[dict[str, Any]] = []
    for spec in applicable:
        column = spec["kwargs"].get("column")
        if column in check_errors:
            out.failures.append(
                FailedExpectation(
                    table, spec["type"], spec["kwargs"], spec["why"], {"error": check_errors[column]}
                )
            )
            continue
        applied.append(spec)
    out.evaluated = len(applied) + len(out.failures)
    return _Prepared(out, applied, frame, keys)


def _judge(context: Any, table: str, prepared: _Prepared) -> TableResult:
    """Every applicable expectation of one mart judged by GX on its prepared frame."""
    out, applied, frame, keys = prepared.out, prepared.applied, prepared.frame, prepared.keys
    if not applied:
        return out
    definition = _GX_OBJECTS.definition(context, table, applied)
    result_format: dict[str, Any] = {"result_format": "SUMMARY", "partial_unexpected_count": 5}
    if keys:
        result_format["unexpected_index_column_names"] = keys
    run = definition.run(batch_parameters={"dataframe": frame}, result_format=result_format)

    # GX does not keep the suite's order in the results: match them by the number kept in meta.
    for res in run.results:
        spec = applied[int(res.expectation_config.meta["argusic_spec"])]
        if not res.success:
            out.failures.append(
                FailedExpectation(
                    table, spec["type"], spec["kwargs"], spec["why"], _observed(res, spec["kwargs"], keys)
                )
            )
    if len(run.results) != len(applied):  # pragma: no cover - GX contract changed
        raise RuntimeError(f"GX returned {len(run.results)} results for {len(applied)} expectations")
    return out


def _validate(
    con: Any, relations: Mapping[str, str], only: Iterable[str] | None, *, overlap: bool = False
) -> ValidationReport:
    """Every suite (or ``only`` some) on the marts named in ``relations`` (table -> SQL relation).

    ``overlap``: DuckDB prepares the next marts' frames (each on its own cursor, in a thread; DuckDB
    releases the GIL) while GX judges the previous ones. Only for relations every cursor of ``con``
    sees (tables, not frames registered on ``con``).
    """
    started = time.perf_counter()
    wanted = [*REQUIRED_TABLES, *OPTIONAL_TABLES]
    if only is not None:
        only = list(only)
        unknown = sorted(set(only) - set(wanted))
        if unknown:
            raise ValueError(f"no suite for {unknown}; marts with suites: {wanted}")
        wanted = [t for t in wanted if t in only]
    tables: dict[str, TableResult] = {}
    present = [t for t in wanted if relations.get(t) is not None]
    with contextlib.ExitStack() as stack:
        if overlap and len(present) > 1:
            pool = stack.enter_context(ThreadPoolExecutor(max_workers=1, thread_name_prefix="marts-sql"))
            cursors = {t: stack.enter_context(con.cursor()) for t in present}
            pending = {t: pool.submit(_prepare, cursors[t], t, relations[t]) for t in present}
            prepared = {t: pending[t].result for t in present}
        else:
            prepared = {t: partial(_prepare, con, t, relations[t]) for t in present}
        with _GX_OBJECTS.lock:
            context = _GX_OBJECTS.context()
            tables.update(_judge_each(context, wanted, prepared))
    return ValidationReport(tables=tables, seconds=time.perf_counter() - started)


def _judge_each(
    context: Any, wanted: list[str], prepared: Mapping[str, Callable[[], _Prepared]]
) -> dict[str, TableResult]:
    """Each wanted mart judged in order; a missing required mart fails, a missing optional one is
    reported as skipped."""
    tables: dict[str, TableResult] = {}
    for table in wanted:
        if table in prepared:
            tables[table] = _judge(context, table, prepared[table]())
            continue
        result = TableResult(table=table, present=False)
        if table in REQUIRED_TABLES:
            result.note = f"required table marts.{table} does not exist"
            result.failures.append(
                FailedExpectation(
                    table,
                    "table_exists",
                    {},
                    "every mart of the contract is built",
                    {"error": f"marts.{table} does not exist"},
                )
            )
        else:
            result.note = f"optional table marts.{table} does not exist yet: not validated"
        tables[table] = result
    return tables


def validate_frames(
    frames: Mapping[str, pd.DataFrame | None], only: Iterable[str] | None = None
) -> ValidationReport:
    """Validate marts given as pandas frames (None or absent = the table does not exist).

    A required mart that is absent fails; an optional one (speed bounds, editions) is skipped and the
    skip is reported. ``only`` restricts the run to some marts (suites are per table, so a table's
    result does not depend on the others). The frames go through the same DuckDB route as the
    warehouse's tables (see ``validate_warehouse``).
    """
    import duckdb

    with duckdb.connect() as con:
        relations = {}
        for table, df in frames.items():
            if df is not None:
                con.register(f"frame_{table}", df)
                relations[table] = f'"frame_{table}"'
        return _validate(con, relations, only)


def read_marts(db_path: Path) -> dict[str, pd.DataFrame]:
    """Every contract mart present in the warehouse, read whole (for analysts; not used by the gate)."""
    from argusic.warehouse import connect

    if not Path(db_path).exists():
        raise FileNotFoundError(f"warehouse {db_path} does not exist")
    with connect(Path(db_path), read_only=True) as con:  # waits for a writer rather than failing
        present = _present_marts(con)
        return {
            table: con.execute(f'SELECT * FROM "{SCHEMA}"."{table}"').df()
            for table in [*REQUIRED_TABLES, *OPTIONAL_TABLES]
            if table in present
        }


def _present_marts(con: Any) -> set[str]:
    return {
        row[0]
        for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", [SCHEMA]
        ).fetchall()
    }


def validate_warehouse(db_path: Path | None = None) -> ValidationReport:
    """Run every suite on the marts of the DuckDB warehouse (ARGUSIC_WAREHOUSE by default).

    Read-only connection. Per mart, DuckDB computes the check columns and selects only the columns
    the suite reads and, when every expectation of the suite is row-local (not null, in set,
    between, unique), only the rows that could break one (all rows of a duplicated key); GX then
    judges every expectation on that frame, so a pass or a failure, and its count of unexpected
    rows, are those of the whole table.
    """
    from argusic.core.settings import warehouse_path
    from argusic.warehouse import connect

    path = Path(db_path) if db_path else warehouse_path()
    if not path.exists():
        raise FileNotFoundError(f"warehouse {path} does not exist")
    with connect(path, read_only=True) as con:  # waits for a writer (or an analyst's) rather than failing
        return validate_connection(con)


def validate_connection(con: Any) -> ValidationReport:
    """Every suite on the marts seen by an open DuckDB connection (see ``validate_warehouse``)."""
    present = _present_marts(con)
    relations = {t: f'"{SCHEMA}"."{t}"' for t in [*REQUIRED_TABLES, *OPTIONAL_TABLES] if t in present}
    return _validate(con, relations, None, overlap=True)
