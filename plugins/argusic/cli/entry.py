"""The `argusic` console script (pyproject.toml [project.scripts]): `argusic build` with a build worker
answering on ARGUSIC_BUILD_WORKER is sent to it from here, before the command line is imported;
everything else runs the whole command line (`argusic.cli.main`).

Why: the command line imports every command's module (dbt_build, GX, pandas, the attempt page...),
3.1-3.3 CPU-s before `argusic build` could ask the worker to do the work; this client needs the
standard library and the settings only (~0.1 CPU-s past Python's start). What it prints and its exit
codes are the command's own (`argusic.cli.warehouse.build`); when no worker answers, the whole
command line runs and builds in this process, as before.
"""

from __future__ import annotations

import sys

from argusic.publication.build_client import (
    BuildWorkerError,
    NoWorkerAnswers,
    build_params,
    built_by_worker,
    exchange,
    worker_socket,
)

FAILED = 2  # typer.Exit(code=2), as `fail` in argusic.cli.common


def build_through_worker() -> int | None:
    """`argusic build` through the worker: the exit code, or None when no worker answers."""
    path = worker_socket()
    if path is None:
        return None
    try:
        answer = exchange(path, "build", require_run_records=True, **build_params())
    except NoWorkerAnswers:
        return None
    except BuildWorkerError as err:
        print(f"error: {err}", file=sys.stderr)
        return FAILED
    if answer.get("ok"):
        print(f"build ok: {built_by_worker(answer)}")
        return 0
    error, message = answer.get("error"), answer.get("message")
    if error == "PublicationBlocked":
        print(f"error: publication blocked: {message}", file=sys.stderr)
    elif error in ("NoRunRecords", "BoardChanged"):
        print(f"error: {message}", file=sys.stderr)
    elif error in ("WarehouseBusy", "AnalystCopyError"):
        print(f"error: build worker on {path}: {message}", file=sys.stderr)
    else:
        print(f"error: build worker on {path}: {error}: {message}", file=sys.stderr)
    return FAILED


def main() -> None:  # pragma: no cover - console entry (tests run both halves)
    if sys.argv[1:] == ["build"]:
        code = build_through_worker()
        if code is not None:
            sys.exit(code)
    # deferred: the whole command line (seconds of imports) only when the worker does not do the work
    from argusic.cli.main import app

    sys.exit(app())
