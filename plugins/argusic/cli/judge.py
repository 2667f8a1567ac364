"""`argusic judge --cycle C [--attempt A] [--judges j1,j2,...] [--replay-dir DIR]`: run model judges
(Layer 2, argusic.judging.judges) over the attempts of a cycle and write
``<attempt_dir>/judging/<judge_id>.json``; ``argusic ingest`` loads them.

``--replay-dir`` holds recorded judge sessions, ``<judge_id>.jsonl`` for every attempt or
``<attempt_id>/<judge_id>.jsonl`` for one: the container then runs no CLI (no model runs). Without it
a real judge needs a per-run key through the routing gateway and refuses to start otherwise.

Exit codes: 0 done; 1 some attempt could not be judged (each named on stderr; the others are
written); 2 refused input (an unknown judge, a missing cycle, attempt or replay folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from argusic.core.record import RecordError
from argusic.core.settings import runs_dir
from argusic.core.tasks import TaskDefinitionError
from argusic.judging.evidence import EvidenceError
from argusic.judging.judges import JUDGES, JudgeError, judge_attempt

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)
DEFAULT_JUDGES = "judge-claude,judge-codex,judge-claude-2"


def _fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", markup=True)
    raise typer.Exit(code=2)


def _is_id(value: str) -> bool:
    return bool(value) and "/" not in value and value not in (".", "..") and "\x00" not in value


def replay_sessions(replay_dir: Path, attempt_id: str, judge_ids: list[str]) -> dict[str, Path]:
    """The recorded session of each judge for this attempt: ``<dir>/<attempt_id>/<judge>.jsonl`` wins
    over ``<dir>/<judge>.jsonl``; links are not followed."""
    found: dict[str, Path] = {}
    for judge_id in judge_ids:
        for candidate in (replay_dir / attempt_id / f"{judge_id}.jsonl", replay_dir / f"{judge_id}.jsonl"):
            if candidate.is_file() and not candidate.is_symlink():
                found[judge_id] = candidate
                break
    return found


def judge(
    cycle: Annotated[str, typer.Option(help="Cycle id (a folder of the runs dir)")],
    attempt: Annotated[str | None, typer.Option(help="Only this attempt id")] = None,
    judges: Annotated[str, typer.Option(help="Judge ids, comma-separated")] = DEFAULT_JUDGES,
    replay_dir: Annotated[
        Path | None, typer.Option("--replay-dir", help="Recorded judge sessions (no model runs)")
    ] = None,
) -> None:
    """Run model judges on a cycle's attempts (advisory: never part of a score)."""
    if not _is_id(cycle) or (attempt is not None and not _is_id(attempt)):
        _fail("cycle and attempt are ids, not paths")
    judge_ids = [j.strip() for j in judges.split(",") if j.strip()]
    unknown = [j for j in judge_ids if j not in JUDGES]
    if not judge_ids or unknown:
        _fail(f"unknown judges {unknown} (known: {', '.join(JUDGES)})")
    if replay_dir is not None and (replay_dir.is_symlink() or not replay_dir.is_dir()):
        _fail(f"--replay-dir {replay_dir}: not a folder")
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
        try:
            paths = judge_attempt(attempt_dir, judge_ids, replay)
        except (JudgeError, EvidenceError, RecordError, TaskDefinitionError, OSError) as err:
            err_console.print(f"{attempt_dir.name}: {err}", markup=False)
            failures += 1
            continue
        for path in paths:
            console.print(f"wrote {path}", markup=False)
        written += len(paths)
    note = " (replayed recorded sessions: no model ran)" if replay_dir else ""
    console.print(f"{written} judgements written{note}, {failures} attempts not judged", markup=False)
    if failures:
        raise typer.Exit(code=1)
