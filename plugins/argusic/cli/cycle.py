"""`argusic cycle run` and `argusic cycle environment`: a whole benchmark cycle in one process (the
same steps as the argusic_cycle DAG), and a cycle's pinned environment; the attempts' progress bar that
`argusic demo` shares."""

from __future__ import annotations

import time
from concurrent.futures import CancelledError, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from argusic.attempts.agents import known_agents
from argusic.attempts.environment import (
    EnvironmentError_,
    current_pin,
    differences,
    image_digest,
    pin_path,
    pull_pin,
    read_pin,
)
from argusic.cli.board import print_attempts, print_board
from argusic.cli.common import console, err_console, fail
from argusic.cli.pool import RepoRoots, print_selection
from argusic.core.emergency import EmergencyStopInForce
from argusic.core.runs_store import local_path
from argusic.core.spec import read_spec
from argusic.cycle.plan import ConfigurationError, NothingPlanned, plan_conditions, write_plan
from argusic.cycle.pools import resolve_pool
from argusic.cycle.progress import RunningAttempts
from argusic.cycle.tally import CycleFailed, tally_records
from argusic.sandbox.executor import DaemonUnreachable, get_executor
from argusic.sandbox.launch import AttemptCancelled, cancel_reason, request_cancel, sigterm_cancels
from argusic.sources.pool import CatalogueError
from argusic.warehouse.analyst import AnalystCopyError
from argusic.warehouse.decisions import DecisionError, utc_now
from argusic.warehouse.load_runs import ingest_cycle_records

cycle_app = typer.Typer(help="Benchmark cycles: the same steps as the argusic_cycle DAG, in one process.")


def cycle_failed(message: str) -> None:
    err_console.print(f"[bold red]cycle failed:[/] {message}", soft_wrap=True)  # whole lines in logs
    raise typer.Exit(code=1)


def _progress():
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


