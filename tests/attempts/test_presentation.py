"""Served copies: derived from raw evidence that never changes; withheld when they cannot be clean."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest
from argusic.attempts.presentation import PRESENTATION_PREFIX, present_attempt, served_key
from argusic.core.evidence import EvidenceStore
from argusic.core.record import RunRecord, parse_record
from argusic.masking import KEY_PLACEHOLDER, PLACEHOLDER, output_text
from hypothesis import HealthCheck, given, settings
from test_masking import PEM, PEM_BODY, make_cast, oracle_leaks, planted_recording

KEY = "sk-ant-api03-" + "k" * 20 + "0123456789ABCDEFGHIJ"
SHARED = "shared-key-7f3a9c2e41d8b6"


@pytest.fixture
def store(tmp_path: Path) -> EvidenceStore:
    return EvidenceStore((tmp_path / "evidence_store").as_uri())


def land(store: EvidenceStore, record_doc: dict, log: bytes | None, cast: bytes | None) -> RunRecord:
    doc = json.loads(json.dumps(record_doc))
    for kind, data in (("log", log), ("recording", cast)):
        if data is None:
            doc["evidence"][kind] = None
        else:
            sha = hashlib.sha256(data).hexdigest()
            doc["evidence"][kind] = store.put_bytes(store.key_for(sha), data).as_ref()
    doc["evidence"]["report"] = None
    return parse_record(doc)


def raw_snapshot(store: EvidenceStore) -> dict[str, str]:
    root = Path(store.root) / "sha256"
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def served_files(store: EvidenceStore) -> list[Path]:
    root = Path(store.root) / PRESENTATION_PREFIX
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_served_copies_are_masked_and_raw_evidence_is_unchanged(
    store: EvidenceStore, record_doc: dict
) -> None:
    log = f"[2026-12-02T10:00:00Z] STEP run: env\nANTHROPIC_API_KEY={KEY}\nSHARED={SHARED}\n".encode()
    cast = make_cast(["\x1b[1m$ \x1b[0menv\r\nANTHROPIC_API_KEY=sk-ant-", KEY[7:30], KEY[30:] + "\r\n"])
    record = land(store, record_doc, log, cast)
    before = raw_snapshot(store)

    result = present_attempt(record, store, [KEY, SHARED])

    assert not result.withheld and result.withheld_reason is None and result.masking_applied
    assert raw_snapshot(store) == before
    assert store.verify(record.evidence.log.model_dump()) and store.verify(
        record.evidence.recording.model_dump()
    )
    assert result.original_fingerprints == {
        "log": record.evidence.log.sha256,
        "recording": record.evidence.recording.sha256,
    }
    served_log = store.read(result.served["log"].uri).decode()
    served_cast = store.read(result.served["recording"].uri)
    assert result.served["log"].uri.startswith(f"{store.url}/{PRESENTATION_PREFIX}/{record.attempt_id}/")
    assert KEY not in served_log and SHARED not in served_log and PLACEHOLDER in served_log
    assert "STEP run: env" in served_log
    assert KEY not in output_text(served_cast) and output_text(served_cast).startswith(
        "\x1b[1m$ \x1b[0menv\r\n"
    )
    assert result.served["log"].sha256 == hashlib.sha256(served_log.encode()).hexdigest()

    again = present_attempt(record, store, [KEY, SHARED])  # write-once and deterministic: a no-op
    assert again == result
    assert raw_snapshot(store) == before


def test_private_key_redacted_with_fingerprint_and_flag(store: EvidenceStore, record_doc: dict) -> None:
    log = ("$ python -m pki.generate\n" + PEM + "done\n").encode()
    record = land(store, record_doc, log, make_cast([PEM.replace("\n", "\r\n")]))
    result = present_attempt(record, store, [KEY])
    assert not result.withheld and result.masking_applied and result.generated_key_material
    assert {k["source"] for k in result.private_keys} == {"log", "recording"}
    assert len({k["sha256"] for k in result.private_keys}) == 1
    served = store.read(result.served["log"].uri).decode()
    assert KEY_PLACEHOLDER in served and not any(line[:16] in served for line in PEM_BODY)


@pytest.mark.parametrize("broken", ["recording", "fingerprint"])
def test_withheld_attempt_writes_nothing(store: EvidenceStore, record_doc: dict, broken: str) -> None:
    log = f"ok {KEY}\n".encode()
    cast = b"this is not asciicast\n" if broken == "recording" else make_cast(["ok\r\n"])
    record = land(store, record_doc, log, cast)
    if broken == "fingerprint":
        doc = json.loads(record.to_json())
        doc["evidence"]["log"]["sha256"] = "0" * 64
        record = parse_record(doc)
    before = raw_snapshot(store)
    result = present_attempt(record, store, [KEY])
    assert result.withheld and result.served == {"log": None, "recording": None}
    # a recording the container made unparseable is its doing (a measured failure, no rerun); raw
    # evidence that no longer matches its fingerprint is our store's failure (invalid, rerun)
    assert result.rerun_needed is (broken == "fingerprint")
    assert result.withheld_by_our_tooling is (broken == "fingerprint")
    assert ("unparseable" if broken == "recording" else "does not match") in result.withheld_reason
    assert KEY not in result.withheld_reason
    assert served_files(store) == [] and raw_snapshot(store) == before


def test_missing_recording_is_not_served_and_not_withheld(store: EvidenceStore, record_doc: dict) -> None:
    record = land(store, record_doc, b"just a log\n", None)
    result = present_attempt(record, store, [KEY])
    assert not result.withheld and result.served["recording"] is None and result.served["log"] is not None


def test_served_key_is_one_safe_segment() -> None:
    key = served_key("c1/../x", "log", b"data")
    assert key.startswith(f"{PRESENTATION_PREFIX}/c1%2F..%2Fx/") and key.endswith("/log.txt")
    with pytest.raises(ValueError):
        served_key("..", "log", b"")


def test_presentation_property_campaign(tmp_path_factory, record_doc: dict) -> None:
    """Planted secrets in both log and recording of real attempts: none is in any served copy."""
    counts: Counter = Counter()
    base = tmp_path_factory.mktemp("presentation_store")

    @settings(
        max_examples=40,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(case=planted_recording())
    def run(case) -> None:
        chunks, secrets, plants, commands = case
        store = EvidenceStore((base / f"s{counts['attempts']}").as_uri())
        record = land(store, record_doc, "".join(chunks).encode(), make_cast(chunks))
        before = raw_snapshot(store)
        result = present_attempt(record, store, secrets)
        counts["attempts"] += 1
        counts["secrets_planted"] += len(plants)
        counts["plant_checks"] += 2 * len(plants)  # each plant is in the log and in the recording
        assert raw_snapshot(store) == before
        if result.withheld:
            counts["withheld"] += 1
            return
        for kind in ("log", "recording"):
            data = store.read(result.served[kind].uri)
            text = output_text(data) if kind == "recording" else data.decode()
            counts["leaks_found"] += sum(1 for s, p in plants if p in text or oracle_leaks(text, s))

    run()
    path = tmp_path_factory.getbasetemp() / "presentation_counts.json"
    path.write_text(json.dumps(dict(counts), indent=2, sort_keys=True))
    print(f"\npresentation_counts: {json.dumps(dict(counts), sort_keys=True)} -> {path}")
    assert counts["attempts"] >= 30 and counts["leaks_found"] == 0 and counts["withheld"] == 0
