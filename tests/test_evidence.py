from __future__ import annotations

import hashlib

import boto3
import pytest
from argusic.evidence import EvidenceConflict, EvidenceStore


def _exercise(store: EvidenceStore, tmp_path):
    data = b"asciicast bytes \x00\x01"
    path = tmp_path / "recording.cast"
    path.write_bytes(data)
    obj = store.put_file(path)
    assert obj.sha256 == hashlib.sha256(data).hexdigest()
    assert obj.bytes == len(data)
    assert obj.uri == f"{store.url}/sha256/{obj.sha256[:2]}/{obj.sha256}"
    assert store.read(obj.uri) == data
    assert store.verify(obj.as_ref())
    # Same bytes again: accepted, nothing changes.
    assert store.put_file(path) == obj
    # Different bytes under an existing key: refused, the original stays.
    with pytest.raises(EvidenceConflict, match="refusing to overwrite"):
        store.put_bytes(store.key_of_uri(obj.uri), b"tampered")
    assert store.read(obj.uri) == data
    return obj


def test_local_store_is_content_addressed_and_write_once(tmp_path):
    store = EvidenceStore((tmp_path / "evidence_store").as_uri())
    obj = _exercise(store, tmp_path)
    stored = tmp_path / "evidence_store" / "sha256" / obj.sha256[:2] / obj.sha256
    assert stored.exists() and not (stored.stat().st_mode & 0o222)


def test_audit_detects_tampering_on_local_store(tmp_path):
    store = EvidenceStore((tmp_path / "ev").as_uri())
    path = tmp_path / "log.txt"
    path.write_bytes(b"log")
    obj = store.put_file(path)
    stored = tmp_path / "ev" / "sha256" / obj.sha256[:2] / obj.sha256
    stored.chmod(0o644)
    stored.write_bytes(b"LOG")
    assert not store.verify(obj.as_ref())


@pytest.mark.slow
def test_s3_store_same_code_path_against_real_s3_protocol_server(s3_bucket, s3_server, tmp_path):
    store = EvidenceStore(f"s3://{s3_bucket}/argusic")
    obj = _exercise(store, tmp_path)
    # The object really is in the bucket, under the same key layout as the local root.
    s3 = boto3.client("s3", endpoint_url=s3_server)
    body = s3.get_object(Bucket=s3_bucket, Key=f"argusic/sha256/{obj.sha256[:2]}/{obj.sha256}")["Body"].read()
    assert hashlib.sha256(body).hexdigest() == obj.sha256
    s3.put_object(Bucket=s3_bucket, Key=f"argusic/sha256/{obj.sha256[:2]}/{obj.sha256}", Body=b"tampered")
    store.fs.invalidate_cache()
    assert not store.verify(obj.as_ref())


def test_put_file_streams_under_a_given_key_and_copies_back(tmp_path):
    store = EvidenceStore((tmp_path / "ev").as_uri())
    data = bytes(range(256)) * 9000  # larger than one chunk
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    obj = store.put_file(path, key=f"served/x/{sha}/log.txt")
    assert obj.uri.endswith(f"served/x/{sha}/log.txt") and obj.sha256 == sha and obj.bytes == len(data)
    assert store.copy_to_file(obj.uri, tmp_path / "back.bin") == (sha, len(data))
    assert (tmp_path / "back.bin").read_bytes() == data
    assert not any((tmp_path / "ev" / ".partial").iterdir())  # no partial object left behind


def test_installation_id_is_derived_from_locations_or_set(monkeypatch, tmp_path):
    from argusic.settings import installation_id

    monkeypatch.delenv("ARGUSIC_INSTALLATION", raising=False)
    monkeypatch.setenv("ARGUSIC_WAREHOUSE", str(tmp_path / "a" / "w.duckdb"))
    first = installation_id()
    monkeypatch.setenv("ARGUSIC_WAREHOUSE", str(tmp_path / "b" / "w.duckdb"))
    assert installation_id() != first and first.startswith("i") and len(first) == 12
    monkeypatch.setenv("ARGUSIC_INSTALLATION", "ops-east")
    assert installation_id() == "ops-east"
    monkeypatch.setenv("ARGUSIC_INSTALLATION", "../Bad Name")
    with pytest.raises(ValueError, match="ARGUSIC_INSTALLATION"):
        installation_id()
