"""The attempts a command line run has under way, and how long each has run against its budget: the
CLI's counterpart of the live log's `elapsed 1 min 20 s of 15 min budget` line (argusic.attempts.live_log),
printed every few seconds by `argusic cycle run` while its progress bar runs, so that a quiet attempt
never looks frozen there either."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from argusic.attempts.live_log import elapsed_line
from argusic.core.settings import orchestrator_config
from argusic.core.spec import AttemptSpec


def budget_of(spec: AttemptSpec) -> float | None:
    """The attempt's time budget in seconds as the attempt path applies it (demo budgets scaled), or
    None where it is not the board's install budget (a repair attempt has limits of its own)."""
    if spec.purpose not in ("board", "verdict"):
        return None
    try:
        budget = orchestrator_config().budget_seconds(spec.tier)
    except (KeyError, ValueError):
        return None
    return max(1.0, budget * spec.budget_scale) if spec.demo else float(budget)


class RunningAttempts:
    """Which attempts are running since when; `lines()` says how long each has run of its budget.
    Thread-safe: attempt threads call `started`/`ended`, a ticker calls `lines`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._running: dict[str, tuple[AttemptSpec, float]] = {}
        self._lock = threading.Lock()

    def started(self, spec: AttemptSpec) -> None:
        with self._lock:
            self._running[spec.attempt_id] = (spec, self.clock())

    def ended(self, spec: AttemptSpec) -> None:
        with self._lock:
            self._running.pop(spec.attempt_id, None)

    def lines(self) -> list[str]:
        now = self.clock()
        with self._lock:
            running = list(self._running.values())
        return [f"{spec.label}: {elapsed_line(now - since, budget_of(spec))}" for spec, since in running]

    def tick(self, emit: Callable[[str], None], every: float = 10.0) -> Callable[[], None]:
        """Emit `lines()` every `every` seconds from a thread until the returned stop is called."""
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(every):
                for line in self.lines():
                    emit(line)

        thread = threading.Thread(target=run, name="argusic-running-attempts", daemon=True)
        thread.start()

        def stopper() -> None:
            stop.set()
            thread.join(timeout=5)

        return stopper
