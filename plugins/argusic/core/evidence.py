"""The evidence layer: raw, permanent, content-addressed, write-once object storage.

One code path for the embedded default (`file://…/evidence_store`) and S3 (`s3://bucket/prefix`),
through fsspec. S3 endpoints and credentials come from the standard AWS variables
(AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, …), so MinIO and moto's server work unchanged.

Keys are content hashes, in one of two layouts:

    sha256/<sha[:2]>/<sha>                                raw evidence (log, recording, report)
    served/<attempt id, quoted>/<sha>/log.txt|recording.cast   served (masked) copies

The store refuses a key that could leave its root (absolute, `..` or `.` segments, empty segments,
backslashes, control or other unexpected characters) and a key that does not name its content (a
raw key whose sha is not the bytes', a served key without the bytes' sha): `EvidenceKeyError`.
`record_evidence_problems` applies the same rules to a run record's URIs before it is loaded.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import quote

from fsspec.core import url_to_fs

from argusic.core.settings import evidence_url

if TYPE_CHECKING:
    from argusic.core.record import RunRecord

CHUNK = 1 << 20
RAW_PREFIX = "sha256"
SERVED_PREFIX = "served"
SERVED_NAMES = {"log": "log.txt", "recording": "recording.cast"}
MAX_KEY_CHARS = 1024
# What a key segment may hold: the content-hash layouts above (a served copy's attempt id is quoted
# with these characters left as they are, anything else as %XX).
_KEY_SEGMENT = re.compile(r"[A-Za-z0-9._~@+:%=-]+")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class EvidenceConflict(RuntimeError):
    """A second write of different bytes under one key: refused, the stored object is kept."""


class EvidenceMissing(FileNotFoundError):
    pass


class EvidenceUnreadable(EvidenceMissing):
    """Something is at the key but it cannot be read as an object: not a regular file (a link, a
    folder, a FIFO), or no permission."""


class EvidenceKeyError(ValueError):
    """A key or URI that escapes the store's root, or that does not name the bytes it holds."""


def key_problem(key: str) -> str | None:
    """Why `key` cannot name an object inside the store's root (None when it can)."""
    if not isinstance(key, str) or not key:
        return "empty key"
    if len(key) > MAX_KEY_CHARS:
        return f"key longer than {MAX_KEY_CHARS} characters"
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        return "control character in the key"
    if key.startswith("/"):
        return "absolute key"
    if "\\" in key:
        return "backslash in the key"
    segments = key.split("/")
    if ".." in segments:
        return "'..' segment in the key"
    if "." in segments:
        return "'.' segment in the key"
    if "" in segments:
        return "empty segment in the key"
    for segment in segments:
        if not _KEY_SEGMENT.fullmatch(segment):
            bad = next(c for c in segment if not _KEY_SEGMENT.fullmatch(c))
            return f"character {bad!r} not allowed in a key"
    return None


def raw_key(sha256: str) -> str:
    """The content address of raw evidence: `sha256/<sha[:2]>/<sha>`."""
    return f"{RAW_PREFIX}/{sha256[:2]}/{sha256}"


def served_segment(attempt_id: str) -> str:
    """An attempt id as one path segment of a served copy's key (the rule presentation.served_key
    follows; the tests hold the two together)."""
    return quote(attempt_id, safe="._-@+:")


def served_key_for(attempt_id: str, kind: str, sha256: str) -> str:
    """`served/<quoted attempt id>/<sha256>/log.txt|recording.cast`."""
    if kind not in SERVED_NAMES:
        raise ValueError(f"no served copy of {kind!r}")
    return f"{SERVED_PREFIX}/{served_segment(attempt_id)}/{sha256}/{SERVED_NAMES[kind]}"


def content_key_problem(key: str, sha256: str) -> str | None:
    """Why `key` cannot hold bytes whose sha256 is `sha256` (None when it can)."""
    if problem := key_problem(key):
        return problem
    segments = key.split("/")
    if segments[0] == RAW_PREFIX:
        if key != raw_key(sha256):
            return f"a raw key must be {raw_key(sha256)!r}, the address of its bytes"
        return None
    if segments[0] == SERVED_PREFIX:
        if len(segments) != 4 or segments[3] not in SERVED_NAMES.values():
            return "a served key is served/<attempt id>/<sha256>/log.txt|recording.cast"
        if segments[2] != sha256:
            return f"a served key must carry the sha256 of its bytes ({sha256})"
        return None
    return f"not a key of this store (keys start with {RAW_PREFIX}/ or {SERVED_PREFIX}/)"


