"""Expectations (Great Expectations, GX Core 1.x) on the warehouse marts: the gate before publication.

The suites are data: ``SUITES`` maps each mart of the contract (DESIGN.md, schema ``marts``) to a list
of expectation specs, each a dict with the GX expectation type, its keyword arguments and the rule it
guards (``why``). They are the one place where the marts' column checks live (unique keys, not null,
allowed values, ranges): dbt's data tests guard the inputs (source, staging, seeds) and the exact-
fraction invariants, and neither repeats the other. Rules that involve several columns or rows (ranks
ordered by score, null exactly when…) are computed as boolean check columns (``CHECKS``) and expected
to be true.

GX has no DuckDB datasource: each mart is read with a read-only DuckDB connection into pandas and
validated through GX's pandas route (ephemeral context → pandas data source → dataframe asset →
whole-dataframe batch definition → suite → ``ValidationDefinition.run``).

Importing ``great_expectations`` is slow (~6 s) and, under a configured root logger (Airflow's
structlog), prints hundreds of "Skipping registering function" lines: it is imported lazily and its
loggers are set to WARNING before and after the import.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from argusic.core.settings import warehouse_path
from argusic.warehouse.db import connect
from argusic.warehouse.expectations.checks import _ROW_LOCAL, CHECKS
from argusic.warehouse.expectations.results import FailedExpectation, TableResult, ValidationReport
from argusic.warehouse.expectations.suites import KEYS, OPTIONAL_TABLES, REQUIRED_TABLES, SCHEMA, SUITES

# ---------------------------------------------------------------------------------------------------
# Suites as data
# ---------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------
# Cross-column and cross-row rules, computed in DuckDB SQL (each is one boolean per row)
# ---------------------------------------------------------------------------------------------------
#
# A check is a SQL expression over the mart (alias ``t``; window functions allowed) and the columns
# it reads. ``{null:c}`` is "c is null" (a floating NaN counts as null, as in pandas), so a check
# says exactly what the pandas rule it replaced said. Its value is handed to GX as a boolean column
# ``check_*`` expected to be true on every row (SUITES).


# ---------------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------
# GX plumbing
# ---------------------------------------------------------------------------------------------------


def _quiet_gx_loggers() -> None:
    for name in ["great_expectations", *logging.root.manager.loggerDict]:
        if name.startswith("great_expectations"):
            logging.getLogger(name).setLevel(logging.WARNING)


@cache
def _gx() -> tuple[Any, Any]:
    """Import great_expectations once, quietly (no info logs, no usage statistics)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    _quiet_gx_loggers()
    # deferred: GX takes tens of seconds to import; a process pays for it once, when it validates
    import great_expectations as gx
    import great_expectations.expectations as gxe  # deferred: as above

    _quiet_gx_loggers()  # some GX modules set their own level to INFO on import
    return gx, gxe


def load_gx() -> None:
    """Import GX now (once per process), e.g. when a long-lived build worker starts."""
    _gx()


def _gx_class(gxe: Any, kind: str) -> Any:
    return getattr(gxe, "".join(part.capitalize() for part in kind.split("_")))


def _context() -> Any:
    gx, _ = _gx()
    # deferred: GX takes tens of seconds to import (_gx above)
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    _quiet_gx_loggers()
    return context


def _sql_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _ident(column: str, alias: str = "t") -> str:
    return f'{alias}."{column}"'


def _render(sql: str, relation: str, floats: set[str]) -> str:
    """Resolve ``{null:col}`` / ``{null:alias.col}`` (NaN counts as null) and ``{relation}``."""

    def null(match: re.Match[str]) -> str:
        alias, _, column = match.group(1).rpartition(".")
        ref = _ident(column, alias or "t")
        return f"({ref} is null or isnan({ref}))" if column in floats else f"({ref} is null)"

    sql = re.sub(r"\{null:([\w.]+)\}", null, sql)
    sql = sql.replace("nullif_nan(", "_argusic_nullif_nan(")
    sql = re.sub(r"_argusic_nullif_nan\(([^()]*)\)", r"(case when isnan(\1) then null else \1 end)", sql)
    return sql.replace("{relation}", relation)


