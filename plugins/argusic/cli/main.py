"""The `argusic` command line (typer; the console script is `argusic.cli.main:app`): ingest, build,
board, attempts, sql, docs, pool, catalogue check, cycle run, demo, audit, play (an attempt's recording
in the terminal), report (an attempt's HTML page); the other command groups (verdicts, review, dispute,
publish, items, grade, tasks, hints, judge, judging) are registered from their modules in this package.
What the commands share is in `argusic.cli.common`."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from argusic.cli.common import console, err_console, fail, warehouse_errors
from argusic.core.runs_store import local_path
from argusic.core.settings import forge_dir, warehouse_path
from argusic.core.spec import read_spec

app = typer.Typer(help="Argusic pipeline: a public referee for AI coding agents.", no_args_is_help=True)

DEMO_CYCLE = "2026-12-demo"
DEMO_AGENTS = ["readme-runner", "readme-runner-norecover"]


@app.command()
def ingest(paths: Annotated[list[Path], typer.Argument(help="Run record files or folders")]) -> None:
    """Load run records into the warehouse (idempotent by attempt_id; a bad batch loads nothing)."""
    from argusic.attempts.agents import known_agents
    from argusic.warehouse.load_runs import IngestError
    from argusic.warehouse.load_runs import ingest as do_ingest

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


@app.command()
def build() -> None:
    """Run dbt build, then the expectations on every mart; a failure blocks publication.

    Through the build worker when ARGUSIC_BUILD_WORKER names one that answers, else in this process.
    """
    from argusic.publication.build_worker import BuildWorkerError, build_or_delegate
    from argusic.warehouse.analyst import AnalystCopyError
    from argusic.warehouse.dbt_build import PublicationBlocked

    try:
        with warehouse_errors():
            _require_run_records()
            summary = build_or_delegate()
    except PublicationBlocked as err:
        fail(f"publication blocked: {err}")
    except (BuildWorkerError, AnalystCopyError) as err:
        fail(str(err))
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
    from argusic.publication.build_worker import SOCKET_ENV, BuildWorkerError, serve, worker_socket

    path = socket_path or worker_socket()
    if path is None:
        fail(f"no socket: pass --socket PATH or set {SOCKET_ENV}")

    def ready(seconds: float) -> None:
        console.print(f"build worker ready on {path} (dbt and GX loaded in {seconds:.1f} s)")

    try:
        serve(path, on_ready=ready, max_requests=max_requests or None)
    except BuildWorkerError as err:
        fail(str(err))


def _read_only():
    from argusic.warehouse.db import connect

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


def _analyst():
    """A read-only connection to the analyst copy (never the pipeline's own file: never waits)."""
    from argusic.warehouse.analyst import AnalystCopyMissing, connect_analyst

    try:
        return connect_analyst()
    except AnalystCopyMissing as err:
        fail(str(err))


def _copy_name() -> str:
    from argusic.warehouse.analyst import analyst_db_path

    return f"the analyst copy {analyst_db_path()}"


def latest_cycle() -> str:
    """The latest cycle in the analyst copy: by the cycle's month, then the end of its latest attempt
    (never by sorting names: `2026-12-demo` is not later than `2027-01`)."""
    from argusic.cycle.pools import latest_cycle_of

    with _analyst() as con:
        try:
            rows = con.execute(
                "SELECT b.cycle_id, max(a.ended_at) FROM (SELECT DISTINCT cycle_id FROM marts.board) b "
                "LEFT JOIN marts.attempt_scores a USING (cycle_id) GROUP BY b.cycle_id"
            ).fetchall()
        except Exception:  # no marts yet (nothing built)
            rows = []
    if not rows:
        fail(f"no cycle has a board in {_copy_name()} yet: run `argusic cycle run` (or `argusic demo`)")
    return latest_cycle_of(rows)


def print_board(cycle_id: str) -> None:
    with _analyst() as con:
        rows = con.execute(
            """
            SELECT rank, agent_id, board_score, pass_rate, valid_attempts, sets_counted, sets_unstable,
                   sets_under_review, sets_incomplete, sets_total, harness_edition, sponsor, sponsorship,
                   is_demo_cycle
            FROM marts.board WHERE cycle_id = ? ORDER BY rank NULLS LAST, agent_id
            """,
            [cycle_id],
        ).fetchall()
    if not rows:
        fail(f"no board for cycle {cycle_id!r} in {_copy_name()}")
    demo = any(r[-1] for r in rows)
    title = f"Argusic board — cycle {cycle_id}" + (" (scaled budgets: not a real cycle)" if demo else "")
    table = Table(title=title)
    for column in ("rank", "agent", "score", "pass rate", "attempts", "sets", "unstable", "in review"):
        table.add_column(column, justify="left" if column == "agent" else "right", no_wrap=True)
    edition = rows[0][10]  # the cycle's, the same on every row
    notes = [f"harness edition of this cycle: {edition or 'not recorded (records before environments)'}"]
    for row in rows:
        rank, agent, score, pass_rate, attempts, counted, unstable, review, incomplete, total = row[:10]
        sponsor, sponsorship = row[11:13]
        if sponsor:  # disclosed next to the result (methodology section 13)
            notes.append(f"{agent}: sponsored by {sponsor}" + (f" ({sponsorship})" if sponsorship else ""))
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
        if score is None:
            notes.append(
                f"{agent}: no score because none of its {total} set(s) counts: {review} under review "
                f"(a project that failed for every agent waits for a person's review), {unstable} unstable "
                f"(spread over 30%), {incomplete} incomplete (fewer than three valid runs)"
            )
    console.print(table)
    for note in notes:
        console.print(f"  {note}", markup=False)  # registry text, shown as written


def print_attempts(cycle_id: str) -> None:
    """One row per attempt (reruns included): outcome, points, score, and why an attempt is invalid."""
    with _analyst() as con:
        rows = con.execute(
            """
            SELECT agent_id, project_id, attempt_no, attempt_id, outcome, install_points, run_points,
                   recovery_points, depth_points, score, end_reason, invalid_reason,
                   round(epoch(ended_at) - epoch(started_at), 1)
            FROM marts.attempt_scores WHERE cycle_id = ?
            ORDER BY agent_id, project_id, attempt_no, attempt_id
            """,
            [cycle_id],
        ).fetchall()
    if not rows:
        fail(f"no attempts for cycle {cycle_id!r} in {_copy_name()}")
    table = Table(title=f"attempts — cycle {cycle_id} (points: install + run + recovery + depth)")
    for column in ("agent", "project", "#", "outcome", "points", "score", "ended", "seconds", "note"):
        table.add_column(column, no_wrap=column != "note", justify="right" if column == "seconds" else "left")
    for agent, project, no, attempt_id, outcome, ins, run, rec, depth, score, end, why, secs in rows:
        rerun = attempt_id.rsplit(".", 1)[-1] if attempt_id.rsplit(".", 1)[-1].startswith("r") else ""
        points = "—" if ins is None else f"{ins}+{run}+{rec:g}+{depth}"
        table.add_row(
            agent,
            project,
            f"{no}{' ' + rerun if rerun else ''}",
            outcome,
            points,
            "—" if score is None else f"{score:.1f}",
            end,
            str(secs),
            why or "",
        )
    console.print(table)


@app.command()
def board(
    cycle: Annotated[str | None, typer.Option(help="Cycle id (default: the latest cycle)")] = None,
) -> None:
    """Print a cycle's board from the analyst copy (never waits for the pipeline)."""
    with warehouse_errors():
        print_board(cycle or latest_cycle())


@app.command()
def attempts(
    cycle: Annotated[str | None, typer.Option(help="Cycle id (default: the latest cycle)")] = None,
) -> None:
    """Print every attempt of a cycle: outcome, points, score, and the reason of an invalid one (from the
    analyst copy)."""
    with warehouse_errors():
        print_attempts(cycle or latest_cycle())


@app.command()
def sql(
    query: Annotated[
        list[str] | None,
        typer.Argument(help="SQL to run once (or .tables, .schema [TABLE]); none: the interactive shell"),
    ] = None,
    output: Annotated[str, typer.Option("--format", help="One-shot output: table, csv or json")] = "table",
) -> None:
    """The analyst copy in an SQL shell (Harlequin, read-only), or one statement for scripts.

    `argusic sql` opens the interactive shell; `argusic sql "SELECT …"` (or SQL on standard input)
    prints the result and exits. Reads the copy published by the last successful build, never the
    pipeline's own file: it never waits for a cycle and never holds one up."""
    from argusic.cli import sql_shell
    from argusic.warehouse.analyst import DB_NAME, PARQUET, AnalystCopyMissing, current_copy

    if output not in sql_shell.FORMATS:
        fail(f"--format {output!r}: expected one of {', '.join(sql_shell.FORMATS)}")
    try:
        folder = current_copy()
    except AnalystCopyMissing as err:
        fail(str(err))
    text = " ".join(query or [])
    if not text and not sys.stdin.isatty():
        text = sys.stdin.read()
    if not text.strip():
        if not sys.stdin.isatty() or not sys.stdout.isatty():
            fail('no SQL given: pass a statement (argusic sql "SELECT …") or run it in a terminal')
        try:
            sql_shell.exec_harlequin(folder / DB_NAME, folder / PARQUET)
        except FileNotFoundError as err:
            fail(str(err))
        return
    import duckdb

    with duckdb.connect(str(folder / DB_NAME), read_only=True) as con:
        try:
            result = sql_shell.run(con, text)
        except (duckdb.Error, ValueError) as err:
            read_only = "read-only" in str(err) or "read only" in str(err)
            note = " (the analyst copy is read-only: CREATE TEMP TABLE works)" if read_only else ""
            fail(f"{str(err).strip()}{note}")
    if result is not None:
        sql_shell.render(result, output, console)


@app.command()
def docs(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: a free one)")] = 0,
    serve: Annotated[bool, typer.Option("--serve/--no-serve", help="Serve the site once generated")] = True,
    out: Annotated[Path | None, typer.Option(help="Site folder (default: warehouse/dbt_docs)")] = None,
) -> None:
    """Generate dbt's documentation (every model, column, test and its lineage) and serve it on
    127.0.0.1 until Ctrl-C."""
    from argusic.warehouse import dbt_docs

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


