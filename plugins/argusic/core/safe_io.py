"""Hostile input and output, one way each: atomic writes, capped reads without links, strict JSON."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class Unreadable(Exception):
    """A file or folder we will not read; the message says why (link, size, kind)."""


def read_capped(path: Path, limit: int) -> bytes:
    """A regular file's bytes, never through a link, refused unread over ``limit``."""
    try:
        fd = os.open(path, _OPEN)
    except FileNotFoundError:
        raise Unreadable(f"{path.name} is missing") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise Unreadable(f"{path.name} is a symbolic link: not followed") from None
        raise Unreadable(f"{path.name} cannot be read: {err.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{path.name} is not a regular file")
        if info.st_nlink != 1:
            raise Unreadable(f"{path.name} has {info.st_nlink} hard links: not read")
        if info.st_size > limit:
            raise Unreadable(f"{path.name} is {info.st_size} bytes, over the {limit}-byte cap: not read")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise Unreadable(f"{path.name} grew past the {limit}-byte cap while read: not read")
    return data


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise ValueError(f"duplicate key {key[:80]!r}")
        doc[key] = value
    return doc


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class UnsafeDocument(ValueError):
    """A JSON document this pipeline will not read; the message names the file and why."""


def read_json_document(path: Path, limit: int, what: str = "document") -> dict[str, Any]:
    """One JSON object from ``path``: at most ``limit`` bytes (checked before reading), never through
    a link, strict UTF-8, strict JSON (NaN/Infinity and duplicate keys refused). ``what`` names the
    document in the size and link messages (they come from the run-record reader)."""
    # deferred: the record model pulls pydantic, which readers of the capped reader alone (the DAG
    # files' pick lists, parsed every few minutes) must not load
    from argusic.core.record import RecordError, read_record_bytes

    try:
        data = read_record_bytes(path, limit)
    except RecordError as err:
        raise UnsafeDocument(str(err).replace("a run record is", f"a {what} is")) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UnsafeDocument(f"{path}: not UTF-8 (byte {err.start} is {data[err.start]:#04x})") from None
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, ValueError) as err:
        raise UnsafeDocument(f"{path}: not strict JSON: {err}") from None
    except RecursionError:
        raise UnsafeDocument(f"{path}: not JSON this pipeline reads: nested too deeply") from None
    if not isinstance(doc, dict):
        raise UnsafeDocument(f"{path}: a JSON object is expected")
    return doc


# Unicode bidirectional controls: embeddings and overrides (U+202A-U+202E), isolates (U+2066-U+2069),
# the directional marks (U+200E, U+200F) and the Arabic letter mark (U+061C). Invisible, they reorder
# the text around them, so quoted text could show a reader something else than what it holds
# ("Trojan Source"); they are shown as their escape instead.
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


def visible_bidi(text: str) -> str:
    """``text`` with every bidirectional control replaced by its visible escape (U+202E becomes the
    six characters ``\\u202e``); any other character, non-Latin scripts and emoji included, unchanged.
    Every place that shows quoted untrusted text applies it (review forms, site pages, report page)."""
    if not _BIDI.search(text):  # the common case: no copy
        return text
    return _BIDI.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` (or exact bytes) to ``path`` through a temporary file and a rename, so a reader
    sees the old or the new file, never half of one; the parent is made, and an identical file is left
    alone (mtime kept)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    exact = isinstance(text, bytes)
    if path.exists() and (path.read_bytes() if exact else path.read_text()) == text:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if exact:
        tmp.write_bytes(text)
    else:
        tmp.write_text(text)
    tmp.replace(path)


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on the file `path` (made, with its folder, when missing) for the block:
    one process at a time across the host, released when the block ends or the process dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def kept_secret(env_name: str, path: Path, size: int = 32) -> bytes:
    """A secret key that is never published: the variable `env_name` (hex, at least `size` bytes),
    else the key file `path`, made once (0600, in a 0700 folder; a process that loses the race to make
    it reads the winner's). ValueError naming the variable or file when the key is unusable."""
    text = os.environ.get(env_name)
    if text:
        try:
            key = bytes.fromhex(text.strip())
        except ValueError:
            raise ValueError(f"{env_name} is not hex") from None
        if len(key) < size:
            raise ValueError(f"{env_name} is shorter than {size} bytes")
        return key
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: read theirs
            pass
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_hex(size) + "\n")
    try:
        key = bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a usable key ({err})") from None
    if len(key) < size:
        raise ValueError(f"{path}: key shorter than {size} bytes")
    return key
