"""Evidence audit: re-hash every stored evidence object and report any whose bytes no longer match the
fingerprint in its run record. Read-only on both the warehouse and the store."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from argusic.evidence import EvidenceStore
from argusic.warehouse import connect

EVIDENCE_KINDS = ("log", "recording", "report")


@dataclass(frozen=True)
class AuditFinding:
    attempt_id: str
    kind: str
    uri: str
    expected_sha256: str
    problem: str  # "missing" | "mismatch"


@dataclass
class AuditReport:
    checked: int = 0
    findings: list[AuditFinding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> str:
        return json.dumps(
            {"checked": self.checked, "ok": self.ok, "findings": [asdict(f) for f in self.findings]}, indent=2
        )


def audit_refs(refs: list[tuple[str, str, dict]], store: EvidenceStore) -> AuditReport:
    """refs: (attempt_id, kind, {sha256, uri, bytes}) for every evidence object to check."""
    report = AuditReport()
    for attempt_id, kind, ref in refs:
        report.checked += 1
        try:
            data = store.read(ref["uri"])
        except FileNotFoundError:
            report.findings.append(AuditFinding(attempt_id, kind, ref["uri"], ref["sha256"], "missing"))
            continue
        if hashlib.sha256(data).hexdigest() != ref["sha256"] or len(data) != ref["bytes"]:
            report.findings.append(AuditFinding(attempt_id, kind, ref["uri"], ref["sha256"], "mismatch"))
    return report


def refs_from_warehouse(db_path: Path | None = None) -> list[tuple[str, str, dict]]:
    """Every evidence reference recorded in raw.run_records (read-only connection)."""
    columns = ", ".join(f"{k}_sha256, {k}_uri, {k}_bytes" for k in EVIDENCE_KINDS)
    with connect(db_path, read_only=True) as con:
        rows = con.execute(
            f"SELECT attempt_id, {columns} FROM raw.run_records ORDER BY attempt_id"
        ).fetchall()
    refs = []
    for row in rows:
        attempt_id, values = row[0], row[1:]
        for index, kind in enumerate(EVIDENCE_KINDS):
            sha, uri, size = values[3 * index : 3 * index + 3]
            if sha is not None:
                refs.append((attempt_id, kind, {"sha256": sha, "uri": uri, "bytes": size}))
    return refs


def audit_warehouse(
    db_path: Path | None = None, store: EvidenceStore | None = None, out: Path | None = None
) -> AuditReport:
    """Audit every evidence object the warehouse knows; write the report to `out` when given."""
    report = audit_refs(refs_from_warehouse(db_path), store or EvidenceStore())
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        tmp.write_text(report.to_json() + "\n")
        tmp.replace(out)
    return report
