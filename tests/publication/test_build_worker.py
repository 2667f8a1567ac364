"""The build worker: one warm process serving builds and publications over a Unix socket.

Fast tests cover the protocol's edges (bad requests, stale or foreign socket files, no worker). The
slow test starts a real `argusic build-worker` on the stand-in dbt project and checks that builds
run through it, that a changed project is re-parsed (never built stale), that a blocked build is
raised in the client with the in-process message, that publication works, and that SIGTERM leaves
no socket behind.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from multiprocessing import Pipe
from pathlib import Path

import duckdb
import pytest
from argusic.publication import build_worker
from argusic.publication.build_worker import BuildWorkerError, request
from argusic.warehouse.dbt_build import (
    BuildSession,
    PublicationBlocked,
    project_fingerprint,
    reused_test_selectors,
    seed_only_tests,
)
from test_expectations import good_frames, standin_project

# ---------------------------------------------------------------------------------------------------
# Fast: protocol edges
# ---------------------------------------------------------------------------------------------------


def test_unknown_and_incomplete_requests_are_refused_by_name(tmp_path: Path) -> None:
    session = BuildSession(tmp_path)
    with pytest.raises(ValueError, match=r"unknown request \{'op': 'drop'\}.*'build', 'publish', 'ping'"):
        build_worker._handle(session, {"op": "drop"})
    with pytest.raises(ValueError, match="unknown request"):
        build_worker._handle(session, ["build"])
    with pytest.raises(ValueError, match="publish needs 'cycle_id'"):
        build_worker._handle(session, {"op": "publish", "out_dir": str(tmp_path)})
    assert build_worker._handle(session, {"op": "ping"})["builds"] == 0


def test_socket_preparation_refuses_files_and_live_workers_and_clears_stale_sockets(tmp_path: Path) -> None:
    plain = tmp_path / "run" / "plain"
    plain.parent.mkdir()
    plain.write_text("not a socket")
    with pytest.raises(BuildWorkerError, match="exists and is not a socket"):
        build_worker._prepare_socket(plain)
    assert plain.read_text() == "not a socket"

    live = tmp_path / "run" / "live.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(live))
    server.listen(1)
    try:
        with pytest.raises(BuildWorkerError, match="a build worker already answers"):
            build_worker._prepare_socket(live)
    finally:
        server.close()
    # the same file with nobody behind it is stale: removed
    build_worker._prepare_socket(live)
    assert not live.exists()
    # A folder made for the socket is private; a shared one that exists (like /tmp) keeps its mode:
    # the worker once made /tmp private (changed deliberately: the old expectation was the defect).
    made = tmp_path / "new" / "run" / "worker.sock"
    build_worker._prepare_socket(made)
    assert (made.parent.stat().st_mode & 0o777) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    build_worker._prepare_socket(shared / "worker.sock")
    assert (shared.stat().st_mode & 0o7777) == 0o1777
    # and the socket itself is the owner's only, from its creation
    listener = build_worker._listen(shared / "worker.sock")
    try:
        assert ((shared / "worker.sock").stat().st_mode & 0o777) == 0o600
    finally:
        listener.close()


def test_request_without_a_worker_names_the_socket(tmp_path: Path) -> None:
    with pytest.raises(BuildWorkerError, match=r"no build worker answers on .*nobody\.sock"):
        request(tmp_path / "nobody.sock", "ping")


def test_without_an_answering_worker_builds_run_in_process(tmp_path: Path, monkeypatch, caplog) -> None:
    calls = []
    monkeypatch.setattr(build_worker, "build_warehouse", lambda db, quiet: calls.append(db) or _Summary())
    monkeypatch.delenv(build_worker.SOCKET_ENV, raising=False)
    assert build_worker.build_or_delegate(tmp_path / "w.duckdb") == "in-process summary"
    monkeypatch.setenv(build_worker.SOCKET_ENV, str(tmp_path / "dead.sock"))
    with caplog.at_level(logging.WARNING, logger="argusic.publication.build_worker"):
        assert build_worker.build_or_delegate(tmp_path / "w.duckdb") == "in-process summary"
    assert "no build worker answers there" in caplog.text
    assert calls == [tmp_path / "w.duckdb"] * 2


class _ColdSession:
    """A session with nothing to import: enough for the serving loop (ping only)."""

    builds = parses = 0

    def warm(self) -> float:
        return 0.0


def test_serving_stops_after_max_requests_and_removes_its_socket(tmp_path: Path) -> None:
    sock = tmp_path / "run" / "w.sock"
    answers: list[bool] = []
    clients: list[threading.Thread] = []

    def ask() -> None:
        for _ in range(2):
            answers.append(request(sock, "ping")["ok"])

    def start_client(_seconds: float) -> None:
        clients.append(threading.Thread(target=ask, daemon=True))
        clients[0].start()

    build_worker.serve(sock, _ColdSession(), on_ready=start_client, max_requests=2)  # returns after two
    clients[0].join(timeout=30)  # the server may return before the client has read its last answer
    assert answers == [True, True]
    assert not sock.exists()


def test_a_delegated_request_is_one_request_to_the_worker(tmp_path: Path, monkeypatch) -> None:
    """Delegation connects once: no probe that the worker would serve (and count) as a request."""
    sock = tmp_path / "run" / "w.sock"
    monkeypatch.setenv(build_worker.SOCKET_ENV, str(sock))
    answers: list[dict | None] = []
    clients: list[threading.Thread] = []

    def ask() -> None:
        answers.extend(build_worker._delegate("ping") for _ in range(2))

    def start_client(_seconds: float) -> None:
        clients.append(threading.Thread(target=ask, daemon=True))
        clients[0].start()

    build_worker.serve(sock, _ColdSession(), on_ready=start_client, max_requests=2)
    clients[0].join(timeout=30)
    assert [a and a["ok"] for a in answers] == [True, True]


def test_a_client_that_says_nothing_is_dropped(monkeypatch) -> None:
    monkeypatch.setattr(build_worker, "REQUEST_WAIT_SECONDS", 0.1)
    ours, theirs = Pipe()
    build_worker._serve_one(theirs, _ColdSession())  # nothing was sent: returns, answers nothing
    assert not ours.poll(0.1)
    ours.send_bytes(json.dumps({"op": "ping"}).encode())
    build_worker._serve_one(theirs, _ColdSession())
    assert json.loads(ours.recv_bytes())["ok"] is True
    ours.send_bytes(b"not json")
    build_worker._serve_one(theirs, _ColdSession())
    assert json.loads(ours.recv_bytes())["error"] == "JSONDecodeError"


def test_an_oversized_request_is_refused_unread(monkeypatch) -> None:
    monkeypatch.setattr(build_worker, "MAX_REQUEST_BYTES", 64)
    ours, theirs = Pipe()
    ours.send_bytes(json.dumps({"op": "ping", "padding": "x" * 100}).encode())
    build_worker._serve_one(theirs, _ColdSession())
    answer = json.loads(ours.recv_bytes())
    assert answer["ok"] is False and "at most 64 bytes: this one was refused unread" in answer["message"]


class _Summary:
    def summary(self) -> str:
        return "in-process summary"


def test_seed_only_tests_are_the_tests_whose_every_input_is_a_seed() -> None:
    from types import SimpleNamespace as N

    def node(name: str, kind: str, *parents: str) -> N:
        return N(name=name, resource_type=kind, depends_on=N(nodes=list(parents)))

    manifest = N(
        nodes={
            "a": node("not_null_chips_chip_id", "test", "seed.p.chips"),
            "b": node("relationships_machines_chip", "test", "seed.p.machines", "seed.p.chips"),
            "c": node("relationships_stg_edition", "test", "model.p.stg", "seed.p.editions"),
            "d": node("unique_stg_attempt_id", "test", "model.p.stg"),
            "e": node("chips", "seed"),
            "f": node("no_parents", "test"),
        }
    )
    assert seed_only_tests(manifest) == ("not_null_chips_chip_id", "relationships_machines_chip")


def test_reused_tests_are_excluded_by_file_when_a_file_holds_only_them() -> None:
    """36 names are 36 selection criteria that dbt matches against every node (~0.5-1 CPU-s a build):
    a file whose every test is reused is one criterion; the others stay by name."""
    from types import SimpleNamespace as N

    def test(name: str, file: str, patch: str | None = None) -> N:
        return N(name=name, resource_type="test", original_file_path=file, patch_path=patch)

    manifest = N(
        nodes={
            "a": test("not_null_chips_chip_id", "seeds/_seeds.yml"),
            "b": test("unique_chips_chip_id", "seeds/_seeds.yml"),
            "c": test("assert_one_standard_agent", "tests/assert_one_standard_agent.sql"),
            "d": test("relationships_stg_edition", "models/staging/_stg.yml"),
            "e": test("not_null_editions_edition", "models/staging/_stg.yml"),  # beside a test that runs
            "f": test("described", "tests/described.sql", "argusic://tests/_tests.yml"),
            "g": test("also_in_tests_yml", "tests/other.sql", "argusic://tests/_tests.yml"),
            "h": N(name="chips", resource_type="seed", original_file_path="seeds/chips.csv"),
        }
    )
    reused = ["not_null_chips_chip_id", "unique_chips_chip_id", "assert_one_standard_agent",
              "not_null_editions_edition", "described"]  # fmt: skip
    assert reused_test_selectors(manifest, reused) == (
        "path:seeds/_seeds.yml,resource_type:test",
        "path:tests/assert_one_standard_agent.sql,resource_type:test",
        "path:tests/described.sql,resource_type:test",  # its patch file also holds a test that runs
        "not_null_editions_edition",
    )
    assert reused_test_selectors(manifest, []) == ()


def test_a_lean_build_has_no_dbt_logger_but_logs_dbts_warnings(tmp_path: Path, caplog) -> None:
    """dbt formats every event into a line per logger before the level drops it (~15% of its CPU on
    the demo warehouse): the worker's builds turn both loggers off and keep warnings and errors."""
    from types import SimpleNamespace as N

    from argusic.warehouse import dbt_build

    lean = dbt_build._dbt_args(tmp_path, "build", lean=True)
    assert [lean[lean.index(flag) + 1] for flag in ("--log-level", "--log-level-file")] == ["none", "none"]
    assert "none" not in dbt_build._dbt_args(tmp_path, "build")  # a one-off build keeps its dbt.log
    with caplog.at_level(logging.INFO, logger="argusic.warehouse.dbt"):
        for level in ("debug", "info", "warn", "error"):
            dbt_build._dbt_warnings(N(info=N(level=level, msg=f"a {level} line")))
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "dbt: a warn line"),
        ("ERROR", "dbt: a error line"),
    ]