def run_with_progress(title: str, specs: dict, runner, workers: int) -> tuple[list[str], list[str], dict]:
    """Run the planned attempts side by side under the progress bar (done/total, passes, invalid,
    not started, elapsed, ETA), one line as each ends. Attempts measured before are not run again,
    not shown again and not counted in the estimate: their records are read and tallied at once.

    Returns (every run record path, why each attempt that could not start did not, the counts)."""
    # deferred: pulls requests and tenacity (the attempts' key broker), about 1 s on --help
    from argusic.cycle.run import measured_records, run_planned_attempt

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
    stopped: list[str] = []
    cancelled = None
    with sigterm_cancels(), _progress() as progress, ThreadPoolExecutor(max_workers=workers) as pool_exec:
        bar = progress.add_task(title, total=len(todo), **counts)
        running = RunningAttempts()  # every 10 s: each running attempt's time against its budget

        def run_one(path: str, spec) -> list[str]:
            running.started(spec)
            try:
                return run_planned_attempt(path, runner)
            finally:
                running.ended(spec)

        stop_ticking = running.tick(lambda line: progress.console.print(f"  running  {line}", markup=False))
        futures = {pool_exec.submit(run_one, path, spec): spec for path, spec in todo.items()}
        pending = set(futures)
        while pending:
            try:
                for future in as_completed(pending):
                    pending.discard(future)
                    spec = futures[future]
                    try:
                        paths = future.result()
                    except CancelledError:  # cancelled before it started: nothing ran, nothing to record
                        not_started.append(f"{spec.label}: not started (the run was cancelled)")
                        counts["failed"] += 1
                    except (AttemptCancelled, EmergencyStopInForce) as err:  # ended from outside: on record
                        stopped.append(f"{spec.label}: {err}")
                        counts["invalid"] += 1  # its record is invalid: not scored, rerun on resume
                        progress.console.print(f"  [yellow]stopped[/] {spec.label}: {err}")
                    except Exception as err:  # did not start (source, key, engine): reported, not run
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
            except (KeyboardInterrupt, AttemptCancelled) as err:  # Ctrl-C or SIGTERM to this process
                cancelled = cancel_reason(err)
                request_cancel(cancelled)  # the attempts in other threads end at their next poll
                for future in pending:
                    future.cancel()  # those not started never start
                progress.console.print(
                    "[yellow]cancelling:[/] the running attempts end, land what they left and are "
                    "recorded as cancelled; waiting for them"
                )
        stop_ticking()  # (a daemon thread: on an error above, it has nothing left to print)
    if cancelled is not None or stopped:
        why = cancelled or "an emergency stop is in force (`argusic resume --reason ...` lifts it)"
        cycle_failed(
            f"{why}; {len(stopped)} attempt(s) ended and recorded, {len(not_started)} not started. "
            "Run the same command again to resume: what is recorded is not measured again, and "
            "the stopped attempts are rerun."
        )
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
        except (EnvironmentError_, DaemonUnreachable) as err:
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
        str | None,
        typer.Option(help="docker | local (default: ARGUSIC_EXECUTOR, else docker; local: demo only)"),
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
    condition: Annotated[
        list[str] | None,
        typer.Option(
            help="AGENT=CONDITION (baseline | variant | external-<name>, seed 002), repeatable: the "
            "comparison condition of an agent's attempts (default: its own)"
        ),
    ] = None,
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
    from argusic.publication import build_worker  # deferred: pulls pandas and pyarrow (seconds on --help)
    from argusic.review import publication  # deferred: pulls pandas and pyarrow (seconds on --help)
    from argusic.warehouse import dbt_build  # deferred: pulls pandas and pyarrow (seconds on --help)

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
    conditions = {}
    for given in condition or []:
        agent, sep, named = given.partition("=")
        if not sep or not agent.strip() or not named.strip():
            fail(f"--condition {given!r}: expected AGENT=CONDITION, e.g. readme-runner=variant")
        conditions[agent.strip()] = named.strip()
    try:
        plan_conditions(agent_ids, conditions)
    except ConfigurationError as err:
        fail(f"--condition: {err}")
    try:
        runner = get_executor(executor, demo=budget_scale < 1)  # a scaled cycle is a demo
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
            conditions=conditions or None,
        )
    except NothingPlanned as err:
        cycle_failed(f"{err}: nothing to run, nothing published")
    except EnvironmentError_ as err:
        cycle_failed(f"{err}: nothing run, nothing published")
    specs = {path: read_spec(path) for path in spec_paths}
    budgets = "real budgets" if budget_scale >= 1 else f"budgets scaled ×{budget_scale:g} (recorded as demo)"
    console.print(
        f"cycle {cycle}: {len(specs)} attempt(s) ({len(agent_ids)} agent(s) × "
        f"{len({s.project_id for s in specs.values()})} project(s) × attempts), executor {runner.name}, "
        f"{budgets}, {workers} worker(s)"
    )

    records, not_started, _counts = run_with_progress(f"cycle {cycle}", specs, runner, workers)
    if not_started:
        cycle_failed(
            f"{len(not_started)} attempt(s) could not start, so nothing was loaded or published:\n  "
            + "\n  ".join(not_started)
            + "\nFix the cause and run the same command again: finished attempts are not measured twice."
        )
    try:
        result = ingest_cycle_records(cycle, records)
    except CycleFailed as err:
        cycle_failed(str(err))
    console.print(
        f"warehouse: {result['inserted']} new record(s), {result['already_present']} already present"
    )
    try:
        build_worker.build_warehouse_summary()
        prepared = publication.prepare(cycle)
        if approve_as:
            publication.record(cycle, prepared.board_sha256, "approved", approve_as, utc_now(), note)
            published = publication.publish_approved(cycle, prepared.board_sha256)
            publication.refresh_after_decision()
    except dbt_build.PublicationBlocked as err:
        fail(f"publication blocked: {err}")
    except (build_worker.BuildWorkerError, AnalystCopyError, DecisionError) as err:
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
