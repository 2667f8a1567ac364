"""Adaptive project verdicts for a cycle's projects: prepare → build → rounds of (plan → attempts →
ingest → build) until nothing is pending → verdicts. Thin: every rule is in dbt (marts.verdict_plan)
and the argusic package (argusic.workflows.verdicts)."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, get_current_context, task
from argusic.orchestration.dag_support import (
    ATTEMPT_TASK_ARGS,
    WAREHOUSE_TASK_ARGS,
    attempt_label,
    budget_params,
    cycle_id_of_context,
    fail_at_once,
    retry_delay,
    run_attempt_task,
)
from argusic.workflows.verdict_rounds import MAX_ROUNDS

DOC_MD = f"""
### Argusic verdicts (manual): does each project of a cycle run, at its pinned commit?

METHODOLOGY.md §7 "Project verdicts": the standard agent runs once; any pass ends it
(**runs**, or **runs with mocks**); a fail gets one more attempt; two complete attempts without a
pass settle **could not verify**. A **stronger agent** runs only on request (param `stronger_agent`
for every listed project, or `argusic verdicts request`), and its pass makes the project "runs",
naming the agent. Board attempts count too: a project the cycle already settled plans nothing.

1. **prepare** — the cycle's pool (param `pool`, else the one recorded for the cycle); `projects`
   narrows it. Loads the pool into the warehouse and records the stronger-agent request (who: the
   person who triggered the run; why: `note`).
2. **build_before** — dbt build, so the plan sees every attempt and request so far.
3. **plan_N → run_attempt_N → ingest_N → build_N**, N = 1..{MAX_ROUNDS}: `plan_N` reads
   `marts.verdict_plan` and writes one AttemptSpec (purpose `verdict`) per project still pending;
   its log says why each is needed. **Skipped** = nothing pending: every later round is skipped too.
   Attempts are labelled and behave as in `argusic_cycle` (green measured, skipped invalid after the
   bounded reruns, red not measured). A fail needs its second attempt after it is scored: hence rounds.
4. **verdicts** — each project's verdict as it now stands, and anything still pending or needing a
   person (an attempt invalid after its reruns).

