"""The evidence layer: raw, permanent, content-addressed, write-once object storage.

One code path for the embedded default (`file://…/evidence_store`) and S3 (`s3://bucket/prefix`),
through fsspec. S3 endpoints and credentials come from the standard AWS variables
(AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, …), so MinIO and moto's server work unchanged.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from fsspec.core import url_to_fs

from argusic.settings import evidence_url

CHUNK = 1 << 20


class EvidenceConflict(RuntimeError):
    """A second write of different bytes under one key: refused, the stored object is kept."""


class EvidenceMissing(FileNotFoundError):
    pass


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
        return f"sha256/{sha256[:2]}/{sha256}"

    def uri_for(self, key: str) -> str:
        return f"{self.url}/{key}"

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}"

    def key_of_uri(self, uri: str) -> str:
        if not uri.startswith(self.url + "/"):
            raise ValueError(f"{uri} is not in this store ({self.url})")
        return uri[len(self.url) + 1 :]

    # -- writes -------------------------------------------------------------------------------
    def put_bytes(self, key: str, data: bytes) -> StoredObject:
        """Store bytes under key, once. The same bytes again is a no-op; different bytes are refused."""
        sha = hashlib.sha256(data).hexdigest()
        path = self._path(key)
        if self.fs.exists(path):
            stored = self._sha256_at(path)
            if stored != sha:
                raise EvidenceConflict(
                    f"{self.uri_for(key)} already holds different bytes (sha256 {stored}); refusing to "
                    f"overwrite with sha256 {sha}"
                )
            return StoredObject(sha, self.uri_for(key), len(data))
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
            key = key or self.key_for(sha)
            if self._already_holds(key, sha):
                return StoredObject(sha, self.uri_for(key), size)
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
            key = key or self.key_for(sha)
            if self._already_holds(key, sha):
                return StoredObject(sha, self.uri_for(key), size)
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
    def read(self, uri: str) -> bytes:
        path = self._path(self.key_of_uri(uri))
        if not self.fs.exists(path):
            raise EvidenceMissing(f"{uri}: no such evidence object")
        with self.fs.open(path, "rb") as handle:
            return handle.read()

    def copy_to_file(self, uri: str, dest: Path) -> tuple[str, int]:
        """Stream one stored object into a local file; returns (sha256, bytes) of what was copied."""
        path = self._path(self.key_of_uri(uri))
        if not self.fs.exists(path):
            raise EvidenceMissing(f"{uri}: no such evidence object")
        digest, size = hashlib.sha256(), 0
        with self.fs.open(path, "rb") as src, open(dest, "wb") as dst:
            while chunk := src.read(CHUNK):
                digest.update(chunk)
                dst.write(chunk)
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
        path = self._path(self.key_of_uri(ref["uri"]))
        if not self.fs.exists(path):
            return False
        return self._sha256_at(path) == ref["sha256"]


def open_store(url: str | None = None) -> EvidenceStore:
    return EvidenceStore(url)


__all__ = ["EvidenceConflict", "EvidenceMissing", "EvidenceStore", "StoredObject", "open_store"]
