"""`argusic judging queue` and `argusic judging review`: the person's review of the attempts the
review queue selected (issue #14, Layer 3), for ops without the Airflow UI. The same function as
the form (argusic.review.judging.decide): who (--by), when (now, UTC), why (--note).

Exit codes: 0 recorded / listed; 2 refused (an unknown attempt, a look or score outside 0..2, a
missing who or why, no warehouse yet)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from argusic.cli import common as cli
from argusic.review import judging
from argusic.warehouse.decisions import DecisionError, utc_now

judging_app = typer.Typer(
    help="The person's review of judged attempts (issue #14, Layer 3): advice, never a score.",
    no_args_is_help=True,
)


@judging_app.command("queue")
def judging_queue(
    cycle: Annotated[str, typer.Option(help="One cycle (default: every cycle)")] = "",
    awaiting_only: Annotated[bool, typer.Option("--awaiting", help="Only those not reviewed yet")] = False,
    selected_only: Annotated[
        bool, typer.Option("--selected", help="Only those a selection rule selected")
    ] = False,
) -> None:
    """Every attempt of the review queue (marts.review_queue), the ones a selection rule selected
    first (reasons says why), and their review status."""
    with cli.warehouse_errors():
        rows = judging.queue(
            cycle or None, "awaiting" if awaiting_only else None, selected_only=selected_only
        )
    table = Table(title="judging review queue")
    for column in ("attempt", "reasons", "provisional", "judges total", "status", "decision", "by"):
        table.add_column(column, overflow="fold", no_wrap=column == "attempt")
    for r in rows:
        total = "" if r["judges_total"] is None else f"{r['judges_total']:g}/{r['judges_total_max']}"
        table.add_row(
            r["attempt_id"], r["reasons"], r["provisional_result"] or "", total, r["review_status"],
            "" if r["decision"] is None else f"{r['decision']} (look {r['look']})", r["decided_by"] or "",
        )  # fmt: skip
    cli.console.print(table if rows else "no attempt is in the review queue")


@judging_app.command("review")
def judging_review(
    attempt: Annotated[str, typer.Option(help="The attempt id")],
    look: Annotated[int, typer.Option(help="How it looks (repair: how the change reads), 0..2")],
    decision: Annotated[str, typer.Option(help="promote | reject")],
    by: Annotated[str, typer.Option("--by", help="Who reviews (your name as ops know it)")],
    note: Annotated[str, typer.Option("--note", help="Why (recorded with the review)")],
    code_structure: Annotated[
        int | None, typer.Option("--code-structure", help="Your own code_structure, 0..2 (optional)")
    ] = None,
    logic_correctness: Annotated[
        int | None, typer.Option("--logic-correctness", help="Your own logic_correctness, 0..2 (optional)")
    ] = None,
    build: Annotated[bool, typer.Option(help="Rebuild the marts afterwards")] = True,
) -> None:
    """Record a review (decisions.judging_reviews); the latest per attempt is in force."""
    try:
        with cli.warehouse_errors():
            new = judging.decide(
                attempt, look, decision, by, utc_now(), note,
                code_structure=code_structure, logic_correctness=logic_correctness,
            )  # fmt: skip
    except (DecisionError, judging.ReviewError) as err:
        cli.fail(str(err))
    cli.console.print(
        f"recorded: {attempt}: {decision} (look {look}) by {by}" + ("" if new else " (already)"),
        markup=False,
    )
    if build:
        cli.rebuild()
        cli.console.print("marts rebuilt: `argusic judging queue`, marts.judging_review_divergence")
