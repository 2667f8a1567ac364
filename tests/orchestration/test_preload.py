"""The scheduler's preload of the attempt path (argusic.orchestration.preload): only where asked, never
Airflow itself, never fatal, and in step with what the attempt task imports."""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys

import pytest
from argusic.orchestration import dag_support
from argusic.orchestration.preload import PRELOAD_ENV, TASK_MODULES, preload_task_modules

PROBE = "import sys, airflow.sdk; print(sorted(m for m in sys.modules if m.startswith('argusic.cycle.run')))"


def _probe(preload: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != PRELOAD_ENV}
    if preload is not None:
        env[PRELOAD_ENV] = preload
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_airflow_processes_preload_the_attempt_path_only_where_asked() -> None:
    # the policy plugin is loaded by every Airflow process while `import airflow` initialises
    assert _probe("1") == "['argusic.cycle.run']"
    assert _probe(None) == "[]"


def test_a_module_that_fails_to_import_is_reported_never_raised() -> None:
    done = preload_task_modules(
        ("argusic.cycle.tally", "argusic.no_such_module"), ("argusic.cycle.tally:no_such_function",)
    )
    assert done["argusic.cycle.tally"] == "ok"
    assert done["argusic.no_such_module"].startswith("ModuleNotFoundError")
    assert done["argusic.cycle.tally:no_such_function"].startswith("AttributeError")


def test_the_preload_covers_what_the_attempt_task_imports() -> None:
    tree = ast.parse(inspect.getsource(dag_support.run_attempt_task))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= set(TASK_MODULES), imported - set(TASK_MODULES)
    assert not any(name == "airflow" or name.startswith("airflow.") for name in TASK_MODULES)
