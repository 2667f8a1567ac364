"""The `argusic` command line (typer): ingest, build, board, pool, demo."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from argusic.settings import forge_dir, warehouse_path

app = typer.Typer(help="Argusic pipeline: a public referee for AI coding agents.", no_args_is_help=True)
console = Console(width=120) if not sys.stdout.isatty() else Console()
err_console = Console(stderr=True)

DEMO_CYCLE = "2026-12-demo"
DEMO_AGENTS = ["readme-runner", "readme-runner-norecover"]


def _fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=2)


class _NoticeHandler(logging.Handler):
    """Notices of waiting for the warehouse ("waiting for the warehouse writer: pid …"), on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        err_console.print(record.getMessage(), style="yellow", markup=False, highlight=False)


@contextmanager
def _warehouse_errors() -> Iterator[None]:
    """Say while we wait for the warehouse; a wait given up, or DuckDB refusing the file, is a clear
    error rather than a traceback."""
    import duckdb

    from argusic.warehouse_lock import WarehouseBusy

    notices = logging.getLogger("argusic.warehouse_lock")
    if not any(isinstance(h, _NoticeHandler) for h in notices.handlers):
        notices.addHandler(_NoticeHandler())
        notices.setLevel(logging.INFO)
        notices.propagate = False
    try:
        yield
    except WarehouseBusy as err:
        _fail(str(err))
    except duckdb.Error as err:
        _fail(f"warehouse {warehouse_path()}: {str(err).splitlines()[0]}")


@app.command()
def ingest(paths: Annotated[list[Path], typer.Argument(help="Run record files or folders")]) -> None:
    """Load run records into the warehouse (idempotent by attempt_id; a bad batch loads nothing)."""
    from argusic.agents import known_agents
    from argusic.warehouse import IngestError
    from argusic.warehouse import ingest as do_ingest

    try:
        with _warehouse_errors():
            result = do_ingest(paths, known_agents=known_agents())
    except IngestError as err:
        _fail(f"{err}\nnothing of this batch was loaded")
    console.print(
        f"ingested {result.files} record(s): {result.inserted} new, {result.already_present} already present "
        f"→ {warehouse_path()}"
    )


@app.command()
def build() -> None:
    """Run dbt build, then the expectations on every mart; a failure blocks publication.

    Through the build worker when ARGUSIC_BUILD_WORKER names one that answers, else in this process.
    """
    from argusic.build import PublicationBlocked
    from argusic.build_worker import BuildWorkerError, build_or_delegate

    try:
        with _warehouse_errors():
            _require_run_records()
            summary = build_or_delegate()
    except PublicationBlocked as err:
        _fail(f"publication blocked: {err}")
    except BuildWorkerError as err:
        _fail(str(err))
    console.print(f"build ok: {summary}")


@app.command("build-worker")
def build_worker(
    socket_path: Annotated[
        Path | None, typer.Option("--socket", help="Unix socket (default: $ARGUSIC_BUILD_WORKER)")
    ] = None,
    # The worker's memory grows slowly with builds (measured: ~0.15 MB a build at 10k attempts,
    # ~0.6 MB at 100k): it exits cleanly after this many requests and its supervisor starts a new one.
    max_requests: Annotated[
        int, typer.Option(min=0, help="Exit cleanly after this many requests (0: never)")
    ] = 500,
) -> None:
    """Serve builds and publications from one warm process (dbt and GX imported once) until stopped."""
    from argusic.build_worker import SOCKET_ENV, BuildWorkerError, serve, worker_socket

    path = socket_path or worker_socket()
    if path is None:
        _fail(f"no socket: pass --socket PATH or set {SOCKET_ENV}")

    def ready(seconds: float) -> None:
        console.print(f"build worker ready on {path} (dbt and GX loaded in {seconds:.1f} s)")

    try:
        serve(path, on_ready=ready, max_requests=max_requests or None)
    except BuildWorkerError as err:
        _fail(str(err))


def _read_only():
    from argusic.warehouse import connect

    try:
        with _warehouse_errors():
            return connect(read_only=True)
    except FileNotFoundError as err:
        _fail(str(err))


def _require_run_records() -> None:
    """dbt needs the raw layer: say so plainly instead of a catalog error from deep inside dbt."""
    with _read_only() as con:
        found = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'raw' "
            "AND table_name = 'run_records'"
        ).fetchone()[0]
    if not found:
        _fail(f"{warehouse_path()} holds no run records yet: run `argusic ingest PATH` first")


def print_board(cycle_id: str) -> None:
    with _read_only() as con:
        rows = con.execute(
            """
            SELECT rank, agent_id, board_score, pass_rate, valid_attempts, sets_counted, sets_unstable,
                   sets_under_review
            FROM marts.board WHERE cycle_id = ? ORDER BY rank NULLS LAST, agent_id
            """,
            [cycle_id],
        ).fetchall()
    if not rows:
        _fail(f"no board for cycle {cycle_id!r} in {warehouse_path()}")
    table = Table(title=f"Argusic board — cycle {cycle_id}")
    for column in ("rank", "agent", "score", "pass rate", "attempts", "sets", "unstable", "in review"):
        table.add_column(column, justify="left" if column == "agent" else "right", no_wrap=True)
    for rank, agent, score, pass_rate, attempts, counted, unstable, review in rows:
        table.add_row(
            "—" if rank is None else str(rank),
            agent,
            "no score" if score is None else f"{score:.2f}",
            f"{pass_rate:.0%}" if pass_rate is not None else "—",
            str(attempts),
            str(counted),
            str(unstable),
            str(review),
        )
    console.print(table)


