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
   `argusic_pool_rotation`, else drawn now from `catalogue` (`pool_size` projects).
2. **plan** — writes one AttemptSpec JSON per attempt to `runs/<cycle>/plan/<attempt_id>.json`
   (only this run's `shard_index` of `shard_count`) and returns their paths.
3. **run_attempt** — mapped over the plan, one task instance per attempt, labelled
   *agent / project / attempt N*. Runs the agent harness in a Docker container (bounded automatic
   reruns of an invalid attempt) and returns the run record path(s). Idempotent by attempt_id: clearing
   or retrying a finished attempt never measures it twice.
4. **ingest** → **build** (dbt build + expectations) — one task each, in the one-slot pool `argusic_warehouse`
   (DuckDB has a single writer). Loads are keyed by attempt_id: re-running adds no rows.
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
        "attempts_per_pair": Param(None, type=["null", "integer"], minimum=1),
        "shard_index": Param(0, type="integer", minimum=0),
        "shard_count": Param(1, type="integer", minimum=1),
    },
)
def argusic_cycle():
    @task
    def prepare_pool(params: dict) -> str:
        from argusic.airflow_tasks import resolve_pool

        return resolve_pool(
            _cycle_id(params), params.get("pool"), params.get("catalogue"), params.get("pool_size")
        )

    @task
    def plan(pool_path: str, params: dict) -> list[str]:
        from airflow.sdk import conf
        from airflow.sdk.exceptions import AirflowFailException
        from argusic.airflow_tasks import PlanTooLarge, write_plan

        try:
            return write_plan(
                pool_path,
                list(params["agents"]),
                attempts_per_pair=params.get("attempts_per_pair"),
                demo=bool(params.get("demo")),
                shard_index=int(params.get("shard_index") or 0),
                shard_count=int(params.get("shard_count") or 1),
                max_specs=conf.getint("core", "max_map_length", fallback=1024),
            )
        except PlanTooLarge as err:
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
    def ingest(record_groups) -> dict[str, int]:
        from argusic.airflow_tasks import flatten_paths, ingest_records

        return ingest_records(flatten_paths(record_groups))

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
