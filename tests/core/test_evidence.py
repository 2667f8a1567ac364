from __future__ import annotations

import hashlib
import re

import boto3
import pytest
from argusic.core.evidence import EvidenceConflict, EvidenceStore


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
    from argusic.core.settings import installation_id

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


# -- keys are content hashes inside the root ---------------------------------------------------------
SHA_OF_LOG = hashlib.sha256(b"log").hexdigest()
OTHER_SHA = hashlib.sha256(b"other").hexdigest()


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("/etc/passwd", "absolute key"),
        ("../outside", "'..' segment"),
        ("sha256/../../etc/passwd", "'..' segment"),
        ("sha256/./aa", "'.' segment"),
        ("sha256//aa", "empty segment"),
        ("sha256/aa/", "empty segment"),
        ("", "empty key"),
        ("sha256\\..\\x", "backslash"),
        ("sha256/aa/b\nc", "control character"),
        ("sha256/aa/b\x00c", "control character"),
        ("sha256/aa/b\x7fc", "control character"),
        ("served/a b/x/log.txt", "character ' ' not allowed"),
        ("served/a?x=1/x/log.txt", "character '?' not allowed"),
        ("x" * 1025, "longer than 1024"),
    ],
)
def test_store_refuses_keys_that_escape_its_root(tmp_path, key, problem):
    from argusic.core.evidence import EvidenceKeyError

    store = EvidenceStore((tmp_path / "ev").as_uri())
    source = tmp_path / "log.txt"
    source.write_bytes(b"log")
    for attempt in (
        lambda: store.put_bytes(key, b"log"),
        lambda: store.put_file(source, key=key),
        lambda: store.read(f"{store.url}/{key}"),
        lambda: store.copy_to_file(f"{store.url}/{key}", tmp_path / "copy"),
        lambda: store.fingerprint(f"{store.url}/{key}"),
    ):
        with pytest.raises(EvidenceKeyError, match=re.escape(problem)):
            attempt()
    assert not (tmp_path / "copy").exists()
    assert sorted(p.name for p in (tmp_path / "ev").iterdir()) == [".partial"]  # nothing stored
    assert not any((tmp_path / "ev" / ".partial").iterdir())


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        (f"sha256/{OTHER_SHA[:2]}/{OTHER_SHA}", "a raw key must be 'sha256/"),
        (f"sha256/aa/{SHA_OF_LOG}", "a raw key must be"),
        (f"served/a.board.x.y.a1/{OTHER_SHA}/log.txt", "must carry the sha256 of its bytes"),
        ("served/a.board.x.y.a1/log.txt", "a served key is served/<attempt id>"),
        (f"served/a.board.x.y.a1/{SHA_OF_LOG}/secrets.txt", "a served key is served/<attempt id>"),
        (f"elsewhere/{SHA_OF_LOG}", "not a key of this store"),
    ],
)
def test_store_refuses_keys_that_do_not_name_their_content(tmp_path, key, problem):
    from argusic.core.evidence import EvidenceKeyError

    store = EvidenceStore((tmp_path / "ev").as_uri())
    source = tmp_path / "log.txt"
    source.write_bytes(b"log")
    with pytest.raises(EvidenceKeyError, match=re.escape(problem)):
        store.put_bytes(key, b"log")
    with pytest.raises(EvidenceKeyError, match=re.escape(problem)):
        store.put_file(source, key=key)
    assert not [p for p in (tmp_path / "ev").rglob("*") if p.is_file()]
    # the same bytes under their own keys are accepted
    assert store.put_bytes(f"served/a.board.x.y.a1/{SHA_OF_LOG}/log.txt", b"log").sha256 == SHA_OF_LOG
    assert store.put_file(source).uri == f"{store.url}/sha256/{SHA_OF_LOG[:2]}/{SHA_OF_LOG}"


