"""Expectation suites as data: one per mart, the vocabularies they check against, the required tables
and their keys."""

from __future__ import annotations

from typing import Any

SCHEMA = "marts"


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
# end reasons, the change similarity methods (argusic.warehouse.load_judging.METHOD) and that mart's grain.
JUDGING_TASKS = ["install_and_run", "repair"]


HINTS = ("needles", "rendering", "agent_logic")


HINT_STATUSES = ["measured", "not_applicable", "unavailable"]


END_REASONS = ["completed", "timeout", "cancelled", "emergency_stop", "harness_error"]


SIMILARITY_METHODS = ["indel_nontest_lines/1"]


PANEL_STATUSES = ["judged", "insufficient_judges"]


JUDGED_CRITERIA = ("code_structure", "logic_correctness")  # the [judging] criteria of every task


CRITERION_MEDIANS = [0, 0.5, 1, 1.5, 2]


# The paired patch review (issue #31): seed 001's six criteria and the pair's bug counts.
PAIRED_CRITERIA = ("correctness", "change_scope", "consistency", "simplicity", "tidiness", "overall")


PAIRED_BUG_COUNTS = (
    "p_bugs_reported", "q_bugs_reported", "p_bugs_confirmed", "q_bugs_confirmed", "bugs_not_a_bug",
    "bugs_cannot_tell", "bugs_awaiting_check",
)  # fmt: skip


