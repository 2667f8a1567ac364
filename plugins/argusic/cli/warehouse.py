"""`argusic ingest`, `build`, `build-worker`, `sql`, `docs` and `audit`: loading run records into the
warehouse, building and checking its marts, reading the analyst copy, dbt's documentation, and the
re-hash of the evidence the warehouse points to."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import duckdb
import typer

from argusic.attempts.agents import known_agents
from argusic.cli import sql_shell
from argusic.cli.common import console, err_console, fail, warehouse_errors
from argusic.core.settings import warehouse_path
from argusic.publication.audit import audit_warehouse
from argusic.warehouse import dbt_docs
from argusic.warehouse.analyst import DB_NAME, AnalystCopyError, AnalystCopyMissing, analyst_dir, current_copy
from argusic.warehouse.db import connect
from argusic.warehouse.load_runs import IngestError
from argusic.warehouse.load_runs import ingest as do_ingest


def ingest(paths: Annotated[list[Path], typer.Argument(help="Run record files or folders")]) -> None:
    """Load run records into the warehouse (idempotent by attempt_id; a bad batch loads nothing)."""
    try:
        with warehouse_errors():
            result = do_ingest(paths, known_agents=known_agents())
    except IngestError as err:
        fail(f"{err}\nnothing of this batch was loaded")
    console.print(
        f"ingested {result.files} record(s): {result.inserted} new, "
        f"{result.already_present} already present; {result.hints} hints document(s) written, "
        f"{result.similarity_pairs} patch pair(s) compared "
        f"→ {warehouse_path()}"
    )


def build() -> None:
    """Run dbt build, then the expectations on every mart; a failure blocks publication.

    Through the build worker when ARGUSIC_BUILD_WORKER names one that answers, else in this process.
    """
    # deferred: pulls pandas and pyarrow (seconds on --help)
    from argusic.publication import build_worker as worker
    from argusic.warehouse import dbt_build  # deferred: pulls pandas and pyarrow (seconds on --help)

    try:
        with warehouse_errors():
            _require_run_records()
            summary = worker.build_or_delegate()
    except dbt_build.PublicationBlocked as err:
        fail(f"publication blocked: {err}")
    except (worker.BuildWorkerError, AnalystCopyError) as err:
        fail(str(err))
    console.print(f"build ok: {summary}")


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
    # deferred: pulls pandas and pyarrow (seconds on --help)
    from argusic.publication import build_worker as worker

    path = socket_path or worker.worker_socket()
    if path is None:
        fail(f"no socket: pass --socket PATH or set {worker.SOCKET_ENV}")

    def ready(seconds: float) -> None:
        console.print(f"build worker ready on {path} (dbt and GX loaded in {seconds:.1f} s)")

    try:
        worker.serve(path, on_ready=ready, max_requests=max_requests or None)
    except worker.BuildWorkerError as err:
        fail(str(err))


def _read_only():
    try:
        with warehouse_errors():
            return connect(read_only=True)
    except FileNotFoundError as err:
        fail(str(err))


def _require_run_records() -> None:
    """dbt needs the raw layer: say so plainly instead of a catalog error from deep inside dbt."""
    with _read_only() as con:
        found = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'raw' "
            "AND table_name = 'run_records'"
        ).fetchone()[0]
    if not found:
        fail(f"{warehouse_path()} holds no run records yet: run `argusic ingest PATH` first")


def sql(
    query: Annotated[
        list[str] | None,
        typer.Argument(help="SQL to run once (or .tables, .schema [TABLE]); none: the interactive shell"),
    ] = None,
    output: Annotated[str, typer.Option("--format", help="One-shot output: table, csv or json")] = "table",
) -> None:
    """The analyst copy in an SQL shell (Harlequin, read-only), or one statement for scripts.

    `argusic sql` opens the interactive shell on the copy's stable path (warehouse/analyst/argusic.duckdb)
    and warns before a query when a newer copy was published since it opened; `argusic sql "SELECT …"`
    (or SQL on standard input) prints the result and exits. Reads the copy published by the last
    successful build, never the pipeline's own file: it never waits for a cycle and never holds one up.
    `SELECT * FROM meta`: which copy, built when, each cycle's board state."""
    if output not in sql_shell.FORMATS:
        fail(f"--format {output!r}: expected one of {', '.join(sql_shell.FORMATS)}")
    target = analyst_dir()  # the stable path: a link to the copy published now
    try:
        folder = current_copy(target)
    except AnalystCopyMissing as err:
        fail(str(err))
    text = " ".join(query or [])
    if not text and not sys.stdin.isatty():
        text = sys.stdin.read()
    if not text.strip():
        if not sys.stdin.isatty() or not sys.stdout.isatty():
            fail('no SQL given: pass a statement (argusic sql "SELECT …") or run it in a terminal')
        try:
            code = sql_shell.run_harlequin(target)
        except ImportError as err:
            fail(f"Harlequin is not installed in this environment ({err}): run `make install`")
        if code:
            raise typer.Exit(code=code)
        return

    with duckdb.connect(str(folder / DB_NAME), read_only=True) as con:
        try:
            result = sql_shell.run(con, text)
        except (duckdb.Error, ValueError) as err:
            read_only = "read-only" in str(err) or "read only" in str(err)
            note = " (the analyst copy is read-only: CREATE TEMP TABLE works)" if read_only else ""
            fail(f"{str(err).strip()}{note}")
    if result is not None:
        sql_shell.render(result, output, console)
    if warning := sql_shell.stale_warning(folder, target):  # published while the query ran
        err_console.print(warning, markup=False, highlight=False)


def docs(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: a free one)")] = 0,
    serve: Annotated[bool, typer.Option("--serve/--no-serve", help="Serve the site once generated")] = True,
    out: Annotated[Path | None, typer.Option(help="Site folder (default: warehouse/dbt_docs)")] = None,
) -> None:
    """Generate dbt's documentation (every model, column, test and its lineage) and serve it on
    127.0.0.1 until Ctrl-C."""
    console.print("generating dbt docs (dbt docs generate --static) …")
    try:
        generated = dbt_docs.generate(out)
    except dbt_docs.DocsError as err:
        fail(str(err))
    console.print(f"dbt docs in {generated.folder} ({generated.catalog_from})")
    console.print(f"  one file, no server needed: {generated.folder / 'static_index.html'}")
    if not serve:
        return

    def ready(url: str) -> None:
        console.print(f"serving dbt docs at {url}  (Ctrl-C to stop)", soft_wrap=True)

    dbt_docs.serve(generated.folder, port, on_ready=ready)


def audit(
    out: Annotated[Path | None, typer.Option(help="Write the audit report JSON here")] = None,
) -> None:
    """Re-hash every stored evidence object, raw and served; exit 1 when any is not where its record
    says or no longer matches it (every problem is reported; the audit goes on past each)."""
    try:
        with warehouse_errors():
            report = audit_warehouse(out=out)
    except FileNotFoundError as err:
        fail(str(err))
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
