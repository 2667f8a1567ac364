"""What the argusic DAG files share, so that each DAG reuses rather than copies: the one-slot warehouse
pool, the attempt label, failing at once on a configuration error, the cycle of a run, and the bodies
of the mapped attempt task and of the run's tally. The steps it runs are cycle/'s, the same that
`argusic cycle run` calls."""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from pathlib import Path

from airflow.sdk import Param, get_current_context
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from argusic.core.spec import SpecMissing, SpecTampered, read_spec
from argusic.core.spec import attempt_label as spec_attempt_label
from argusic.cycle.ids import cycle_id_of_run
from argusic.orchestration.bench_standin import (
    STANDIN_ENV,
    STANDIN_LABEL,
    StandinRefused,
    standin_for,
    standin_requested,
)

log = logging.getLogger("argusic")
attempt_log = logging.getLogger("argusic.attempts.install_run")

RETRY_DELAY_ENV = "ARGUSIC_RETRY_DELAY_SECONDS"


def retry_delay(default: timedelta) -> timedelta:
    """A DAG's wait before a failed task's retry: `default`, or ARGUSIC_RETRY_DELAY_SECONDS for every
    DAG (a whole number of seconds, 0 to 3600). The tests shorten it: their retries are a person's
    forgotten note or a failed attempt, and they should not sit out a minute each."""
    text = os.environ.get(RETRY_DELAY_ENV, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) > 3600:
        raise ValueError(f"{RETRY_DELAY_ENV}={text!r}: a whole number of seconds from 0 to 3600")
    return timedelta(seconds=int(text))


WAREHOUSE_POOL = "argusic_warehouse"  # one slot: DuckDB has one writer

# Celery queues (docs/deployment.md): attempts run on the attempt workers (hosts with a Docker engine,
# concurrency from their cores); whatever writes the warehouse or the published folder runs on the one
# warehouse host. Other tasks use Airflow's default queue (the warehouse host serves it too). Queues
# are ignored by the LocalExecutor and by dag.test().
ATTEMPT_QUEUE = "argusic_attempts"
WAREHOUSE_QUEUE = "argusic_warehouse"
# The settings of every task that writes the warehouse (`@task(**WAREHOUSE_TASK_ARGS)`).
WAREHOUSE_TASK_ARGS = {"pool": WAREHOUSE_POOL, "pool_slots": 1, "queue": WAREHOUSE_QUEUE}

# The mapped attempt task's label: rendered when the instance starts (the attempt's label) and again
# when it ends, with how it ended (`attempt_result`, set by run_attempt_task). Before it starts, the
# argusic policy plugin (argusic.orchestration.policy) has already set the label from the plan.
ATTEMPT_MAP_INDEX_TEMPLATE = (
    "{% if attempt_result is defined %}{{ attempt_result }}"
    "{% else %}{{ attempt_label(task.op_kwargs['spec_path']) }}{% endif %}"
)

# The mapped attempt task's settings, the same in every DAG that runs attempts (`@task(**…)`).
# Retries cover infrastructure only: a finished attempt is never measured twice.
ATTEMPT_TASK_ARGS = {
    "retries": 3,
    "retry_delay": retry_delay(timedelta(minutes=2)),
    "retry_exponential_backoff": True,
    "execution_timeout": timedelta(hours=8),  # 120 min budget × (1 + 2 bounded reruns), with margin
    "map_index_template": ATTEMPT_MAP_INDEX_TEMPLATE,  # the attempt's label, then how it ended
    "queue": ATTEMPT_QUEUE,
}


def budget_params(demo_note: str = "") -> dict:
    """The `demo` and `budget_scale` params of every DAG that runs attempts (`**budget_params()` in its
    params). `demo_note`: what a demo run also means in that DAG (e.g. "flagged on the board")."""
    recorded = f"recorded as a demo, {demo_note}" if demo_note else "recorded as a demo"
    return {
        "demo": Param(
            False,
            type="boolean",
            title="Demo budgets",
            description=f"On: every time budget x 1/360 (90 min -> 15 s), {recorded}. Needed for the demo "
            "forge's fixtures. Off: real budgets (90 / 120 min per attempt).",
        ),
        "budget_scale": Param(
            None,
            type=["null", "number"],
            exclusiveMinimum=0,
            maximum=1,
            title="Budget scale",
            description="Dry runs: multiply every time budget by this (e.g. 0.01: 90 min -> 54 s); recorded "
            "as a demo. Empty: 1 (or 1/360 with demo).",
        ),
    }


def attempt_label(spec_path: str | Path) -> str:
    """The DAGs' `attempt_label` macro: `agent / project / attempt N`."""
    return spec_attempt_label(spec_path)


def fail_at_once(err: Exception):
    """A configuration error no retry can fix: the task fails now, with the fix in the message (also
    logged line by line, so that it reads without scrolling)."""
    for line in str(err).splitlines():
        log.error("%s", line)
    return AirflowFailException(str(err))


