"""csvstats: totals and averages per region from a sales CSV file, written as JSON."""

from __future__ import annotations

import argparse
import csv
import json
import os
from collections import defaultdict


def totals(path: str) -> dict:
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            sums[row["region"]] += float(row["amount"])
            counts[row["region"]] += 1
    return {r: {"total": round(sums[r], 2), "average": round(sums[r] / counts[r], 2)} for r in sorted(sums)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("csv")
    parser.add_argument("--out", default="out/summary.json")
    args = parser.parse_args()
    summary = totals(args.csv)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    print(f"csvstats: {len(summary)} regions -> {args.out}")


if __name__ == "__main__":
    main()