def test_store_reads_no_link_and_no_fifo(tmp_path):
    import os

    from argusic.core.evidence import EvidenceMissing, EvidenceUnreadable

    store = EvidenceStore((tmp_path / "ev").as_uri())
    secret = tmp_path / "host-secret"
    secret.write_bytes(b"log")
    link_key = f"sha256/{SHA_OF_LOG[:2]}/{SHA_OF_LOG}"
    (tmp_path / "ev" / "sha256" / SHA_OF_LOG[:2]).mkdir(parents=True)
    (tmp_path / "ev" / link_key).symlink_to(secret)
    with pytest.raises(EvidenceUnreadable):
        store.read(store.uri_for(link_key))
    assert not store.verify({"uri": store.uri_for(link_key), "sha256": SHA_OF_LOG})
    fifo_key = f"sha256/{OTHER_SHA[:2]}/{OTHER_SHA}"
    (tmp_path / "ev" / "sha256" / OTHER_SHA[:2]).mkdir()
    os.mkfifo(tmp_path / "ev" / fifo_key)
    with pytest.raises(EvidenceUnreadable, match="not a regular file"):
        store.fingerprint(store.uri_for(fifo_key))
    with pytest.raises(EvidenceMissing, match="no such evidence object"):
        store.fingerprint(store.uri_for(f"sha256/00/{'0' * 64}"))


def test_served_keys_follow_presentations_rule():
    from argusic.attempts.presentation import served_key
    from argusic.core.evidence import served_key_for

    for attempt_id in ("2026-12.board.readme-runner.wavgen.a1.r2", "legacy id/with:odd@chars+"):
        for kind in ("log", "recording"):
            data = f"{attempt_id}{kind}".encode()
            assert served_key(attempt_id, kind, data) == served_key_for(
                attempt_id, kind, hashlib.sha256(data).hexdigest()
            )


@pytest.mark.parametrize(
    ("where", "uri", "problem"),
    [
        ("evidence.log.uri", "file:///etc/passwd", "outside the evidence store"),
        ("evidence.log.uri", "https://example.com/sha256/aa/x", "outside the evidence store"),
        ("evidence.recording.uri", "{store}/../../etc/passwd", "'..' segment"),
        ("evidence.report.uri", "{store}/sha256/{o2}/{other}", "is not 'sha256/"),
        ("evidence.log.uri", "{store}_evil/sha256/{s2}/{sha}", "outside the evidence store"),
        ("evidence.log.uri", "{store}//sha256/{s2}/{sha}", "absolute key"),
        ("presentation.log.uri", "{store}/sha256/{s2}/{sha}", "is not 'served/"),
        ("presentation.log.uri", "{store}/served/2026-12.board.codex.wavgen.a1/{sha}/log.txt", "is not"),
        ("presentation.recording.uri", "{store}/served/{aid}/{sha}/log.txt", "is not"),
    ],
)
def test_record_evidence_problems_name_the_field(isolated, record_doc, where, uri, problem):
    from argusic.core.evidence import record_evidence_problems, served_key_for
    from argusic.core.record import parse_record
    from argusic.core.settings import evidence_url

    store = evidence_url()
    section, kind, _ = where.split(".")
    ref = record_doc["evidence"][kind if kind != "recording" or section == "evidence" else "recording"]
    sha = ref["sha256"]
    record_doc["presentation"] = {
        "masking_applied": False, "withheld": False, "withheld_reason": None, "private_key_sha256": [],
        "log": {"sha256": sha, "bytes": 3,
                "uri": f"{store}/{served_key_for(record_doc['attempt_id'], 'log', sha)}"},
        "recording": {"sha256": sha, "bytes": 3,
                      "uri": f"{store}/{served_key_for(record_doc['attempt_id'], 'recording', sha)}"},
    }  # fmt: skip
    assert record_evidence_problems(parse_record(record_doc)) == []
    target = record_doc[section][kind]
    target["uri"] = uri.format(
        store=store, sha=sha, s2=sha[:2], other=OTHER_SHA, o2=OTHER_SHA[:2], aid=record_doc["attempt_id"]
    )
    problems = record_evidence_problems(parse_record(record_doc))
    assert len(problems) == 1 and problems[0][0] == where and problem in problems[0][1], problems
