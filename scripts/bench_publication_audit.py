"""What the evidence audit costs publication, per attempt, next to sha256 over the same bytes.

`publish_board` audits every attempt of the cycle before it writes the board: each attempt's raw log,
recording and report and its served log and recording are re-hashed from the store (five objects
an attempt) and their URIs checked. This script builds a real store and warehouse in a temporary
folder (records made by `argusic.warehouse.load_runs.ingest`, objects by `EvidenceStore.put_file`), then, in
one run:

* per-attempt cost: `audit_refs(refs_of_connection(...))` over `--attempts` attempts of the cycle,
  for objects of `--small-kib` (demo-sized) and `--large-mib` (a verbose real attempt), beside
  hashlib.sha256 over the same bytes already in memory (the floor: the audit cannot hash faster);
* memory: the audit of one attempt whose served log is `--huge-mib` MiB, in a child process whose
  peak RSS (ru_maxrss) is printed next to the object's size (the audit streams: one 1 MiB chunk).

The files live on the same filesystem as the temporary folder; the OS page cache is warm (objects
were just written), as for a publication right after a cycle. Figures are printed as measured.

Usage: .venv/bin/python scripts/bench_publication_audit.py [--attempts 300] [--small-kib 16]
       [--large-mib 4] [--large-attempts 30] [--huge-mib 512]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CYCLE = "2026-12"


def _record(attempt_no: int, project: str, store, files: dict[str, Path]) -> dict:
    from argusic.core.evidence import served_key_for

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from conftest import VALID_RECORD

    doc = copy.deepcopy(VALID_RECORD)
    attempt_id = f"{CYCLE}.board.readme-runner.{project}.a{attempt_no}"
    doc.update(attempt_id=attempt_id, cycle_id=CYCLE, project_id=project, attempt_no=attempt_no)
    doc["evidence"] = {kind: store.put_file(files[kind]).as_ref() for kind in ("log", "recording", "report")}
    served = {}
    for kind in ("log", "recording"):  # served copies: objects of their own, under served/<attempt>/…
        path = files[f"served_{kind}"]
        served[kind] = store.put_file(path, key=served_key_for(attempt_id, kind, _sha(path))).as_ref()
    doc["presentation"] = {
        "masking_applied": False, "withheld": False, "withheld_reason": None, "private_key_sha256": [],
        **served,
    }  # fmt: skip
    return doc


def _sha(path: Path) -> str:
    from argusic.core.evidence import sha256_of_file

    return sha256_of_file(path)[0]


def _attempt_files(folder: Path, seed: int, size: int) -> dict[str, Path]:
    """Five distinct objects of about `size` bytes (log, recording, report, served copies)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for index, kind in enumerate(("log", "recording", "report", "served_log", "served_recording")):
        path = folder / kind
        block = hashlib.sha256(f"{seed}-{kind}".encode()).digest() * 32  # 1 KiB, distinct per object
        with open(path, "wb") as handle:
            remaining = size if kind != "report" else min(size, 2048)
            while remaining > 0:
                handle.write(block[: min(remaining, len(block))])
                remaining -= len(block)
            handle.write(bytes([index]))
        files[kind] = path
    return files


def build_cycle(base: Path, attempts: int, size: int) -> Path:
    """A warehouse of `attempts` attempts of the cycle, each with five objects of ~`size` bytes."""
    from argusic.core.evidence import EvidenceStore
    from argusic.warehouse.load_runs import ingest

    store = EvidenceStore()
    records = base / "records"
    for n in range(attempts):
        files = _attempt_files(base / "work" / str(n), n, size)
        doc = _record(1 + n % 3, f"p{n // 3}", store, files)
        folder = records / doc["attempt_id"]
        folder.mkdir(parents=True)
        (folder / "run_record.json").write_text(json.dumps(doc))
        for path in files.values():
            path.unlink()
    db = Path(os.environ["ARGUSIC_WAREHOUSE"])
    ingest([records], db_path=db, known_agents=None)
    return db