def _canned_worker(sock: Path, answer: dict) -> threading.Thread:
    """A worker that answers one request with ``answer`` (the request is kept in answer['asked'])."""
    from multiprocessing.connection import Listener

    sock.parent.mkdir(parents=True, exist_ok=True)
    listener = Listener(str(sock), family="AF_UNIX")

    def serve_one() -> None:
        with listener, listener.accept() as conn:
            answer["asked"] = json.loads(conn.recv_bytes())
            conn.send_bytes(json.dumps({k: v for k, v in answer.items() if k != "asked"}).encode())

    thread = threading.Thread(target=serve_one, daemon=True)
    thread.start()
    return thread


# The client of `argusic build` with a worker: what it prints, its exit code, and the heavy modules it
# imported (none: it asks the worker before the command line is imported).
_CLIENT = """
import sys
sys.argv = ["argusic", "build"]
from argusic.cli import entry
code = entry.build_through_worker()
heavy = ("dbt", "great_expectations", "pandas", "pyarrow", "duckdb", "typer", "rich", "argusic.warehouse",
         "argusic.cli.main", "argusic.publication.build_worker")
print("imported:", sorted({m.split(".")[0] for m in sys.modules if m.startswith(heavy)}), "code:", code)
"""


def _run_client(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _CLIENT], env={**os.environ, **env}, cwd=cwd,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_build_command_asks_the_worker_before_importing_the_command_line(tmp_path: Path) -> None:
    sock = tmp_path / "run" / "w.sock"
    env = {build_worker.SOCKET_ENV: str(sock), "ARGUSIC_WAREHOUSE": str(tmp_path / "w.duckdb")}
    env["ARGUSIC_ANALYST_DIR"] = str(tmp_path / "copy")
    built = {"ok": True, "summary": "dbt build: 3 nodes ok in 0.1 s", "seconds": 1.25}
    worker = _canned_worker(sock, built)
    done = _run_client(env, tmp_path)
    worker.join(timeout=30)
    assert done.stdout.splitlines()[:2] == [
        "build ok: dbt build: 3 nodes ok in 0.1 s",
        "(built by the build worker in 1.2 s)",
    ]
    assert "imported: [] code: 0" in done.stdout, done.stdout + done.stderr
    paths = {"db_path": str(tmp_path / "w.duckdb"), "analyst_dir": str(tmp_path / "copy")}
    assert built["asked"] == {"op": "build", "require_run_records": True, **paths}

    blocked = {"ok": False, "error": "PublicationBlocked", "message": "dbt build failed: model.x (error)"}
    worker = _canned_worker(sock, blocked)
    done = _run_client(env, tmp_path)
    worker.join(timeout=30)
    assert done.stderr.strip() == "error: publication blocked: dbt build failed: model.x (error)"
    assert "imported: [] code: 2" in done.stdout

    sock.unlink(missing_ok=True)  # (the listener removed it) no worker: the whole command line runs
    assert "code: None" in _run_client(env, tmp_path).stdout


