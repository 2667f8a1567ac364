"""Every five minutes: delete the model keys of attempts that are not running (a worker killed before
its clean-up ran). Thin: the logic lives in argusic.ops.maintenance."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import dag, task
from argusic.orchestration.dag_support import interval_end, retry_delay

DOC_MD = """
### Model key sweep (every five minutes)

* **sweep_model_keys** — deletes every per-run key of this installation at the gateway whose attempt
  is not running at the end of this run's data interval: no live container or unfinished folder on
  this host and, on a cluster, no valid lease in the runs store (attempts renew theirs every minute,
  valid five). A killed worker's key is gone within about ten minutes, long before the gateway's own
  expiry. Does nothing when no gateway is configured. XCom: the aliases deleted.
"""


@dag(
    dag_id="argusic_key_sweep",
    schedule="*/5 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["argusic", "maintenance"],
    doc_md=DOC_MD,
    default_args={"owner": "argusic", "retries": 1, "retry_delay": retry_delay(timedelta(seconds=15))},
)
def argusic_key_sweep():
    @task(execution_timeout=timedelta(minutes=4))
    def sweep_model_keys() -> dict:
        from argusic.ops.maintenance import sweep_model_keys as sweep

        return sweep(interval_end())

    sweep_model_keys()


argusic_key_sweep()