def print_selection(pool_path: Path) -> None:
    """How a pool was drawn: counts, a shortfall, every exclusion with its reason."""
    from argusic.cycle.pools import read_selection
    from argusic.sources.pool import load_pool

    report = read_selection(pool_path)
    pool = load_pool(pool_path)
    if report is None:
        console.print(
            f"pool {pool_path}: {len(pool.entries)} project(s) (drawn elsewhere: no selection report)"
        )
        return
    first, last = report["popularity_window"]
    console.print(
        f"pool of {pool.cycle_id}: {report['size']} project(s), {len(pool.public)} public and "
        f"{len(pool.private)} private, from {report['candidates']} candidate(s): "
        f"{report['public_available']} public and {report['recent_available']} recently popular "
        f"(popular_since {first}..{last}) usable"
    )
    if report.get("shortfall"):
        console.print(f"[yellow]{report['shortfall']}[/]")
    for pid, reason in report["excluded"].items():
        console.print(f"  [red]excluded[/] {pid}: {reason}")
    if report["not_drawn"]:
        console.print("  eligible, not drawn this cycle: " + ", ".join(report["not_drawn"]))
    for notice in report["notices"]:
        console.print(f"  note: {notice}")


RepoRoots = Annotated[
    list[Path] | None,
    typer.Option(
        "--repo-root",
        help="A folder whose local bare repositories a catalogue may name (repeatable; also "
        "ARGUSIC_REPO_ROOTS). Remote URLs need none.",
    ),
]


