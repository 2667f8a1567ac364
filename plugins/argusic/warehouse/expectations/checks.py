"""Checks written in SQL that a suite cannot say (sums across columns, row-local rules)."""

from __future__ import annotations

from dataclasses import dataclass

from argusic.warehouse.expectations.suites import CHECK_COUNTS, HINTS, JUDGED_CRITERIA, PAIRED_BUG_COUNTS

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
    "paired_review": {
        "check_valid_within_judges": Check("t.valid_judges <= t.judges", ("valid_judges", "judges")),
        "check_judged_iff_two_valid": Check(
            "(t.status = 'judged') = (t.valid_judges >= 2)", ("status", "valid_judges")
        ),
        "check_medians_iff_judged": Check(
            "case when t.status = 'judged' then not ({null:p_median} or {null:q_median} "
            "or {null:p_spread} or {null:q_spread}) else {null:p_median} and {null:q_median} "
            "and {null:p_spread} and {null:q_spread} end",
            ("status", "p_median", "q_median", "p_spread", "q_spread"),
        ),
        "check_two_different_patches": Check(
            "coalesce(t.p_patch_id <> t.q_patch_id, false)", ("p_patch_id", "q_patch_id")
        ),
        "check_bugs_add_up": Check(
            "coalesce(t.p_bugs_confirmed <= t.p_bugs_reported and t.q_bugs_confirmed <= t.q_bugs_reported "
            "and t.p_bugs_confirmed + t.q_bugs_confirmed + t.bugs_not_a_bug + t.bugs_cannot_tell "
            "+ t.bugs_awaiting_check = t.p_bugs_reported + t.q_bugs_reported, false)",
            PAIRED_BUG_COUNTS,
        ),
    },
    "judging_results": {
        "check_task_follows_purpose": Check(
            "coalesce(t.task_id = case when t.purpose = 'repair' then 'repair' "
            "else 'install_and_run' end, false)",
            ("task_id", "purpose"),
        ),
        "check_provisional_decision_follows_result": Check(
            "case when {null:provisional_result} then {null:provisional_decision} "
            "else coalesce(t.provisional_decision = case t.provisional_result when 'pass' then 'promote' "
            "when 'fail' then 'reject' end, false) end",
            ("provisional_result", "provisional_decision"),
        ),
        "check_final_is_person_else_provisional": Check(
            "case when not {null:person_decision} then coalesce(t.final_decision = t.person_decision, false) "
            "when not {null:provisional_decision} "
            "then coalesce(t.final_decision = t.provisional_decision, false) "
            "else {null:final_decision} end",
            ("final_decision", "person_decision", "provisional_decision"),
        ),
        "check_kind_follows_decisions": Check(
            "case when not {null:person_decision} then coalesce(t.decided_by_kind = 'person', false) "
            "when not {null:provisional_decision} then coalesce(t.decided_by_kind = 'provisional', false) "
            "else {null:decided_by_kind} end",
            ("decided_by_kind", "person_decision", "provisional_decision"),
        ),
        "check_counts_iff_promoted": Check(
            "t.counts_as_result = coalesce(t.final_decision = 'promote', false)",
            ("counts_as_result", "final_decision"),
        ),
        "check_overturned_follows": Check(
            "t.overturned = coalesce(t.person_decision <> t.provisional_decision, false)",
            ("overturned", "person_decision", "provisional_decision"),
        ),
        "check_person_has_who_and_when": Check(
            "{null:person_decision} or not ({null:decided_by} or {null:decided_at} or {null:look})",
            ("person_decision", "decided_by", "decided_at", "look"),
        ),
    },
    "condition_comparison": {
        "check_counts_within_runs": Check(
            "t.agents <= t.runs and t.provisional_passes <= t.runs and t.results <= t.runs "
            "and t.decided_by_people <= t.runs and coalesce(t.checked_runs <= t.runs, true)",
            ("agents", "provisional_passes", "results", "decided_by_people", "checked_runs", "runs"),
        ),
        "check_outcomes_add_up": Check(
            "{null:check_id} or coalesce(t.checked_runs = t.check_passes + t.check_fails "
            "+ t.check_not_applicable + t.check_unavailable, false)",
            ("check_id", *CHECK_COUNTS),
        ),
        "check_check_fields_together": Check(
            "case when {null:check_id} then {null:check_type} and {null:applicability} "
            "else not ({null:check_type} or {null:applicability} or {null:checked_runs}) end",
            ("check_id", "check_type", "applicability", "checked_runs"),
        ),
    },
    "repair_item_runs": {
        "check_resolved_within_runs": Check("t.resolved_runs <= t.runs", ("resolved_runs", "runs")),
        "check_pass_rate_is_resolved_over_runs": Check(
            "case when t.runs > 0 then coalesce(abs(t.pass_rate::double - t.resolved_runs::double / t.runs) "
            f"<= {_TOL}, false) else {{null:pass_rate}} end",
            ("pass_rate", "resolved_runs", "runs"),
        ),
        "check_has_every_run_follows": Check(
            "t.has_every_run = (t.runs >= t.runs_planned)", ("has_every_run", "runs", "runs_planned")
        ),
        "check_resolved_every_run_follows": Check(
            "t.resolved_every_run = (t.runs > 0 and t.resolved_runs = t.runs)",
            ("resolved_every_run", "runs", "resolved_runs"),
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
