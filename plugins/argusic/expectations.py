"""Expectations (Great Expectations, GX Core 1.x) on the warehouse marts: the gate before publication.

The suites are data: ``SUITES`` maps each mart of the contract (DESIGN.md, schema ``marts``) to a list
of expectation specs, each a dict with the GX expectation type, its keyword arguments and the rule it
guards (``why``). Rules that involve several columns or rows (ranks ordered by score, null exactly
when…) are computed in pandas as boolean check columns (``CHECKS``) and expected to be true.

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
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

SCHEMA = "marts"

# ---------------------------------------------------------------------------------------------------
# Suites as data
# ---------------------------------------------------------------------------------------------------

OUTCOMES = ["pass_full", "pass_mock", "fail", "timeout"]
VERDICTS = ["runs", "runs_with_mocks", "could_not_verify", "not_yet_verified"]
ESTIMATE_STATUSES = ["estimate", "unknown"]


def _e(kind: str, why: str, when_columns: tuple[str, ...] = (), **kwargs: Any) -> dict[str, Any]:
    """One expectation spec: GX type (snake case), the rule it guards, GX kwargs.

    ``when_columns``: only for marts whose columns the contract does not list (hardware, editions):
    the expectation is skipped, and the skip reported, when one of these columns is absent.
    """
    return {"type": kind, "why": why, "when_columns": when_columns, "kwargs": kwargs}


def _unique(*columns: str) -> dict[str, Any]:
    if len(columns) == 1:
        return _e("expect_column_values_to_be_unique", f"one row per {columns[0]}", column=columns[0])
    return _e(
        "expect_compound_columns_to_be_unique",
        f"one row per ({', '.join(columns)})",
        column_list=list(columns),
    )


def _not_null(*columns: str) -> list[dict[str, Any]]:
    return [_e("expect_column_values_to_not_be_null", f"{c} is never null", column=c) for c in columns]


def _between(column: str, lo: float | None, hi: float | None, why: str) -> dict[str, Any]:
    return _e("expect_column_values_to_be_between", why, column=column, min_value=lo, max_value=hi)


def _in_set(column: str, values: list[Any], why: str) -> dict[str, Any]:
    return _e("expect_column_values_to_be_in_set", why, column=column, value_set=values)


def _check(column: str, why: str) -> dict[str, Any]:
    """Expect a boolean check column computed in pandas (see CHECKS) to be true on every row."""
    return _e("expect_column_values_to_be_in_set", why, column=column, value_set=[True])


SUITES: dict[str, list[dict[str, Any]]] = {
    "attempt_scores": [
        _unique("attempt_id"),
        *_not_null("attempt_id", "cycle_id", "purpose", "agent_id", "project_id", "attempt_no", "is_valid"),
        _in_set("purpose", ["board", "verdict"], "purpose is board or verdict"),
        _between("attempt_no", 1, None, "attempt numbers start at 1"),
        _in_set("outcome", OUTCOMES, "outcome is pass_full, pass_mock, fail or timeout (null when invalid)"),
        _between("score", 0, 100, "a score is out of 100"),
        _in_set("install_points", [0, 30], "install earns 0 or 30"),
        _in_set("run_points", [0, 30], "run or test earns 0 or 30"),
        _between("recovery_points", 0, 20, "error recovery earns 0 to 20"),
        _in_set("depth_points", [0, 12, 20], "verification depth earns 0, 12 or 20"),
        _check("check_invalid_unscored", "an invalid attempt has a null score and a null outcome"),
        _check("check_invalid_has_reason", "an invalid attempt keeps its reason"),
        _check("check_valid_scored", "a valid attempt has a score and an outcome"),
        _check("check_score_is_sum", "score = install + run + recovery + depth points"),
        _check("check_timeout_zero", "a timeout scores 0 in every category"),
    ],
    "pair_sets": [
        _unique("cycle_id", "agent_id", "project_id"),
        *_not_null("cycle_id", "agent_id", "project_id", "valid_attempts", "is_unstable", "is_complete"),
        _between("valid_attempts", 0, 3, "a set never holds more than three valid attempts"),
        _between("low_score", 0, 100, "scores are out of 100"),
        _between("middle_score", 0, 100, "scores are out of 100"),
        _between("high_score", 0, 100, "scores are out of 100"),
        _between("spread_pct", 0, None, "a spread is never negative (+infinity allowed)"),
        _check("check_scores_ordered", "low_score <= middle_score <= high_score"),
        _check("check_complete_is_three", "a complete set holds three valid attempts"),
        _check("check_unstable_is_spread", "a set is unstable exactly when its spread is above 30%"),
    ],
    "project_review": [
        _unique("cycle_id", "project_id"),
        *_not_null("cycle_id", "project_id", "under_review"),
        _in_set(
            "decision", ["project_at_fault", "environment_at_fault"], "a person's decision (or none yet)"
        ),
    ],
    "project_verdicts": [
        _unique("project_id", "commit_sha"),
        *_not_null("project_id", "commit_sha", "verdict", "complete_attempts"),
        _in_set(
            "verdict", VERDICTS, "verdict is runs, runs_with_mocks, could_not_verify or not_yet_verified"
        ),
        _between("complete_attempts", 0, None, "complete attempts are counted from 0"),
        _check("check_pass_names_agent", "a passing verdict names the agent that verified it, no other does"),
        _check("check_could_not_verify_two", "could_not_verify needs at least two complete attempts"),
    ],
    "board": [
        _unique("cycle_id", "agent_id"),
        *_not_null("cycle_id", "agent_id", "valid_attempts"),
        _between("board_score", 0, 100, "a board score is out of 100"),
        _between("rank", 1, None, "ranks start at 1"),
        _between("pass_rate", 0, 1, "a pass rate is a share between 0 and 1"),
        _between("valid_attempts", 0, None, "counts are never negative"),
        _between("sets_counted", 0, None, "counts are never negative"),
        _between("sets_unstable", 0, None, "counts are never negative"),
        _between("sets_under_review", 0, None, "counts are never negative"),
        _check("check_rank_null_iff_no_score", "rank is null exactly when board_score is null"),
        _check("check_rank_follows_score", "a higher board score never gets a worse rank (same cycle)"),
        _check("check_rank_starts_at_one", "each cycle with a score has a rank 1"),
    ],
    "hardware_tiers": [
        _e("expect_table_row_count_to_equal", "five model-size tiers (7-8B … 120B+)", value=5),
        _unique("tier"),
        *_not_null("tier"),
    ],
    "hardware_estimates": [
        _e("expect_table_row_count_to_be_between", "estimates exist", min_value=1),
        *_not_null("status"),
        _in_set("status", ESTIMATE_STATUSES, "an estimate is shown only when every input is known"),
        _e(
            "expect_column_values_to_be_unique",
            "one row per machine",
            when_columns=("machine_id",),
            column="machine_id",
        ),
    ],
    "hardware_speed_bounds": [
        _e("expect_table_row_count_to_be_between", "bounds exist", min_value=1),
        _e(
            "expect_compound_columns_to_be_unique",
            "one row per (machine_id, tier)",
            when_columns=("machine_id", "tier"),
            column_list=["machine_id", "tier"],
        ),
        _e(
            "expect_column_values_to_be_in_set",
            "a bound is shown only when every input is known",
            when_columns=("status",),
            column="status",
            value_set=ESTIMATE_STATUSES,
        ),
        _e(
            "expect_column_values_to_be_between",
            "a speed bound is never negative",
            when_columns=("tokens_per_s_max",),
            column="tokens_per_s_max",
            min_value=0,
        ),
    ],
    "methodology_editions": [
        _e("expect_table_row_count_to_be_between", "editions v0.2 … v1.5 (nine)", min_value=9),
        _e(
            "expect_column_values_to_be_unique",
            "one row per edition",
            when_columns=("version",),
            column="version",
        ),
        _e(
            "expect_column_values_to_not_be_null",
            "every edition has a version",
            when_columns=("version",),
            column="version",
        ),
    ],
}

REQUIRED_TABLES = [
    "attempt_scores", "pair_sets", "project_review", "project_verdicts", "board",
    "hardware_tiers", "hardware_estimates",
]  # fmt: skip
OPTIONAL_TABLES = ["hardware_speed_bounds", "methodology_editions"]

# Key columns named in failure messages (which rows broke an expectation).
KEYS: dict[str, list[str]] = {
    "attempt_scores": ["attempt_id"],
    "pair_sets": ["cycle_id", "agent_id", "project_id"],
    "project_review": ["cycle_id", "project_id"],
    "project_verdicts": ["project_id", "commit_sha"],
    "board": ["cycle_id", "agent_id"],
    "hardware_tiers": ["tier"],
    "hardware_estimates": ["machine_id"],
    "hardware_speed_bounds": ["machine_id", "tier"],
    "methodology_editions": ["version"],
}

# ---------------------------------------------------------------------------------------------------
# Cross-column and cross-row rules, computed in pandas (each returns one boolean per row)
# ---------------------------------------------------------------------------------------------------

_TOL = 1e-6


def _isnull(df: pd.DataFrame, col: str) -> pd.Series:
    return df[col].isna()


def _truthy(df: pd.DataFrame, col: str) -> pd.Series:
    return df[col].fillna(False).astype(bool)


def _invalid_unscored(df: pd.DataFrame) -> pd.Series:
    invalid = ~_truthy(df, "is_valid")
    return ~invalid | (_isnull(df, "score") & _isnull(df, "outcome"))


def _invalid_has_reason(df: pd.DataFrame) -> pd.Series:
    return _truthy(df, "is_valid") | df["invalid_reason"].notna()


def _valid_scored(df: pd.DataFrame) -> pd.Series:
    return ~_truthy(df, "is_valid") | (df["score"].notna() & df["outcome"].notna())


def _score_is_sum(df: pd.DataFrame) -> pd.Series:
    parts = ["install_points", "run_points", "recovery_points", "depth_points"]
    total = df[parts].astype("float64").sum(axis=1, min_count=len(parts))
    score = df["score"].astype("float64")
    return score.isna() | ((score - total).abs() <= _TOL)


def _timeout_zero(df: pd.DataFrame) -> pd.Series:
    parts = ["score", "install_points", "run_points", "recovery_points", "depth_points"]
    zero = (df[parts].astype("float64").fillna(0).abs() <= _TOL).all(axis=1)
    return (df["outcome"] != "timeout").fillna(True).astype(bool) | zero


def _scores_ordered(df: pd.DataFrame) -> pd.Series:
    lo, mid, hi = (df[c].astype("float64") for c in ("low_score", "middle_score", "high_score"))
    missing = lo.isna() | mid.isna() | hi.isna()
    return missing | ((lo <= mid + _TOL) & (mid <= hi + _TOL))


def _complete_is_three(df: pd.DataFrame) -> pd.Series:
    return ~_truthy(df, "is_complete") | (df["valid_attempts"].fillna(0).astype("int64") == 3)


def _unstable_is_spread(df: pd.DataFrame) -> pd.Series:
    # The exact 30% comparison is dbt's (fractions); a float copy this close to 30 is not judged here.
    spread = df["spread_pct"].astype("float64")
    judged = spread.notna() & ((spread - 30).abs() > _TOL)
    return ~judged | (_truthy(df, "is_unstable") == (spread > 30))


def _pass_names_agent(df: pd.DataFrame) -> pd.Series:
    passing = df["verdict"].isin(["runs", "runs_with_mocks"])
    return passing == df["verified_by_agent"].notna()


def _could_not_verify_two(df: pd.DataFrame) -> pd.Series:
    return (df["verdict"] != "could_not_verify") | (df["complete_attempts"].fillna(0) >= 2)


def _rank_null_iff_no_score(df: pd.DataFrame) -> pd.Series:
    return df["rank"].isna() == df["board_score"].isna()


def _rank_follows_score(df: pd.DataFrame) -> pd.Series:
    ok = pd.Series(True, index=df.index)
    scored = df[df["board_score"].notna() & df["rank"].notna()]
    for _, group in scored.groupby("cycle_id"):
        score = group["board_score"].astype("float64").to_numpy()
        rank = group["rank"].astype("float64").to_numpy()
        for i, idx in enumerate(group.index):
            # Row i is out of order if some other agent has a strictly higher score and a rank no
            # better than i's, or a strictly lower score and a rank no worse than i's.
            higher = (score > score[i] + _TOL) & (rank >= rank[i])
            lower = (score < score[i] - _TOL) & (rank <= rank[i])
            if higher.any() or lower.any():
                ok[idx] = False
    return ok


def _rank_starts_at_one(df: pd.DataFrame) -> pd.Series:
    ranks = df["rank"].astype("float64")
    best = ranks.groupby(df["cycle_id"]).transform("min")
    return best.isna() | (best == 1)


CHECKS: dict[str, dict[str, Callable[[pd.DataFrame], pd.Series]]] = {
    "attempt_scores": {
        "check_invalid_unscored": _invalid_unscored,
        "check_invalid_has_reason": _invalid_has_reason,
        "check_valid_scored": _valid_scored,
        "check_score_is_sum": _score_is_sum,
        "check_timeout_zero": _timeout_zero,
    },
    "pair_sets": {
        "check_scores_ordered": _scores_ordered,
        "check_complete_is_three": _complete_is_three,
        "check_unstable_is_spread": _unstable_is_spread,
    },
    "project_verdicts": {
        "check_pass_names_agent": _pass_names_agent,
        "check_could_not_verify_two": _could_not_verify_two,
    },
    "board": {
        "check_rank_null_iff_no_score": _rank_null_iff_no_score,
        "check_rank_follows_score": _rank_follows_score,
        "check_rank_starts_at_one": _rank_starts_at_one,
    },
}

# ---------------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailedExpectation:
    table: str
    expectation: str  # GX type, e.g. expect_column_values_to_be_unique
    kwargs: dict[str, Any]
    why: str
    observed: dict[str, Any]  # observed_value / unexpected_count / sample / rows / error

    def message(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        obs = self.observed
        if "error" in obs:
            seen = f"could not be evaluated: {obs['error']}"
        elif "unexpected_count" in obs:
            seen = f"{obs['unexpected_count']} unexpected row(s)"
            if obs.get("sample"):
                seen += f", e.g. {obs['sample']}"
            if obs.get("rows"):
                seen += f" at {obs['rows']}"
        else:
            seen = f"observed {obs.get('observed_value')!r}"
        return f"marts.{self.table}: {self.expectation}({args}) failed [{self.why}]: {seen}"


@dataclass
class TableResult:
    table: str
    present: bool
    rows: int = 0
    evaluated: int = 0
    failures: list[FailedExpectation] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # expectations not applicable (column absent)
    note: str = ""

    @property
    def success(self) -> bool:
        return not self.failures


@dataclass
class ValidationReport:
    tables: dict[str, TableResult]
    seconds: float = 0.0

    @property
    def success(self) -> bool:
        return all(t.success for t in self.tables.values())

    @property
    def failures(self) -> list[FailedExpectation]:
        return [f for t in self.tables.values() for f in t.failures]

    @property
    def skipped_tables(self) -> list[str]:
        return [name for name, t in self.tables.items() if not t.present and t.success]

    def failure_messages(self) -> list[str]:
        return [f.message() for f in self.failures]

    def summary(self) -> str:
        lines = []
        for name, t in self.tables.items():
            if not t.present:
                lines.append(f"marts.{name}: {'MISSING' if t.failures else 'skipped'} ({t.note})")
                continue
            state = "ok" if t.success else f"FAILED {len(t.failures)}"
            extra = f"; {len(t.skipped)} not applicable" if t.skipped else ""
            lines.append(f"marts.{name}: {state} ({t.evaluated} expectations on {t.rows} rows{extra})")
        lines.extend(self.failure_messages())
        lines.append(f"expectations {'passed' if self.success else 'FAILED'} in {self.seconds:.2f} s")
        return "\n".join(lines)


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
    import great_expectations as gx
    import great_expectations.expectations as gxe

    _quiet_gx_loggers()  # some GX modules set their own level to INFO on import
    return gx, gxe


def _gx_class(gxe: Any, kind: str) -> Any:
    return getattr(gxe, "".join(part.capitalize() for part in kind.split("_")))


def _context() -> Any:
    gx, _ = _gx()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    _quiet_gx_loggers()
    return context


def _with_checks(table: str, df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """Add the pandas check columns; a check that cannot be computed is reported as an error."""
    out = df.copy()
    errors: dict[str, str] = {}
    for name, fn in CHECKS.get(table, {}).items():
        try:
            out[name] = fn(df).astype(bool).to_numpy()
        except KeyError as err:
            errors[name] = f"column {err.args[0]!r} is missing from marts.{table}"
        except Exception as err:  # noqa: BLE001 - reported as a failed expectation, never swallowed
            errors[name] = f"{type(err).__name__}: {err}"
    return out, errors


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


def _validate_table(context: Any, table: str, df: pd.DataFrame) -> TableResult:
    gx, gxe = _gx()
    specs = SUITES[table]
    keys = [k for k in KEYS.get(table, []) if k in df.columns]
    frame, check_errors = _with_checks(table, df)
    out = TableResult(table=table, present=True, rows=len(df))

    suite = gx.ExpectationSuite(name=f"marts.{table}")
    applied: list[dict[str, Any]] = []
    for spec in specs:
        absent = [c for c in spec["when_columns"] if c not in df.columns]
        if absent:
            out.skipped.append(f"{spec['type']}({spec['kwargs']}): column(s) {absent} not in marts.{table}")
            continue
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
    if not applied:
        return out

    for number, spec in enumerate(applied):
        suite.add_expectation(_gx_class(gxe, spec["type"])(**spec["kwargs"], meta={"argusic_spec": number}))
    suite = context.suites.add(suite)  # one store write for the whole suite
    asset = context.data_sources.add_pandas(f"marts_{table}").add_dataframe_asset(table)
    batch = asset.add_batch_definition_whole_dataframe("whole")
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name=f"validate_{table}", data=batch, suite=suite)
    )
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


def validate_frames(
    frames: Mapping[str, pd.DataFrame | None], only: Iterable[str] | None = None
) -> ValidationReport:
    """Validate marts given as pandas frames (None or absent = the table does not exist).

    A required mart that is absent fails; an optional one (speed bounds, editions) is skipped and the
    skip is reported. ``only`` restricts the run to some marts (suites are per table, so a table's
    result does not depend on the others).
    """
    started = time.perf_counter()
    context = _context()
    tables: dict[str, TableResult] = {}
    wanted = [*REQUIRED_TABLES, *OPTIONAL_TABLES]
    if only is not None:
        only = list(only)
        unknown = sorted(set(only) - set(wanted))
        if unknown:
            raise ValueError(f"no suite for {unknown}; marts with suites: {wanted}")
        wanted = [t for t in wanted if t in only]
    for table in wanted:
        df = frames.get(table)
        if df is None:
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
            continue
        tables[table] = _validate_table(context, table, df)
    return ValidationReport(tables=tables, seconds=time.perf_counter() - started)


def read_marts(db_path: Path) -> dict[str, pd.DataFrame]:
    """Every contract mart present in the warehouse, read through a read-only DuckDB connection."""
    import duckdb

    if not Path(db_path).exists():
        raise FileNotFoundError(f"warehouse {db_path} does not exist")
    with duckdb.connect(str(db_path), read_only=True) as con:
        present = {
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", [SCHEMA]
            ).fetchall()
        }
        return {
            table: con.execute(f'SELECT * FROM "{SCHEMA}"."{table}"').df()
            for table in [*REQUIRED_TABLES, *OPTIONAL_TABLES]
            if table in present
        }


def validate_warehouse(db_path: Path | None = None) -> ValidationReport:
    """Run every suite on the marts of the DuckDB warehouse (ARGUSIC_WAREHOUSE by default)."""
    from argusic.settings import warehouse_path

    return validate_frames(read_marts(Path(db_path) if db_path else warehouse_path()))
