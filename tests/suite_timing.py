"""The suite's time, kept in view (issue 23): a pytest plugin, loaded by conftest.py.

- **Order**: test files start slowest first, by `tests/file_durations.json` (seconds per file from a
  whole run, committed): with `--dist loadfile` a worker takes a whole file, and a long file handed
  out last keeps one worker busy while the other idles. Unknown files count as the median file.
  Within a file the order is the file's own. (`make test` passes `--no-loadscope-reorder`, else
  pytest-xdist orders files by their number of tests.)
- **Record**: every test's time (setup, call and teardown) and the worker that ran it, written at the
  end of a whole run to `.suite/last-run.json` (the run before it moved to `.suite/previous-run.json`);
  a run of some files, or with -k or -m, to `.suite/last-partial-run.json`.
- **Tell**: the suite's wall time, each worker's busy time and the slowest files, at the end of the
  terminal report; `scripts/suite_budget.py` compares two runs and writes the durations file.

Nothing here asserts a time: timings on a shared 2-core machine are noise for a test, signal for a
person reading them.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DURATIONS_FILE = Path(__file__).resolve().parent / "file_durations.json"
RUNS_DIR = ROOT / ".suite"
SHOWN_FILES = 15


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def known_durations(path: Path = DURATIONS_FILE) -> dict[str, float]:
    """Seconds per test file from the committed file; {} when it is missing or unreadable (the order
    is then pytest's own: a broken durations file must never stop the suite)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict):
        return {}
    return {str(k): float(v) for k, v in files.items() if isinstance(v, int | float) and v >= 0}


def slowest_first(items: list, durations: dict[str, float]) -> list:
    """`items` with whole files ordered by known duration, longest first (stable: ties and the tests
    of one file keep their order)."""
    if not durations:
        return items
    typical = statistics.median(durations.values())
    first_seen: dict[str, int] = {}
    for n, item in enumerate(items):
        first_seen.setdefault(file_of(item.nodeid), n)
    return sorted(
        items,
        key=lambda item: (
            -durations.get(file_of(item.nodeid), typical),
            first_seen[file_of(item.nodeid)],
        ),
    )


class SuiteTiming:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started = time.time()
        self.tests: dict[str, float] = defaultdict(float)
        self.worker_of: dict[str, str] = {}

    def pytest_runtest_logreport(self, report) -> None:
        self.tests[report.nodeid] += report.duration
        node = getattr(report, "node", None)  # pytest-xdist: the worker that ran it
        gateway = getattr(node, "gateway", None)
        self.worker_of[report.nodeid] = getattr(gateway, "id", None) or "main"

    def summary(self) -> dict:
        files: dict[str, float] = defaultdict(float)
        workers: dict[str, float] = defaultdict(float)
        for nodeid, seconds in self.tests.items():
            files[file_of(nodeid)] += seconds
            workers[self.worker_of.get(nodeid, "main")] += seconds
        return {
            "wall_seconds": round(time.time() - self.started, 1),
            "workers": {k: round(v, 1) for k, v in sorted(workers.items())},
            "files": {k: round(v, 1) for k, v in sorted(files.items(), key=lambda kv: -kv[1])},
            "tests": {k: round(v, 2) for k, v in sorted(self.tests.items(), key=lambda kv: -kv[1])},
        }

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.tests:
            return
        doc = self.summary()
        write = terminalreporter.write_line
        terminalreporter.section("suite time")
        busy = ", ".join(f"{w} {s:.0f} s" for w, s in doc["workers"].items())
        write(f"wall {doc['wall_seconds']:.0f} s; busy per worker: {busy}")
        write(f"slowest files (of {len(doc['files'])}):")
        for name, seconds in list(doc["files"].items())[:SHOWN_FILES]:
            write(f"  {seconds:8.1f} s  {name}")
        if self.config.getoption("collectonly"):
            return
        try:
            RUNS_DIR.mkdir(exist_ok=True)
            if self.whole_run():  # compared run to run: a part of the suite is kept apart
                last = RUNS_DIR / "last-run.json"
                if last.exists():
                    last.replace(RUNS_DIR / "previous-run.json")
            else:
                last = RUNS_DIR / "last-partial-run.json"
            last.write_text(json.dumps(doc, indent=1) + "\n")
            write(f"timings written to {last.relative_to(ROOT)} (scripts/suite_budget.py compares runs)")
        except OSError as err:
            write(f"timings not written: {err}")

    def whole_run(self) -> bool:
        """The whole suite (`make test`): no file, -k or -m chosen."""
        option = self.config.option
        chosen = [a for a in self.config.args if Path(a).resolve() != ROOT / "tests"]
        return not (chosen or option.keyword or option.markexpr)


class _SlowestFirst:
    """Whatever process collects (each xdist worker, or the one process) orders the same way: xdist
    checks that the workers' collections agree."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items) -> None:
        items[:] = slowest_first(items, known_durations())


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_SlowestFirst(), "argusic-suite-order")
    if not hasattr(config, "workerinput"):  # the controller (or a run without workers) keeps time
        config.pluginmanager.register(SuiteTiming(config), "argusic-suite-timing")