def test_a_warehouse_without_run_records_is_refused_by_the_worker_before_any_build(tmp_path: Path) -> None:
    empty = tmp_path / "w.duckdb"
    duckdb.connect(str(empty)).close()
    request = {"op": "build", "db_path": str(empty), "require_run_records": True}
    for db in (empty, tmp_path / "missing.duckdb"):
        with pytest.raises(build_worker.NoRunRecords, match="holds no run records yet: run `argusic ingest"):
            build_worker._handle(BuildSession(tmp_path), {**request, "db_path": str(db)})


def test_project_fingerprint_follows_project_files_but_not_dbt_output(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "a.sql").write_text("select 1")
    before = project_fingerprint(tmp_path)
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "manifest.json").write_text("{}")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "dbt.log").write_text("x")
    assert project_fingerprint(tmp_path) == before
    (tmp_path / "models" / "a.sql").write_text("select 2")
    assert project_fingerprint(tmp_path) != before


# ---------------------------------------------------------------------------------------------------
# Slow: a real worker process on the stand-in project
# ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_worker_builds_reparses_a_changed_project_blocks_and_publishes(tmp_path: Path) -> None:
    from argusic.warehouse.schema import RAW_DDL

    db = tmp_path / "w.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(RAW_DDL)
    project = standin_project(tmp_path, good_frames())
    (project / "seeds" / "_seeds.yml").write_text(
        "version: 2\nseeds:\n  - name: board_seed\n    columns:\n      - name: agent_id\n"
        "        data_tests: [not_null]\n"
    )
    sock = tmp_path / "worker" / "build.sock"
    env = {
        **os.environ,
        "ARGUSIC_DBT_PROJECT": str(project),
        "DBT_TARGET_PATH": str(tmp_path / "target"),
        "DBT_LOG_PATH": str(tmp_path / "target" / "logs"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "argusic.cli", "build-worker", "--socket", str(sock)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        ready = proc.stdout.readline()
        assert "build worker ready on" in ready, ready + proc.stderr.read()
        assert (sock.stat().st_mode & 0o777) == 0o600

        first = request(sock, "build", db_path=str(db))
        assert first["ok"] and first["nodes"] >= 1 and "marts.board: ok" in first["summary"]
        assert "data tests of unchanged seeds" not in first["summary"]
        second = request(sock, "build", db_path=str(db))
        assert request(sock, "ping")["parses"] == 1  # the second build reused the manifest
        # the seed's test passed for this project state: not re-run, and said so; nothing changed, so
        # the unchanged project's seeds are not reloaded either: only its one table is rebuilt
        assert "1 data tests of unchanged seeds passed earlier" in second["summary"]
        assert "nothing changed since the last build" in second["summary"]
        assert second["nodes"] == 1 and first["nodes"] > 2

        # An edited seed changes the project state: its tests run again, and a null fails the build.
        seed = project / "seeds" / "board_seed.csv"
        good_seed = seed.read_text()
        seed.write_text(good_seed.replace("\nc1,a2,", "\nc1,,", 1))
        with pytest.raises(PublicationBlocked, match=r"not_null_board_seed_agent_id\S* \(fail\)"):
            request(sock, "build", db_path=str(db))
        seed.write_text(good_seed)

        # A changed model is re-parsed before it is built: its duplicate key blocks publication.
        (project / "models" / "board.sql").write_text(
            "select * from {{ ref('board_seed') }} union all select * from {{ ref('board_seed') }}"
        )
        with pytest.raises(PublicationBlocked, match=r"marts\.board: expect_compound_columns_to_be_unique"):
            request(sock, "build", db_path=str(db))
        assert request(sock, "ping")["parses"] == 3  # first state, edited seed, changed model

        (project / "models" / "board.sql").write_text("select * from {{ ref('board_seed') }}")
        # what `argusic build` and the Airflow tasks call: delegated because the worker answers
        os.environ[build_worker.SOCKET_ENV] = str(sock)
        try:
            summary = build_worker.build_or_delegate(db)
            published = build_worker.publish_or_delegate("c1", tmp_path / "out", db)
        finally:
            del os.environ[build_worker.SOCKET_ENV]
        assert "(built by the build worker in " in summary and "marts.board: ok" in summary
        assert json.loads(published.read_text())["rows"][0]["configuration"]["agent_id"] == "a1"
        assert request(sock, "ping")["builds"] == 3  # successful builds: two, then the delegated one

        with pytest.raises(BuildWorkerError, match="FileNotFoundError: warehouse .*x.db"):
            request(sock, "publish", cycle_id="c1", out_dir=str(tmp_path), db_path=str(tmp_path / "x.db"))
        assert request(sock, "ping")["ok"]  # a failed request leaves the worker serving
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    assert code == 0, proc.stderr.read()
    assert not sock.exists()