@app.command()
def pool(
    cycle: Annotated[str, typer.Option(help="Cycle id, YYYY-MM")],
    catalogue: Annotated[Path, typer.Option(exists=True, dir_okay=False)],
    size: Annotated[int | None, typer.Option(help="Pool size (default: largest 80/20 pool)")] = None,
    repo_root: RepoRoots = None,
) -> None:
    """Select a cycle's pool from a candidate catalogue and publish its public list.

    Every candidate's repository is mirrored (remote) or checked (local) and its pinned commit
    verified first; a candidate that fails is left out with its reason."""
    from argusic.cycle.pools import rotate_pool
    from argusic.sources.pool import CatalogueError

    try:
        paths = rotate_pool(cycle, catalogue, size, repo_root or ())
    except (CatalogueError, ValueError) as err:
        fail(str(err))
    print_selection(Path(paths["pool"]))
    for name, path in paths.items():
        console.print(f"{name}: {path}")


catalogue_app = typer.Typer(help="Candidate catalogues (argusic.catalogue/1, docs/catalogue.md).")
app.add_typer(catalogue_app, name="catalogue")


@catalogue_app.command("check")
def catalogue_check(
    path: Annotated[Path, typer.Argument(help="The catalogue JSON file")],
    mirror: Annotated[
        bool, typer.Option("--mirror/--no-mirror", help="Also mirror every repository and verify its commit")
    ] = False,
    repo_root: RepoRoots = None,
) -> None:
    """Check a catalogue: every problem at once (exit 2), how licences were read, and with --mirror
    whether each candidate's repository and pinned commit can be had (exit 1 if any cannot)."""
    from argusic.cycle.pools import source_check
    from argusic.sources.catalogue import CatalogueError, load_catalogue

    try:
        loaded = load_catalogue(path)
    except CatalogueError as err:
        fail(str(err))
    for notice in loaded.notices:
        console.print(f"note: {notice}")
    console.print(f"{path}: {len(loaded.candidates)} candidate(s), schema ok (sha256 {loaded.sha256[:12]}…)")
    if not mirror:
        return
    started = time.monotonic()
    reasons = source_check(repo_root or ())(loaded.candidates)
    for cand in loaded.candidates:
        if cand.project_id in reasons:
            console.print(f"  [red]unavailable[/] {cand.project_id}: {reasons[cand.project_id]}")
        else:
            console.print(f"  [green]ok[/] {cand.project_id} {cand.commit[:12]} ({cand.repo_url})")
    console.print(
        f"{len(loaded.candidates) - len(reasons)} of {len(loaded.candidates)} repositories usable "
        f"({time.monotonic() - started:.1f} s)"
    )
    if reasons:
        raise typer.Exit(code=1)


from argusic.cli.verdicts import verdicts_app  # noqa: E402  (argusic verdicts plan|run|request)

app.add_typer(verdicts_app, name="verdicts")

cycle_app = typer.Typer(help="Benchmark cycles: the same steps as the argusic_cycle DAG, in one process.")
app.add_typer(cycle_app, name="cycle")


def _cycle_failed(message: str) -> None:
    err_console.print(f"[bold red]cycle failed:[/] {message}", soft_wrap=True)  # whole lines in logs
    raise typer.Exit(code=1)


