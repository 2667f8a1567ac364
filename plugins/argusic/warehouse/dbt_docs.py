"""`argusic docs` / `make docs`: dbt's documentation site, generated and served on 127.0.0.1.

``dbt docs generate`` needs a DuckDB file it may open read-write (dbt-duckdb always does) for the
catalog (column types, row counts, comments). It is given a private copy of the analyst copy's file in
a temporary folder, never the pipeline's warehouse (that would keep ingest and builds out) nor the
published copy (which readers hold open). Without an analyst copy yet, an empty file: the site then
shows every model, column and description, without the catalog's types.

The site is written to ``<warehouse folder>/dbt_docs/`` (``index.html``, ``manifest.json``,
``catalog.json``, and ``static_index.html``, one file that opens without a server) and served by the
standard library's HTTP server on 127.0.0.1 on a port the system picks (printed), until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from argusic.core.settings import dbt_project_dir, warehouse_path
from argusic.warehouse.analyst import DB_NAME, AnalystCopyMissing, analyst_db_path, copy_version, current_copy


class DocsError(RuntimeError):
    """dbt could not generate the documentation."""


@dataclass(frozen=True)
class Generated:
    folder: Path
    catalog_from: str  # which file the catalog describes


def docs_dir() -> Path:
    """Where the generated site is written: ``dbt_docs/`` beside the warehouse file."""
    return warehouse_path().parent / "dbt_docs"


@contextlib.contextmanager
def _private_copy() -> Iterator[tuple[Path, str]]:
    """A DuckDB file of our own for dbt to open: a copy of the analyst copy's, or an empty one."""
    with tempfile.TemporaryDirectory(prefix="argusic-docs-") as tmp:
        db = Path(tmp) / DB_NAME  # same file name as the warehouse's: same database name in dbt
        try:
            folder = current_copy()
            source = folder / DB_NAME
        except AnalystCopyMissing:
            yield db, "no analyst copy yet: descriptions only, no column types"
            return
        shutil.copyfile(source, db)
        # the stable path (a version folder is deleted two publications later) and the version read
        yield db, f"catalog from the analyst copy {analyst_db_path()} (version {copy_version(folder)})"


def generate(out: Path | None = None, project_dir: Path | None = None) -> Generated:
    """``dbt docs generate --static`` into ``out`` (default ``docs_dir()``)."""
    from dbt.cli.main import dbtRunner  # deferred: dbt takes seconds to import; only generating needs it

    # deferred: dbt_build imports pandas (the expectations), seconds; serving the docs needs neither
    from argusic.warehouse.dbt_build import _env, _release_dbt_duckdb

    out = Path(out) if out else docs_dir()
    project = Path(project_dir) if project_dir else dbt_project_dir()
    out.mkdir(parents=True, exist_ok=True)
    with _private_copy() as (db, described), _env("ARGUSIC_WAREHOUSE", str(db)):
        args = [
            "--quiet", "--no-send-anonymous-usage-stats", "docs", "generate", "--static",
            "--project-dir", str(project), "--profiles-dir", str(project),
            "--target-path", str(out), "--log-path", str(out / "logs"),
        ]  # fmt: skip
        try:
            result = dbtRunner().invoke(args)
        finally:
            _release_dbt_duckdb()
    if not result.success or not (out / "index.html").is_file():
        raise DocsError(f"dbt docs generate failed: {result.exception or 'see ' + str(out / 'logs')}")
    return Generated(out, described)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the stdlib's signature
        pass


def serve(folder: Path, port: int = 0, on_ready: Callable[[str], None] | None = None) -> None:
    """Serve ``folder`` on 127.0.0.1:``port`` (0: a free port) until interrupted."""
    handler = functools.partial(_QuietHandler, directory=os.fspath(folder))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        if on_ready:
            on_ready(url)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
