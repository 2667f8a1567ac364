"""People's decisions as data: who decided what, when and why, in the warehouse's `decisions` schema.

Every decision (environment review, publication approval, a dispute and its ruling, a request for a
stronger verdict agent) is appended, never updated: the latest row of a key wins in the marts, and
the earlier ones stay as history. Each row is first appended to a journal beside the run records
(`<ARGUSIC_RUNS_DIR>/decisions/<table>.jsonl`, fsynced) and then inserted under the warehouse's
writer lock, so a warehouse rebuilt from records and journals loses no decision (`replay_journals`).

Decisions come from people (Airflow's human-in-the-loop forms, the CLI): they are checked like any
other input — known table, every required field present, text bounded, choices from their list.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from argusic.core.settings import runs_dir, warehouse_path
from argusic.warehouse.lock import open_duckdb, writer_lock

NOTE_MAX = 4000
FIELD_MAX = 300


class DecisionError(ValueError):
    """A decision that cannot be recorded as given; the message names the field and the problem."""


@dataclass(frozen=True)
class DecisionTable:
    name: str
    description: str
    # column -> DuckDB type; every table also has decided_by, decided_at and note (see COMMON)
    columns: Mapping[str, str]
    # the columns that identify one recorded row (a repeated call with the same values is a no-op)
    key: tuple[str, ...]
    # column -> allowed values
    choices: Mapping[str, tuple[str, ...]]
    optional: tuple[str, ...] = ()
    # INTEGER column -> (lowest, highest) allowed, inclusive
    ranges: Mapping[str, tuple[int, int]] = field(default_factory=dict)


COMMON = {"decided_by": "VARCHAR", "decided_at": "TIMESTAMP", "note": "VARCHAR"}

TABLES: dict[str, DecisionTable] = {
    table.name: table
    for table in (
        DecisionTable(
            "review_decisions",
            "Environment review (METHODOLOGY.md §8): one row per decision on a project every agent "
            "failed in a cycle; the latest per (cycle_id, project_id) is in force.",
            {"cycle_id": "VARCHAR", "project_id": "VARCHAR", "decision": "VARCHAR"},
            ("cycle_id", "project_id", "decided_at"),
            {"decision": ("project_at_fault", "environment_at_fault")},
        ),
        DecisionTable(
            "publication_decisions",
            "Publication approval: one row per decision on a cycle's board as it stood (board_sha256); "
            "nothing is published without an approval of the exact board being published.",
            {"cycle_id": "VARCHAR", "board_sha256": "VARCHAR", "decision": "VARCHAR"},
            ("cycle_id", "board_sha256", "decided_at"),
            {"decision": ("approved", "rejected")},
        ),
        DecisionTable(
            "disputes",
            "A maintainer's dispute of one attempt's result, as filed (decided_by = who filed it).",
            {"dispute_id": "VARCHAR", "attempt_id": "VARCHAR", "claim": "VARCHAR", "contact": "VARCHAR"},
            ("dispute_id",),
            {},
        ),
        DecisionTable(
            "dispute_rulings",
            "A person's ruling on a dispute: was our side (the environment) at fault? When it was, "
            "rerun_attempt_id names the corrected attempt; the original evidence is never touched.",
            {"dispute_id": "VARCHAR", "ruling": "VARCHAR", "rerun_attempt_id": "VARCHAR"},
            ("dispute_id", "decided_at"),
            {"ruling": ("environment_at_fault", "result_stands")},
            optional=("rerun_attempt_id",),
        ),
        DecisionTable(
            "verdict_requests",
            "A request to run a stronger agent for a project's verdict at one commit.",
            {"project_id": "VARCHAR", "commit_sha": "VARCHAR", "agent_id": "VARCHAR"},
            ("project_id", "commit_sha", "agent_id"),
            {},
        ),
        DecisionTable(
            "judging_reviews",
            "A person's review of one attempt from the judging review queue (issue #14, Layer 3): the "
            "look (0..2), promote or reject, and optionally their own reading of the judged criteria "
            "(0..2). The latest per attempt_id is in force. People's data: never part of a score.",
            {
                "attempt_id": "VARCHAR",
                "task_revision": "VARCHAR",
                "look": "INTEGER",
                "decision": "VARCHAR",
                "code_structure": "INTEGER",
                "logic_correctness": "INTEGER",
            },
            ("attempt_id", "decided_at"),
            {"decision": ("promote", "reject")},
            optional=("code_structure", "logic_correctness", "note"),
            ranges={"look": (0, 2), "code_structure": (0, 2), "logic_correctness": (0, 2)},
        ),
        DecisionTable(
            "paired_bug_checks",
            "A person's re-check of one bug a model judge reported in a paired patch review (issue #31, "
            "seed 001): confirmed, not_a_bug or cannot_tell, with the required note. The latest per "
            "bug_id is in force. People's data: never part of a grade or a score.",
            {"pair_id": "VARCHAR", "bug_id": "VARCHAR", "finding": "VARCHAR"},
            ("bug_id", "decided_at"),
            {"finding": ("confirmed", "not_a_bug", "cannot_tell")},
        ),
    )
}


def table(name: str) -> DecisionTable:
    if name not in TABLES:
        raise DecisionError(f"unknown decision table {name!r}: one of {', '.join(sorted(TABLES))}")
    return TABLES[name]


def ddl() -> str:
    """CREATE statements for every decision table (empty tables exist before anyone decides, so the
    marts can read them)."""
    parts = ["CREATE SCHEMA IF NOT EXISTS decisions;"]
    for t in TABLES.values():
        cols = {**t.columns, **COMMON}
        body = ",\n    ".join(f"{c} {ty}" for c, ty in cols.items())
        key = ", ".join(t.key)
        parts.append(
            f"CREATE TABLE IF NOT EXISTS decisions.{t.name} (\n    {body},\n    PRIMARY KEY ({key})\n);"
        )
    return "\n".join(parts)


def utc_now() -> datetime:
    """For the CLI only (a person deciding now); tasks take the time Airflow recorded for the answer."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def validate(name: str, row: Mapping[str, object]) -> dict:
    """The row as it will be stored, or DecisionError naming every problem at once."""
    t = table(name)
    wanted = {**t.columns, **COMMON}
    problems = [f"unknown field {k!r}" for k in row if k not in wanted]
    clean: dict = {}
    for column in wanted:
        value = row.get(column)
        if column == "decided_at":
            if isinstance(value, str):
                try:
                    value = datetime.fromisoformat(value)
                except ValueError:
                    problems.append(f"decided_at: {value!r} is not an ISO 8601 time")
                    continue
            if not isinstance(value, datetime):
                problems.append("decided_at: missing")
                continue
            if value.tzinfo is not None:
                value = value.astimezone(UTC).replace(tzinfo=None)
            clean[column] = value
            continue
        if column in t.ranges:
            number, problem = _integer(column, value, t.ranges[column], column in t.optional)
            if problem:
                problems.append(problem)
            clean[column] = number
            continue
        text = "" if value is None else str(value).strip()
        limit = NOTE_MAX if column in ("note", "claim") else FIELD_MAX
        if not text:
            if column not in t.optional:
                problems.append(f"{column}: missing (who, what and why are all required)")
            clean[column] = None
            continue
        if len(text) > limit:
            problems.append(f"{column}: {len(text)} characters, at most {limit}")
        if any(ord(ch) < 32 and ch not in "\n\t" for ch in text):
            problems.append(f"{column}: control characters")
        if column in t.choices and text not in t.choices[column]:
            problems.append(f"{column}: {text!r} is not one of {', '.join(t.choices[column])}")
        clean[column] = text
    if problems:
        raise DecisionError(f"{name}: " + "; ".join(problems))
    return clean