def uri_problem(uri: str, store_url: str, expected_key: str) -> str | None:
    """Why `uri` is not `expected_key` inside the store at `store_url` (None when it is)."""
    base = store_url.rstrip("/")
    if not isinstance(uri, str) or not uri.startswith(base + "/"):
        return f"outside the evidence store {base}"
    key = uri[len(base) + 1 :]
    if problem := key_problem(key):
        return problem
    if key != expected_key:
        return f"key {key!r} is not {expected_key!r}, the key of its sha256"
    return None


def record_evidence_problems(record: RunRecord, store_url: str | None = None) -> list[tuple[str, str]]:
    """(field, problem) for every evidence URI of `record` that is not where its sha256 puts it in
    the store (`ARGUSIC_EVIDENCE_URL` by default): raw refs at `sha256/<sha[:2]>/<sha>`, served copies
    at `served/<the record's attempt id>/<sha>/<name>`."""
    url = store_url or evidence_url()
    problems = []
    for kind in ("log", "recording", "report", "display_video", "session_log"):
        ref = getattr(record.evidence, kind)
        if ref is not None and (problem := uri_problem(ref.uri, url, raw_key(ref.sha256))):
            problems.append((f"evidence.{kind}.uri", problem))
    if record.repair is not None:  # a repair attempt's patch and grade are raw evidence too
        for kind in ("patch", "grade"):
            ref = getattr(record.repair, kind)
            if ref is not None and (problem := uri_problem(ref.uri, url, raw_key(ref.sha256))):
                problems.append((f"repair.{kind}.uri", problem))
    if record.presentation is not None:
        for kind in SERVED_NAMES:
            ref = getattr(record.presentation, kind)
            expected = None if ref is None else served_key_for(record.attempt_id, kind, ref.sha256)
            if ref is not None and (problem := uri_problem(ref.uri, url, expected)):
                problems.append((f"presentation.{kind}.uri", problem))
    return problems


@dataclass(frozen=True)
class StoredObject:
    sha256: str
    uri: str
    bytes: int

    def as_ref(self) -> dict:
        return {"sha256": self.sha256, "uri": self.uri, "bytes": self.bytes}


