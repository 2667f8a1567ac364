"""`argusic judge --cycle C [--attempt A] [--judges j1,j2,...] [--replay-dir DIR | --script-dir DIR]`:
run model judges (Layer 2, argusic.judging.judges) over the attempts of a cycle and write
``<attempt_dir>/judging/<judge_id>.json`` (on a cluster also pushed to the runs store, where the
cycle's ``ingest_judgements`` pulls them); ``argusic ingest`` loads them.

``--replay-dir`` holds recorded judge sessions, ``<judge_id>.jsonl`` for every attempt or
``<attempt_id>/<judge_id>.jsonl`` for one: the container then runs no CLI (no model runs).
``--script-dir`` holds judgement scripts (``<judge_id>.json`` or ``<attempt_id>/<judge_id>.json``):
the judge's real CLI runs against the model double answering that script (argusic.judging.double;
Claude Code judges). Without either a real judge needs a per-run key through the routing gateway and
refuses to start otherwise.

Exit codes: 0 done; 1 some attempt could not be judged (each named on stderr; the others are
written); 2 refused input (an unknown judge, a missing cycle, attempt or replay folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from argusic.core.record import RecordError
from argusic.core.runs_store import RunsStoreError
from argusic.core.settings import runs_dir
from argusic.core.tasks import TaskDefinitionError
from argusic.judging.double import judge_scripts
from argusic.judging.evidence import EvidenceError
from argusic.judging.judges import JUDGES, JudgeError, judge_attempt
from argusic.judging.pipeline import push_judgements, replay_sessions

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)
DEFAULT_JUDGES = "judge-claude,judge-codex,judge-claude-2"


def _fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", markup=True)
    raise typer.Exit(code=2)


def _is_id(value: str) -> bool:
    return bool(value) and "/" not in value and value not in (".", "..") and "\x00" not in value


def judge(
    cycle: Annotated[str, typer.Option(help="Cycle id (a folder of the runs dir)")],
    attempt: Annotated[str | None, typer.Option(help="Only this attempt id")] = None,
    judges: Annotated[str, typer.Option(help="Judge ids, comma-separated")] = DEFAULT_JUDGES,
    replay_dir: Annotated[
        Path | None, typer.Option("--replay-dir", help="Recorded judge sessions (no model runs)")
    ] = None,
    script_dir: Annotated[
        Path | None,
        typer.Option("--script-dir", help="Judgement scripts: the real CLI against the model double"),
    ] = None,
) -> None:
    """Run model judges on a cycle's attempts (advisory: never part of a score)."""
    if not _is_id(cycle) or (attempt is not None and not _is_id(attempt)):
        _fail("cycle and attempt are ids, not paths")
    judge_ids = [j.strip() for j in judges.split(",") if j.strip()]
    unknown = [j for j in judge_ids if j not in JUDGES]
    if not judge_ids or unknown:
        _fail(f"unknown judges {unknown} (known: {', '.join(JUDGES)})")
    if replay_dir is not None and script_dir is not None:
        _fail("--replay-dir and --script-dir: one or the other")
    for option, given in (("--replay-dir", replay_dir), ("--script-dir", script_dir)):
        if given is not None and (given.is_symlink() or not given.is_dir()):
            _fail(f"{option} {given}: not a folder")
    folder = runs_dir() / cycle
    if not folder.is_dir() or folder.is_symlink():
        _fail(f"cycle {cycle!r}: no folder {folder}")
    attempts = [folder / attempt] if attempt else sorted(p for p in folder.iterdir() if p.is_dir())
    failures = written = 0
    for attempt_dir in attempts:
        if attempt_dir.is_symlink() or not (attempt_dir / "run_record.json").is_file():
            if attempt:
                err_console.print(f"{attempt_dir.name}: no run_record.json", markup=False)
                failures += 1
            continue
        replay = replay_sessions(replay_dir, attempt_dir.name, judge_ids) if replay_dir else None
        scripts = judge_scripts(script_dir, attempt_dir.name, judge_ids) if script_dir else None
        try:
            paths = judge_attempt(attempt_dir, judge_ids, replay, scripts)
            push_judgements(paths)  # on a cluster: into the runs store (a no-op on one machine)
        except (JudgeError, EvidenceError, RecordError, TaskDefinitionError, OSError, RunsStoreError) as err:
            err_console.print(f"{attempt_dir.name}: {err}", markup=False)
            failures += 1
            continue
        for path in paths:
            console.print(f"wrote {path}", markup=False)
        written += len(paths)
    note = (
        " (replayed recorded sessions: no model ran)"
        if replay_dir
        else " (the real CLIs against the model double: scripted answers)"
        if script_dir
        else ""
    )
    console.print(f"{written} judgements written{note}, {failures} attempts not judged", markup=False)
    if failures:
        raise typer.Exit(code=1)
