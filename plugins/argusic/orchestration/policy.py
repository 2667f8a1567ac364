"""Airflow cluster policy (registered under the `airflow.policy` entry point in pyproject.toml): the
attempts of an `argusic_cycle` or `argusic_verdicts` run carry their label from the moment they exist.

Airflow renders `map_index_template` only in the worker, when an instance starts, so the instances
still waiting show bare numbers (0, 1, 2 … 11,006). When the scheduler expands `run_attempt`, this
hook gives each new instance its label, `agent / project / attempt N`, read from the path that
instance will run: the plan task's return value (one spec path per attempt, named by its attempt id;
no file is read). The worker's own render replaces it when the attempt starts, and again when it
ends (with how it ended).

The hook runs in the scheduler, inside its transaction: it only reads the plan's XCom row through
the session the run is already bound to (never a new session, never a commit), caches the plan of
the last few runs (one read per run, not one per instance), and never raises: anything unexpected
leaves the number, as without it.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from pathlib import PurePath

from airflow.policies import hookimpl
from sqlalchemy import select
from sqlalchemy.orm import object_session

from argusic.core.spec import label_of_attempt_id
from argusic.orchestration.preload import preload_requested, preload_task_modules

log = logging.getLogger(__name__)

DAG_ID = "argusic_cycle"
TASK_ID = "run_attempt"
PLAN_TASK_ID = "plan"
# argusic_verdicts plans and runs in rounds: run_attempt_<n> runs what plan_<n> planned
VERDICTS_DAG_ID = "argusic_verdicts"
_CACHE: OrderedDict[tuple[str, str, str], list[str]] = OrderedDict()
_CACHE_RUNS = 4


def plan_task_of(dag_id: str, task_id: str) -> str | None:
    """The task whose return value lists the spec paths a mapped attempt task runs, or None."""
    if dag_id == DAG_ID and task_id == TASK_ID:
        return PLAN_TASK_ID
    prefix = f"{TASK_ID}_"
    if dag_id == VERDICTS_DAG_ID and task_id.startswith(prefix) and task_id[len(prefix) :].isdigit():
        return f"{PLAN_TASK_ID}_{task_id[len(prefix) :]}"
    return None


def _plan_paths(dag_run, session, plan_task_id: str = PLAN_TASK_ID) -> list[str] | None:
    key = (dag_run.dag_id, dag_run.run_id, plan_task_id)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    # deferred: the scheduler loads this policy while `import airflow` is still initialising; its
    # models import only once that is done
    from airflow.models.xcom import XComModel

    value = session.scalar(
        select(XComModel.value).where(
            XComModel.dag_id == dag_run.dag_id,
            XComModel.run_id == dag_run.run_id,
            XComModel.task_id == plan_task_id,
            XComModel.map_index == -1,
            XComModel.key == "return_value",
        )
    )
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    _CACHE[key] = value
    while len(_CACHE) > _CACHE_RUNS:
        _CACHE.popitem(last=False)
    return value


def pending_label(task_instance, dag_run) -> str | None:
    """The label of a new mapped attempt instance of an `argusic_cycle` or `argusic_verdicts` run, or
    None."""
    plan_task_id = plan_task_of(task_instance.dag_id, task_instance.task_id)
    if plan_task_id is None or task_instance.map_index < 0:
        return None
    if dag_run is None or getattr(task_instance, "_rendered_map_index", None) is not None:
        return None
    session = object_session(dag_run)
    if session is None:
        return None
    paths = _plan_paths(dag_run, session, plan_task_id)
    if not paths or task_instance.map_index >= len(paths):
        return None
    return label_of_attempt_id(PurePath(paths[task_instance.map_index]).stem)


@hookimpl
def task_instance_mutation_hook(task_instance, dag_run) -> None:
    try:
        label = pending_label(task_instance, dag_run)
    except Exception:  # never let a label stop the scheduler
        log.debug("argusic: no pending label for %s", task_instance, exc_info=True)
        return
    if label:
        task_instance._rendered_map_index = label


# The scheduler of scripts/airflow_ui.sh asks for the attempt path to be imported here, once, before
# its LocalExecutor forks the processes that run the tasks (argusic.orchestration.preload).
if preload_requested():
    preload_task_modules()
