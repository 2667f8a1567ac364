"""`argusic verdicts plan|run|request`: adaptive project verdicts from the command line, the same steps
as the `argusic_verdicts` DAG (argusic.workflows.verdicts)."""

from __future__ import annotations

from typing import Annotated

import typer

from argusic.cli.common import console, fail, warehouse_errors
from argusic.cycle.ids import ConfigurationError
from argusic.cycle.plan import budget_scale_for
from argusic.sandbox.executor import get_executor
from argusic.warehouse.decisions import DecisionError
from argusic.workflows import verdicts

verdicts_app = typer.Typer(
    help="Project verdicts (METHODOLOGY.md §7): what the adaptive rule still needs, run it, ask for "
    "a stronger agent. Same steps as the argusic_verdicts DAG.",
    no_args_is_help=True,
)

Cycle = Annotated[str, typer.Option(help="Cycle whose pool holds the projects, YYYY-MM[-suffix]")]
Pool = Annotated[str | None, typer.Option(help="A pool.json of that cycle (default: the one recorded)")]
Projects = Annotated[
    str, typer.Option(help="Comma-separated project ids of the pool (default: every project of the pool)")
]


def _say(line: str) -> None:
    console.print(line, markup=False, highlight=False)


def _targets(cycle: str, pool: str | None, projects: str, **request):
    if not cycle:
        fail("--cycle is required (e.g. --cycle 2026-12)")
    try:
        return verdicts.prepare(cycle, pool, projects.split(","), **request)
    except (verdicts.VerdictConfigurationError, ValueError) as err:
        fail(str(err))


@verdicts_app.command("plan")
def plan_cmd(
    cycle: Cycle = "",
    pool: Pool = None,
    projects: Projects = "",
    build: Annotated[
        bool, typer.Option(help="Build the warehouse first, so the plan sees every attempt and request")
    ] = True,
) -> None:
    """Print the verdict attempts still pending for the cycle's projects, and why (plans nothing to
    disk, runs nothing). Then each project's verdict as it stands."""
    with warehouse_errors():
        targets = _targets(cycle, pool, projects)
        if build:
            _say(verdicts.build().splitlines()[0])
        for line in verdicts.plan_lines(verdicts.read_plan(targets)):
            _say(line)
        _say(f"verdicts of cycle {targets.cycle_id}'s {len(targets.projects)} project(s) as they stand:")
        for line in verdicts.verdict_lines(targets):
            _say(line)


@verdicts_app.command("run")
def run_cmd(
    cycle: Cycle = "",
    pool: Pool = None,
    projects: Projects = "",
    stronger_agent: Annotated[
        str | None, typer.Option(help="Ask for this agent on every listed project (needs --by and --note)")
    ] = None,
    by: Annotated[str | None, typer.Option(help="Who asks for the stronger agent")] = None,
    note: Annotated[str | None, typer.Option(help="Why")] = None,
    demo: Annotated[
        bool, typer.Option(help="Budgets x 1/360 (needed for the demo forge's fixtures)")
    ] = False,
    budget_scale: Annotated[
        float | None, typer.Option(min=0.0001, max=1.0, help="Multiply every budget by this (dry runs)")
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(help="docker | local (default: ARGUSIC_EXECUTOR, else docker; local: demo only)"),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Attempts run side by side")] = 2,
    max_rounds: Annotated[int, typer.Option(min=1, help="Rounds of plan → run → ingest → build")] = 4,
) -> None:
    """Run the verdict attempts the rules still need: build → (plan → run → ingest → build) until
    nothing is pending. Resumable: run it again and nothing measured is measured twice; with nothing
    pending it runs nothing. Exit 1 when something is still pending or needs a person."""
    try:
        runner = get_executor(executor, demo=budget_scale_for(demo, budget_scale)[0])
    except (ValueError, RuntimeError) as err:
        fail(str(err))
    with warehouse_errors():
        targets = _targets(cycle, pool, projects, stronger_agent=stronger_agent, requested_by=by, note=note)
        try:
            run = verdicts.run_verdicts(
                targets, demo, budget_scale, executor=runner, workers=workers, max_rounds=max_rounds, say=_say
            )
        except (ConfigurationError, ValueError) as err:
            fail(str(err))
        ran = ", ".join(run.attempts) or "-"
        _say(f"{run.rounds} round(s), {len(run.attempts)} verdict attempt(s) run: {ran}")
        _say(f"verdicts of cycle {targets.cycle_id}'s {len(targets.projects)} project(s):")
        for line in verdicts.verdict_lines(targets):
            _say(line)
        if run.left.pending or run.left.exhausted:
            for line in verdicts.plan_lines(run.left):
                _say(line)
            raise typer.Exit(code=1)


@verdicts_app.command("request")
def request_cmd(
    project: Annotated[str, typer.Option(help="Project id")],
    commit: Annotated[str, typer.Option(help="The commit its verdict is for (40 hex)")],
    agent: Annotated[str, typer.Option(help="The stronger agent to run (not the standard one)")],
    by: Annotated[str, typer.Option(help="Who asks")],
    note: Annotated[str, typer.Option(help="Why")],
) -> None:
    """Record a request for a stronger agent on a project at a commit (a decision: who, when, why).
    The next verdict run acts on it once the standard agent's two complete attempts found no pass."""
    with warehouse_errors():
        try:
            new = verdicts.request_stronger_agent(project, commit, agent, by, note)
        except (verdicts.VerdictConfigurationError, DecisionError) as err:
            fail(str(err))
    done = "recorded" if new else "already recorded"
    _say(f"{done}: {agent} requested for {project} @ {commit[:12]} by {by}")
