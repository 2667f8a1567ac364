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
