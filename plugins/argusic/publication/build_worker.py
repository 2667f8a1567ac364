"""A long-lived build worker: builds and publications served from one warm ``BuildSession``.

Why: a cold ``argusic build`` process spends ~10 s importing GX and dbt and parsing the project
before any SQL runs; the SQL itself takes a few seconds even at a million attempts. The worker pays
the imports once and keeps dbt's manifest while the project is unchanged (``BuildSession``).

Protocol: one Unix socket (``ARGUSIC_BUILD_WORKER``), stdlib ``multiprocessing.connection``, one JSON
object per message (never pickle: nothing a client sends is executed). The socket's folder is made
private (0700), so only the worker's own user can connect. Requests are served one at a time:

    {"op": "build", "db_path": "...", "analyst_dir": "...", "include_unit_tests": false}
        -> {"ok": true, "summary": "...", "nodes": 72, "dbt_seconds": 2.1, "validation_seconds": 0.4,
            "analyst_seconds": 0.3, "seconds": 2.9,
            "slowest_nodes": [["model.argusic.attempt_scores", 0.9], ...], "note": "...",
            "changed_sources": ["decisions.review_decisions"]}  # [] when the whole project was built
    {"op": "publish", "cycle_id": "2026-12", "out_dir": "...", "db_path": "..."}
        -> {"ok": true, "path": ".../2026-12/board.json"}
    {"op": "ping"} -> {"ok": true, "builds": 3, "parses": 1}

A failure answers {"ok": false, "error": "<exception class>", "message": "..."}; the client raises
``PublicationBlocked`` for a blocked build or publication (same message as in-process),
``WarehouseBusy`` when the worker gave up waiting for the warehouse, ``AnalystCopyError`` when the
analyst copy could not be published, and ``BuildWorkerError`` otherwise. Callers that find no worker
build in-process (``build_or_delegate``).
"""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import stat
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, Listener
from pathlib import Path
from typing import Any

from argusic.core.settings import warehouse_path
from argusic.publication.board import BoardChanged, publish_board
from argusic.publication.build_client import (
    SOCKET_ENV,
    BuildWorkerError,
    NoWorkerAnswers,
    answers,
    build_params,
    built_by_worker,
    exchange,
    worker_socket,
)
from argusic.warehouse.analyst import AnalystCopyError
from argusic.warehouse.db import connect
from argusic.warehouse.dbt_build import (
    BuildSession,
    PublicationBlocked,
    build_warehouse,
    release_semaphores_at_exit,
)
from argusic.warehouse.lock import WarehouseBusy

log = logging.getLogger(__name__)

OPS = ("build", "publish", "ping")
REQUEST_WAIT_SECONDS = 30.0
MAX_REQUEST_BYTES = 1 << 20  # a request is a few paths: anything longer is refused unread


class NoRunRecords(ValueError):
    """The warehouse holds no run records yet: nothing to build (``argusic ingest`` first)."""


def _listen(path: Path) -> Listener:
    """The listening socket, owner-only from its creation (umask during bind; the folder may be
    shared): connecting to a Unix socket needs write permission on its file."""
    previous = os.umask(0o177)
    try:
        listener = Listener(str(path), family="AF_UNIX")
    finally:
        os.umask(previous)
    os.chmod(path, 0o600)
    return listener


