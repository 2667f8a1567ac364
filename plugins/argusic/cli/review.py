"""`argusic review …`, `argusic publish`, `argusic dispute …`: the same decisions as the Airflow forms,
for ops without the UI. Every decision is recorded with who (--by), when (now, UTC) and why (--note)."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from argusic.cli import common as cli
from argusic.review import disputes, environment
from argusic.sandbox.executor import get_executor
from argusic.warehouse.decisions import DecisionError, utc_now
from argusic.workflows.corrections import correct, correction_spec

review_app = typer.Typer(help="Environment review of projects every agent failed (METHODOLOGY.md §8).")
dispute_app = typer.Typer(help="Disputes of an attempt's result (METHODOLOGY.md §10).")

By = Annotated[str, typer.Option("--by", help="Who decides (your name as ops know it)")]
Note = Annotated[str, typer.Option("--note", help="Why (required; recorded with the decision)")]


@review_app.command("list")
def review_list(cycle: Annotated[str, typer.Option(help="One cycle (default: every cycle)")] = "") -> None:
    """Projects under review: awaiting a decision, or decided (by whom, when, why)."""
    with cli.warehouse_errors():
        rows = environment.reviews(cycle or None)
    table = Table(title="environment review")
    for column in ("cycle", "project", "status", "kept out", "decided by", "at (UTC)", "note"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(
            r["cycle_id"], r["project_id"], r["review_status"], "yes" if r["excluded_from_board"] else "no",
            r["decided_by"] or "", f"{r['decided_at']:%Y-%m-%d %H:%M:%S}" if r["decided_at"] else "",
            r["decision_note"] or "",
        )  # fmt: skip
    cli.console.print(table if rows else "no project is under review")


@review_app.command("decide")
def review_decide(
    cycle: Annotated[str, typer.Option(help="Cycle id")],
    project: Annotated[str, typer.Option(help="Project id")],
    decision: Annotated[str, typer.Option(help="project_at_fault | environment_at_fault")],
    by: By,
    note: Note,
    build: Annotated[bool, typer.Option(help="Rebuild the marts afterwards")] = True,
) -> None:
    """Record who decided whose fault it was, when and why; the marts read it at the next build."""
    with cli.warehouse_errors():
        under = {(r["cycle_id"], r["project_id"]) for r in environment.reviews(cycle)}
    if (cycle, project) not in under:
        cli.fail(f"project {project!r} is not under review in cycle {cycle!r} (`argusic review list`)")
    try:
        new = environment.decide(cycle, project, decision, by, utc_now(), note)
    except DecisionError as err:
        cli.fail(str(err))
    cli.console.print(
        f"recorded: {project} in cycle {cycle}: {decision} by {by}" + ("" if new else " (already)")
    )
    if build:
        cli.rebuild()
        cli.console.print("marts rebuilt: `argusic review list`, `argusic board`")


def publish(
    cycle: Annotated[str, typer.Option(help="Cycle id")],
    approve: Annotated[
        bool, typer.Option("--approve", help="Approve the board as it is now, then publish it")
    ] = False,
    reject: Annotated[
        bool, typer.Option("--reject", help="Reject it: the reason is recorded, nothing is published")
    ] = False,
    by: Annotated[str, typer.Option("--by", help="Who decides")] = "",
    note: Annotated[str, typer.Option("--note", help="Why (required with --approve / --reject)")] = "",
) -> None:
    """Show what publishing the cycle's board would change; with --approve or --reject, record the
    decision on exactly that board (its sha256) and publish it when approved."""
    from argusic.review import publication  # deferred: pulls pandas and pyarrow (seconds on --help)
    from argusic.warehouse import dbt_build  # deferred: pulls pandas and pyarrow (seconds on --help)

    if approve and reject:
        cli.fail("--approve or --reject, not both")
    try:
        with cli.warehouse_errors():
            prepared = publication.prepare(cycle)
    except dbt_build.PublicationBlocked as err:
        cli.fail(f"nothing to approve: {err}")
    cli.console.print(prepared.subject, style="bold")
    cli.console.print(prepared.body, markup=False, highlight=False)
    if not (approve or reject):
        cli.console.print(
            f"\nto decide: argusic publish --cycle {cycle} --approve|--reject --by NAME --note WHY",
            style="yellow",
        )
        return
    decision = "approved" if approve else "rejected"
    try:
        publication.record(cycle, prepared.board_sha256, decision, by, utc_now(), note)
    except DecisionError as err:
        cli.fail(str(err))
    if reject:
        with cli.warehouse_errors():
            publication.refresh_after_decision()
        cli.console.print(f"rejected by {by}: nothing published ({note})")
        return
    try:
        with cli.warehouse_errors():
            path = publication.publish_approved(cycle, prepared.board_sha256)
            publication.refresh_after_decision()
    except dbt_build.PublicationBlocked as err:
        cli.fail(f"publication blocked: {err}")
    cli.console.print(f"approved by {by}; published {path}")


@dispute_app.command("file")
def dispute_file(
    attempt: Annotated[str, typer.Option(help="The disputed attempt id")],
    claim: Annotated[str, typer.Option(help="The maintainer's claim, as they wrote it")],
    contact: Annotated[str, typer.Option(help="How to reach them (kept, never published)")],
    by: Annotated[str, typer.Option("--by", help="Who files it (you)")] = "",
) -> None:
    """Record a dispute; prints its id (rule on it: `argusic dispute rule`, or argusic_disputes)."""
    try:
        with cli.warehouse_errors():
            dispute_id = disputes.file(attempt, claim, contact, by or getpass.getuser(), utc_now())
    except DecisionError as err:
        cli.fail(str(err))
    cli.console.print(f"dispute {dispute_id} filed for {attempt}")


@dispute_app.command("list")
def dispute_list(
    open_only: Annotated[bool, typer.Option("--open", help="Only those not ruled yet")] = False,
) -> None:
    """Disputes, their rulings and corrections."""
    with cli.warehouse_errors():
        rows = disputes.listing(open_only=open_only)
    table = Table(title="disputes")
    for column in ("dispute", "attempt", "claim", "ruling", "by", "note", "rerun"):
        # ids and the ruling are read whole (copied into `dispute rule`); texts fold
        table.add_column(column, overflow="fold", no_wrap=column in ("dispute", "ruling"))
    for d in rows:
        table.add_row(d.dispute_id, d.attempt_id, d.claim, d.ruling or "open", d.ruled_by or "",
                      d.ruling_note or "", d.rerun_attempt_id or "")  # fmt: skip
    cli.console.print(table if rows else "no dispute")


@dispute_app.command("rule")
def dispute_rule(
    dispute: Annotated[str, typer.Option(help="Dispute id (`argusic dispute list`)")],
    ruling: Annotated[str, typer.Option(help="environment_at_fault | result_stands")],
    by: By,
    note: Note,
    executor: Annotated[str | None, typer.Option(help="docker | local, for the rerun")] = None,
) -> None:
    """Record the ruling; environment_at_fault reruns the attempt (its next run), loads and builds."""
    try:
        with cli.warehouse_errors():
            ruled = disputes.rule(dispute, ruling, by, utc_now(), note)
    except DecisionError as err:
        cli.fail(str(err))
    cli.console.print(f"dispute {dispute}: {ruled.ruling} by {by}")
    if ruled.ruling != "environment_at_fault":
        return
    try:  # local only for a demo cycle's attempt
        runner = get_executor(executor, demo=correction_spec(ruled.attempt_id).demo)
    except (ValueError, RuntimeError, disputes.DisputeError) as err:
        cli.fail(str(err))
    with cli.console.status(f"rerunning {ruled.attempt_id}…"):
        paths = correct(dispute, runner)
    cli.rebuild()
    cli.console.print(f"corrected: {ruled.attempt_id} → {Path(paths[0]).parent.name}; marts rebuilt")