def _progress():
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(
            "passes {task.fields[passes]} · invalid {task.fields[invalid]} · "
            "not started {task.fields[failed]}"
        ),
        TextColumn("elapsed"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def _run_with_progress(title: str, specs: dict, runner, workers: int) -> tuple[list[str], list[str], dict]:
    """Run the planned attempts side by side under the progress bar (done/total, passes, invalid,
    not started, elapsed, ETA), one line as each ends. Attempts measured before are not run again,
    not shown again and not counted in the estimate: their records are read and tallied at once.

    Returns (every run record path, why each attempt that could not start did not, the counts)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from argusic.cycle.run import measured_records, run_planned_attempt
    from argusic.cycle.tally import tally_records

    records: list[str] = []
    not_started: list[str] = []
    counts = {"passes": 0, "invalid": 0, "failed": 0}
    todo = {}
    for path, spec in specs.items():
        if (done := measured_records(spec)) is not None:
            records.extend(done)
            tally = tally_records(done)
            counts["passes"] += tally.passes
            counts["invalid"] += tally.invalid
        else:
            todo[path] = spec
    measured = len(specs) - len(todo)
    if not todo:
        console.print(f"{len(specs)} attempt(s), {measured} already measured: nothing to run")
        return records, not_started, counts
    if measured:
        console.print(
            f"{len(specs)} attempt(s), {measured} already measured (resumed: not measured again); "
            f"{len(todo)} to run"
        )
    with _progress() as progress, ThreadPoolExecutor(max_workers=workers) as pool_exec:
        bar = progress.add_task(title, total=len(todo), **counts)
        futures = {pool_exec.submit(run_planned_attempt, path, runner): spec for path, spec in todo.items()}
        for future in as_completed(futures):
            spec = futures[future]
            try:
                paths = future.result()
            except Exception as err:  # the attempt did not start (source, key, engine): reported, not run
                not_started.append(f"{spec.label}: {type(err).__name__}: {err}")
                counts["failed"] += 1
                progress.console.print(f"  [red]not started[/] {spec.label}: {err}")
            else:
                records.extend(paths)
                tally = tally_records(paths)
                counts["passes"] += tally.passes
                counts["invalid"] += tally.invalid
                what = "pass" if tally.passes else ("invalid" if tally.invalid else "no pass")
                reruns = f", {len(paths) - 1} rerun(s)" if len(paths) > 1 else ""
                progress.console.print(f"  {what:8} {spec.label}{reruns}")
            progress.update(bar, advance=1, **counts)
    return records, not_started, counts


@cycle_app.command("environment")
def cycle_environment(
    cycle: Annotated[str, typer.Option(help="Cycle id whose pinned environment to show")],
    executor: Annotated[
        str | None, typer.Option(help="docker | local: the executor to compare with (default as `run`)")
    ] = None,
) -> None:
    """Show a cycle's pinned environment (harness edition, scaffold and instructions hashes, image
    digests, limits, budgets) and whether this host would run its next attempt under it.

    Exit 0 when it would; 1 when an attempt would be refused (each difference named); 2 when the cycle
    has no pin yet (planning makes it)."""
    from argusic.attempts.environment import (
        EnvironmentError_,
        current_pin,
        differences,
        image_digest,
        pin_path,
        pull_pin,
        read_pin,
    )

    try:
        pull_pin(cycle)  # on a cluster: the runs store's pin
        pin = read_pin(cycle)
    except EnvironmentError_ as err:
        fail(str(err))
    if pin is None:
        fail(f"cycle {cycle}: no pinned environment at {pin_path(cycle)}; planning the cycle pins it")
    console.print(pin.to_json(), end="", markup=False, highlight=False)
    problems = []
    for role, image in sorted(pin.images.items()):
        try:
            image_digest(image.digest)
        except EnvironmentError_ as err:
            problems.append(f"pinned {role} image {image.reference} ({image.digest}) is gone: {err}")
    try:
        now = current_pin(cycle, executor or pin.executor, [], pin.demo, pin.budget_scale)
        problems += differences(pin, now)
    except EnvironmentError_ as err:
        problems.append(str(err))
    if problems:
        console.print(f"cycle {cycle}: the next attempt would be refused:", markup=False)
        for line in problems:
            console.print(f"  - {line}", markup=False, highlight=False)
        raise typer.Exit(1)
    console.print(f"cycle {cycle}: the next attempt here runs under the pinned environment", markup=False)


@cycle_app.command("run")
def cycle_run(
    catalogue: Annotated[
        Path | None, typer.Option(dir_okay=False, help="Candidate catalogue (argusic.catalogue/1)")
    ] = None,
    cycle: Annotated[
        str, typer.Option(help="Cycle id, YYYY-MM[-suffix] (e.g. 2027-01 or 2027-01-trial)")
    ] = "",
    agents: Annotated[str, typer.Option(help="Comma-separated agent ids, e.g. readme-runner,codex")] = "",
    executor: Annotated[
        str | None, typer.Option(help="docker | local (default: ARGUSIC_EXECUTOR, else docker if up)")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Attempts run side by side")] = 2,
    budget_scale: Annotated[
        float,
        typer.Option(
            min=0.0001,
            max=1.0,
            help="Multiply every time budget by this for a dry run (e.g. 0.01: 90 min → 54 s); "
            "a scaled cycle is recorded as demo and flagged on its board. Default 1: real budgets.",
        ),
    ] = 1.0,
    pool_size: Annotated[
        int | None, typer.Option(min=1, help="Projects (default: largest 80/20 pool)")
    ] = None,
    attempts_per_pair: Annotated[
        int | None, typer.Option(min=1, help="Attempts per agent × project (default 3, the methodology's)")
    ] = None,
    pool: Annotated[Path | None, typer.Option(dir_okay=False, help="Use this pool.json as is")] = None,
    repo_root: RepoRoots = None,
    approve_as: Annotated[
        str,
        typer.Option(
            help="Approve the built board as this person and publish it (with --note). Without it the "
            "cycle stops after the build and prints what changed: approve later with `argusic publish`."
        ),
    ] = "",
    note: Annotated[str, typer.Option(help="Why you approve (required with --approve-as)")] = "",
) -> None:
    """Run a whole cycle: pool (mirror + checks) → plan → attempts → ingest → build → approval → publish.

    Resumable: run the same command again and finished attempts are not measured again (keyed by
    attempt_id). Exit 1 when the cycle fails (nothing planned, nothing valid, an attempt that could
    not start); exit 2 for a bad catalogue or option. Same functions as the argusic_cycle DAG."""
    from argusic.attempts.agents import known_agents
    from argusic.attempts.environment import EnvironmentError_
    from argusic.cycle.plan import NothingPlanned, write_plan
    from argusic.cycle.pools import resolve_pool
    from argusic.cycle.tally import CycleFailed
    from argusic.publication.build_worker import BuildWorkerError, build_warehouse_summary
    from argusic.sandbox.executor import get_executor
    from argusic.sources.pool import CatalogueError
    from argusic.warehouse.analyst import AnalystCopyError
    from argusic.warehouse.dbt_build import PublicationBlocked
    from argusic.warehouse.load_runs import ingest_cycle_records

    started = time.monotonic()
    if not cycle:
        fail("--cycle is required (e.g. --cycle 2027-01)")
    if catalogue is None and pool is None:
        fail("--catalogue PATH is required (or --pool PATH for a pool drawn before)")
    if catalogue is not None and not catalogue.is_file():
        fail(f"--catalogue {catalogue}: no such file")
    agent_ids = [a.strip() for a in agents.split(",") if a.strip()]
    if not agent_ids:
        fail("--agents is required: comma-separated agent ids, e.g. --agents readme-runner")
    known = known_agents()
    if unknown := [a for a in agent_ids if a not in known]:
        fail(f"unknown agent(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    try:
        runner = get_executor(executor)
    except (ValueError, RuntimeError) as err:
        fail(str(err))

    try:
        pool_path = local_path(
            resolve_pool(
                cycle,
                str(pool) if pool else None,
                str(catalogue) if catalogue else None,
                pool_size,
                [str(r) for r in repo_root or []],
            )
        )
    except (CatalogueError, ValueError) as err:
        fail(str(err))
    print_selection(Path(pool_path))
    try:
        spec_paths = write_plan(
            Path(pool_path),
            agent_ids,
            attempts_per_pair=attempts_per_pair,
            budget_scale=budget_scale if budget_scale < 1 else None,
            executor=runner,
        )
    except NothingPlanned as err:
        _cycle_failed(f"{err}: nothing to run, nothing published")
    except EnvironmentError_ as err:
        _cycle_failed(f"{err}: nothing run, nothing published")
    specs = {path: read_spec(path) for path in spec_paths}
    budgets = "real budgets" if budget_scale >= 1 else f"budgets scaled ×{budget_scale:g} (recorded as demo)"
    console.print(
        f"cycle {cycle}: {len(specs)} attempt(s) ({len(agent_ids)} agent(s) × "
        f"{len({s.project_id for s in specs.values()})} project(s) × attempts), executor {runner.name}, "
        f"{budgets}, {workers} worker(s)"
    )

    records, not_started, _counts = _run_with_progress(f"cycle {cycle}", specs, runner, workers)
    if not_started:
        _cycle_failed(
            f"{len(not_started)} attempt(s) could not start, so nothing was loaded or published:\n  "
            + "\n  ".join(not_started)
            + "\nFix the cause and run the same command again: finished attempts are not measured twice."
        )
    try:
        result = ingest_cycle_records(cycle, records)
    except CycleFailed as err:
        _cycle_failed(str(err))
    console.print(
        f"warehouse: {result['inserted']} new record(s), {result['already_present']} already present"
    )
    from argusic.review import publication
    from argusic.warehouse.decisions import DecisionError, utc_now

    try:
        build_warehouse_summary()
        prepared = publication.prepare(cycle)
        if approve_as:
            publication.record(cycle, prepared.board_sha256, "approved", approve_as, utc_now(), note)
            published = publication.publish_approved(cycle, prepared.board_sha256)
    except PublicationBlocked as err:
        fail(f"publication blocked: {err}")
    except (BuildWorkerError, AnalystCopyError, DecisionError) as err:
        fail(str(err))
    print_attempts(cycle)
    if not approve_as:
        console.print(prepared.body, markup=False, highlight=False)
        console.print(
            f"built in {time.monotonic() - started:.1f} s; nothing published until a person approves this "
            f"board: argusic publish --cycle {cycle} --approve --by NAME --note WHY",
            style="yellow",
        )
        return
    print_board(cycle)
    console.print(f"approved by {approve_as}; published {published} in {time.monotonic() - started:.1f} s")


@app.command()
def demo(
    cycle: Annotated[str, typer.Option(help="Demo cycle id")] = DEMO_CYCLE,
    executor: Annotated[str | None, typer.Option(help="docker | local (default: docker if up)")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Attempts run side by side")] = 2,
) -> None:
    """Run a whole demo cycle on the embedded default: forge → pool → attempts → warehouse → board.

    Budgets are scaled down (90 min → 15 s). Run it again: attempts measured before are not run again;
    it says so and goes straight to the board. It ends by saying where everything is."""
    from argusic.attempts.agents import known_agents
    from argusic.attempts.environment import EnvironmentError_
    from argusic.cycle.plan import write_plan
    from argusic.cycle.pools import resolve_pool
    from argusic.review.publication import prepare as prepare_publication
    from argusic.review.publication import publish_approved
    from argusic.review.publication import record as record_publication
    from argusic.sandbox.executor import get_executor
    from argusic.sources.forge import build_forge, build_repair_forge
    from argusic.sources.pool import CatalogueError
    from argusic.warehouse.analyst import AnalystCopyError
    from argusic.warehouse.dbt_build import PublicationBlocked, build_warehouse
    from argusic.warehouse.decisions import utc_now
    from argusic.warehouse.load_runs import IngestError
    from argusic.warehouse.load_runs import ingest as do_ingest

    started = time.monotonic()
    try:
        runner = get_executor(executor)
    except (ValueError, RuntimeError) as err:
        fail(str(err))
    catalogue = build_forge(forge_dir())
    build_repair_forge(forge_dir())  # repairkit's merged pull requests, for repair items (issue 13)
    try:
        pool_path = local_path(resolve_pool(cycle, None, str(catalogue)))
    except (CatalogueError, ValueError) as err:
        fail(str(err))
    try:
        spec_paths = write_plan(Path(pool_path), DEMO_AGENTS, demo=True, executor=runner)
    except EnvironmentError_ as err:
        fail(str(err))
    specs = {path: read_spec(path) for path in spec_paths}
    console.print(
        f"demo cycle {cycle}: {len(specs)} attempts ({len(DEMO_AGENTS)} agents × "
        f"{len({s.project_id for s in specs.values()})} projects × 3), executor {runner.name}, "
        "budgets scaled 90 min → 15 s"
    )
    records, not_started, _counts = _run_with_progress(f"demo {cycle}", specs, runner, workers)
    if not_started:
        _cycle_failed(
            f"{len(not_started)} attempt(s) could not start:\n  "
            + "\n  ".join(not_started)
            + "\nFix the cause and run `argusic demo` again: finished attempts are not measured twice."
        )
    repair = _demo_repair_round(cycle, runner)
    try:
        with warehouse_errors(), console.status("warehouse: loading the records, dbt build, expectations…"):
            result = do_ingest(
                [Path(p).parent for p in [*records, *repair["records"]]], known_agents=known_agents()
            )
            if repair["ingest"]:  # repairkit's items, validations and the stand-ins' grades
                from argusic.workflows.repair_round import ingest_items

                ingest_items(repair["ingest"])
            build_warehouse(quiet=True)
            # Nothing is published without an approval of the exact board: the demo approves its own
            # fixture board, openly, as "demo" (the cycle's publication_decisions says so).
            prepared = prepare_publication(cycle)
            record_publication(
                cycle, prepared.board_sha256, "approved", "demo", utc_now(),
                "approved by `argusic demo` itself, not by a person: a demo cycle on fixture projects",
            )  # fmt: skip
            published = publish_approved(cycle, prepared.board_sha256)
    except PublicationBlocked as err:
        fail(f"publication blocked: {err}")
    except IngestError as err:
        fail(f"{err}\nnothing of this batch was loaded")
    except AnalystCopyError as err:
        fail(str(err))
    console.print(
        f"warehouse: {result.inserted} new record(s), {result.already_present} already present; "
        f"built and published ({time.monotonic() - started:.1f} s in all); board sha256 "
        f'{prepared.board_sha256[:12]}… approved by "demo" (the demo approves itself; a real cycle '
        "waits for a person: argusic publish --approve, or the argusic_cycle form)"
    )
    with warehouse_errors():
        if result.inserted:
            print_attempts(cycle)
        print_board(cycle)
        print_repair_rates(cycle)
    _print_where(cycle, Path(published))


DEMO_REPAIR_PROJECTS = ["repairkit"]


def _demo_repair_round(cycle: str, runner) -> dict:
    """The repair track of the demo (issue 13): repairkit's items built from its merged pull requests
    and their grader validated, then one attempt per demo stand-in × usable item, graded in a fresh
    container. Resumable: items, validations and measured attempts are not redone."""
    from argusic.workflows.repair_round import repair_ingest_paths, repair_round

    with console.status("repair track: items from repairkit's merged PRs, grader validation, attempts…"):
        try:
            done = repair_round(cycle, DEMO_REPAIR_PROJECTS, executor=runner, demo=True)
        except (ValueError, RuntimeError, OSError) as err:
            fail(f"repair track: {err}")
    usable = sum(len(v) for v in done["items"].values())
    verdicts = Counter(v or "not graded" for v in done["verdicts"].values())
    console.print(
        f"repair track: {usable} usable item(s) of {', '.join(DEMO_REPAIR_PROJECTS)}"
        + (f", {len(done['unusable'])} not usable" if done["unusable"] else "")
        + f"; {len(done['records'])} attempt record(s) by the demo stand-ins (no model: they replay the gold "
        "patch or change nothing); verdicts: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
    )
    return {"records": done["records"], "ingest": repair_ingest_paths(done["records"])}


def print_repair_rates(cycle_id: str) -> None:
    """The repair track's rates of a cycle (marts.repair_rates), per agent and track, with their
    95% half-widths; nothing when the cycle had no repair attempts."""
    with _analyst() as con:
        rows = con.execute(
            """
            SELECT agent_label, track, n, resolved, rate, half_width_95, resolved_after_rerun, items, prs
            FROM marts.repair_rates WHERE source_kind = 'attempt' AND source_set = ?
            ORDER BY track, agent_label
            """,
            [cycle_id],
        ).fetchall()
    if not rows:
        return
    table = Table(title=f"Repair track — cycle {cycle_id} (resolution rate ± 95% half-width)")
    for column in ("agent", "track", "resolved / n", "rate", "after re-run", "items", "PRs"):
        table.add_column(column, justify="left" if column in ("agent", "track") else "right", no_wrap=True)
    for agent, track, n, resolved, rate, half, after_rerun, items, prs in rows:
        shown = "—" if rate is None else f"{rate:.0%} ± {half:.0%}"
        table.add_row(agent, track, f"{resolved} / {n}", shown, str(after_rerun), str(items), str(prs))
    console.print(table)
    console.print(
        "  basic and spec tracks are never pooled; items split from one PR are not independent samples "
        "(PRs beside items); resolved_after_rerun is counted apart",
        markup=False,
    )


def _shown_path(path: Path) -> str:
    """A path as a person types it from here: relative under the current folder, else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve())) + ("/" if path.is_dir() else "")
    except ValueError:
        return str(path)