def _duplicated(key: list[str], duplicates: list[list[str]]) -> str:
    """True for every row whose key (NULLs equal, as GROUP BY has them) occurs more than once.

    The duplicated keys are grouped once (a CTE ``_dup_<n>``) and rows are matched against them: a
    window count over the whole mart would have to hold every selected column of every row."""
    duplicates.append(key)
    match = " and ".join(f"{_ident(c, 'd')} is not distinct from {_ident(c)}" for c in key)
    return f"exists (select 1 from _dup_{len(duplicates) - 1} as d where {match})"


def _suspect(
    spec: dict[str, Any], columns: set[str], floats: set[str], duplicates: list[list[str]]
) -> str | None:
    """SQL that is true for every row that could break the (row-local) expectation.

    It may be true for more rows (GX judges them again), never for fewer. None: the column is
    absent (GX reports it) or nothing to select.
    """
    kind, kwargs = spec["type"], spec["kwargs"]
    if kind == "expect_compound_columns_to_be_unique":
        cols = kwargs["column_list"]
        if not set(cols) <= columns:
            return None
        return _duplicated(list(cols), duplicates)
    column = kwargs.get("column")
    if column not in columns:
        return None
    ref = _ident(column)
    null = f"({ref} is null or isnan({ref}))" if column in floats else f"({ref} is null)"
    if kind == "expect_column_values_to_not_be_null":
        return null
    if kind == "expect_column_values_to_be_unique":
        return _duplicated([column], duplicates)
    if kind == "expect_column_values_to_be_in_set":
        values = ", ".join(_sql_literal(v) for v in kwargs["value_set"])
        return f"not {null} and not coalesce({ref} in ({values}), false)"
    if kind == "expect_column_values_to_be_between":
        bounds = []
        if kwargs.get("min_value") is not None:
            bounds.append(f"{ref} >= {_sql_literal(kwargs['min_value'])}")
        if kwargs.get("max_value") is not None:
            bounds.append(f"{ref} <= {_sql_literal(kwargs['max_value'])}")
        if not bounds:
            return None
        return f"not {null} and not coalesce({' and '.join(bounds)}, false)"
    raise ValueError(f"{kind} is not row-local")  # pragma: no cover - guarded by _ROW_LOCAL


