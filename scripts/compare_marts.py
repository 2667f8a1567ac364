"""Compare every mart of two built warehouses, row for row, as multisets (EXCEPT ALL both ways).

Usage: .venv/bin/python scripts/compare_marts.py BEFORE.duckdb AFTER.duckdb [--schema marts]

For every relation of the schema in either warehouse: its columns in each, then the rows of BEFORE
not in AFTER and the rows of AFTER not in BEFORE over the columns both have (EXCEPT ALL keeps
duplicates: a row twice in one and once in the other is a difference). Exit status 1 on any
difference (a relation or column missing on one side, or a row).
"""

from __future__ import annotations

import argparse
import sys

import duckdb


def relations(con: duckdb.DuckDBPyConnection, catalog: str, schema: str) -> dict[str, list[str]]:
    rows = con.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_catalog = ? AND table_schema = ? ORDER BY table_name, ordinal_position",
        [catalog, schema],
    ).fetchall()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--schema", default="marts")
    args = parser.parse_args()
    con = duckdb.connect()
    con.execute(f"ATTACH '{args.before}' AS a (READ_ONLY)")
    con.execute(f"ATTACH '{args.after}' AS b (READ_ONLY)")
    ours, theirs = relations(con, "a", args.schema), relations(con, "b", args.schema)
    different = 0
    for table in sorted(set(ours) | set(theirs)):
        if table not in ours or table not in theirs:
            print(f"{table}: only in {'before' if table in ours else 'after'}")
            different += 1
            continue
        common = [c for c in ours[table] if c in theirs[table]]
        extra = sorted(set(ours[table]) ^ set(theirs[table]))
        cols = ", ".join(f'"{c}"' for c in common)
        a, b = f'a.{args.schema}."{table}"', f'b.{args.schema}."{table}"'
        rows = con.execute(f"SELECT count(*) FROM {a}").fetchone()[0]
        minus = "SELECT count(*) FROM (SELECT {c} FROM {x} EXCEPT ALL SELECT {c} FROM {y})"
        gone = con.execute(minus.format(c=cols, x=a, y=b)).fetchone()[0]
        new = con.execute(minus.format(c=cols, x=b, y=a)).fetchone()[0]
        verdict = "equal" if not (gone or new or extra) else "DIFFERENT"
        different += verdict != "equal"
        print(
            f"{table}: {rows:,} rows, {len(common)} columns; before-after {gone}, after-before {new}"
            + (f"; columns on one side only: {extra}" if extra else "")
            + f" -> {verdict}"
        )
    print(f"{len(set(ours) | set(theirs))} relations, {different} different")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
