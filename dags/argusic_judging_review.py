"""Judging review (issue #14, Layer 3): one form per attempt of the review queue (the selected ones,
every one, or the ones named), or the queue in one form, answered by a person in the Airflow UI.
Thin: the queue, the form's body and the recording live in argusic.review.judging; the form in
argusic.orchestration.forms."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, get_current_context, task
from argusic.orchestration.dag_support import WAREHOUSE_TASK_ARGS, fail_at_once, retry_delay
from argusic.orchestration.forms import BulkJudgingReviewForm, JudgingReviewForm
from argusic.orchestration.pickers import cycle_choices

DOC_MD = """
### Judging review (issue #14, Layer 3; docs/judging.md)

Every judged attempt is in `marts.review_queue` (issue #31): the selection rules decide the order,
not whether a person can review it. Selected first are the attempts whose judges disagree, whose
hints and judges disagree, whose result is near the boundary between pass and fail, that too few
judges could read though they left an artifact or patch, or that a maintainer disputes. Trigger this
DAG for a `cycle_id` after a build that loaded the judges' verdicts:

1. **items_to_review** — the queue's attempts awaiting a review, with the form's body: the
   selected ones; with `every_attempt: true` every awaiting attempt (selected first); with
   `attempt_ids` exactly the attempts named (selected or not).
2. **review_attempt** — one form per attempt (labelled *project · agent purpose #n*; Browse →
   Required actions): provisional result, outcome, duration, tokens, cost, the three hints, the
   judges' medians, total and disagreement, links to the served log and recording, the rendered
   pages' screenshots. Answer **Promote** or **Reject** with a **look** 0..2 (required),
   optionally your own code_structure / logic_correctness (0..2) and a note. The answer is
   recorded at once (`decisions.judging_reviews`: who, when, why). A form waits without holding a
   worker slot.
   With `bulk: true` (the trigger form's checkbox) the queue comes in **one form** instead,
   **review_queue** (up to 20 of the same attempts as above, selected ones first; the rest wait for
   the next run): each attempt's body under
   its number, and per attempt one choice (*Promote* or *Reject* with its look, or *Leave for
   later*) and an optional note. **Record** records every chosen attempt as its own review (who,
   when, why: the same rows as one form each); an attempt left for later stays in the queue.
3. **build** — rebuilds the marts: the attempt leaves the queue's *awaiting* state and
   `marts.judging_review_divergence` compares the review with the judges.

A person's Promote/Reject is the final decision whether the attempt counts as a result
(`marts.judging_results`: the person's decision when present, else the provisional one; shown on the
public run page). It never changes a score, a verdict, a rate or the board.
The run is named after what it reviews when the trigger form's Run ID (Advanced Options) is left
empty: `judging__<cycle_id>__<time>`, with `__bulk` for one form, `__every` for every attempt, the
attempt id or `__<n>-attempts` for attempts named (e.g. `judging__2026-12__bulk__20261203T101500.123Z`;
`judging__all-cycles__…` with `cycle_id` empty). A Run ID typed as `judging__<cycle_id>__<anything>`
with `cycle_id` empty reviews that cycle's queue.

The same review from a shell: `argusic judging review --attempt A --look N --decision promote|reject
[--code-structure N] [--logic-correctness N] --by NAME --note WHY`.
"""


def _cycle(params: dict) -> str | None:
    """The cycle_id param, else the cycle the run id names (judging__<cycle>__<time>)."""
    from argusic.cycle.ids import ConfigurationError  # deferred: as the tasks' own imports
    from argusic.orchestration.run_ids import JUDGING_PREFIX, review_cycle

    try:
        return review_cycle(params.get("cycle_id"), get_current_context()["dag_run"].run_id, JUDGING_PREFIX)
    except ConfigurationError as err:
        raise fail_at_once(err) from None


def _awaiting(awaiting, params: dict, *, selected_only: bool, attempt_ids: list[str] | None) -> list:
    """The queue's awaiting attempts as asked (argusic.review.judging.awaiting); an attempt named that
    is not awaiting a review fails the run at once, naming it (no retry fixes it)."""
    from argusic.review.judging import ReviewError  # deferred: as the tasks' own imports

    try:
        return awaiting(_cycle(params), selected_only=selected_only, attempt_ids=attempt_ids)
    except ReviewError as err:
        raise fail_at_once(err) from None


@dag(
    dag_id="argusic_judging_review",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["argusic", "review", "judging"],
    doc_md=DOC_MD,
    default_args={"owner": "argusic", "retries": 1, "retry_delay": retry_delay(timedelta(minutes=1))},
    params={
        "cycle_id": Param(
            None,
            type=["null", "string"],
            title="Cycle id",
            description="Review this cycle's queue only (e.g. 2026-12); the run is named "
            "judging__<cycle_id>__<time>. Empty: every cycle's awaiting attempts "
            "(judging__all-cycles__<time>), or the cycle a Run ID typed under Advanced Options names.",
            **cycle_choices().param_schema(),  # the warehouse's cycles, as of the last build
        ),
        "bulk": Param(
            False,
            type="boolean",
            title="One form for the queue",
            description="On: the queue's attempts (up to 20) in one form, one choice each (Promote or "
            "Reject with a look, or leave for later); each recorded as its own review. Off: one form "
            "per attempt (with the optional code structure and logic correctness scores).",
        ),
        "every_attempt": Param(
            False,
            type="boolean",
            title="Every attempt, not only the selected ones",
            description="On: every awaiting attempt of the queue, selected ones first (every attempt "
            "can be reviewed; the selection rules only order the queue), one form each or, with bulk, "
            "up to 20 in one form. Off: the selected attempts only.",
        ),
        "attempt_ids": Param(
            None,
            type=["null", "array"],
            items={"type": "string"},
            title="Attempts to review",
            description="Review exactly these attempts (ids as `argusic judging queue` lists them), "
            "selected by a rule or not; one that is not awaiting a review fails the run naming it. "
            "Empty: the queue as above.",
        ),
    },
)
def argusic_judging_review():
    @task
    def items_to_review(params: dict) -> list[dict]:
        from argusic.review.judging import awaiting, body_of, subject_of

        if params.get("bulk"):
            return []  # the queue goes to review_queue, one form
        named = params.get("attempt_ids") or None
        every = bool(params.get("every_attempt")) or named is not None
        return [
            {
                "attempt_id": item.attempt_id,
                "project_id": item.facts["project_id"],
                "attempt_label": item.attempt_label,
                "task_revision": item.facts["task_revision"],
                "subject": subject_of(item),
                "body": body_of(item),
            }
            for item in _awaiting(awaiting, params, selected_only=not every, attempt_ids=named)
        ]

    @task
    def queue_for_one_form(params: dict) -> dict:
        from argusic.review.judging import BULK_MAX, awaiting, bulk_body

        if not params.get("bulk"):
            return {"items": [], "body": ""}
        named = params.get("attempt_ids") or None
        every = bool(params.get("every_attempt")) or named is not None
        queue = _awaiting(awaiting, params, selected_only=not every, attempt_ids=named)
        shown = queue[:BULK_MAX]
        items = [{"attempt_id": i.attempt_id, "shown_id": i.shown_id, "project_id": i.facts["project_id"],
                  "attempt_label": i.attempt_label, "task_revision": i.facts["task_revision"]}
                 for i in shown]  # fmt: skip
        return {"items": items, "body": bulk_body(shown, len(queue) - len(shown))}

    one_form = BulkJudgingReviewForm(task_id="review_queue", items_task="queue_for_one_form")
    queue_for_one_form() >> one_form

    forms = JudgingReviewForm.partial(
        task_id="review_attempt",
        map_index_template="{{ task.project_id }} · {{ task.attempt_label }}",
    ).expand_kwargs(items_to_review())

    # after the forms of either way (the other way is skipped); nothing reviewed: skipped as well
    @task(**WAREHOUSE_TASK_ARGS, trigger_rule="none_failed_min_one_success")
    def build() -> str:
        from argusic.publication.build_worker import build_warehouse_summary

        return build_warehouse_summary()

    [forms, one_form] >> build()


argusic_judging_review()
