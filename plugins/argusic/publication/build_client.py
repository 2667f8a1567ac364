"""The build worker's client side: the socket, one request and its raw answer, with the standard
library only (and the settings). ``argusic build`` with a worker imports this and nothing heavier:
the worker does the work, so the client need not import dbt, GX, pandas or DuckDB (3.1-3.3 CPU-s
of imports through the whole command line, against ~0.1 s for this). The protocol is described in
``argusic.publication.build_worker``, which maps a failure's name to its exception class."""

from __future__ import annotations

import json
import os
import socket
from multiprocessing.connection import Client
from pathlib import Path
from typing import Any

from argusic.core.settings import analyst_dir, warehouse_path

SOCKET_ENV = "ARGUSIC_BUILD_WORKER"


class BuildWorkerError(RuntimeError):
    """The worker could not be reached, or failed for a reason other than a blocked publication."""


class NoWorkerAnswers(BuildWorkerError):
    """Nothing accepts connections on the socket: the caller may build in its own process."""


def worker_socket() -> Path | None:
    """ARGUSIC_BUILD_WORKER: the worker's socket path, or None when builds run in-process."""
    value = os.environ.get(SOCKET_ENV, "").strip()
    return Path(value) if value else None


def answers(path: Path) -> bool:
    """Something accepts connections on ``path`` (a bare connect: not counted as a request)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def exchange(path: Path, op: str, **params: Any) -> dict[str, Any]:
    """One request to the worker on ``path`` and its answer as sent (``ok`` false: a failure, named
    by ``error``); NoWorkerAnswers when nothing accepts the connection."""
    try:
        conn = Client(str(path), family="AF_UNIX")
    except OSError as err:
        raise NoWorkerAnswers(f"no build worker answers on {path}: {err}") from err
    with conn:
        conn.send_bytes(json.dumps({"op": op, **params}).encode())
        try:
            return json.loads(conn.recv_bytes())
        except EOFError as err:
            raise BuildWorkerError(f"the build worker on {path} closed without answering {op!r}") from err


def build_params(db_path: Path | None = None) -> dict[str, Any]:
    """A build request's paths as this process means them: the warehouse (absolute), and the analyst
    copy where this process's settings put it (absolute, not resolved: the analyst folder is a link
    that each publication replaces)."""
    db = db_path or warehouse_path()
    return {"db_path": str(Path(db).resolve()), "analyst_dir": os.path.abspath(analyst_dir(db))}


def built_by_worker(answer: dict[str, Any]) -> str:
    """A build's summary as the command line prints it."""
    return f"{answer['summary']}\n(built by the build worker in {answer['seconds']:.1f} s)"
