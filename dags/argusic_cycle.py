"""One benchmark cycle: pool → plan → (agent × project × attempt) Docker attempts → ingest → build →
publish. Thin: scheduling, fan-out and wiring only; every rule lives in the argusic package."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, get_current_context, task

WAREHOUSE_POOL = "argusic_warehouse"  # one slot: DuckDB has one writer

DOC_MD = """
### Argusic cycle (manual, one run per cycle — or per agent / shard of a cycle)

1. **prepare_pool** — the cycle's pool: param `pool`, else the pool recorded by
   `argusic_pool_rotation`, else drawn now from `catalogue` (`pool_size` projects): every
   candidate's repository is mirrored and its pinned commit verified first; a candidate that fails
   is left out with its reason (`runs/pools/<cycle>/selection.json`, and this task's log). A bad
   catalogue fails the task at once, every problem listed (docs/catalogue.md).
2. **plan** — writes one AttemptSpec JSON per attempt to `runs/<cycle>/plan/<attempt_id>.json`
   (only this run's `shard_index` of `shard_count`) and returns their paths. An empty plan fails.
   `budget_scale` (0 < x <= 1) scales the time budgets for a dry run; the records say so (`demo`).
3. **run_attempt** — mapped over the plan, one task instance per attempt, labelled
   *agent / project / attempt N*. Runs the agent harness in a Docker container (bounded automatic
   reruns of an invalid attempt) and returns the run record path(s). Idempotent by attempt_id: clearing
   or retrying a finished attempt never measures it twice.
4. **ingest** → **build** (dbt build + expectations) — one task each, in the one-slot pool `argusic_warehouse`
   (DuckDB has a single writer). Loads are keyed by attempt_id: re-running adds no rows. A run whose
   attempts all ended invalid fails **ingest** with the reasons: nothing is loaded or published.
5. **publish** — re-validates, then writes `<ARGUSIC_PUBLISH_DIR>/<cycle>/board.json`; a failed
   expectation fails **build** (or **publish**) and nothing is published. Also in the one-slot pool.

Big cycles: one run may map at most `[core] max_map_length` attempts (16,384 in our config). Split a
cycle with one run per agent (`agents: ["x"]`) and/or `shard_count` > 1; see docs/airflow.md.
"""


def _attempt_label(spec_path) -> str:
    from argusic.airflow_tasks import attempt_label

    return attempt_label(spec_path)


def _cycle_id(params: dict) -> str:
    if params.get("cycle_id"):
        return params["cycle_id"]
    from argusic.airflow_tasks import cycle_id_for

    context = get_current_context()
    moment = context.get("logical_date") or context["dag_run"].run_after
    return cycle_id_for(moment.date())


@dag(
    dag_id="argusic_cycle",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=4,
    tags=["argusic", "cycle"],
    doc_md=DOC_MD,
    user_defined_macros={"attempt_label": _attempt_label},
    default_args={
        "owner": "argusic",
        "retries": 2,
        "retry_delay": timedelta(minutes=1),
    },
    params={
        "cycle_id": Param(None, type=["null", "string"], description="YYYY-MM[-suffix]; default: run month"),
        "agents": Param(["readme-runner"], type="array", items={"type": "string"}, minItems=1),
        "catalogue": Param(None, type=["null", "string"], description="Candidate catalogue JSON path"),
        "pool": Param(None, type=["null", "string"], description="An existing pool.json to use as is"),
        "pool_size": Param(None, type=["null", "integer"], minimum=1),
        "demo": Param(False, type="boolean", description="Scale time budgets down (demo / tests)"),
        "budget_scale": Param(
            None,
            type=["null", "number"],
            exclusiveMinimum=0,
            maximum=1,
            description="Dry runs: multiply every time budget by this (e.g. 0.01); recorded as demo",
        ),
        "attempts_per_pair": Param(None, type=["null", "integer"], minimum=1),
        "shard_index": Param(0, type="integer", minimum=0),
        "shard_count": Param(1, type="integer", minimum=1),
    },
)
def argusic_cycle():
    @task
    def prepare_pool(params: dict) -> str:
        from airflow.sdk.exceptions import AirflowFailException
        from argusic.airflow_tasks import resolve_pool
        from argusic.pool import CatalogueError

        try:
            return resolve_pool(
                _cycle_id(params), params.get("pool"), params.get("catalogue"), params.get("pool_size")
            )
        except CatalogueError as err:
            raise AirflowFailException(str(err)) from None  # a retry cannot fix the catalogue

    @task
    def plan(pool_path: str, params: dict) -> list[str]:
        from airflow.sdk import conf
        from airflow.sdk.exceptions import AirflowFailException
        from argusic.airflow_tasks import NothingPlanned, PlanTooLarge, write_plan

        try:
            return write_plan(
                pool_path,
                list(params["agents"]),
                attempts_per_pair=params.get("attempts_per_pair"),
                demo=bool(params.get("demo")),
                shard_index=int(params.get("shard_index") or 0),
                shard_count=int(params.get("shard_count") or 1),
                max_specs=conf.getint("core", "max_map_length", fallback=1024),
                budget_scale=params.get("budget_scale"),
            )
        except (PlanTooLarge, NothingPlanned) as err:
            raise AirflowFailException(str(err)) from None  # a retry cannot help: re-plan the run

    @task(
        retries=3,
        retry_delay=timedelta(minutes=2),
        retry_exponential_backoff=True,
        execution_timeout=timedelta(hours=8),  # 120 min budget × (1 + 2 bounded reruns), with margin
        map_index_template="{{ attempt_label(task.op_kwargs['spec_path']) }}",
    )
    def run_attempt(spec_path: str) -> list[str]:
        from argusic.airflow_tasks import run_planned_attempt

        return run_planned_attempt(spec_path)

    @task(pool=WAREHOUSE_POOL, pool_slots=1)
    def ingest(record_groups, params: dict) -> dict[str, int]:
        from airflow.sdk.exceptions import AirflowFailException
        from argusic.airflow_tasks import flatten_paths, ingest_cycle_records
        from argusic.cycle import CycleFailed

        try:
            return ingest_cycle_records(_cycle_id(params), flatten_paths(record_groups))
        except CycleFailed as err:
            raise AirflowFailException(str(err)) from None  # nothing valid: never an empty board

    @task(pool=WAREHOUSE_POOL, pool_slots=1)
    def build(ingested: dict[str, int]) -> str:
        from argusic.airflow_tasks import build_warehouse_summary

        return build_warehouse_summary()

    @task(pool=WAREHOUSE_POOL, pool_slots=1)
    def publish(built: str, params: dict) -> str:
        from argusic.airflow_tasks import publish_cycle_board

        return publish_cycle_board(_cycle_id(params))

    specs = plan(prepare_pool())
    records = run_attempt.expand(spec_path=specs)
    publish(build(ingest(records)))


argusic_cycle()
