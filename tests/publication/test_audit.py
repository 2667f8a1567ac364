from __future__ import annotations

import hashlib
import json

import pytest
from argusic.cli.main import app
from argusic.core.evidence import EvidenceStore
from argusic.publication.audit import audit_warehouse
from argusic.warehouse.load_runs import ingest
from conftest import write_record
from typer.testing import CliRunner


def _landed(isolated, record_doc):
    store = EvidenceStore()
    for kind, text in (("log", b"the log"), ("recording", b'{"version": 2}\n'), ("report", b"{}")):
        path = isolated / kind
        path.write_bytes(text)
        record_doc["evidence"][kind] = store.put_file(path).as_ref()
    ingest([write_record(isolated / "r", record_doc)])
    return store


def test_audit_passes_then_reports_tampered_and_missing_objects(isolated, record_doc):
    store = _landed(isolated, record_doc)
    clean = audit_warehouse(out=isolated / "audit.json")
    assert clean.ok and clean.checked == 3
    assert json.loads((isolated / "audit.json").read_text())["ok"] is True

    log = record_doc["evidence"]["log"]
    stored = isolated / "evidence_store" / store.key_of_uri(log["uri"])
    stored.chmod(0o644)
    stored.write_bytes(b"the LOG")  # same length, other bytes
    recording = isolated / "evidence_store" / store.key_of_uri(record_doc["evidence"]["recording"]["uri"])
    recording.unlink()

    report = audit_warehouse()
    problems = {(f.kind, f.problem) for f in report.findings}
    assert problems == {("log", "mismatch"), ("recording", "missing")}
    result = CliRunner().invoke(app, ["audit"])
    assert result.exit_code == 1 and "mismatch" in result.output and "missing" in result.output


# -- served copies, bad URIs, publication ------------------------------------------------------------
def _attempt_with_served_copies(isolated, record_doc, cycle_id: str = "2026-12") -> dict:
    """A record whose raw evidence is landed and whose served copies were made the real way
    (attempts.common.with_presentation: masked and stored under served/<attempt id>/…), then ingested."""
    from argusic.attempts.common import with_presentation
    from argusic.core.record import parse_record
    from test_masking import make_cast

    store = EvidenceStore()
    attempt_id = f"{cycle_id}.board.readme-runner.wavgen.a1"
    record_doc.update(cycle_id=cycle_id, attempt_id=attempt_id)
    for kind, data in (
        ("log", b"$ make install\nok\n"),
        ("recording", make_cast(["$ make install\r\n", "ok\r\n"])),
        ("report", b"{}"),
    ):
        (isolated / kind).write_bytes(data)
        record_doc["evidence"][kind] = store.put_file(isolated / kind).as_ref()
    record = with_presentation(parse_record(record_doc), store)
    assert record.presentation and record.presentation.log and not record.presentation.withheld
    doc = json.loads(record.to_json())
    ingest([write_record(isolated / "r" / attempt_id, doc)])
    return doc


def _stored_path(isolated, uri: str):
    return isolated / "evidence_store" / EvidenceStore().key_of_uri(uri)


def _tamper(path, data: bytes) -> None:
    path.chmod(0o644)
    path.write_bytes(data)


def test_audit_covers_served_copies(isolated, record_doc):
    doc = _attempt_with_served_copies(isolated, record_doc)
    clean = audit_warehouse()
    assert clean.ok and clean.checked == 5  # log, recording, report, served log, served recording

    served_log = _stored_path(isolated, doc["presentation"]["log"]["uri"])
    assert served_log.parts[-4] == "served"
    _tamper(served_log, b"$ make install\nOK\n")  # an edited served log, same length
    (recording := _stored_path(isolated, doc["presentation"]["recording"]["uri"])).unlink()
    report = audit_warehouse()
    assert {(f.kind, f.problem) for f in report.findings} == {
        ("served_log", "mismatch"),
        ("served_recording", "missing"),
    }
    assert report.checked == 5 and not recording.exists()
    result = CliRunner().invoke(app, ["audit"])
    output = " ".join(result.output.split())
    assert (
        result.exit_code == 1
        and "served_log" in output
        and "audited 5 evidence object(s): 2 problem(s)" in output
    )


def _insert_raw(db, attempt_id: str, refs: dict, served: dict | None = None) -> None:
    """A row as a warehouse loaded before these checks (or edited by hand) could hold it: no ingest."""
    import duckdb
    from argusic.warehouse.schema import COLUMNS, RAW_DDL

    doc = {"attempt_id": attempt_id, "presentation": None if served is None else {
        k: served.get(k) for k in ("log", "recording")}}  # fmt: skip
    row = dict.fromkeys(COLUMNS)
    row.update(
        attempt_id=attempt_id, cycle_id="2026-12", purpose="board", agent_id="readme-runner",
        project_id="wavgen", commit_sha="0" * 40, tier="standard", attempt_no=1, methodology_version="1.5",
        started_at="2026-12-02 10:00:00", ended_at="2026-12-02 10:05:00", budget_seconds=5400,
        end_reason="completed", is_demo=False, has_report=False, record_json=json.dumps(doc),
    )  # fmt: skip
    for kind, ref in refs.items():
        row.update(
            {f"{kind}_sha256": ref["sha256"], f"{kind}_uri": ref["uri"], f"{kind}_bytes": ref["bytes"]}
        )
    with duckdb.connect(str(db)) as con:
        con.execute(RAW_DDL)
        con.execute(
            f"INSERT INTO raw.run_records ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})",
            [row[c] for c in COLUMNS],
        )