def _print_where(cycle: str, published: Path) -> None:
    """The demo's closing block: where each thing is, and what to do next."""
    import os

    from argusic.core.settings import code_root, evidence_url, project_root, runs_dir
    from argusic.warehouse.analyst import analyst_dir

    analyst = analyst_dir()  # the read-only snapshot and Parquet files every build refreshes
    airflow_home = Path(os.environ.get("AIRFLOW_HOME") or project_root() / ".airflow")
    notebooks = sorted((code_root() / "notebooks").glob("*.ipynb"))
    evidence = evidence_url()
    served = evidence.rstrip("/") + "/served/<attempt id>/"
    if evidence.startswith("file://"):
        evidence = _shown_path(Path(evidence.removeprefix("file://")))
        served = evidence.rstrip("/") + "/served/<attempt id>/"
    table = Table(title=f"where things are — cycle {cycle}", show_header=False, box=None, padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("board", f"{_shown_path(published)}  (`argusic board`)")
    table.add_row(
        "attempts",
        f"{_shown_path(published.with_name('attempts.json'))}  (`argusic attempts`: outcome, points, "
        "score, served log and recording of each)",
    )
    site = published.parent.parent / "site" / "index.html"
    table.add_row("public site", f"{_shown_path(site)}  (`argusic site serve`: a preview on 127.0.0.1)")
    table.add_row("warehouse", f"{_shown_path(warehouse_path())}  (the pipeline's own file: writers only)")
    table.add_row(
        "analyst copy",
        f"{_shown_path(analyst)}  (argusic.duckdb + parquet/, refreshed after each build: "
        "query this one" + ("" if analyst.exists() else "; not made yet") + ")",
    )
    table.add_row("notebook", ", ".join(_shown_path(n) for n in notebooks) or "notebooks/ (none found)")
    table.add_row("evidence", f"{evidence}  (raw, by sha256; served copies, credentials masked: {served})")
    table.add_row("run records", f"{_shown_path(runs_dir() / cycle)}  (one folder per attempt)")
    table.add_row(
        "Airflow UI",
        "`make airflow-ui` → http://127.0.0.1:8080, user admin, password in "
        f"{_shown_path(airflow_home / 'simple_auth_manager_passwords.json.generated')}",
    )
    console.print()
    console.print(table)
    steps = Table(title="what to do next", show_header=False, box=None, padding=(0, 2))
    steps.add_column(style="bold", no_wrap=True)
    steps.add_column(overflow="fold")
    steps.add_row("argusic attempts", "every attempt: outcome, points, score; why an invalid one is")
    steps.add_row("the notebook", "the board, pass rates and scores, read from the analyst copy")
    steps.add_row(
        "make airflow-ui",
        "then trigger argusic_cycle as docs/airflow.md shows: run id cycle__2026-12-ui__<time>, "
        'params {"cycle_id": "2026-12-ui", "demo": true, "pool_size": 3}',
    )
    steps.add_row("docs/operators.md", "a first real cycle, on real repositories")
    steps.add_row(
        "argusic items list",
        "the repair items built from repairkit's merged PRs and their grader validation; "
        "`argusic grade --predictions FILE.jsonl` grades patches made elsewhere (docs/repair.md)",
    )
    console.print()
    console.print(steps, highlight=False)


@app.command()
def audit(
    out: Annotated[Path | None, typer.Option(help="Write the audit report JSON here")] = None,
) -> None:
    """Re-hash every stored evidence object, raw and served; exit 1 when any is not where its record
    says or no longer matches it (every problem is reported; the audit goes on past each)."""
    from argusic.publication.audit import audit_warehouse

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


# -- watching an attempt: `play` and `report` (served copies only; argusic.publication.replay,
# argusic.publication.attempt_page) --


_ATTEMPT_ID_HELP = "The attempt id, e.g. 2026-12.board.readme-runner.csvstats.a1 (`argusic attempts`)"


def _find_attempt_or_fail(attempt_id: str):
    from argusic.core.record import RecordError
    from argusic.publication.replay import ReplayRefused, find_attempt

    try:
        with warehouse_errors():
            return find_attempt(attempt_id)
    except (ReplayRefused, RecordError) as err:
        fail(str(err))


@app.command()
def play(
    attempt_id: Annotated[str, typer.Argument(help=_ATTEMPT_ID_HELP)],
    speed: Annotated[float, typer.Option(min=0.01, max=1000.0, help="Play this many times faster")] = 1.0,
    idle_limit: Annotated[
        float,
        typer.Option(min=0.0, help="Cut pauses longer than this many seconds to it (0: keep every pause)"),
    ] = 3.0,
) -> None:
    """Play an attempt's served recording in this terminal at its recorded pace (Ctrl-C stops).

    Only the served copy (credentials masked) is ever played, never raw evidence; control sequences
    that would talk to your terminal (titles, clipboard, queries, mouse modes) are dropped."""
    import tempfile

    from argusic.publication.replay import (
        ReplayRefused,
        fetch_served,
        keys_not_echoed,
        play_cast,
        printable,
        read_cast,
        recorded_seconds,
        terminal_note,
    )

    facts = _find_attempt_or_fail(attempt_id)
    with tempfile.TemporaryDirectory(prefix="argusic-play-") as tmp:
        try:
            path = fetch_served(facts, "recording", Path(tmp) / "recording.cast")
            with open(path, "rb") as handle:
                cast = read_cast(handle)
                total = recorded_seconds(path)
                length = "" if total is None else f", {total:.1f} s recorded"
                pauses = f"pauses cut to {idle_limit:g} s" if idle_limit > 0 else "every pause kept"
                err_console.print(
                    f"playing {printable(facts.label)} ({facts.record.attempt_id}){length}, ×{speed:g}, "
                    f"{pauses}; Ctrl-C stops",
                    markup=False,
                    highlight=False,
                )
                if note := terminal_note(cast.header):
                    err_console.print(note, style="yellow", markup=False, highlight=False)
                with keys_not_echoed():
                    result = play_cast(cast, sys.stdout, speed=speed, idle_limit=idle_limit)
        except ReplayRefused as err:
            fail(str(err))
    done = "stopped" if result.stopped else "end of recording"
    extra = []
    if result.dropped_sequences:
        extra.append(f"{result.dropped_sequences} control sequence(s) for the terminal itself dropped")
    if result.skipped_lines:
        extra.append(f"{result.skipped_lines} line(s) that are not events skipped")
    err_console.print(
        f"\n{done}: {result.events} event(s), {result.recorded_seconds:.1f} s of recording in "
        f"{result.played_seconds:.1f} s" + ("; " + "; ".join(extra) if extra else ""),
        markup=False,
        highlight=False,
    )


@app.command()
def report(
    attempt_id: Annotated[str, typer.Argument(help=_ATTEMPT_ID_HELP)],
    out: Annotated[
        Path | None,
        typer.Option("--out", dir_okay=False, help="The HTML file (default: ./<attempt id>.html)"),
    ] = None,
    max_recording_mb: Annotated[
        float, typer.Option(min=0.0, help="Embed the recording up to this size (MiB); above it, a note")
    ] = 32.0,
) -> None:
    """Write a self-contained HTML page about an attempt: facts, served log, served recording in
    asciinema-player. It opens from a file with no network; log and recording are shown as text."""
    from argusic.publication.attempt_page import PlayerMissing, load_player_assets, write_report

    try:
        assets = load_player_assets()
    except PlayerMissing as err:
        fail(str(err))
    facts = _find_attempt_or_fail(attempt_id)
    target = out or Path(f"{facts.record.attempt_id}.html")
    written = write_report(facts, target, max_recording_mb=max_recording_mb, assets=assets)
    shown = facts.record.presentation
    if shown is None or shown.withheld:
        err_console.print(
            "no served copies for this attempt: the page shows its facts only (raw evidence is never shown)",
            style="yellow",
        )
    size = written.stat().st_size
    console.print(f"wrote {written} ({size:,} bytes): open it in a browser, no network needed")


@app.command()
def reproduce(
    attempt_id: Annotated[str, typer.Argument(help=_ATTEMPT_ID_HELP)],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the comparison as JSON (argusic.reproduction/1)")
    ] = False,
) -> None:
    """Run an attempt again under its recorded configuration (commit, image digest, harness,
    instructions, limits, budget) into a reproduction cycle under runs/reproductions/ that is never
    ingested nor published, then print both records side by side. Exit 0: same outcome; 1: the
    outcome differs; 2: refused (the reason names the input that is not available)."""
    from argusic.core.record import RecordError
    from argusic.workflows.reproduce import ReproductionRefused, compare
    from argusic.workflows.reproduce import reproduce as run_reproduction

    def started(plan) -> None:
        err_console.print(
            f"reproducing {plan.original.record.attempt_id} as {plan.spec.attempt_id} "
            f"({plan.pin.executor}, budget {plan.pin.budget_for(plan.spec.tier)} s; repository from "
            f"{plan.repo.where})",
            markup=False,
            highlight=False,
        )
        for note in plan.notes:
            err_console.print(f"note: {note}", style="yellow", markup=False, highlight=False)

    try:
        with warehouse_errors():
            done = run_reproduction(attempt_id, on_plan=started)
    except (ReproductionRefused, RecordError) as err:
        fail(f"cannot reproduce: {err}")
    try:
        result = compare(done.original.record, done.record)
    except RuntimeError as err:
        fail(f"reproduced ({done.record_path}) but not compared: {err}")
    if as_json:
        import json

        doc = result.to_dict() | {"reproduction_record": str(done.record_path), "notes": done.plan.notes}
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    else:
        _print_comparison(result, done)
    if not result.same_outcome:
        raise typer.Exit(code=1)


