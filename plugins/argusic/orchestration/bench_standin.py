"""Benchmark stand-ins for attempts (scripts/bench_scheduling.py): the mapped attempt task returns at
once, without a container, evidence or a run record, so that a benchmark measures what the scheduler,
the broker and the workers cost per attempt and nothing else.

Two keys, both needed, so that no real cycle can lose its attempts to a stray setting:
- the worker's environment has `ARGUSIC_BENCH_STANDIN_ATTEMPTS=1` (only the benchmark's own cluster sets
  it), and
- the attempt's cycle is a benchmark cycle: its id ends in `-bench` (e.g. `2026-12-sched-bench`).

The switch on with any other cycle is refused: the task fails at once and says why (a worker set up for
benchmarks must not take part in a real cycle, whether by running or by skipping its attempts). Any
value of the variable other than unset, empty, `0` or `1` is refused too. Every stand-in is logged as
a warning. A stand-in writes no record: the run's ingest then fails (nothing to load), as it should.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

STANDIN_ENV = "ARGUSIC_BENCH_STANDIN_ATTEMPTS"
BENCH_CYCLE_SUFFIX = "-bench"
STANDIN_LABEL = "STAND-IN (benchmark): nothing ran, nothing recorded"


class StandinRefused(ValueError):
    """The stand-in switch is set where it must not act; the message says what to change."""


def standin_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this worker's environment turns the switch on (`1`); `0`, empty or unset: off."""
    value = (os.environ if environ is None else environ).get(STANDIN_ENV, "")
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    raise StandinRefused(
        f"{STANDIN_ENV}={value[:40]!r} on this worker: expected 1 (benchmark workers only) or unset"
    )


def is_bench_cycle(cycle_id: str) -> bool:
    """A benchmark cycle: its id ends in `-bench` (and has something before it)."""
    return cycle_id.endswith(BENCH_CYCLE_SUFFIX) and len(cycle_id) > len(BENCH_CYCLE_SUFFIX)


def standin_for(cycle_id: str, attempt_id: str, environ: Mapping[str, str] | None = None) -> bool:
    """True: the attempt `attempt_id` of `cycle_id` is to be a stand-in (the switch is on and the cycle
    is a benchmark cycle). False: run it for real (the switch is off). StandinRefused: the switch is on
    but `cycle_id` is not a benchmark cycle, or the variable has another value than 0 or 1."""
    if not standin_requested(environ):
        return False
    if not is_bench_cycle(cycle_id):
        raise StandinRefused(
            f"attempt {attempt_id}: {STANDIN_ENV}=1 on this worker, but cycle {cycle_id!r} is not a "
            f"benchmark cycle (its id does not end in {BENCH_CYCLE_SUFFIX!r}): nothing was run. Unset "
            f"{STANDIN_ENV} on this worker and clear the task, or run benchmarks in a '-bench' cycle"
        )
    return True