Re-running with nothing pending plans nothing and runs nothing (attempt ids are deterministic:
`<cycle>.verdict.<agent>.<project>.a<N>`). The demo: `{{"cycle_id": "2026-12-demo", "demo": true}}`
after `argusic demo` or an `argusic_cycle` run (docs/airflow.md).
"""


def _targets(doc: dict):
    from argusic.workflows.verdicts import Targets

    return Targets.from_dict(doc)


@dag(
    dag_id="argusic_verdicts",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # two runs would plan the same attempt ids at once
    tags=["argusic", "verdicts"],
    doc_md=DOC_MD,
    user_defined_macros={"attempt_label": attempt_label},
    default_args={"owner": "argusic", "retries": 2, "retry_delay": retry_delay(timedelta(minutes=1))},
    params={
        "cycle_id": Param(
            None,
            type=["null", "string"],
            title="Cycle id",
            description="YYYY-MM[-suffix]: the cycle whose pool holds the projects (its pinned commits are "
            "judged). Empty: the cycle named by the run id (cycle__<cycle_id>__<time>), else the month.",
        ),
        "pool": Param(
            None,
            type=["null", "string"],
            title="Pool file",
            description="A pool.json of that cycle on the workers. Empty: the pool recorded for the cycle "
            "(by argusic_pool_rotation, argusic_cycle or argusic demo).",
        ),
        "projects": Param(
            [],
            type="array",
            items={"type": "string"},
            title="Projects",
            description="Project ids of the pool to judge. Empty: every project of the pool.",
        ),
        "stronger_agent": Param(
            None,
            type=["null", "string"],
            title="Stronger agent",
            description="Ask for this agent (agents.csv, not the standard one) on every listed project: "
            "it runs once where the standard agent could not verify. Recorded as a decision (who "
            "triggered the run, and note).",
        ),
        "note": Param(
            None,
            type=["null", "string"],
            title="Why (for a stronger agent)",
            description="Why the stronger agent is asked for (required with stronger_agent; kept with the "
            "request in decisions.verdict_requests).",
        ),
        **budget_params(),
    },
)
def argusic_verdicts():
    @task(**WAREHOUSE_TASK_ARGS)
    def prepare(params: dict) -> dict:
        from argusic.cycle.ids import ConfigurationError
        from argusic.cycle.plan import require_scaled_budgets_on_the_forge
        from argusic.workflows.verdicts import VerdictConfigurationError, prepare

        dag_run = get_current_context()["dag_run"]
        try:
            targets = prepare(
                cycle_id_of_context(params),
                params.get("pool"),
                params.get("projects") or (),
                stronger_agent=params.get("stronger_agent"),
                requested_by=getattr(dag_run, "triggering_user_name", None) or "airflow",
                note=params.get("note"),
                decided_at=dag_run.run_after,  # the time Airflow recorded for the request
            )
            require_scaled_budgets_on_the_forge(
                targets.pool_path, bool(params.get("demo")), params.get("budget_scale")
            )
        except (ConfigurationError, VerdictConfigurationError, ValueError) as err:
            raise fail_at_once(err) from None  # a retry cannot fix a param
        return targets.to_dict()

    @task(**WAREHOUSE_TASK_ARGS)
    def build(_after=None) -> str:
        from argusic.workflows.verdicts import build

        return build()

    @task
    def plan(targets: dict, _built: str, params: dict) -> list[str]:
        import logging

        from airflow.sdk.exceptions import AirflowSkipException
        from argusic.workflows.verdicts import plan_lines, read_plan, write_plan

        planned = read_plan(_targets(targets), bool(params.get("demo")), params.get("budget_scale"))
        for line in plan_lines(planned):
            logging.getLogger("argusic.workflows.verdicts").info("%s", line)
        if not planned.pending:
            raise AirflowSkipException("nothing pending: no verdict attempt to run")
        return write_plan(planned)

    @task(**ATTEMPT_TASK_ARGS)
    def run_attempt(spec_path: str) -> list[str]:
        return run_attempt_task(spec_path)

    # none_failed_min_one_success: after invalid (skipped) attempts too, but not when plan was skipped
    @task(**WAREHOUSE_TASK_ARGS, trigger_rule="none_failed_min_one_success")
    def ingest(spec_paths: list[str]) -> dict[str, int]:
        from argusic.workflows.verdicts import ingest_plan

        return ingest_plan(spec_paths)

    @task(trigger_rule="none_failed")
    def verdicts(targets: dict) -> list[str]:
        import logging

        from argusic.workflows.verdicts import plan_lines, read_plan, verdict_lines

        chosen = _targets(targets)
        lines = [f"verdicts of cycle {chosen.cycle_id}'s {len(chosen.projects)} project(s):"]
        lines += verdict_lines(chosen)
        left = read_plan(chosen)
        if left.pending or left.exhausted:
            lines += ["still to do (trigger again to continue, or see the attempts named):"]
            lines += plan_lines(left)
        for line in lines:
            logging.getLogger("argusic.workflows.verdicts").info("%s", line)
        return lines

    targets = prepare()
    built = build.override(task_id="build_before")(targets)
    for n in range(1, MAX_ROUNDS + 1):
        specs = plan.override(task_id=f"plan_{n}")(targets, built)
        attempts = run_attempt.override(task_id=f"run_attempt_{n}").expand(spec_path=specs)
        ingested = ingest.override(task_id=f"ingest_{n}")(specs)
        attempts >> ingested
        built = build.override(task_id=f"build_{n}")(ingested)
    # an ordering, not an argument: the last build is usually skipped and has no value to read
    built >> verdicts(targets)


argusic_verdicts()
