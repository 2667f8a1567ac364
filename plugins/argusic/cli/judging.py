"""`argusic tasks list|show|generate [--check]` and `argusic hints compute --cycle C [--attempt ID]`.

Exit codes: 0 done; 1 `generate --check` found drifted files (each named), or `hints compute` could
not compute some attempt (each named on stderr; the others are written); 2 refused input (a task file
that breaks its shape, an unknown task, a missing cycle or attempt folder).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console

from argusic.core import tasks
from argusic.core.evidence import EvidenceStore
from argusic.core.record import RecordError
from argusic.core.settings import runs_dir
from argusic.core.tasks import (
    PURPOSE_TASK,
    TASK_IDS,
    TaskDefinitionError,
    drifted,
    generate,
    load_task,
    refined_projects,
)
from argusic.judging.hints import HintsError, hints_for_attempt, store_hint_evidence

tasks_app = typer.Typer(
    help="Task definitions (argusic.core.tasks): one source of truth.", no_args_is_help=True
)
hints_app = typer.Typer(help="Layer 1 hints (argusic.hints/1): never part of a score.", no_args_is_help=True)
console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", markup=True)
    raise typer.Exit(code=2)


@tasks_app.command("list")
def tasks_list() -> None:
    """Every task kind with its version, revision and project refinements."""
    try:
        for task_id in TASK_IDS:
            task = load_task(task_id)
            purposes = ", ".join(p for p, t in PURPOSE_TASK.items() if t == task_id)
            projects = refined_projects(task_id)
            console.print(
                f"{task_id}  version {task.version}  revision {task.revision[:12]}  purposes: {purposes}  "
                f"needles {len(task.needles)}  tool order {' > '.join(task.tool_order) or '-'}  "
                f"projects refined: {', '.join(projects) or '-'}",
                markup=False,
            )
    except TaskDefinitionError as err:
        _fail(str(err))


@tasks_app.command("show")
def tasks_show(
    task: Annotated[str, typer.Argument(help="Task id: install_and_run or repair")],
    project: Annotated[str | None, typer.Option(help="Merge this project's refinement in")] = None,
) -> None:
    """The merged definition of a task (JSON), prompt included."""
    try:
        loaded = load_task(task, project)
    except TaskDefinitionError as err:
        _fail(str(err))
    doc = {"revision": loaded.revision} | loaded.definition()
    console.print(json.dumps(doc, indent=2, ensure_ascii=False), markup=False)


@tasks_app.command("generate")
def tasks_generate(
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 naming every drifted file")
    ] = False,
) -> None:
    """Emit the run instructions, scenarios and review forms from the task files."""
    try:
        if check:
            bad = drifted(tasks.PACKAGE_DIR)  # read when called: tests point it elsewhere
            for relative in bad:
                err_console.print(f"drifted: plugins/argusic/{relative}", markup=False)
            if bad:
                err_console.print("run `argusic tasks generate` and commit the result", markup=False)
                raise typer.Exit(code=1)
            console.print("generated files match the task files", markup=False)
            return
        for path in generate(tasks.PACKAGE_DIR):
            console.print(f"wrote {path}", markup=False)
    except TaskDefinitionError as err:
        _fail(str(err))


@hints_app.command("compute")
def hints_compute(
    cycle: Annotated[str, typer.Option(help="Cycle id (a folder of the runs dir)")],
    attempt: Annotated[str | None, typer.Option(help="Only this attempt id")] = None,
) -> None:
    """Compute and write hints.json for every attempt folder of a cycle (with a run_record.json)."""
    if "/" in cycle or cycle in (".", "..") or (attempt and ("/" in attempt or attempt in (".", ".."))):
        _fail("cycle and attempt are ids, not paths")
    folder = runs_dir() / cycle
    if not folder.is_dir() or folder.is_symlink():
        _fail(f"cycle {cycle!r}: no folder {folder}")
    store = EvidenceStore()
    attempts = [folder / attempt] if attempt else sorted(p for p in folder.iterdir() if p.is_dir())
    failures = written = 0
    for attempt_dir in attempts:
        record_path = attempt_dir / "run_record.json"
        if attempt_dir.is_symlink() or not attempt_dir.is_dir():
            err_console.print(f"{attempt_dir.name}: not an attempt folder", markup=False)
            failures += 1
            continue
        if not record_path.exists() and not record_path.is_symlink():
            if attempt:
                err_console.print(f"{attempt_dir.name}: no run_record.json", markup=False)
                failures += 1
            continue  # a folder of a run still going, or not an attempt
        try:
            path = hints_for_attempt(attempt_dir, again=True)
            store_hint_evidence(attempt_dir, store)
        except (RecordError, TaskDefinitionError, HintsError, OSError) as err:
            err_console.print(f"{attempt_dir.name}: {err}", markup=False)
            failures += 1
            continue
        written += 1
        console.print(f"wrote {path}", markup=False)
    console.print(f"{written} hints written, {failures} attempts not computed", markup=False)
    if failures:
        raise typer.Exit(code=1)
