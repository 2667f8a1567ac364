"""`argusic sql`: the analyst copy in an interactive SQL shell, or one statement for scripts.

Interactive: Harlequin (a terminal SQL IDE: editor, data catalog, results grid, history), opened
read-only on the copy's stable path (``warehouse/analyst/argusic.duckdb``, the link every publication
replaces) with the Parquet folder in its file tree. It runs in this process so that, before every
query, it checks whether a newer copy was published since it opened (one readlink,
``argusic.warehouse.analyst.newer_copy``) and says so: the session keeps reading the copy it opened.
Harlequin 2.17's data catalog has no place for a comment (its catalog items carry a name and a type;
the DuckDB adapter reads information_schema.columns, without the comment), so the catalog's menu of a
table gets "Show Descriptions": a query of the table's and its columns' comments in a new editor tab.
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
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from rich.table import Table

from argusic.warehouse.analyst import DB_NAME, META_TABLE, PARQUET, copy_version, newer_copy

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


def stale_warning(opened: Path, target: Path) -> str | None:
    """What to tell a reader of the copy in ``opened`` (the folder it resolved when it connected) when
    a newer copy was published at ``target`` since; None while it is still the current one. One
    readlink and, only when stale, a read of the new copy's meta table: cheap before every query."""
    newer = newer_copy(opened, target)
    if newer is None:
        return None
    built = ""
    try:
        with duckdb.connect(str(newer / DB_NAME), read_only=True) as con:
            (when,) = con.execute(f"SELECT built_at FROM {META_TABLE}").fetchone()
        built = f", built at {when:%Y-%m-%d %H:%M:%S} UTC"
    except (duckdb.Error, TypeError):  # pruned meanwhile, or a copy from before the meta table
        pass
    return (
        f"A newer analyst copy was published (version {copy_version(newer)}{built}): this session still "
        f"reads version {copy_version(opened)}. Quit and run `argusic sql` again to read the new one "
        f"({target / DB_NAME})."
    )


def _describe_item(item: Any, driver: Any) -> None:  # pragma: no cover - driven by Harlequin's catalog menu
    """Harlequin catalog menu: the table's description and its columns' in a new editor tab."""
    parent = getattr(item, "parent", None)
    schema = getattr(parent, "label", None) or "main"
    table = item.label.replace("'", "''")
    schema = schema.replace("'", "''")
    driver.insert_text_in_new_buffer(
        "SELECT column_name, data_type, comment AS description FROM duckdb_columns()\n"
        f"WHERE schema_name = '{schema}' AND table_name = '{table}' ORDER BY column_index;\n"
        "SELECT comment AS description FROM duckdb_tables()\n"
        f"WHERE schema_name = '{schema}' AND table_name = '{table}';\n"
    )


def harlequin_app(target: Path) -> Any:
    """Harlequin on the analyst copy's stable path (``target``: the link), read-only, Parquet folder
    in its file tree; before every query it warns when a newer copy was published since it opened."""
    # deferred, all five: Harlequin and Textual only for the interactive shell (about 1 s to import)
    import harlequin.app as harlequin_module  # deferred: as above
    from harlequin import Harlequin  # deferred: as above
    from harlequin.app import QuerySubmitted  # deferred: as above
    from harlequin_duckdb import DuckDbAdapter  # deferred: as above
    from harlequin_duckdb.catalog import TableCatalogItem  # deferred: as above
    from textual import on  # deferred: as above

    if not any(label == "Show Descriptions" for label, _ in TableCatalogItem.INTERACTIONS or []):
        TableCatalogItem.INTERACTIONS = [
            *(TableCatalogItem.INTERACTIONS or []),
            ("Show Descriptions", _describe_item),
        ]
    opened = target.resolve()  # the copy this session reads (the file DuckDB opens through the link)
    db_file = target / DB_NAME
    styles = Path(harlequin_module.__file__).parent

    class AnalystHarlequin(Harlequin):
        # Textual reads CSS_PATH beside the module that defines the class: Harlequin's own files
        CSS_PATH = [str(styles / name) for name in Harlequin.CSS_PATH]  # noqa: RUF012

        @on(QuerySubmitted)
        def _warn_when_a_newer_copy_exists(self, message: QuerySubmitted) -> None:
            if warning := stale_warning(opened, target):
                self.notify(warning, title="Newer analyst copy", severity="warning", timeout=20, markup=False)

    adapter = DuckDbAdapter(conn_str=(str(db_file),), read_only=True)
    parquet = target / PARQUET
    return AnalystHarlequin(
        adapter=adapter,
        adapter_name="duckdb",
        connection_hash=f"argusic-analyst:{db_file}",
        show_files=parquet if parquet.is_dir() else None,
    )


def run_harlequin(target: Path) -> int:  # pragma: no cover - takes the terminal (tests drive it in tmux)
    app = harlequin_app(target)
    app.run()
    return app.return_code or 0
