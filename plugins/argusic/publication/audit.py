"""Evidence audit: re-hash every stored evidence object, raw and served, against its run record.

Read-only on both the warehouse and the store. For every reference of every attempt (the raw log,
recording and report, and the served log and recording of the record's `presentation`):

- a URI that is not where its sha256 puts it in the store (another scheme or store, a `..`, empty or
  dot segment, a key that is not the content address of its sha256, a served key of another
  attempt) is a finding `bad_uri`, and is never opened: the audit hashes nothing outside the store;
- otherwise the object is streamed through sha256 (one chunk in memory at a time): `missing`,
  `unreadable` (not a regular file, no permission) or `mismatch` (other bytes or another size).

Every finding is reported and the audit goes on to the next reference. The warehouse is read in pages
of attempts, each through a short read-only connection: memory stays bounded however many attempts
there are, and no connection is held while objects are hashed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from argusic.core.evidence import (
    EvidenceMissing,
    EvidenceStore,
    EvidenceUnreadable,
    raw_key,
    served_key_for,
    uri_problem,
)
from argusic.warehouse.db import connect

EVIDENCE_KINDS = ("log", "recording", "report")
SERVED_KINDS = ("served_log", "served_recording")  # the record's presentation.log / .recording
# optional raw evidence the warehouse keeps in the record's JSON only (issue #30: the display's video;
# issue #31: an external CLI's session file)
RECORD_ONLY_KINDS = ("display_video", "session_log")
ALL_KINDS = EVIDENCE_KINDS + SERVED_KINDS + RECORD_ONLY_KINDS
PAGE_ATTEMPTS = 5000
_SHA256 = re.compile(r"[0-9a-f]{64}")

Ref = tuple[str, str, dict]  # (attempt_id, kind, {"sha256", "uri", "bytes"})


@dataclass(frozen=True)
class AuditFinding:
    attempt_id: str
    kind: str
    uri: str
    expected_sha256: str
    problem: str  # "missing" | "mismatch" | "bad_uri" | "unreadable"
    detail: str = ""

    def describe(self) -> str:
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.attempt_id} {self.kind}: {self.problem}{detail}"


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


def expected_key(attempt_id: str, kind: str, sha256: str) -> str:
    """Where a reference of this kind and sha256 must be in the store."""
    if kind in SERVED_KINDS:
        return served_key_for(attempt_id, kind.removeprefix("served_"), sha256)
    return raw_key(sha256)


def check_ref(attempt_id: str, kind: str, ref: dict, store: EvidenceStore) -> AuditFinding | None:
    """One reference: None when the object is where it must be and holds the recorded bytes."""
    uri, sha, size = ref.get("uri"), ref.get("sha256"), ref.get("bytes")

    def finding(problem: str, detail: str = "") -> AuditFinding:
        return AuditFinding(attempt_id, kind, str(uri), str(sha), problem, detail)

    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        return finding("bad_uri", "the recorded sha256 is not 64 hex digits")
    if problem := uri_problem(uri, store.url, expected_key(attempt_id, kind, sha)):
        return finding("bad_uri", problem)
    try:
        actual_sha, actual_size = store.fingerprint(uri)
    except EvidenceUnreadable as err:
        return finding("unreadable", str(err).split(": ", 1)[-1])
    except EvidenceMissing:
        return finding("missing")
    except OSError as err:
        return finding("unreadable", err.strerror or type(err).__name__)
    if actual_sha != sha:
        return finding("mismatch", f"stored bytes have sha256 {actual_sha}")
    if size is not None and actual_size != size:
        return finding("mismatch", f"stored object has {actual_size} bytes, the record says {size}")
    return None


def audit_refs(refs: Iterable[Ref], store: EvidenceStore) -> AuditReport:
    """refs: (attempt_id, kind, {sha256, uri, bytes}) for every evidence object to check."""
    report = AuditReport()
    for attempt_id, kind, ref in refs:
        report.checked += 1
        if found := check_ref(attempt_id, kind, ref, store):
            report.findings.append(found)
    return report


def _ref_columns() -> str:
    raw = [f"{k}_sha256, {k}_uri, {k}_bytes" for k in EVIDENCE_KINDS]
    served = [
        f"record_json ->> '$.presentation.{k}.sha256', record_json ->> '$.presentation.{k}.uri', "
        f"TRY_CAST(record_json ->> '$.presentation.{k}.bytes' AS BIGINT)"
        for k in ("log", "recording")
    ]
    optional = [
        f"record_json ->> '$.evidence.{k}.sha256', record_json ->> '$.evidence.{k}.uri', "
        f"TRY_CAST(record_json ->> '$.evidence.{k}.bytes' AS BIGINT)"
        for k in RECORD_ONLY_KINDS
    ]
    return ", ".join(raw + served + optional)


def _refs_of_row(row: tuple) -> Iterator[Ref]:
    attempt_id, values = row[0], row[1:]
    for index, kind in enumerate(ALL_KINDS):
        sha, uri, size = values[3 * index : 3 * index + 3]
        if sha is not None or uri is not None:
            yield attempt_id, kind, {"sha256": sha, "uri": uri, "bytes": size}


def refs_of_connection(con: Any, cycle_id: str | None = None, page: int = PAGE_ATTEMPTS) -> list[Ref]:
    """Every evidence reference (raw and served) of the attempts seen by an open connection, of one
    cycle or all; for callers that already hold a connection (publication, under the writer lock)."""
    refs: list[Ref] = []
    for rows in _pages(lambda query, params: con.execute(query, params).fetchall(), cycle_id, page):
        for row in rows:
            refs.extend(_refs_of_row(row))
    return refs


def _pages(fetch, cycle_id: str | None, page: int) -> Iterator[list[tuple]]:
    where = "attempt_id > ?" + (" AND cycle_id = ?" if cycle_id is not None else "")
    query = (
        f"SELECT attempt_id, {_ref_columns()} FROM raw.run_records WHERE {where} "
        f"ORDER BY attempt_id LIMIT {int(page)}"
    )
    after = ""
    while True:
        rows = fetch(query, [after] if cycle_id is None else [after, cycle_id])
        if not rows:
            return
        yield rows
        after = rows[-1][0]


def refs_from_warehouse(
    db_path: Path | None = None, cycle_id: str | None = None, page: int = PAGE_ATTEMPTS
) -> Iterator[Ref]:
    """Every evidence reference recorded in raw.run_records, raw and served, page by page; each page
    through its own short read-only connection (which waits for a writer rather than failing)."""

    def fetch(query: str, params: list) -> list[tuple]:
        with connect(db_path, read_only=True) as con:
            return con.execute(query, params).fetchall()

    for rows in _pages(fetch, cycle_id, page):
        for row in rows:
            yield from _refs_of_row(row)


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
