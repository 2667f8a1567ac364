"""Cycle ids and Airflow run ids: which cycle a run belongs to."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from argusic.sources.pool import cycle_window


class ConfigurationError(ValueError):
    """A trigger's params that no retry can fix; the message says what to change."""


def cycle_id_for(day: date) -> str:
    """The cycle a date belongs to: a calendar month, `YYYY-MM`."""
    return f"{day.year:04d}-{day.month:02d}"


RUN_ID_PREFIX = "cycle__"


def run_id_for(cycle_id: str, moment: datetime) -> str:
    """The run id a cycle run is triggered with (`cycle__2026-12__20261201T120000Z`): the cycle is
    read in every list of runs, not hidden in the run's conf. Airflow allows `[A-Za-z0-9_.~:+-]`."""
    return f"{RUN_ID_PREFIX}{cycle_id}__{moment.astimezone(UTC):%Y%m%dT%H%M%SZ}"


def cycle_of_run_id(run_id: str | None) -> str | None:
    """The cycle a run id names (`cycle__<cycle_id>__<anything>`), or None."""
    if not run_id or not run_id.startswith(RUN_ID_PREFIX):
        return None
    return run_id[len(RUN_ID_PREFIX) :].split("__", 1)[0] or None


def cycle_id_of_run(param: str | None, run_id: str | None, day: date) -> str:
    """The cycle of a DAG run: the `cycle_id` param, else the cycle its run id names, else the month
    of the run. A param and a run id that name different cycles are refused (ConfigurationError)."""
    named = cycle_of_run_id(run_id)
    if param and named and param != named:
        raise ConfigurationError(
            f"the run id {run_id!r} names cycle {named} but the param cycle_id is {param!r}: trigger "
            f"again with one cycle in both (run id cycle__{param}__<time>), or leave cycle_id empty"
        )
    cycle_id = param or named or cycle_id_for(day)
    try:
        cycle_window(cycle_id)
    except ValueError as err:
        raise ConfigurationError(
            f"{err}; set the param cycle_id (or the run id cycle__<cycle_id>__<time>)"
        ) from None
    return cycle_id


def previous_cycle_of(cycle_id: str) -> str:
    """The calendar month before a cycle (`2027-01` -> `2026-12`)."""
    start, _ = cycle_window(cycle_id)
    return cycle_id_for(start - timedelta(days=1))
