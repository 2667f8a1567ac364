"""Hourly upkeep: remove attempt containers orphaned by crashed workers and the debris of killed
runs, and audit stored evidence against the fingerprints in the run records. Thin: logic lives in
argusic.ops.maintenance."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import dag, task
from argusic.orchestration.dag_support import WAREHOUSE_TASK_ARGS, interval_end, retry_delay

DOC_MD = """
### Argusic maintenance (hourly)

* **remove_orphaned_containers** — removes every attempt container of this installation that
  outlived its time budget by more than the grace period at the end of this run's data interval (its
  worker crashed). XCom: the names removed.
* **sweep_debris** — removes the scratch folders of this installation's attempts whose orchestrator
  and reaper were both killed: their size-capped areas are unmounted, loop devices detached, images
  and containers removed. XCom: the folders removed.
* **sweep_model_keys** — deletes every per-run model key at the gateway that belongs to no running
  attempt (a worker killed before its clean-up ran). Does nothing when no gateway is configured.
  `argusic_key_sweep` runs the same every five minutes; this hourly one is its backstop.
* **audit_evidence** — re-hashes every evidence object referenced by `raw.run_records` and fails,
  naming the attempts, when any is missing or its bytes no longer match. Report:
  `runs/audit/<day>.json`.
"""


@dag(
    dag_id="argusic_maintenance",
    schedule="@hourly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["argusic", "maintenance"],
    doc_md=DOC_MD,
    # One quick retry covers a transient store read; a real mismatch fails again and stays red.
    default_args={"owner": "argusic", "retries": 1, "retry_delay": retry_delay(timedelta(seconds=15))},
)
def argusic_maintenance():
    @task
    def remove_orphaned_containers() -> list[str]:
        from argusic.ops.maintenance import remove_orphaned_containers as remove

        return remove(interval_end())

    @task
    def sweep_debris() -> list[str]:
        from argusic.ops.maintenance import sweep_debris as sweep

        return sweep()

    @task
    def sweep_model_keys() -> dict:
        from argusic.ops.maintenance import sweep_model_keys as sweep

        return sweep(interval_end())

    @task(**WAREHOUSE_TASK_ARGS)
    def audit_evidence() -> dict:
        from argusic.ops.maintenance import audit_evidence as audit

        return audit(interval_end().date().isoformat())

    remove_orphaned_containers() >> sweep_debris() >> sweep_model_keys()
    audit_evidence()


argusic_maintenance()
