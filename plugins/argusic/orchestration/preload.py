"""Import the attempt path once in the scheduler, so that every task process forked from it starts warm.

Airflow's LocalExecutor forks its worker processes from the scheduler when it starts, and each task is
a fork of a worker: a module imported in the scheduler before that is already in every task process.
Without this, every `run_attempt` task imports the attempt path anew (keys, containers, records,
masking, hints: ~0.6 CPU-s with compiled bytecode, several seconds without) while the attempts next to
it compete for the same two cores (docs/airflow.md, "Where the time goes").

Only where asked (ARGUSIC_PRELOAD_TASK_MODULES=1, which scripts/airflow_ui.sh sets for its scheduler):
the policy plugin (argusic.orchestration.policy) is loaded by every Airflow process, and an `airflow`
command from a shell should not pay for it. Only modules that never import Airflow are loaded (the
import contract "airflow-typer" keeps them so): the policy is loaded while `import airflow` is still
initialising. Importing opens no connection, starts no thread and reads no file of a cycle, so a
fork inherits nothing but code. A module that fails to import is logged and left to the task (which
then fails with the real error).
"""

from __future__ import annotations

import importlib
import logging
import os
import time

log = logging.getLogger(__name__)

PRELOAD_ENV = "ARGUSIC_PRELOAD_TASK_MODULES"
# What run_attempt_task and the tally import (argusic.orchestration.dag_support), and what they import
# lazily on the way (masking for the live log and the served copies, hints, the Docker SDK).
TASK_MODULES = (
    "argusic.core.spec",
    "argusic.cycle.ids",
    "argusic.cycle.run",
    "argusic.cycle.tally",
    "argusic.attempts.environment",
    "argusic.attempts.repair_run",
    "argusic.attempts.install_run",
    "argusic.attempts.story",
    "argusic.attempts.live_log",
    "argusic.sandbox.executor",
    "argusic.masking",
    "docker",
)
# Work done once and kept in memory that every task would otherwise redo: the masking catalogue's
# compiled Hyperscan and RE2 rules (the live log's and the served copies' masking; ~0.3 CPU-s per
# process, read from the on-disk cache). Plain memory: a fork inherits it.
WARMERS = ("argusic.masking.rules:warm",)


def preload_requested() -> bool:
    return os.environ.get(PRELOAD_ENV, "").strip() == "1"


def preload_task_modules(
    modules: tuple[str, ...] = TASK_MODULES, warmers: tuple[str, ...] = WARMERS
) -> dict[str, str]:
    """Import `modules`, then call each `module:function` of `warmers`; what became of each ("ok" or
    the error), logged in one line."""
    started = time.process_time()
    done: dict[str, str] = {}
    for name in (*modules, *warmers):
        try:
            module, _, function = name.partition(":")
            loaded = importlib.import_module(module)
            if function:
                getattr(loaded, function)()
            done[name] = "ok"
        except Exception as err:  # noqa: BLE001 - a preload is an optimisation; the task does it again
            done[name] = f"{type(err).__name__}: {err}"
    failed = {k: v for k, v in done.items() if v != "ok"}
    log.info(
        "argusic: preloaded %d task module(s) in %.2f CPU-s%s",
        len(done) - len(failed),
        time.process_time() - started,
        f"; not loaded: {failed}" if failed else "",
    )
    return done
