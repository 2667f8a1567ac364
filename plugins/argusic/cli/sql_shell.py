"""`argusic sql`: the analyst copy in an interactive SQL shell, or one statement for scripts.

Interactive: Harlequin (a terminal SQL IDE: editor, data catalog with the tables' comments, results
grid, history), opened read-only on the copy's DuckDB file with the Parquet folder in its file tree.
No DuckDB command-line shell of the warehouse's DuckDB version (2.0.1) can be installed here: the PyPI
wheel ships no CLI, `duckdb-cli` stops at 1.5.6 and refuses the file ("version number 69"), Debian has
none and npm's packages are libraries. Harlequin runs on the Python `duckdb` of the virtualenv, the
same version that wrote the file.

One-shot (`argusic sql "SELECT …"`, or SQL on standard input): runs on a read-only connection and
prints a table (or CSV / JSON for scripts). The DuckDB shell's `.tables` and `.schema [TABLE]` work
here too.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from rich.table import Table

FORMATS = ("table", "csv", "json")


@dataclass
class Result:
    columns: list[str]
    types: list[str]
    rows: list[tuple]


def _jsonable(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


# `.tables`: each table with its rows and grain (the "Grain: …" sentence of its description).
TABLES_SQL = """
SELECT schema_name || '.' || table_name AS "table", estimated_size AS "rows",
       coalesce(nullif(regexp_extract(comment, 'Grain: (.*?)[.](\\s|$)', 1), ''), comment) AS "grain"
FROM duckdb_tables() WHERE NOT internal AND database_name = current_database()
ORDER BY schema_name, table_name
"""

SCHEMA_SQL = """
SELECT schema_name || '.' || table_name AS "table", column_name AS "column", data_type AS "type",
       comment AS "description"
FROM duckdb_columns() WHERE NOT internal AND database_name = current_database()
  AND (? IS NULL OR table_name = ? OR schema_name || '.' || table_name = ?)
ORDER BY schema_name, table_name, column_index
"""


def run(con: duckdb.DuckDBPyConnection, text: str) -> Result | None:
    """Run ``text`` (SQL, possibly several statements; or `.tables` / `.schema [TABLE]`): the last
    statement's result (None when it returns no rows, e.g. SET)."""
    command = text.strip().rstrip(";").strip()
    if command == ".tables":
        cursor = con.execute(TABLES_SQL)
    elif command == ".schema" or command.startswith(".schema "):
        name = command[len(".schema") :].strip() or None
        cursor = con.execute(SCHEMA_SQL, [name, name, name])
    elif command.startswith("."):
        raise ValueError(f"{command.split()[0]}: unknown command (known here: .tables, .schema [TABLE])")
    else:
        cursor = con.execute(text)
    if cursor.description is None:
        return None
    columns = [d[0] for d in cursor.description]
    types = [str(d[1]) for d in cursor.description]
    return Result(columns, types, cursor.fetchall())


def render(result: Result, fmt: str, console: Any) -> None:
    """Print ``result`` as a rich table (``table``), CSV or JSON lines' array."""
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows([[_csv(v) for v in row] for row in result.rows])
        sys.stdout.write(out.getvalue())
        return
    if fmt == "json":
        rows = [dict(zip(result.columns, (_jsonable(v) for v in row), strict=True)) for row in result.rows]
        sys.stdout.write(json.dumps(rows, indent=1, allow_nan=False) + "\n")
        return

    table = Table()
    for name, kind in zip(result.columns, result.types, strict=True):
        numeric = kind.upper().split("(")[0] in _NUMERIC
        table.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for row in result.rows:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    console.print(table)
    console.print(f"{len(result.rows)} row(s)", style="dim")


_NUMERIC = {
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
    "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "NUMBER",
}  # fmt: skip


def _csv(value: Any) -> Any:
    return "" if value is None else _jsonable(value)


def harlequin_command(db_file: Path, parquet: Path | None) -> list[str]:
    """The Harlequin command line that opens ``db_file`` read-only (Parquet folder in its file tree)."""
    found = Path(sys.executable).parent / "harlequin"
    program = str(found) if found.exists() else shutil.which("harlequin")
    if program is None:
        raise FileNotFoundError(
            "harlequin is not installed in this environment: run `make install` (it is in requirements.txt)"
        )
    command = [program, "--read-only", str(db_file)]
    if parquet is not None and parquet.is_dir():
        command += ["--show-files", str(parquet)]
    return command


def exec_harlequin(db_file: Path, parquet: Path | None) -> None:  # pragma: no cover - replaces the process
    command = harlequin_command(db_file, parquet)
    os.execv(command[0], command)