def _shown_value(value) -> str:
    import json

    from argusic.publication.replay import printable

    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return printable(text, 160)


def _print_comparison(result, done) -> None:
    table = Table(title=f"{result.original.attempt_id}  vs  its reproduction", title_justify="left")
    table.add_column("field")
    table.add_column("original", overflow="fold")
    table.add_column("reproduction", overflow="fold")
    table.add_column("", no_wrap=True)
    for row in result.rows:
        same = row.same
        table.add_row(
            row.field,
            _shown_value(row.original),
            _shown_value(row.reproduction),
            "equal" if same else "[bold red]differ[/]",
        )
    console.print(table)
    log = result.log
    if isinstance(log, str):
        console.print(f"served logs: {log}", markup=False, highlight=False)
    elif log.equal:
        console.print(
            f"served logs: equal after normalisation ({log.lines[0]} lines each; "
            f"{log.changed} line(s) normalised)",
            markup=False,
        )
    else:
        console.print(
            f"served logs diverge ({log.lines[0]} and {log.lines[1]} lines, {log.differing} differing "
            "after normalisation); the first:",
            markup=False,
            highlight=False,
        )
        for who, number, text in (
            ("original", log.original_line, log.original_text),
            ("reproduction", log.reproduction_line, log.reproduction_text),
        ):
            where = f"line {number}" if number is not None else "(ended)"
            console.print(
                f"  {who:>12} {where}: {text if text is not None else ''}", markup=False, highlight=False
            )
    console.print("normalised before comparing: " + "; ".join(result.normalisations), markup=False)
    verdict = "same outcome" if result.same_outcome else "OUTCOME DIFFERS"
    console.print(
        f"{verdict}. Reproduction record: {_shown_path(done.record_path)} (never ingested, not on the board)",
        markup=False,
    )


