"""`argusic play`, `argusic report` and `argusic reproduce`: one attempt, watched in the terminal
(served copies only), written as a self-contained HTML page, or run again under its recorded
configuration and compared with the original."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from argusic.cli.common import console, err_console, fail, shown_path, warehouse_errors
from argusic.core.record import RecordError
from argusic.publication.attempt_page import PlayerMissing, load_player_assets, write_report
from argusic.publication.replay import (
    ReplayRefused,
    ending_note,
    fetch_served,
    find_attempt,
    keys_not_echoed,
    play_cast,
    printable,
    read_cast,
    recorded_seconds,
    terminal_note,
)
from argusic.workflows.reproduce import ReproductionRefused, compare
from argusic.workflows.reproduce import reproduce as run_reproduction

_ATTEMPT_ID_HELP = "The attempt id, e.g. 2026-12.board.readme-runner.csvstats.a1 (`argusic attempts`)"


def _find_attempt_or_fail(attempt_id: str):
    try:
        with warehouse_errors():
            return find_attempt(attempt_id)
    except (ReplayRefused, RecordError) as err:
        fail(str(err))


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
    # How the attempt ended, when not by itself: said after the recording, never written into it.
    if not result.stopped and (ending := ending_note(facts.record)):
        err_console.print(f"■ {ending}", style="bold yellow", markup=False, highlight=False)


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
        doc = result.to_dict() | {"reproduction_record": str(done.record_path), "notes": done.plan.notes}
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    else:
        _print_comparison(result, done)
    if not result.same_outcome:
        raise typer.Exit(code=1)


def _shown_value(value) -> str:
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
        f"{verdict}. Reproduction record: {shown_path(done.record_path)} (never ingested, not on the board)",
        markup=False,
    )