def _integer(
    column: str, value: object, bounds: tuple[int, int], optional: bool
) -> tuple[int | None, str | None]:
    """(the integer, None) or (None, the problem): an int, or a string of digits (a form's or a
    shell's answer); never a bool or a fraction."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None if optional else f"{column}: missing"
    if isinstance(value, bool):
        return None, f"{column}: {value!r} is not an integer"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value.strip()) <= 6:
        value = int(value.strip())
    if not isinstance(value, int):
        return None, f"{column}: {str(value)[:40]!r} is not an integer"
    low, high = bounds
    if not low <= value <= high:
        return None, f"{column}: {value} is not in {low}..{high}"
    return value, None


def journal_path(name: str) -> Path:
    return runs_dir() / "decisions" / f"{table(name).name}.jsonl"


def _append_journal(name: str, row: dict) -> None:
    path = journal_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({**row, "decided_at": row["decided_at"].isoformat()}, sort_keys=True) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _insert(con, name: str, rows: list[dict]) -> int:
    t = table(name)
    cols = [*t.columns, *COMMON]
    before = con.execute(f"SELECT count(*) FROM decisions.{name}").fetchone()[0]
    con.executemany(
        f"INSERT INTO decisions.{name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
        "ON CONFLICT DO NOTHING",
        [[r[c] for c in cols] for r in rows],
    )
    return con.execute(f"SELECT count(*) FROM decisions.{name}").fetchone()[0] - before


def record(name: str, row: Mapping[str, object], db_path: Path | None = None) -> bool:
    """Append one decision (journal, then warehouse). True when it is new; False when the same key
    was already recorded (a retried task, a double click), which changes nothing."""
    clean = validate(name, row)
    path = Path(db_path or warehouse_path())
    with writer_lock(path):
        con = open_duckdb(path)
        try:
            con.execute(ddl())
            key = " AND ".join(f"{c} = ?" for c in table(name).key)
            seen = con.execute(
                f"SELECT count(*) FROM decisions.{name} WHERE {key}", [clean[c] for c in table(name).key]
            ).fetchone()[0]
            if seen:
                return False
            _append_journal(name, clean)
            return _insert(con, name, [clean]) == 1
        finally:
            con.close()


def replay_journals(con) -> dict[str, int]:
    """Load every journal into the decision tables (a rebuilt warehouse); rows per table added.
    The caller holds the writer lock."""
    con.execute(ddl())
    added = {}
    for name in TABLES:
        path = journal_path(name)
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as f:
            rows = [validate(name, json.loads(line)) for line in f if line.strip()]
        added[name] = _insert(con, name, rows) if rows else 0
    return added
