"""Disputes: a maintainer's dispute of one attempt is filed, a person rules on it, and when our
environment was at fault the attempt is rerun (the one attempt path), loaded and built. Thin: every
rule lives in argusic.review.disputes."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, get_current_context, task
from argusic.orchestration.dag_support import WAREHOUSE_TASK_ARGS, retry_delay
from argusic.orchestration.forms import DisputeRulingForm
from argusic.orchestration.pickers import attempt_choices

DOC_MD = """
### Disputes (METHODOLOGY.md §10 "Evidence integrity", its closing paragraph)

Trigger with the dispute as filed by the maintainer (the trigger form: attempt id, claim, contact):

1. **file_dispute** — records it (`decisions.disputes`; filed by the user who triggered the run).
   Only the attempt that counts can be disputed (not one that was rerun).
2. **rule** — a form (Browse → Required actions): the claim, the attempt as scored, links to its
   served log and recording. **Environment at fault** or **Result stands**, with a required note.
3. **correct** — environment at fault only (else skipped): reruns the attempt through the same
   attempt path as its next run (`<attempt>.r<n>`, `rerun_of` the original), loads the records and
   records the correction with the ruling (`dispute_rulings.rerun_attempt_id`).
4. **build** — the rerun counts in the original's place (`marts.attempt_corrections`); the original
   stays loaded, marked corrected; no evidence is touched. Publish through `argusic_cycle`'s approval.

The run is named after the disputed attempt, `dispute__<attempt_id>__<time>`, when the trigger
form's Run ID (Advanced Options) is left empty; a Run ID typed that names another attempt is refused.

From a shell: `argusic dispute file|rule|list` (docs/operators.md).
"""


@dag(
    dag_id="argusic_disputes",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["argusic", "disputes"],
    doc_md=DOC_MD,
    default_args={"owner": "argusic", "retries": 1, "retry_delay": retry_delay(timedelta(minutes=1))},
    params={
        "attempt_id": Param(
            "",
            type="string",
            minLength=1,
            title="Attempt id",
            description="The disputed attempt as its page names it: pick it from the list (the published "
            "attempts, newest cycle first) or type it, e.g. 2026-12.board.readme-runner.demo-cli.a2.",
            **attempt_choices().param_schema(),  # as published, newest cycle first
        ),
        "claim": Param(
            "",
            type="string",
            minLength=1,
            maxLength=4000,
            title="Claim",
            description="What the maintainer says went wrong, as they wrote it.",
        ),
        "contact": Param(
            "",
            type="string",
            minLength=1,
            maxLength=300,
            title="Contact",
            description="How to reach the maintainer with the ruling (kept with the dispute, "
            "never published).",
        ),
    },
)
def argusic_disputes():
    @task
    def file_dispute(params: dict) -> str:
        from airflow.sdk.exceptions import AirflowFailException
        from argusic.cycle.ids import ConfigurationError
        from argusic.orchestration.run_ids import disputed_attempt
        from argusic.review.disputes import file
        from argusic.warehouse.decisions import DecisionError

        context = get_current_context()
        run = context["dag_run"]
        by = getattr(run, "triggering_user_name", None) or "airflow"
        filed_at = run.run_after or run.start_date  # the time the trigger was recorded
        try:
            attempt_id = disputed_attempt(params["attempt_id"], run.run_id)  # a run id names no other
            return file(attempt_id, params["claim"], params["contact"], by, filed_at,
                        note=f"filed through argusic_disputes run {run.run_id}")  # fmt: skip
        except (DecisionError, ConfigurationError) as err:
            raise AirflowFailException(str(err)) from None

    @task(execution_timeout=timedelta(hours=8))
    def correct(ruled: dict) -> list[str]:
        from airflow.sdk.exceptions import AirflowSkipException
        from argusic.workflows.corrections import correct as run_correction

        if ruled["ruling"] != "environment_at_fault":
            raise AirflowSkipException(f"dispute {ruled['dispute_id']}: the result stands, nothing to rerun")
        return run_correction(ruled["dispute_id"], live_log=True)

    @task(**WAREHOUSE_TASK_ARGS)
    def build(records: list[str]) -> str:
        from argusic.publication.build_worker import build_warehouse_summary

        return build_warehouse_summary()

    filed = file_dispute()
    ruling = DisputeRulingForm(task_id="rule", filed_task="file_dispute")
    filed >> ruling
    build(correct(ruling.output))


argusic_disputes()
