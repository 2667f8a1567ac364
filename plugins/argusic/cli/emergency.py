"""`argusic stop` and `argusic resume`: the emergency stop (``argusic.ops.emergency``). Who, when and
why are recorded with every decision; the reason is required."""

from __future__ import annotations

import getpass
from datetime import UTC, datetime
from typing import Annotated

import typer

from argusic.cli.common import console, fail
from argusic.core.emergency import EmergencyStopError, current_stop
from argusic.ops.emergency import emergency_stop, resume

_BY_HELP = "Who decides (recorded; default: this account's user name)"


def _person(by: str | None) -> str:
    return by or getpass.getuser()


def _now() -> datetime:
    """A person deciding now (the DAG takes the time Airflow recorded for the trigger)."""
    return datetime.now(UTC).replace(microsecond=0)


def stop(
    reason: Annotated[
        str, typer.Option(help="Why (required; recorded and published with every run it ends)")
    ],
    cycle: Annotated[
        str | None, typer.Option(help="Stop only this cycle's attempts (default: every cycle)")
    ] = None,
    by: Annotated[str | None, typer.Option(help=_BY_HELP)] = None,
    wait: Annotated[
        float, typer.Option(min=0.0, help="Seconds to let this host's attempts land and record themselves")
    ] = 30.0,
) -> None:
    """Emergency stop: end every running attempt of this installation on every host (or one cycle's),
    delete their model keys, and refuse new attempts until `argusic resume`.

    Each ended attempt lands the evidence it has and gets a run record with end reason
    `emergency_stop` and this stop's who, when and why; it is not scored and is rerun after resume."""
    try:
        report = emergency_stop(by=_person(by), reason=reason, at=_now(), cycle=cycle, wait_seconds=wait)
    except EmergencyStopError as err:
        fail(str(err))
    console.print(f"[bold red]{report.stop.describe()}[/]", soft_wrap=True)
    keys = f"{len(report.keys_deleted)} deleted" if report.keys_configured else "no gateway configured"
    console.print(f"model keys: {keys}")
    console.print(
        f"this host: {len(report.ended_by_executor)} attempt(s) ended and recorded by their executors, "
        f"{len(report.removed)} container(s) removed after {wait:g} s"
    )
    console.print(
        "new attempts are refused until `argusic resume --reason ...`; "
        "other hosts stop theirs at their next poll"
    )


def resume_attempts(
    reason: Annotated[str, typer.Option(help="Why it is safe to go on (required; recorded)")],
    by: Annotated[str | None, typer.Option(help=_BY_HELP)] = None,
) -> None:
    """Lift the emergency stop: attempts may start again (those it ended are rerun)."""
    try:
        lifted = resume(by=_person(by), reason=reason, at=_now())
    except EmergencyStopError as err:
        fail(str(err))
    console.print(f"emergency stop lifted by {lifted.by} at {lifted.at}: {lifted.reason}", soft_wrap=True)


def stop_status() -> None:
    """Whether an emergency stop is in force, and the last decision (who, when, why)."""
    held = current_stop()
    if held is None:
        console.print("no emergency stop has ever been set")
    elif held.active:
        console.print(f"[bold red]in force:[/] {held.describe()}", soft_wrap=True)
    else:
        console.print(f"not in force; last lifted by {held.by} at {held.at}: {held.reason}", soft_wrap=True)
