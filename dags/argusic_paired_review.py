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

0. **judge_pairs** — chooses the pairs to judge and judges them (`argusic.judging.paired_select`, the
   same step as `argusic paired review`): per item two graded repair patches of different runs (two
   models first; `resolved` ones), P and Q drawn and recorded, the same `seed` choosing the same
   pairs, pairs already judged never judged again (a stopped run is resumed by triggering it again).
   Judges: the real CLIs through the routing gateway, or with `script_dir` the real CLIs against the
   model double answering judgement scripts. A pair that cannot be judged is listed in the task's
   result and log; the others are loaded. Off with `judge_new_pairs` false, and when `pair_id` is set.
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
        "judge_new_pairs": Param(
            True,
            type="boolean",
            title="Judge new pairs",
            description="Choose the pairs not judged yet and run the judges on them first.",
        ),
        "seed": Param(
            "paired-review",
            type="string",
            minLength=1,
            maxLength=200,
            title="Selection seed",
            description="The same seed chooses the same pairs (argusic paired review --seed).",
        ),
        "per_item": Param(1, type="integer", minimum=1, maximum=20, title="Pairs per item"),
        "script_dir": Param(
            None,
            type=["null", "string"],
            title="Judgement scripts folder",
            description="The judges' real CLIs against the model double answering these scripts "
            "(<dir>/<judge>.json or <dir>/<pair_id>/<judge>.json). Empty: the real judges.",
        ),
    },
)
def argusic_paired_review():
    @task(execution_timeout=timedelta(hours=6))
    def judge_pairs(params: dict) -> dict:
        from argusic.judging.paired_select import DEFAULT_JUDGES, review_pairs, run_real, run_scripted

        if not params.get("judge_new_pairs", True) or params.get("pair_id"):
            return {"skipped": True}
        script_dir = params.get("script_dir")
        runner = run_scripted(script_dir, DEFAULT_JUDGES) if script_dir else run_real()
        return review_pairs(
            runner, seed=params.get("seed") or "paired-review", per_item=int(params.get("per_item") or 1),
            report=print,
        )  # fmt: skip

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
    judge_pairs() >> loaded
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
