"""`argusic demo`: a whole demo cycle on the embedded default (forge → pool → attempts → repair
track → warehouse → board), ending with where everything is and what to do next."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from argusic.attempts.agents import known_agents
from argusic.attempts.environment import EnvironmentError_
from argusic.cli.board import print_attempts, print_board, print_repair_rates
from argusic.cli.common import console, fail, shown_path, warehouse_errors
from argusic.cli.cycle import cycle_failed, run_with_progress
from argusic.core.runs_store import local_path
from argusic.core.settings import code_root, evidence_url, forge_dir, project_root, runs_dir, warehouse_path
from argusic.core.spec import read_spec
from argusic.cycle.plan import write_plan
from argusic.cycle.pools import resolve_pool
from argusic.sandbox.executor import get_executor
from argusic.sources.forge import build_forge, build_repair_forge
from argusic.sources.pool import CatalogueError
from argusic.warehouse.analyst import AnalystCopyError, analyst_dir
from argusic.warehouse.decisions import utc_now
from argusic.warehouse.load_runs import IngestError
from argusic.warehouse.load_runs import ingest as do_ingest
from argusic.workflows.repair_round import repair_ingest_paths, repair_round

DEMO_CYCLE = "2026-12-demo"
DEMO_AGENTS = ["readme-runner", "readme-runner-norecover"]


def demo(
    cycle: Annotated[str, typer.Option(help="Demo cycle id")] = DEMO_CYCLE,
    executor: Annotated[
        str | None, typer.Option(help="docker | local (default: ARGUSIC_EXECUTOR, else docker)")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Attempts run side by side")] = 2,
) -> None:
    """Run a whole demo cycle on the embedded default: forge → pool → attempts → warehouse → board.

    Budgets are scaled down (90 min → 15 s). Run it again: attempts measured before are not run again;
    it says so and goes straight to the board. It ends by saying where everything is."""
    from argusic.review import publication  # deferred: pulls pandas and pyarrow (seconds on --help)
    from argusic.warehouse import dbt_build  # deferred: pulls pandas and pyarrow (seconds on --help)

    started = time.monotonic()
    try:
        runner = get_executor(executor, demo=True)
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
    records, not_started, _counts = run_with_progress(f"demo {cycle}", specs, runner, workers)
    if not_started:
        cycle_failed(
            f"{len(not_started)} attempt(s) could not start:\n  "
            + "\n  ".join(not_started)
            + "\nFix the cause and run `argusic demo` again: finished attempts are not measured twice."
        )
    repair = _demo_repair_round(cycle, runner)
    try:
        with warehouse_errors(), console.status("warehouse: loading the records, dbt build, expectations…"):
            # one lock, one transaction: the run records with repairkit's items, validations and the
            # stand-ins' grades
            result = do_ingest(
                [Path(p).parent for p in [*records, *repair["records"]]],
                known_agents=known_agents(),
                repair_paths=repair["ingest"],
            )
            dbt_build.build_warehouse(quiet=True)
            # Nothing is published without an approval of the exact board: the demo approves its own
            # fixture board, openly, as "demo" (the cycle's publication_decisions says so).
            prepared = publication.prepare(cycle)
            publication.record(
                cycle, prepared.board_sha256, "approved", "demo", utc_now(),
                "approved by `argusic demo` itself, not by a person: a demo cycle on fixture projects",
            )  # fmt: skip
            published = publication.publish_approved(cycle, prepared.board_sha256)
            publication.refresh_after_decision()
    except dbt_build.PublicationBlocked as err:
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


def _print_where(cycle: str, published: Path) -> None:
    """The demo's closing block: where each thing is, and what to do next."""
    analyst = analyst_dir()  # the read-only snapshot and Parquet files every build refreshes
    airflow_home = Path(os.environ.get("AIRFLOW_HOME") or project_root() / ".airflow")
    notebooks = sorted((code_root() / "notebooks").glob("*.ipynb"))
    evidence = evidence_url()
    served = evidence.rstrip("/") + "/served/<attempt id>/"
    if evidence.startswith("file://"):
        evidence = shown_path(Path(evidence.removeprefix("file://")))
        served = evidence.rstrip("/") + "/served/<attempt id>/"
    table = Table(title=f"where things are — cycle {cycle}", show_header=False, box=None, padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("board", f"{shown_path(published)}  (`argusic board`)")
    table.add_row(
        "attempts",
        f"{shown_path(published.with_name('attempts.json'))}  (`argusic attempts`: outcome, points, "
        "score, served log and recording of each)",
    )
    site = published.parent.parent / "site" / "index.html"
    table.add_row("public site", f"{shown_path(site)}  (`argusic site serve`: a preview on 127.0.0.1)")
    table.add_row("warehouse", f"{shown_path(warehouse_path())}  (the pipeline's own file: writers only)")
    table.add_row(
        "analyst copy",
        f"{shown_path(analyst)}  (argusic.duckdb + parquet/, refreshed after each build: "
        "query this one" + ("" if analyst.exists() else "; not made yet") + ")",
    )
    table.add_row("notebook", ", ".join(shown_path(n) for n in notebooks) or "notebooks/ (none found)")
    table.add_row("evidence", f"{evidence}  (raw, by sha256; served copies, credentials masked: {served})")
    table.add_row("run records", f"{shown_path(runs_dir() / cycle)}  (one folder per attempt)")
    table.add_row(
        "Airflow UI",
        "`make airflow-ui` → http://127.0.0.1:8080, user admin, password in "
        f"{shown_path(airflow_home / 'simple_auth_manager_passwords.json.generated')}",
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