def interval_end():
    """The time a scheduled run stands for: its data interval's end, or run_after for a manual run
    without one (never now(): a rerun of the task sees the same time)."""
    context = get_current_context()
    return context.get("data_interval_end") or context["dag_run"].run_after


def cycle_id_of_context(params: dict) -> str:
    """The cycle of the running DAG run: the `cycle_id` param, else the cycle its run id names, else
    the month of the run (argusic.cycle.ids.cycle_id_of_run)."""
    context = get_current_context()
    moment = context.get("logical_date") or context["dag_run"].run_after
    return cycle_id_of_run(params.get("cycle_id"), context["dag_run"].run_id, moment.date())


def run_attempt_task(spec_path: str) -> list[str]:
    """The mapped attempt task: one planned attempt through the one attempt path (bounded reruns,
    resumable), its own log shown live and masked, and its story at the end. An attempt that is
    invalid even after the reruns is skipped (measured nothing that counts; its records are loaded)."""
    # deferred: the attempt path (keys, containers, requests, pydantic) loads on the worker that runs
    # the task, not in every parse of every DAG file
    from argusic.attempts.environment import EnvironmentRefused, HarnessUnrecorded
    from argusic.attempts.repair_run import RepairRefused
    from argusic.attempts.story import story_of
    from argusic.cycle.run import measure_planned_attempt
    from argusic.cycle.tally import glance_label

    try:
        if standin_requested():  # a benchmark worker (bench_standin): never a real cycle
            return _bench_standin(spec_path)
    except StandinRefused as err:
        raise fail_at_once(err) from None
    try:
        spec = read_spec(spec_path)  # once: the attempt and its story use it
    except (SpecMissing, SpecTampered) as err:  # the plan's pack gone or not its bytes: no retry fixes it
        raise fail_at_once(err) from None
    try:
        measured = measure_planned_attempt(spec, live_log=True)
    except (EnvironmentRefused, HarnessUnrecorded) as err:  # another harness than the cycle's: no retry
        raise fail_at_once(err) from None
    except RepairRefused as err:  # a repair item rebuilt since the plan, a stand-in outside a demo
        raise fail_at_once(err) from None
    story = story_of(spec, measured)
    for line in story.lines:
        attempt_log.info("%s", line)
    # the outcome in capitals after the attempt's name (PASS, FAIL, TIMEOUT, INVALID): docs/airflow.md
    get_current_context()["attempt_result"] = glance_label(spec.label, story.label, measured[-1].record)
    if story.invalid:  # measured nothing that counts: not green; loaded by ingest, never scored
        raise AirflowSkipException(f"invalid after the bounded reruns: {story.label}")
    return [str(m.path) for m in measured]


# The tally task's label: how many of the run's attempts passed, failed, timed out and were invalid
# (`tally_summary`, set by tally_task), the run's summary in the task instance lists.
TALLY_MAP_INDEX_TEMPLATE = (
    "{% if tally_summary is defined %}{{ tally_summary }}{% else %}tally of the attempts{% endif %}"
)
# The tally task's settings (`@task(**TALLY_TASK_ARGS)`, mapped over one scope: a mapped instance is
# the one kind Airflow gives a label). It runs once every upstream is done, whatever their states: an
# attempt task that failed is counted as without a record, a plan that failed leaves nothing to count
# (the plan is pulled, not passed: a failed plan does not fail the tally too). Default queue.
TALLY_TASK_ARGS = {
    "trigger_rule": "all_done",
    "map_index_template": TALLY_MAP_INDEX_TEMPLATE,
}


def tally_task(plan_task_id: str) -> dict[str, int | str]:
    """The run's tally once its attempts are done: how many passed, failed, timed out and were invalid
    (and any without a record), read from the records as the rubric will class them. Its label and
    its log's first line give the counts; the log then lists every attempt by outcome, failures
    first. It counts, it never judges: a missing or unreadable record is listed, not raised."""
    from argusic.cycle.tally import tally_plan  # deferred: the attempt path's modules

    context = get_current_context()
    spec_paths = context["ti"].xcom_pull(task_ids=plan_task_id) or []
    plan = tally_plan(spec_paths)
    for line in plan.lines():
        log.info("%s", line)
    summary = plan.summary() if spec_paths else f"nothing to tally: {plan_task_id} returned no plan"
    context["tally_summary"] = summary
    return {**plan.counts(), "summary": summary}


def _bench_standin(spec_path: str) -> list[str]:
    """The attempt as an instant stand-in (scripts/bench_scheduling.py): its spec is read as a real
    attempt's is, nothing runs, nothing is recorded (StandinRefused unless its cycle is a benchmark's)."""
    spec = read_spec(spec_path)
    standin_for(spec.cycle_id, spec.attempt_id)  # raises StandinRefused for any other cycle
    attempt_log.warning(
        "BENCHMARK STAND-IN: attempt %s was not run (no container, no evidence, no run record): "
        "%s=1 on this worker and cycle %s is a benchmark cycle",
        spec.attempt_id,
        STANDIN_ENV,
        spec.cycle_id,
    )
    get_current_context()["attempt_result"] = STANDIN_LABEL
    return []