def _prepare_socket(path: Path) -> None:
    """A folder made here is private; one that exists is left as it is (a socket in /tmp must not
    make /tmp private: that once locked every other user out of it). A stale socket file (no worker
    behind it) is removed, a live one refused. The socket itself is created private (``_listen``)."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise BuildWorkerError(f"{path} exists and is not a socket: refusing to replace it")
        if answers(path):
            raise BuildWorkerError(f"a build worker already answers on {path}")
        path.unlink()


def _handle(session: BuildSession, request: Any) -> dict[str, Any]:
    if not isinstance(request, dict) or request.get("op") not in OPS:
        raise ValueError(f"unknown request {request!r}: expected an object whose op is one of {list(OPS)}")
    op = request["op"]
    db_path = Path(request["db_path"]) if request.get("db_path") else None
    if op == "ping":
        return {"builds": session.builds, "parses": session.parses, "pid": os.getpid()}
    if op == "build":
        started = time.perf_counter()
        if request.get("require_run_records"):  # `argusic build`'s check, made here (its client is light)
            require_run_records(db_path or warehouse_path())
        result = session.build(
            db_path,
            include_unit_tests=bool(request.get("include_unit_tests", False)),
            analyst_target=Path(request["analyst_dir"]) if request.get("analyst_dir") else None,
        )
        return {
            "summary": result.summary(),
            "db_path": str(result.db_path),
            "nodes": len(result.nodes),
            "dbt_seconds": result.dbt_seconds,
            "validation_seconds": result.validation_seconds,
            "analyst_seconds": result.analyst_seconds,
            "analyst_dir": str(result.analyst.target) if result.analyst else None,
            "seconds": time.perf_counter() - started,
            "slowest_nodes": result.slowest(),
            "note": result.note,
            "changed_sources": list(result.changed_sources),  # [] : the whole project was built
        }
    for field in ("cycle_id", "out_dir"):
        if not request.get(field):
            raise ValueError(f"publish needs {field!r}")
    approved = request.get("approved_sha256")
    if approved is not None and not (isinstance(approved, str) and len(approved) == 64):
        raise ValueError("publish: approved_sha256 must be a sha256 (64 hex digits)")
    path = publish_board(
        str(request["cycle_id"]), Path(request["out_dir"]), db_path, approved_sha256=approved
    )
    return {"path": str(path)}


def _receive(conn: Connection) -> bytes:
    try:
        return conn.recv_bytes(maxlength=MAX_REQUEST_BYTES)
    except ConnectionError:
        raise
    except OSError as err:  # the stdlib's "bad message length": longer than maxlength, left unread
        limit = f"a request is at most {MAX_REQUEST_BYTES} bytes"
        raise ValueError(f"{limit}: this one was refused unread") from err


def _serve_one(conn: Connection, session: BuildSession) -> None:
    if not conn.poll(REQUEST_WAIT_SECONDS):  # a client that connects and says nothing holds no one up
        log.warning("build worker: no request within %s s, connection dropped", REQUEST_WAIT_SECONDS)
        return
    try:
        request = json.loads(_receive(conn))
        answer: dict[str, Any] = {"ok": True, **_handle(session, request)}
    except (EOFError, ConnectionError):
        return
    except Exception as err:  # noqa: BLE001 - every failure is answered, the worker keeps serving
        answer = {"ok": False, "error": type(err).__name__, "message": str(err)}
        log.warning("build worker request failed: %s: %s", type(err).__name__, err)
    try:
        conn.send_bytes(json.dumps(answer).encode())
    except (OSError, ConnectionError):
        log.warning("build worker: the client left before its answer")


def _freeze_long_lived() -> None:
    """Keep what lives as long as the worker (dbt, GX, the parsed manifest: ~400k objects) out of
    Python's cyclic collections, which would otherwise walk it again and again during every build.
    A replaced manifest is unfrozen first, so that it can be freed."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def serve(
    path: Path,
    session: BuildSession | None = None,
    *,
    on_ready: Callable[[float], None] | None = None,
    max_requests: int | None = None,
) -> None:
    """Serve requests on the Unix socket ``path`` until SIGTERM/SIGINT (or ``max_requests``).

    ``on_ready`` gets the seconds spent importing dbt and GX, once the socket accepts connections.
    The socket file is removed on the way out.
    """
    session = session or BuildSession()
    _prepare_socket(path)
    warmed = session.warm()
    _freeze_long_lived()
    listener = _listen(path)
    stopping = False

    def stop(signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True
        listener.close()  # unblocks accept()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    served = 0
    try:
        if on_ready:
            on_ready(warmed)
        while not stopping and (max_requests is None or served < max_requests):
            try:
                conn = listener.accept()
            except OSError:
                if stopping:
                    break
                raise
            parses = session.parses
            gc.disable()  # a build makes much short-lived garbage: collected once, after the answer
            try:
                with conn:
                    _serve_one(conn, session)
            finally:
                gc.enable()
            if session.parses != parses:
                _freeze_long_lived()  # the new manifest lives until the project changes again
            else:
                gc.collect()
            served += 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if not stopping:
            listener.close()
        path.unlink(missing_ok=True)
        gc.unfreeze()  # leave the process's collector as it was


def require_run_records(db_path: Path) -> None:
    """NoRunRecords unless the warehouse has the raw layer dbt reads (``argusic ingest`` makes it)."""
    if db_path.exists():
        with connect(db_path, read_only=True) as con:
            found = con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'raw' "
                "AND table_name = 'run_records'"
            ).fetchone()[0]
        if found:
            return
    raise NoRunRecords(f"{db_path} holds no run records yet: run `argusic ingest PATH` first")


