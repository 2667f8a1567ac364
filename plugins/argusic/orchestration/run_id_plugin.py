"""Run ids that name their subject, from the Airflow UI's own Trigger button (issue 29, point 10): an
Airflow 3 plugin (registered under the `airflow.plugins` entry point in pyproject.toml) whose root
middleware, in the API server, names a trigger of our DAGs that comes without a run id
(`argusic.orchestration.run_ids.NameTriggerRequests`: `review__<cycle>__<time>`, …). Other
processes that load plugins (scheduler, workers, DAG processor) only import this small module."""

from airflow.plugins_manager import AirflowPlugin

from argusic.orchestration.run_ids import NameTriggerRequests


class ArgusicRunIdsPlugin(AirflowPlugin):
    name = "argusic_run_ids"
    fastapi_root_middlewares = [
        {"middleware": NameTriggerRequests, "args": [], "kwargs": {}, "name": "Argusic run ids"}
    ]