CHECK_COUNTS = ("checked_runs", "check_passes", "check_fails", "check_not_applicable", "check_unavailable")


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
        _in_set("end_reason", END_REASONS, "end_reason is one of " + ", ".join(END_REASONS)),
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
    # Paired patch review (issue #31): advisory, but a page shows it (blinded by labels) and a person
    # re-checks its bugs; a median off the 1..5 scale or bugs that do not add up block publication.
    "paired_review": [
        _unique("pair_id", "criterion"),
        *_not_null(
            "pair_id",
            "criterion",
            "p_label",
            "q_label",
            "p_patch_id",
            "q_patch_id",
            "draw_seed",
            "drawn",
            "judges",
            "valid_judges",
            "status",
            *PAIRED_BUG_COUNTS,
        ),  # fmt: skip
        _in_set("criterion", list(PAIRED_CRITERIA), "seed 001's six criteria"),
        _in_set("status", PANEL_STATUSES, "a pair's criterion is judged or insufficient_judges"),
        _between("p_median", 1, 5, "a median of 1..5 scores is within 1..5"),
        _between("q_median", 1, 5, "a median of 1..5 scores is within 1..5"),
        _between("p_spread", 0, 4, "a spread of 1..5 scores is within 0..4"),
        _between("q_spread", 0, 4, "a spread of 1..5 scores is within 0..4"),
        _between("drawn", 0, 1, "the P/Q draw is a number in [0, 1)"),
        _between("judges", 1, None, "a reviewed pair has at least one judgement"),
        _between("valid_judges", 0, None, "counts are never negative"),
        *[_between(c, 0, None, "counts are never negative") for c in PAIRED_BUG_COUNTS],
        _check("check_valid_within_judges", "valid_judges <= judges"),
        _check("check_judged_iff_two_valid", "judged exactly when at least two judges are valid"),
        _check("check_medians_iff_judged", "both medians and spreads are there exactly when judged"),
        _check("check_two_different_patches", "P and Q are two different patches"),
        _check(
            "check_bugs_add_up",
            "confirmed <= reported per side, and confirmed + not a bug + cannot tell + awaiting = reported",
        ),
    ],
    # The person's promote/reject as the final decision (issue #31, seed 004's Layer 3).
    "judging_results": [
        _unique("attempt_id"),
        *_not_null("attempt_id", "cycle_id", "purpose", "task_id", "counts_as_result", "overturned"),
        _in_set("purpose", ["board", "verdict", "repair"], "a purpose is board, verdict or repair"),
        _in_set("task_id", JUDGING_TASKS, "a task kind is install_and_run or repair"),
        _in_set("provisional_result", ["pass", "fail"], "a provisional result is pass or fail"),
        *[
            _in_set(c, ["promote", "reject"], f"{c} is promote or reject")
            for c in ("provisional_decision", "person_decision", "final_decision")
        ],
        _in_set("decided_by_kind", ["person", "provisional"], "decided by a person or provisionally"),
        _in_set("look", [0, 1, 2], "a person's look is 0, 1 or 2"),
        _check("check_task_follows_purpose", "repair attempts are task repair, the others install_and_run"),
        _check(
            "check_provisional_decision_follows_result",
            "promote a provisional pass, reject a provisional fail",
        ),
        _check("check_final_is_person_else_provisional", "the person's decision decides when there is one"),
        _check("check_kind_follows_decisions", "decided_by_kind says whose decision is final"),
        _check("check_counts_iff_promoted", "an attempt counts as a result exactly when finally promoted"),
        _check("check_overturned_follows", "overturned exactly when the person decided against the layers"),
        _check("check_person_has_who_and_when", "a person's decision has who and when"),
    ],
    # Conditions (seed 004): one task's runs under baseline, variant and external-<name> side by side.
    "condition_comparison": [
        _unique("cycle_id", "project_id", "task_id", "condition", "check_id"),
        *_not_null(
            "cycle_id",
            "project_id",
            "task_id",
            "condition",
            "runs",
            "agents",
            "provisional_passes",
            "results",
            "decided_by_people",
        ),  # fmt: skip
        _in_set("task_id", JUDGING_TASKS, "a task kind is install_and_run or repair"),
        _in_set("check_type", ["output_exact_match", "tool_calls"], "seed 004's two deterministic checks"),
        _in_set("applicability", ["applies", "not_applicable", "mixed"], "applies, not_applicable or mixed"),
        _between("runs", 1, None, "a row is of at least one run"),
        *[
            _between(c, 0, None, "counts are never negative")
            for c in ("agents", "provisional_passes", "results", "decided_by_people", *CHECK_COUNTS)
        ],
        _check(
            "check_counts_within_runs", "agents, passes, results, people's decisions, checked runs <= runs"
        ),
        _check("check_outcomes_add_up", "checked runs = passes + fails + not applicable + unavailable"),
        _check(
            "check_check_fields_together", "a check's type, applicability and counts are there with its id"
        ),
    ],
    # Seed 001's pass rate over its three runs per item and model.
    "repair_item_runs": [
        _unique("agent_label", "track", "source_kind", "source_set", "item_id"),
        *_not_null(
            "agent_label",
            "track",
            "source_kind",
            "source_set",
            "item_id",
            "runs",
            "resolved_runs",
            "runs_set_apart",
            "runs_planned",
            "has_every_run",
            "resolved_every_run",
        ),  # fmt: skip
        _in_set("track", REPAIR_TRACKS, "a repair track is basic or spec"),
        _in_set("source_kind", ["attempt", "predictions"], "a patch comes from an attempt or predictions"),
        _between("runs", 0, None, "counts are never negative"),
        _between("resolved_runs", 0, None, "counts are never negative"),
        _between("runs_set_apart", 0, None, "counts are never negative"),
        _between("runs_planned", 1, None, "every model runs every item at least once"),
        _between("pass_rate", 0, 1, "a pass rate is between 0 and 1"),
        _check("check_resolved_within_runs", "resolved_runs <= runs"),
        _check(
            "check_pass_rate_is_resolved_over_runs", "pass_rate = resolved_runs / runs, null without runs"
        ),
        _check("check_has_every_run_follows", "has_every_run exactly when runs >= runs_planned"),
        _check(
            "check_resolved_every_run_follows", "resolved every run exactly when runs > 0 and all resolved"
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
    "change_similarity", "judge_panel", "judging_review_divergence", "paired_review", "judging_results",
    "condition_comparison", "repair_item_runs",
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
    "paired_review": ["pair_id", "criterion"],
    "judging_results": ["attempt_id"],
    "condition_comparison": ["cycle_id", "project_id", "task_id", "condition", "check_id"],
    "repair_item_runs": ["agent_label", "source_set", "item_id"],
}