# A failure's name in an answer -> the exception the client raises (the message as the worker gave it)
_RAISED: dict[str, Callable[[str, Path], Exception]] = {
    BoardChanged.__name__: lambda message, _path: BoardChanged(message),
    PublicationBlocked.__name__: lambda message, _path: PublicationBlocked(message),
    WarehouseBusy.__name__: lambda message, path: WarehouseBusy(f"build worker on {path}: {message}"),
    AnalystCopyError.__name__: lambda message, path: AnalystCopyError(f"build worker on {path}: {message}"),
    NoRunRecords.__name__: lambda message, _path: NoRunRecords(message),
}


def request(path: Path, op: str, **params: Any) -> dict[str, Any]:
    """One request to the worker on ``path``; its answer, or the worker's failure raised here."""
    answer = exchange(path, op, **params)
    if answer.get("ok"):
        return answer
    raised = _RAISED.get(str(answer.get("error")))
    if raised is not None:
        raise raised(str(answer.get("message")), path)
    raise BuildWorkerError(f"build worker on {path}: {answer.get('error')}: {answer.get('message')}")


def _delegate(op: str, **params: Any) -> dict[str, Any] | None:
    """The worker's answer, or None when no worker is configured or none answers (build in-process)."""
    path = worker_socket()
    if path is None:
        return None
    try:  # no probe first: the worker would accept it, and count it, as a request
        return request(path, op, **params)
    except NoWorkerAnswers:
        log.warning("%s=%s but no build worker answers there: running in this process", SOCKET_ENV, path)
        return None


def _absolute(path: Path) -> str:
    # the worker has its own working folder and environment: send what this process means
    return str(Path(path).resolve())


def build_or_delegate(db_path: Path | None = None) -> str:
    """Build the warehouse through the worker when one answers, else in this process; the summary.

    The analyst copy goes where this process's settings put it (ARGUSIC_ANALYST_DIR, else beside the
    warehouse), whoever builds."""
    answer = _delegate("build", **build_params(db_path))
    if answer is not None:
        return built_by_worker(answer)
    return build_warehouse(db_path, quiet=True).summary()


def publish_or_delegate(
    cycle_id: str, out_dir: Path, db_path: Path | None = None, approved_sha256: str | None = None
) -> Path:
    """Publish a cycle's board through the worker when one answers, else in this process.
    ``approved_sha256``: the approved board's fingerprint (any other board is refused, BoardChanged)."""
    db = _absolute(db_path or warehouse_path())
    extra = {"approved_sha256": approved_sha256} if approved_sha256 else {}
    answer = _delegate("publish", cycle_id=cycle_id, out_dir=_absolute(out_dir), db_path=db, **extra)
    if answer is not None:
        return Path(answer["path"])
    return publish_board(cycle_id, out_dir, db_path, approved_sha256=approved_sha256)


def build_warehouse_summary() -> str:
    """dbt build + expectations; raises PublicationBlocked (task fails, publish never runs).

    Through the build worker (ARGUSIC_BUILD_WORKER) when one answers, else in the task's process.
    """
    release_semaphores_at_exit()
    return build_or_delegate()
