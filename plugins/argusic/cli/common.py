"""What every command of the `argusic` CLI shares: the consoles, failing with a message (exit 2), a
path as a person types it, the warehouse's waits and refusals said plainly, and the rebuild after a
decision. Imported by the command modules; it imports none of them."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import typer
from rich.console import Console

from argusic.warehouse.lock import WarehouseBusy

console = Console(width=120) if not sys.stdout.isatty() else Console()
err_console = Console(stderr=True)


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=2)


def shown_path(path: Path) -> str:
    """A path as a person types it from here: relative under the current folder, else absolute. Links
    are kept as named, not resolved: a stable link (the analyst copy's ``warehouse/analyst``) is the
    path to give, not the versioned folder it points to today, which a later build deletes."""
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path.cwd())) + ("/" if path.is_dir() else "")
    except ValueError:
        return str(path)


class _NoticeHandler(logging.Handler):
    """Notices of waiting for the warehouse ("waiting for the warehouse writer: pid …"), on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        err_console.print(record.getMessage(), style="yellow", markup=False, highlight=False)


@contextmanager
def warehouse_errors() -> Iterator[None]:
    """Say while we wait for the warehouse; a wait given up, or DuckDB refusing the file, is a clear
    error rather than a traceback."""
    notices = logging.getLogger("argusic.warehouse.lock")
    if not any(isinstance(h, _NoticeHandler) for h in notices.handlers):
        notices.addHandler(_NoticeHandler())
        notices.setLevel(logging.INFO)
        notices.propagate = False
    try:
        yield
    except WarehouseBusy as err:
        fail(str(err))
    except (duckdb.BinderException, duckdb.CatalogException) as err:
        # a mart or column this version reads is missing: the marts were built by an older version
        fail(
            f"DuckDB: {str(err).splitlines()[0]} — the warehouse's marts predate this version of argusic: "
            "run `argusic build` (or the next cycle's build) and try again"
        )
    except duckdb.Error as err:
        fail(f"DuckDB: {str(err).splitlines()[0]}")


def rebuild() -> None:
    """dbt build + expectations after a decision (through the build worker when one answers)."""
    from argusic.publication import build_worker  # deferred: pulls pandas and pyarrow (seconds on --help)

    with console.status("dbt build + expectations…"):
        build_worker.build_warehouse_summary()