site_app = typer.Typer(
    help='The public site: static pages from the published files (README "The public site").'
)
app.add_typer(site_app, name="site")


@site_app.command("build")
def site_build(
    cycle: Annotated[
        str | None, typer.Option(help="Cycle on the front page (default: the one published last)")
    ] = None,
) -> None:
    """Write <ARGUSIC_PUBLISH_DIR>/site/ from every published cycle's board.json and attempts.json
    (publishing does this as its last step)."""
    from argusic.core.layout import publish_dir
    from argusic.publication.attempt_page import PlayerMissing
    from argusic.publication.site import SiteError, build_site

    try:
        site = build_site(publish_dir(), cycle)
    except (SiteError, PlayerMissing, ValueError) as err:
        fail(str(err))
    pages = sum(1 for _ in site.rglob("*.html"))
    console.print(
        f"site: {pages} pages in {_shown_path(site)} (index.html: the board); preview: `argusic site serve`"
    )


@site_app.command("serve")
def site_serve(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: a free one)")] = 8000,
    host: Annotated[str, typer.Option(help="Bind address: 127.0.0.1 only (a preview)")] = "127.0.0.1",
) -> None:
    """Preview the built site on 127.0.0.1 until Ctrl-C."""
    from argusic.core.layout import publish_dir
    from argusic.publication.site import serve

    def ready(url: str) -> None:
        console.print(f"serving the site at {url}  (Ctrl-C to stop)", soft_wrap=True)

    try:
        serve(publish_dir() / "site", host, port, ready=ready)
    except (ValueError, FileNotFoundError, OSError) as err:
        fail(str(err))
    except KeyboardInterrupt:
        pass


# People's decisions (argusic.review.cli): environment review, publication approval, disputes.
from argusic.cli.review import dispute_app, publish, review_app  # noqa: E402

app.add_typer(review_app, name="review")
app.add_typer(dispute_app, name="dispute")
app.command("publish")(publish)

# Repair items and their grader (issue 13, argusic.repair.cli).
from argusic.cli.repair import grade, items_app  # noqa: E402

app.add_typer(items_app, name="items")
app.command("grade")(grade)

# Task definitions and Layer 1 hints (issue 14, argusic.judging.cli).
from argusic.cli.judging import hints_app, tasks_app  # noqa: E402

app.add_typer(tasks_app, name="tasks")
app.add_typer(hints_app, name="hints")

# Model judges, Layer 2 (issue 14, argusic.cli.judge).
from argusic.cli.judge import judge  # noqa: E402

app.command("judge")(judge)

# The person's review of judged attempts (issue 14, Layer 3, argusic.judging.review_cli).
from argusic.cli.judging_review import judging_app  # noqa: E402

app.add_typer(judging_app, name="judging")


def main() -> None:  # pragma: no cover - console entry
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    main()
