"""Paired patch review (issue #31, seed 001, Layer 3): a person re-checks each bug the model judges
reported in a pair of patches. Thin: the bugs, the form's body and the recording live in
argusic.review.paired; the form in argusic.orchestration.paired_forms; loading in
argusic.warehouse.load_paired."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, task
from argusic.orchestration.dag_support import WAREHOUSE_TASK_ARGS, retry_delay
from argusic.orchestration.paired_forms import PairedBugCheckForm

DOC_MD = """
### Paired patch review (issue #31; docs/judging.md "Paired patch review")

The judges of a paired review (`argusic.judging.paired`: one repair item's two patches as P and Q,
six criteria 1..5, a verbatim quote for every score of 3 or less) report bugs; a person re-checks
each one here:

1. **load_reviews** — loads the review documents (`<runs>/paired/<pair_id>/review.json`) into
   `raw.paired_judgements` and `raw.paired_bugs`.
2. **bugs_to_check** — every loaded bug no person has re-checked (or one pair's, `pair_id`).
3. **check_bug** — one form per bug (labelled *item · side · judge*; Browse → Required actions):
   the judge's quote and what it says goes wrong, and the pair's context folder to open (the
   patch, the gold patch, the base code). Answer **Confirmed**, **Not a bug** or **Cannot tell**
   with a note (required); recorded at once in `decisions.paired_bug_checks` (who, when, why).
4. **build** — rebuilds the marts: `marts.paired_review` counts the confirmed bugs per side.

A re-check is people's data: it never changes a grade, a rate or the board. The person sees P and Q
only, never a label or a model name.
"""


@dag(
    dag_id="argusic_paired_review",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["argusic", "review", "judging", "repair"],
    doc_md=DOC_MD,
    default_args={"owner": "argusic", "retries": 1, "retry_delay": retry_delay(timedelta(minutes=1))},
    params={
        "pair_id": Param(
            None,
            type=["null", "string"],
            title="Pair id",
            description="Re-check this pair's bugs only (<item_id>.<seed>). Empty: every pair's.",
        ),
    },
)
def argusic_paired_review():
    @task(**WAREHOUSE_TASK_ARGS)
    def load_reviews() -> int:
        from argusic.warehouse.load_paired import ingest_paired

        return ingest_paired()

    @task
    def bugs_to_check(params: dict) -> list[dict]:
        from argusic.review.paired import awaiting, body_of, subject_of

        return [
            {"bug_id": bug.bug_id, "pair_id": bug.facts["pair_id"], "bug_label": bug.label,
             "subject": subject_of(bug), "body": body_of(bug)}
            for bug in awaiting(params.get("pair_id") or None)
        ]  # fmt: skip

    loaded = load_reviews()
    bugs = bugs_to_check()
    loaded >> bugs
    forms = PairedBugCheckForm.partial(
        task_id="check_bug", map_index_template="{{ task.bug_label }}"
    ).expand_kwargs(bugs)

    @task(**WAREHOUSE_TASK_ARGS, trigger_rule="none_failed_min_one_success")
    def build() -> str:
        from argusic.publication.build_worker import build_warehouse_summary

        return build_warehouse_summary()

    forms >> build()


argusic_paired_review()
