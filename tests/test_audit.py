from __future__ import annotations

import json

from argusic.audit import audit_warehouse
from argusic.cli import app
from argusic.evidence import EvidenceStore
from argusic.warehouse import ingest
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
