#!/usr/bin/env python3
"""The test suite's budget at a glance (issue 23): what the last run took, and what grew.

    python scripts/suite_budget.py                 # the last run against the one before it
    python scripts/suite_budget.py --against FILE  # ... against another run's timings
    python scripts/suite_budget.py --write-durations   # tests/file_durations.json from the last run

The runs are the files tests/suite_timing.py writes at the end of every pytest run
(.suite/last-run.json, .suite/previous-run.json). `tests/file_durations.json` is committed: it orders
the files slowest first, so that the two workers of `make test` end together; write it again after a
whole `make test` when files were added, split or sped up.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / ".suite"
DURATIONS = ROOT / "tests" / "file_durations.json"


def load(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        sys.exit(f"suite_budget: no timings at {path}: run the tests first (make test)")
    except ValueError as err:
        sys.exit(f"suite_budget: {path} is not a timings file: {err}")
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        sys.exit(f"suite_budget: {path} has no 'files' table: not written by tests/suite_timing.py")
    return doc


def grown(last: dict, before: dict, min_seconds: float, min_ratio: float) -> list[tuple[str, float, float]]:
    """Files that took at least `min_seconds` and `min_ratio` times longer than before (new files
    count from zero)."""
    found = []
    for name, seconds in last["files"].items():
        earlier = float(before["files"].get(name, 0.0))
        if seconds - earlier >= min_seconds and (earlier == 0 or seconds / earlier >= min_ratio):
            found.append((name, earlier, float(seconds)))
    return sorted(found, key=lambda row: row[1] - row[2])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--last", type=Path, default=RUNS / "last-run.json")
    parser.add_argument("--against", type=Path, default=RUNS / "previous-run.json")
    parser.add_argument("--top", type=int, default=30, help="slowest files shown (30)")
    parser.add_argument("--min-seconds", type=float, default=10.0, help="growth shown from (10 s)")
    parser.add_argument("--min-ratio", type=float, default=1.2, help="... and from this ratio (1.2)")
    parser.add_argument("--write-durations", action="store_true", help=f"write {DURATIONS.name}")
    args = parser.parse_args(argv)

    last = load(args.last)
    busy = ", ".join(f"{w} {s:.0f} s" for w, s in last.get("workers", {}).items())
    print(f"wall {last.get('wall_seconds', 0):.0f} s; busy per worker: {busy}")
    print(f"the {args.top} slowest files:")
    for name, seconds in list(last["files"].items())[: args.top]:
        print(f"  {seconds:8.1f} s  {name}")
    if args.against.exists():
        before = load(args.against)
        rows = grown(last, before, args.min_seconds, args.min_ratio)
        print(f"grew against {args.against.name} (wall {before.get('wall_seconds', 0):.0f} s): {len(rows)}")
        for name, earlier, seconds in rows:
            print(f"  {earlier:8.1f} s -> {seconds:8.1f} s  {name}")
    if args.write_durations:
        doc = {"note": "seconds per test file from one whole `make test`; scripts/suite_budget.py",
               "files": last["files"]}  # fmt: skip
        DURATIONS.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {DURATIONS.relative_to(ROOT)} ({len(last['files'])} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
