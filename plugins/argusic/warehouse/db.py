"""The warehouse connection: waits rather than fails when another process holds the file (warehouse.lock)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from argusic.core.settings import warehouse_path
from argusic.warehouse.lock import open_duckdb


def connect(db_path: Path | None = None, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection to the warehouse that waits rather than fails when another process holds it.

    Read-only: waits for the writer (unless this thread is the writer) and for any connection open
    for writing elsewhere. Read-write: callers hold `writer_lock`; waits for connections open
    elsewhere (an analyst's). WarehouseBusy after ARGUSIC_LOCK_TIMEOUT seconds of waiting."""
    path = Path(db_path or warehouse_path())
    if read_only:
        if not path.exists():
            raise FileNotFoundError(f"warehouse {path} does not exist yet: run `argusic ingest` first")
        return open_duckdb(path, read_only=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    return open_duckdb(path)