def sha256_of_file(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


class EvidenceStore:
    """Write-once object store rooted at a URL; keys are `sha256/<2 hex>/<64 hex>`."""

    def __init__(self, url: str | None = None) -> None:
        self.url = (url or evidence_url()).rstrip("/")
        self.fs, self.root = url_to_fs(self.url)
        self.protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        if self.protocol == "file":
            self.fs.makedirs(self.root, exist_ok=True)

    # -- keys and URIs ------------------------------------------------------------------------
    def key_for(self, sha256: str) -> str:
        return raw_key(sha256)

    def uri_for(self, key: str) -> str:
        return f"{self.url}/{key}"

    def _path(self, key: str) -> str:
        if problem := key_problem(key):
            raise EvidenceKeyError(f"evidence key {key!r}: {problem}")
        return f"{self.root}/{key}"

    def key_of_uri(self, uri: str) -> str:
        if not isinstance(uri, str) or not uri.startswith(self.url + "/"):
            raise EvidenceKeyError(f"{uri} is not in this store ({self.url})")
        key = uri[len(self.url) + 1 :]
        if problem := key_problem(key):
            raise EvidenceKeyError(f"{uri}: {problem}")
        return key

    def _check_content_key(self, key: str, sha: str) -> None:
        if problem := content_key_problem(key, sha):
            raise EvidenceKeyError(f"evidence key {key!r} refused for bytes of sha256 {sha}: {problem}")

    # -- writes -------------------------------------------------------------------------------
    def put_bytes(self, key: str, data: bytes) -> StoredObject:
        """Store bytes under key, once. The same bytes again is a no-op; different bytes are refused."""
        sha = hashlib.sha256(data).hexdigest()
        path = self._path(key)
        if self._already_holds(key, sha):
            return StoredObject(sha, self.uri_for(key), len(data))
        self._check_content_key(key, sha)  # a key names its content (checked once nothing is there)
        parent = path.rsplit("/", 1)[0]
        self.fs.makedirs(parent, exist_ok=True)
        tmp = f"{path}.partial"
        with self.fs.open(tmp if self.protocol == "file" else path, "wb") as handle:
            handle.write(data)
        if self.protocol == "file":
            # Atomic on the local filesystem: a reader never sees half an object.
            self.fs.mv(tmp, path)
            Path(path).chmod(0o444)
        return StoredObject(sha, self.uri_for(key), len(data))

    def put_file(self, path: Path, key: str | None = None) -> StoredObject:
        """Land one evidence file, fingerprinted on arrival, under its content address (or `key`).

        Streams: memory stays at one chunk whatever the file's size. On the local root the bytes are
        hashed while they are copied into a partial object that is renamed into place; on S3 the file
        is hashed first, then uploaded."""
        path = Path(path)
        if self.protocol != "file":
            sha, size = sha256_of_file(path)
            key = self.key_for(sha) if key is None else key
            if self._already_holds(key, sha):
                return StoredObject(sha, self.uri_for(key), size)
            self._check_content_key(key, sha)
            self.fs.makedirs(self._path(key).rsplit("/", 1)[0], exist_ok=True)
            self.fs.put_file(str(path), self._path(key))
            return StoredObject(sha, self.uri_for(key), size)
        partial_dir = Path(self.root) / ".partial"
        partial_dir.mkdir(parents=True, exist_ok=True)
        partial = partial_dir / f"{os.getpid()}-{uuid.uuid4().hex}"
        try:
            digest, size = hashlib.sha256(), 0
            with open(path, "rb") as src, open(partial, "wb") as dst:
                while chunk := src.read(CHUNK):
                    digest.update(chunk)
                    dst.write(chunk)
                    size += len(chunk)
            sha = digest.hexdigest()
            key = self.key_for(sha) if key is None else key
            if self._already_holds(key, sha):
                return StoredObject(sha, self.uri_for(key), size)
            self._check_content_key(key, sha)
            final = Path(self._path(key))
            final.parent.mkdir(parents=True, exist_ok=True)
            partial.chmod(0o444)
            partial.replace(final)  # atomic: a reader never sees half an object
            return StoredObject(sha, self.uri_for(key), size)
        finally:
            partial.unlink(missing_ok=True)

    def _already_holds(self, key: str, sha: str) -> bool:
        """True when `key` holds these bytes already; EvidenceConflict when it holds others."""
        path = self._path(key)
        if not self.fs.exists(path):
            return False
        stored = self._sha256_at(path)
        if stored != sha:
            raise EvidenceConflict(
                f"{self.uri_for(key)} already holds different bytes (sha256 {stored}); refusing to "
                f"overwrite with sha256 {sha}"
            )
        return True

    # -- reads and audit ----------------------------------------------------------------------
    def _open_stored(self, uri: str) -> IO[bytes]:
        """Open a stored object for reading. On the local root the object itself must be a regular
        file, opened without following a link (EvidenceMissing for anything else)."""
        path = self._path(self.key_of_uri(uri))
        if self.protocol != "file":
            if not self.fs.exists(path):
                raise EvidenceMissing(f"{uri}: no such evidence object")
            return self.fs.open(path, "rb")
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            raise EvidenceMissing(f"{uri}: no such evidence object") from None
        except OSError as err:
            raise EvidenceUnreadable(f"{uri}: not a readable evidence object ({err.strerror})") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise EvidenceUnreadable(f"{uri}: not a regular file")
        return os.fdopen(fd, "rb")

    def read(self, uri: str) -> bytes:
        """A whole object in memory: for small objects only (the audit and copies stream)."""
        with self._open_stored(uri) as handle:
            return handle.read()

    def copy_to_file(self, uri: str, dest: Path) -> tuple[str, int]:
        """Stream one stored object into a local file; returns (sha256, bytes) of what was copied."""
        digest, size = hashlib.sha256(), 0
        with self._open_stored(uri) as src, open(dest, "wb") as dst:
            while chunk := src.read(CHUNK):
                digest.update(chunk)
                dst.write(chunk)
                size += len(chunk)
        return digest.hexdigest(), size

    def fingerprint(self, uri: str) -> tuple[str, int]:
        """(sha256, bytes) of a stored object, streamed: memory stays at one chunk."""
        digest, size = hashlib.sha256(), 0
        with self._open_stored(uri) as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
        return digest.hexdigest(), size

    def _sha256_at(self, path: str) -> str:
        digest = hashlib.sha256()
        with self.fs.open(path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
        return digest.hexdigest()

    def verify(self, ref: dict) -> bool:
        """True when the stored bytes still match the fingerprint recorded for them."""
        try:
            return self.fingerprint(ref["uri"])[0] == ref["sha256"]
        except EvidenceMissing:
            return False


def open_store(url: str | None = None) -> EvidenceStore:
    return EvidenceStore(url)


__all__ = [
    "EvidenceConflict",
    "EvidenceKeyError",
    "EvidenceMissing",
    "EvidenceStore",
    "EvidenceUnreadable",
    "StoredObject",
    "content_key_problem",
    "key_problem",
    "open_store",
    "raw_key",
    "record_evidence_problems",
    "served_key_for",
    "uri_problem",
]
