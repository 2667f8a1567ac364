"""Environment review: one form per project under review (every agent failed it in a cycle), answered
by a person in the Airflow UI. Thin: the cases, the forms and the recording live in argusic.review."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, get_current_context, task
from argusic.orchestration.dag_support import WAREHOUSE_TASK_ARGS, fail_at_once, retry_delay
from argusic.orchestration.forms import EnvironmentReviewForm
from argusic.orchestration.pickers import cycle_choices

DOC_MD = """
### Environment review (METHODOLOGY.md §8 "Environment review")

A project that every agent failed in a cycle is kept out of the scores until a person says whose
fault it was. Trigger this DAG (optionally for one `cycle_id`) after a cycle's build:

1. **projects_under_review** — the projects with review status *awaiting decision*
   (`marts.project_review`), with their attempts.
2. **review_project** — one form per project (labelled *project · cycle*; Browse → Required
   actions): each attempt's agent, outcome, end reason and final state, with links to its served
   log and recording. Answer **Project at fault** (its results count again) or **Environment at
   fault** (they stay out), with a required note. The answer is recorded at once
   (`decisions.review_decisions`: who, when, why). A form waits without holding a worker slot.
3. **build** — rebuilds the marts once every form is answered; the board then reflects the
   decisions (publish it through `argusic_cycle`'s approval, or `argusic publish`).

The run is named after its cycle, `review__<cycle_id>__<time>` (`review__all-cycles__<time>` with
`cycle_id` empty), when the trigger form's Run ID (Advanced Options) is left empty. A Run ID typed as
`review__<cycle_id>__<anything>` with `cycle_id` empty reviews that cycle.

The same decision from a shell: `argusic review decide --cycle C --project P --decision
project_at_fault --by NAME --note WHY` (docs/operators.md).
"""


def _cycle(params: dict) -> str | None:
    """The cycle_id param, else the cycle the run id names (review__<cycle>__<time>)."""
    from argusic.cycle.ids import ConfigurationError  # deferred: as the tasks' own imports
    from argusic.orchestration.run_ids import REVIEW_PREFIX, review_cycle

    try:
        return review_cycle(params.get("cycle_id"), get_current_context()["dag_run"].run_id, REVIEW_PREFIX)
    except ConfigurationError as err:
        raise fail_at_once(err) from None


@dag(
    dag_id="argusic_review",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["argusic", "review"],
    doc_md=DOC_MD,
    default_args={"owner": "argusic", "retries": 1, "retry_delay": retry_delay(timedelta(minutes=1))},
    params={
        "cycle_id": Param(
            None,
            type=["null", "string"],
            title="Cycle id",
            description="Review the projects of this cycle only (e.g. 2026-12); the run is named "
            "review__<cycle_id>__<time>. Empty: every cycle's projects that await a decision "
            "(review__all-cycles__<time>), or the cycle a Run ID typed under Advanced Options names.",
            **cycle_choices().param_schema(),  # the warehouse's cycles, as of the last build
        ),
    },
)
def argusic_review():
    @task
    def projects_under_review(params: dict) -> list[dict]:
        from argusic.review.environment import awaiting, body_of, subject_of

        return [
            {"cycle_id": c.cycle_id, "project_id": c.project_id, "subject": subject_of(c), "body": body_of(c)}
            for c in awaiting(_cycle(params))
        ]

    forms = EnvironmentReviewForm.partial(
        task_id="review_project",
        map_index_template="{{ task.project_id }} · cycle {{ task.cycle_id }}",
    ).expand_kwargs(projects_under_review())

    @task(**WAREHOUSE_TASK_ARGS)
    def build() -> str:
        from argusic.publication.build_worker import build_warehouse_summary

        return build_warehouse_summary()

    forms >> build()


argusic_review()