def print_attempts(cycle_id: str) -> None:
    with _read_only() as con:
        rows = con.execute(
            """
            SELECT agent_id, project_id, string_agg(coalesce(outcome, 'invalid') || ' ' ||
                   coalesce(printf('%.1f', score), '-'), ', ' ORDER BY attempt_no, attempt_id)
            FROM marts.attempt_scores WHERE cycle_id = ? GROUP BY ALL ORDER BY agent_id, project_id
            """,
            [cycle_id],
        ).fetchall()
    table = Table(title="attempts (outcome score, in attempt order)")
    for column in ("agent", "project", "attempts"):
        table.add_column(column, no_wrap=column != "attempts")
    for row in rows:
        table.add_row(*row)
    console.print(table)


@app.command()
def board(cycle: Annotated[str, typer.Option(help="Cycle id")] = DEMO_CYCLE) -> None:
    """Print a cycle's board from the warehouse (read-only; waits for a writer)."""
    with _warehouse_errors():
        print_board(cycle)


@app.command()
def pool(
    cycle: Annotated[str, typer.Option(help="Cycle id, YYYY-MM")],
    catalogue: Annotated[Path, typer.Option(exists=True, dir_okay=False)],
    size: Annotated[int | None, typer.Option(help="Pool size (default: largest 80/20 pool)")] = None,
) -> None:
    """Select a cycle's pool from a candidate catalogue and publish its public list."""
    from argusic.cycle import rotate_pool
    from argusic.pool import CatalogueError

    try:
        paths = rotate_pool(cycle, catalogue, size)
    except (CatalogueError, ValueError) as err:
        _fail(str(err))
    for name, path in paths.items():
        console.print(f"{name}: {path}")


@app.command()
def demo(
    cycle: Annotated[str, typer.Option(help="Demo cycle id")] = DEMO_CYCLE,
    executor: Annotated[str | None, typer.Option(help="docker | local (default: docker if up)")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Attempts run side by side")] = 2,
) -> None:
    """Run a whole demo cycle on the embedded default: forge → pool → attempts → warehouse → board."""
    from argusic.agents import known_agents
    from argusic.build import PublicationBlocked, build_warehouse, publish_board
    from argusic.cycle import publish_dir, run_cycle
    from argusic.executor import get_executor
    from argusic.forge import build_forge
    from argusic.warehouse import IngestError
    from argusic.warehouse import ingest as do_ingest

    started = time.monotonic()
    try:
        runner = get_executor(executor)
    except (ValueError, RuntimeError) as err:
        _fail(str(err))
    catalogue = build_forge(forge_dir())
    console.print(f"demo cycle {cycle}: executor {runner.name}, forge catalogue {catalogue}")

    def progress(spec, paths) -> None:
        console.print(f"  done {spec.label} ({len(paths)} record(s))")

    run = run_cycle(
        cycle, catalogue, DEMO_AGENTS, demo=True, workers=workers, executor=runner, on_done=progress
    )
    try:
        with _warehouse_errors():
            result = do_ingest([p.parent for p in run.record_paths], known_agents=known_agents())
            console.print(
                f"warehouse: {result.inserted} new record(s), {result.already_present} already present"
            )
            build_result = build_warehouse(quiet=True)
            published = publish_board(cycle, publish_dir(), build_result=build_result)
            print_attempts(cycle)
            print_board(cycle)
    except PublicationBlocked as err:
        _fail(f"publication blocked: {err}")
    except IngestError as err:
        _fail(f"{err}\nnothing of this batch was loaded")
    console.print(f"published {published} in {time.monotonic() - started:.1f} s")


@app.command()
def audit(
    out: Annotated[Path | None, typer.Option(help="Write the audit report JSON here")] = None,
) -> None:
    """Re-hash every stored evidence object, raw and served; exit 1 when any is not where its record
    says or no longer matches it (every problem is reported; the audit goes on past each)."""
    from argusic.audit import audit_warehouse

    try:
        with _warehouse_errors():
            report = audit_warehouse(out=out)
    except FileNotFoundError as err:
        _fail(str(err))
    for finding in report.findings:
        detail = f" ({finding.detail})" if finding.detail else ""
        err_console.print(
            f"[red]{finding.problem}[/] {finding.attempt_id} {finding.kind} {finding.uri}{detail}",
            markup=True,
            highlight=False,
        )
    console.print(f"audited {report.checked} evidence object(s): {len(report.findings)} problem(s)")
    if not report.ok:
        raise typer.Exit(code=1)


def main() -> None:  # pragma: no cover - console entry
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    main()
