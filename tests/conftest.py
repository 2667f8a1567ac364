"""Shared fixtures: isolated settings, a valid run record, a real S3 protocol server on 127.0.0.1."""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest

# Tests mirror the packages (tests/<package>/). A test may build on another package's test helpers by
# module name (`from test_dags import airflow_env`): every package folder is on the import path,
# whichever file is collected first (test file names are unique across the folders).
TESTS_DIR = Path(__file__).resolve().parent
for _folder in sorted(p for p in TESTS_DIR.iterdir() if p.is_dir() and any(p.glob("test_*.py"))):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

logging.getLogger("great_expectations").setLevel(logging.WARNING)

# Blinding's key (issue #31; argusic.repair.labels.label_key): one fixed key for the whole suite, set
# before any test module computes a label at import, so that Python's labels and the warehouse's (dbt,
# CLI and Airflow subprocesses inherit it) agree whatever runs dir a test points at. A test of the key
# itself removes it with monkeypatch.
os.environ.setdefault("ARGUSIC_LABEL_KEY", "7e57" * 16)


def pytest_configure(config: pytest.Config) -> None:
    import suite_timing  # the suite's time: files slowest first, timings recorded and shown (issue 23)

    suite_timing.pytest_configure(config)
    _worker_dbt_folders(config)


def _worker_dbt_folders(config: pytest.Config) -> None:
    """Under pytest-xdist (`make test` runs two workers), each worker's in-place dbt builds write their
    own target and log folders: two dbt processes sharing dbt_project/target/ overwrite each other's
    partial_parse.msgpack and manifest. Set before any test, so subprocesses (Airflow, the CLI) inherit
    it; a test that sets its own DBT_TARGET_PATH still wins."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and "DBT_TARGET_PATH" not in os.environ:
        base = Path(tempfile.mkdtemp(prefix=f"argusic-dbt-{worker}-"))
        os.environ["DBT_TARGET_PATH"] = str(base / "target")
        os.environ["DBT_LOG_PATH"] = str(base / "logs")
        config.add_cleanup(lambda: shutil.rmtree(base, ignore_errors=True))


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every ARGUSIC_* location at a fresh temporary folder."""
    monkeypatch.setenv("ARGUSIC_WAREHOUSE", str(tmp_path / "warehouse" / "argusic.duckdb"))
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", (tmp_path / "evidence_store").as_uri())
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("ARGUSIC_PUBLISH_DIR", str(tmp_path / "published"))
    monkeypatch.setenv("ARGUSIC_FORGE_DIR", str(tmp_path / "forge"))
    monkeypatch.delenv("ARGUSIC_ANALYST_DIR", raising=False)  # the analyst copy: beside the warehouse
    return tmp_path


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def evidence_refs(store_url: str) -> dict:
    """The fixture record's evidence, addressed by content in the store at `store_url` (ingest refuses
    URIs outside the configured store or under another key)."""
    refs = {}
    for kind, text in (("log", "log"), ("recording", "rec"), ("report", "rep")):
        sha = _sha(text)
        refs[kind] = {"sha256": sha, "uri": f"{store_url.rstrip('/')}/sha256/{sha[:2]}/{sha}", "bytes": 3}
    return refs


VALID_RECORD = {
    "schema": "argusic.run_record/1",
    "attempt_id": "2026-12.board.readme-runner.wavgen.a1",
    "cycle_id": "2026-12",
    "purpose": "board",
    "agent_id": "readme-runner",
    "project_id": "wavgen",
    "commit": "0123456789abcdef0123456789abcdef01234567",
    "tier": "standard",
    "attempt_no": 1,
    "methodology_version": "1.5",
    "started_at": "2026-12-02T10:00:00Z",
    "ended_at": "2026-12-02T10:05:00Z",
    "budget_seconds": 5400,
    "end_reason": "completed",
    "invalid_reason": None,
    "evidence": evidence_refs("file:///e"),  # rebased on the test's own store by `record_doc`
    "report": {
        "install_ok": True,
        "ran_ok": True,
        "errors_encountered": 2,
        "errors_fixed": 1,
        "test_depth": "tier1_real",
        "verified_how": "python3 -c 'import wave' -> 8000 frames decoded",
        "final_state": "Installed, ran, decoded 8000 frames.",
    },
}


@pytest.fixture
def record_doc(isolated: Path) -> dict:
    """A valid record whose evidence URIs are in the test's (isolated) evidence store."""
    from argusic.core.settings import evidence_url

    doc = copy.deepcopy(VALID_RECORD)
    doc["evidence"] = evidence_refs(evidence_url())
    return doc


def write_record(folder: Path, doc: dict, name: str = "run_record.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(doc))
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 server mode on 127.0.0.1: a real S3 protocol endpoint over HTTP."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def s3_bucket(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    import uuid

    import boto3

    for key, value in {
        "AWS_ENDPOINT_URL": s3_server,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    bucket = f"evidence-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket=bucket)
    return bucket


DBT_PROJECT = Path(__file__).resolve().parent.parent / "dbt_project"


def dbt_build_copy(db: Path, tmp: Path, select: list[str] | None = None):
    """`dbt build` of a copy of the project (target and logs under `tmp`) against the warehouse file
    `db` (only the `select`ed nodes when given); fails naming every node that did not pass; returns
    dbt's result."""
    from argusic.warehouse.dbt_build import _release_dbt_duckdb
    from dbt.cli.main import dbtRunner

    project = tmp / "dbt_project"
    shutil.copytree(DBT_PROJECT, project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    old = os.environ.get("ARGUSIC_WAREHOUSE")
    os.environ["ARGUSIC_WAREHOUSE"] = str(db)
    try:
        res = dbtRunner().invoke(
            ["--quiet", "build", "--project-dir", str(project), "--profiles-dir", str(project),
             "--target-path", str(tmp / "target"), "--log-path", str(tmp / "logs"),
             *(["--select", *select] if select else [])]
        )  # fmt: skip
    finally:
        _release_dbt_duckdb()
        if old is None:
            os.environ.pop("ARGUSIC_WAREHOUSE", None)
        else:
            os.environ["ARGUSIC_WAREHOUSE"] = old
    failed = [
        (r.node.unique_id, r.message) for r in res.result.results if str(r.status) not in ("success", "pass")
    ]
    assert res.success and not failed, failed
    return res