def measure(db: Path) -> tuple[float, int, int, float]:
    """(audit seconds, objects, bytes, sha256-in-memory seconds over the same bytes)."""
    from argusic.core.evidence import EvidenceStore
    from argusic.publication.audit import audit_refs, refs_of_connection
    from argusic.warehouse.db import connect

    store = EvidenceStore()
    started = time.perf_counter()
    with connect(db, read_only=True) as con:
        refs = refs_of_connection(con, CYCLE)
    report = audit_refs(refs, store)
    seconds = time.perf_counter() - started
    assert report.ok, report.findings[:3]
    total = sum(ref["bytes"] for _, _, ref in refs)
    floor = 0.0
    for _, _, ref in refs:  # the floor: sha256 of the same bytes, read into memory beforehand
        data = store.read(ref["uri"])
        t0 = time.perf_counter()
        hashlib.sha256(data).hexdigest()
        floor += time.perf_counter() - t0
    return seconds, len(refs), total, floor


def huge_child(mib: int) -> None:
    """Run in a child: one attempt whose served log is `mib` MiB; audit it; print peak RSS."""
    base = Path(os.environ["BENCH_BASE"])
    db = build_cycle(base, 1, 1024)
    from argusic.core.evidence import EvidenceStore, served_key_for
    from argusic.publication.audit import audit_refs, refs_of_connection
    from argusic.warehouse.db import connect

    with connect(db, read_only=True) as con:
        refs = refs_of_connection(con, CYCLE)
    # replace the served log by a large one, landed under its own key, and point the ref at it
    big = base / "big.log"
    with open(big, "wb") as handle:
        chunk = os.urandom(1 << 20)
        for _ in range(mib):
            handle.write(chunk)
    store = EvidenceStore()
    attempt_id = refs[0][0]
    obj = store.put_file(big, key=served_key_for(attempt_id, "log", _sha(big)))
    big.unlink()
    refs = [r if r[1] != "served_log" else (r[0], r[1], obj.as_ref()) for r in refs]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    report = audit_refs(refs, store)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"ok": report.ok, "seconds": seconds, "rss_before_kib": before, "rss_after_kib": after}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--attempts", type=int, default=300)
    parser.add_argument("--small-kib", type=int, default=16)
    parser.add_argument("--large-mib", type=int, default=4)
    parser.add_argument("--large-attempts", type=int, default=30)
    parser.add_argument("--huge-mib", type=int, default=512)
    parser.add_argument("--huge-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.huge_child:
        huge_child(args.huge_child)
        return

    for label, attempts, size in (
        (f"{args.small_kib} KiB objects", args.attempts, args.small_kib * 1024),
        (f"{args.large_mib} MiB objects", args.large_attempts, args.large_mib << 20),
    ):
        with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
            base = Path(tmp)
            os.environ["ARGUSIC_WAREHOUSE"] = str(base / "w.duckdb")
            os.environ["ARGUSIC_EVIDENCE_URL"] = (base / "evidence_store").as_uri()
            db = build_cycle(base, attempts, size)
            seconds, objects, total, floor = measure(db)
            print(
                f"{label}: {attempts} attempts, {objects} objects, {total / 2**20:.1f} MiB: audit "
                f"{seconds:.3f} s = {1000 * seconds / attempts:.2f} ms an attempt "
                f"({total / 2**20 / seconds:.0f} MiB/s); sha256 in memory over the same bytes "
                f"{floor:.3f} s ({total / 2**20 / floor:.0f} MiB/s): ratio {seconds / floor:.1f}x"
            )

    with tempfile.TemporaryDirectory(prefix="bench-audit-huge-") as tmp:
        env = dict(
            os.environ,
            BENCH_BASE=tmp,
            ARGUSIC_WAREHOUSE=str(Path(tmp) / "w.duckdb"),
            ARGUSIC_EVIDENCE_URL=(Path(tmp) / "evidence_store").as_uri(),
        )
        out = subprocess.run(
            [sys.executable, __file__, "--huge-child", str(args.huge_mib)],
            env=env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        result = json.loads(out.strip().splitlines()[-1])
        print(
            f"one attempt with a {args.huge_mib} MiB served log: audit {result['seconds']:.2f} s, "
            f"ok={result['ok']}; "
            f"peak RSS {result['rss_after_kib'] / 1024:.0f} MiB (before the audit: "
            f"{result['rss_before_kib'] / 1024:.0f} MiB)"
        )


if __name__ == "__main__":
    main()