def _table_frame(
    con: Any, table: str, relation: str, specs: list[dict[str, Any]], columns: list[str], floats: set[str]
) -> tuple[pd.DataFrame, int, dict[str, str], bool]:
    """The frame GX validates for one mart: the columns the suite reads, the SQL check columns, and
    (when every expectation is row-local) only the rows that could break one of them.

    Returns (frame, rows in the mart, check errors, reduced?).
    """
    present = set(columns)
    rows = con.execute(f"SELECT count(*) FROM {relation}").fetchone()[0]
    errors: dict[str, str] = {}
    checks: list[str] = []
    for name, check in CHECKS.get(table, {}).items():
        missing = [c for c in check.columns if c not in present]
        if missing:
            errors[name] = f"column {missing[0]!r} is missing from marts.{table}"
            continue
        expr = f"coalesce(({_render(check.sql, relation, floats)}), false) AS {name}"
        try:
            con.execute(f"SELECT {expr} FROM {relation} AS t LIMIT 0")
        except Exception as err:  # noqa: BLE001 - reported as a failed expectation, never swallowed
            errors[name] = f"{type(err).__name__}: {err}"
            continue
        checks.append(expr)

    wanted: list[str] = [k for k in KEYS.get(table, []) if k in present]
    for spec in specs:
        kw = spec["kwargs"]
        for c in [kw.get("column"), *kw.get("column_list", [])]:
            if c in present and c not in wanted:
                wanted.append(c)
    base = ", ".join([*(_ident(c) for c in wanted), *checks]) or "1 AS _row"
    inner = f"SELECT {base} FROM {relation} AS t"
    frame_cols = ", ".join([f'"{c}"' for c in wanted] + [e.rsplit(" AS ", 1)[1] for e in checks]) or "_row"

    reduced = all(spec["type"] in _ROW_LOCAL for spec in specs)
    if reduced:
        duplicates: list[list[str]] = []
        predicates = []
        for spec in specs:
            column = spec["kwargs"].get("column")
            if column in CHECKS.get(table, {}):
                if column not in errors:
                    predicates.append(f'not t."{column}"')
                continue
            pred = _suspect(spec, present, floats, duplicates)
            if pred is not None:
                predicates.append(pred)
        ctes = ", ".join(
            f"_dup_{i} AS (SELECT {', '.join(_ident(c) for c in key)} FROM {relation} AS t "
            "GROUP BY ALL HAVING count(*) > 1)"
            for i, key in enumerate(duplicates)
        )
        where = " OR ".join(f"({p})" for p in predicates) or "false"
        sql = f"{'WITH ' + ctes + ' ' if ctes else ''}SELECT {frame_cols} FROM ({inner}) AS t WHERE {where}"
        try:
            return con.execute(sql).df(), rows, errors, True
        except Exception:  # noqa: BLE001 - e.g. a value of the wrong type: GX judges every row
            pass
    return con.execute(f"SELECT {frame_cols} FROM ({inner}) AS t").df(), rows, errors, False


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):
        with contextlib.suppress(ValueError, AttributeError):
            value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _observed(result: Any, kwargs: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    info = result.exception_info or {}
    if info.get("raised_exception"):
        return {"error": str(info.get("exception_message") or "exception")}
    res = dict(result.result or {})
    if "unexpected_count" in res:
        obs: dict[str, Any] = {"unexpected_count": res["unexpected_count"]}
        sample = res.get("partial_unexpected_list") or []
        if sample and kwargs.get("value_set") != [True]:
            obs["sample"] = _json_safe(sample[:5])
        rows = [
            {k: _json_safe(v) for k, v in row.items() if k in keys}
            for row in (res.get("partial_unexpected_index_list") or [])[:5]
            if isinstance(row, dict)
        ]
        if any(rows):
            obs["rows"] = rows
        return obs
    return {"observed_value": _json_safe(res.get("observed_value"))}


class _GXObjects:
    """GX objects kept across validations in one process (a build worker validates every build).

    Building a context, suites, data sources and validation definitions is a good part of GX's time
    on small frames: they are built once per (table, expectations applied) and reused. GX keeps each
    run's result in the context's in-memory store, so everything starts afresh every
    ``RENEW_AFTER`` validations: a long-lived process does not grow without bound.
    """

    RENEW_AFTER = 50

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._context: Any = None
        self._definitions: dict[tuple[str, tuple[int, ...]], Any] = {}
        self._validations = 0

    def context(self) -> Any:
        """The context for one validation (of every table); call with ``lock`` held."""
        if self._context is None or self._validations >= self.RENEW_AFTER:
            self._context, self._definitions, self._validations = _context(), {}, 0
        self._validations += 1
        return self._context

    def definition(self, context: Any, table: str, applied: list[dict[str, Any]]) -> Any:
        """The validation definition of ``table`` with exactly the ``applied`` specs (in that order)."""
        gx, gxe = _gx()
        key = (table, tuple(next(i for i, s in enumerate(SUITES[table]) if s is spec) for spec in applied))
        found = self._definitions.get(key)
        if found is not None:
            return found
        name = f"{table}_{len(self._definitions)}"
        suite = gx.ExpectationSuite(name=f"marts.{name}")
        for number, spec in enumerate(applied):
            kind = _gx_class(gxe, spec["type"])
            suite.add_expectation(kind(**spec["kwargs"], meta={"argusic_spec": number}))
        suite = context.suites.add(suite)  # one store write for the whole suite
        asset = context.data_sources.add_pandas(f"marts_{name}").add_dataframe_asset(table)
        batch = asset.add_batch_definition_whole_dataframe("whole")
        found = context.validation_definitions.add(
            gx.ValidationDefinition(name=f"validate_{name}", data=batch, suite=suite)
        )
        self._definitions[key] = found
        return found


_GX_OBJECTS = _GXObjects()


@dataclass
class _Prepared:
    """One mart's share of the work done in DuckDB: what GX is then given to judge."""

    out: TableResult
    applied: list[dict[str, Any]]
    frame: pd.DataFrame
    keys: list[str]
    nothing_to_judge: bool = False  # see _prepare


def _prepare(con: Any, table: str, relation: str) -> _Prepared:
    """SQL checks and row selection in DuckDB for one mart's suite (no GX: may run in a thread)."""
    described = con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
    columns = [row[0] for row in described]
    floats = {row[0] for row in described if str(row[1]).upper() in {"DOUBLE", "FLOAT", "REAL"}}
    out = TableResult(table=table, present=True)
    applicable: list[dict[str, Any]] = []
    for spec in SUITES[table]:
        absent = [c for c in spec["when_columns"] if c not in columns]
        if absent:
            out.skipped.append(f"{spec['type']}({spec['kwargs']}): column(s) {absent} not in marts.{table}")
            continue
        applicable.append(spec)
    frame, out.rows, check_errors, reduced = _table_frame(con, table, relation, applicable, columns, floats)
    keys = [k for k in KEYS.get(table, []) if k in frame.columns]

    applied: list[dict[str, Any]] = []
    for spec in applicable:
        column = spec["kwargs"].get("column")
        if column in check_errors:
            out.failures.append(
                FailedExpectation(
                    table, spec["type"], spec["kwargs"], spec["why"], {"error": check_errors[column]}
                )
            )
            continue
        applied.append(spec)
    out.evaluated = len(applied) + len(out.failures)
    # Every expectation is row-local, DuckDB selected every row that could break one (a superset of
    # the rows that do) and there is none, and every column the suite names is in the mart (GX fails
    # an absent one): every expectation holds, as GX would find on the empty frame. GX is not asked
    # (it costs ~20 ms an expectation however few rows: most of a build's expectation time). Any
    # suspect row and GX judges the whole suite on the selected rows, as before.
    named = {spec["kwargs"].get("column") for spec in applied} - {None}
    named |= {c for spec in applied for c in spec["kwargs"].get("column_list", [])}
    nothing = reduced and frame.empty and named <= set(frame.columns)
    return _Prepared(out, applied, frame, keys, nothing_to_judge=nothing)


def _judge(context: Any, table: str, prepared: _Prepared) -> TableResult:
    """Every applicable expectation of one mart judged by GX on its prepared frame."""
    out, applied, frame, keys = prepared.out, prepared.applied, prepared.frame, prepared.keys
    if not applied or prepared.nothing_to_judge:
        return out
    definition = _GX_OBJECTS.definition(context, table, applied)
    result_format: dict[str, Any] = {"result_format": "SUMMARY", "partial_unexpected_count": 5}
    if keys:
        result_format["unexpected_index_column_names"] = keys
    run = definition.run(batch_parameters={"dataframe": frame}, result_format=result_format)

    # GX does not keep the suite's order in the results: match them by the number kept in meta.
    for res in run.results:
        spec = applied[int(res.expectation_config.meta["argusic_spec"])]
        if not res.success:
            out.failures.append(
                FailedExpectation(
                    table, spec["type"], spec["kwargs"], spec["why"], _observed(res, spec["kwargs"], keys)
                )
            )
    if len(run.results) != len(applied):  # pragma: no cover - GX contract changed
        raise RuntimeError(f"GX returned {len(run.results)} results for {len(applied)} expectations")
    return out


def _validate(
    con: Any, relations: Mapping[str, str], only: Iterable[str] | None, *, overlap: bool = False
) -> ValidationReport:
    """Every suite (or ``only`` some) on the marts named in ``relations`` (table -> SQL relation).

    ``overlap``: DuckDB prepares the next marts' frames (each on its own cursor, in a thread; DuckDB
    releases the GIL) while GX judges the previous ones. Only for relations every cursor of ``con``
    sees (tables, not frames registered on ``con``).
    """
    started = time.perf_counter()
    wanted = [*REQUIRED_TABLES, *OPTIONAL_TABLES]
    if only is not None:
        only = list(only)
        unknown = sorted(set(only) - set(wanted))
        if unknown:
            raise ValueError(f"no suite for {unknown}; marts with suites: {wanted}")
        wanted = [t for t in wanted if t in only]
    tables: dict[str, TableResult] = {}
    present = [t for t in wanted if relations.get(t) is not None]
    with contextlib.ExitStack() as stack:
        if overlap and len(present) > 1:
            pool = stack.enter_context(ThreadPoolExecutor(max_workers=1, thread_name_prefix="marts-sql"))
            cursors = {t: stack.enter_context(con.cursor()) for t in present}
            pending = {t: pool.submit(_prepare, cursors[t], t, relations[t]) for t in present}
            prepared = {t: pending[t].result for t in present}
        else:
            prepared = {t: partial(_prepare, con, t, relations[t]) for t in present}
        with _GX_OBJECTS.lock:
            context = _GX_OBJECTS.context()
            tables.update(_judge_each(context, wanted, prepared))
    return ValidationReport(tables=tables, seconds=time.perf_counter() - started)


def _judge_each(
    context: Any, wanted: list[str], prepared: Mapping[str, Callable[[], _Prepared]]
) -> dict[str, TableResult]:
    """Each wanted mart judged in order; a missing required mart fails, a missing optional one is
    reported as skipped."""
    tables: dict[str, TableResult] = {}
    for table in wanted:
        if table in prepared:
            tables[table] = _judge(context, table, prepared[table]())
            continue
        result = TableResult(table=table, present=False)
        if table in REQUIRED_TABLES:
            result.note = f"required table marts.{table} does not exist"
            result.failures.append(
                FailedExpectation(
                    table,
                    "table_exists",
                    {},
                    "every mart of the contract is built",
                    {"error": f"marts.{table} does not exist"},
                )
            )
        else:
            result.note = f"optional table marts.{table} does not exist yet: not validated"
        tables[table] = result
    return tables


def validate_frames(
    frames: Mapping[str, pd.DataFrame | None], only: Iterable[str] | None = None
) -> ValidationReport:
    """Validate marts given as pandas frames (None or absent = the table does not exist).

    A required mart that is absent fails; an optional one (speed bounds, editions) is skipped and the
    skip is reported. ``only`` restricts the run to some marts (suites are per table, so a table's
    result does not depend on the others). The frames go through the same DuckDB route as the
    warehouse's tables (see ``validate_warehouse``).
    """
    with duckdb.connect() as con:
        relations = {}
        for table, df in frames.items():
            if df is not None:
                con.register(f"frame_{table}", df)
                relations[table] = f'"frame_{table}"'
        return _validate(con, relations, only)


def read_marts(db_path: Path) -> dict[str, pd.DataFrame]:
    """Every contract mart present in the warehouse, read whole (for analysts; not used by the gate)."""
    if not Path(db_path).exists():
        raise FileNotFoundError(f"warehouse {db_path} does not exist")
    with connect(Path(db_path), read_only=True) as con:  # waits for a writer rather than failing
        present = _present_marts(con)
        return {
            table: con.execute(f'SELECT * FROM "{SCHEMA}"."{table}"').df()
            for table in [*REQUIRED_TABLES, *OPTIONAL_TABLES]
            if table in present
        }


def _present_marts(con: Any) -> set[str]:
    return {
        row[0]
        for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", [SCHEMA]
        ).fetchall()
    }