def test_audit_reports_every_bad_uri_and_goes_on(isolated, record_doc):
    doc = _attempt_with_served_copies(isolated, record_doc)  # "2026-12.board…a1": audited after the bad ones
    db = isolated / "warehouse" / "argusic.duckdb"
    store = EvidenceStore()
    # a host file outside the store, recorded with its true fingerprint: the old audit hashed it and passed
    host = isolated / "host-secret.txt"
    host.write_bytes(b"root:x:0:0\n")
    host_sha = hashlib.sha256(host.read_bytes()).hexdigest()
    outside = {"sha256": host_sha, "bytes": host.stat().st_size}
    good_log = doc["evidence"]["log"]
    other = hashlib.sha256(b"other").hexdigest()
    _insert_raw(db, "0-hostile.board.readme-runner.wavgen.a1", {
        "log": {**outside, "uri": host.as_uri()},
        "recording": {**outside, "uri": f"{store.url}/../host-secret.txt"},
        "report": {"sha256": other, "bytes": 3,
                   "uri": f"{store.url}/sha256/{other[:2]}/{good_log['sha256']}"},
    }, served={
        "log": {**outside, "uri": "https://evil.example/log.txt"},
        "recording": {**good_log},  # the raw object offered as a served copy: wrong key
    })  # fmt: skip
    _insert_raw(db, "1-hostile.board.readme-runner.wavgen.a1", {
        "log": {"sha256": good_log["sha256"], "bytes": 1,
                "uri": f"{store.url}/sha256/aa/{good_log['sha256']}"},
        "recording": {"sha256": "not-a-sha", "uri": good_log["uri"], "bytes": 1},
    })  # fmt: skip

    report = audit_warehouse()
    found = {(f.attempt_id[0], f.kind, f.problem) for f in report.findings}
    assert found == {
        ("0", "log", "bad_uri"),
        ("0", "recording", "bad_uri"),
        ("0", "report", "bad_uri"),
        ("0", "served_log", "bad_uri"),
        ("0", "served_recording", "bad_uri"),
        ("1", "log", "bad_uri"),
        ("1", "recording", "bad_uri"),
    }
    details = {(f.attempt_id[0], f.kind): f.detail for f in report.findings}
    assert "outside the evidence store" in details[("0", "log")]
    assert "'..' segment" in details[("0", "recording")]
    assert "the key of its sha256" in details[("0", "report")]
    assert "not 'served/0-hostile.board" in details[("0", "served_recording")]
    assert "not 64 hex digits" in details[("1", "recording")]
    assert report.checked == 7 + 5  # and the good attempt after them was audited, clean
    result = CliRunner().invoke(app, ["audit"])
    assert result.exit_code == 1 and "Traceback" not in result.output and "7 problem(s)" in result.output


def test_audit_reads_the_warehouse_in_pages(isolated, record_doc):
    from argusic.publication.audit import refs_from_warehouse

    _attempt_with_served_copies(isolated, record_doc)
    db = isolated / "warehouse" / "argusic.duckdb"
    ref = {"sha256": "0" * 64, "uri": f"{EvidenceStore().url}/sha256/00/{'0' * 64}", "bytes": 0}
    for n in range(5):
        _insert_raw(db, f"{n}-other.board.readme-runner.wavgen.a1", {"log": ref})
    paged = list(refs_from_warehouse(page=2))
    assert paged == list(refs_from_warehouse(page=1000)) and len(paged) == 5 + 5


def test_publication_refuses_an_attempt_whose_evidence_fails_the_audit(isolated, record_doc):
    from argusic.publication.board import publish_board
    from argusic.warehouse.dbt_build import PublicationBlocked
    from test_expectations import good_frames, write_marts

    doc = _attempt_with_served_copies(isolated, record_doc, cycle_id="c1")
    db = isolated / "warehouse" / "argusic.duckdb"
    write_marts(db, good_frames())
    board = publish_board("c1", isolated / "published")
    assert board.exists()

    served_log = _stored_path(isolated, doc["presentation"]["log"]["uri"])
    _tamper(served_log, b"$ make install\nOK\n")
    with pytest.raises(PublicationBlocked) as err:
        publish_board("c1", isolated / "again")
    message = str(err.value)
    assert "board of cycle 'c1' not published: the evidence of 1 attempt(s) fails the audit" in message
    assert f"{doc['attempt_id']} served_log: mismatch" in message
    assert not (isolated / "again").exists()
    # a raw object gone blocks it too, and every problem is named
    _stored_path(isolated, doc["evidence"]["report"]["uri"]).unlink()
    with pytest.raises(PublicationBlocked, match=r"2 problem\(s\) in 5 object\(s\).*report: missing"):
        publish_board("c1", isolated / "again")