def validate_warehouse(db_path: Path | None = None, only: Iterable[str] | None = None) -> ValidationReport:
    """Run every suite on the marts of the DuckDB warehouse (ARGUSIC_WAREHOUSE by default).

    Read-only connection. Per mart, DuckDB computes the check columns and selects only the columns
    the suite reads and, when every expectation of the suite is row-local (not null, in set,
    between, unique), only the rows that could break one (all rows of a duplicated key); GX then
    judges every expectation on that frame, so a pass or a failure, and its count of unexpected
    rows, are those of the whole table. When no row could break one, every expectation holds and GX
    is not asked (``_prepare``). ``only``: these marts' suites alone (a build that rebuilt only some
    marts; see ``argusic.warehouse.dbt_build``).
    """
    path = Path(db_path) if db_path else warehouse_path()
    if not path.exists():
        raise FileNotFoundError(f"warehouse {path} does not exist")
    with connect(path, read_only=True) as con:  # waits for a writer (or an analyst's) rather than failing
        return validate_connection(con, only)


def validate_connection(con: Any, only: Iterable[str] | None = None) -> ValidationReport:
    """Every suite (or ``only`` some) on the marts seen by an open DuckDB connection (see
    ``validate_warehouse``)."""
    present = _present_marts(con)
    relations = {t: f'"{SCHEMA}"."{t}"' for t in [*REQUIRED_TABLES, *OPTIONAL_TABLES] if t in present}
    return _validate(con, relations, only, overlap=True)
