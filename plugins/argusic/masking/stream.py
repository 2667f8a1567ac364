"""Masking jobs: rounds over a stream until a round finds nothing, in memory or file → file."""

from __future__ import annotations

import contextlib
import io
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from argusic.masking.engine import MaskState, run_round


class Buffer:
    """One intermediate stream: a file in the job's folder, or bytes in memory."""

    def __init__(self, path: Path | None = None, data: bytes | None = None) -> None:
        self.path = path
        self._data = data
        self._writer: BinaryIO | None = None

    def writer(self) -> BinaryIO:
        if self.path is not None:
            self._writer = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        else:
            self._writer = io.BytesIO()
        return self._writer

    def close(self) -> None:
        if self._writer is None:
            return
        if self.path is None:
            self._data = self._writer.getvalue()
        self._writer.close()
        self._writer = None

    def open(self) -> BinaryIO:
        if self.path is not None:
            return open(self.path, "rb")  # noqa: SIM115 - the caller closes it
        return io.BytesIO(self._data or b"")

    @property
    def data(self) -> bytes:
        if self.path is not None:
            return self.path.read_bytes()
        return self._data or b""

    def size(self) -> int:
        return self.path.stat().st_size if self.path is not None else len(self._data or b"")

    def discard(self) -> None:
        self.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
        self._data = None


class Workspace:
    """Where a job keeps its intermediate streams: a folder (file → file jobs) or memory."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)

    def new(self, name: str) -> Buffer:
        if self.folder is None:
            return Buffer()
        return Buffer(self.folder / f"{name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def mask_rounds(
    source: Buffer, state: MaskState, workspace: Workspace, *, banners: bool, name: str = "round"
) -> tuple[Buffer | None, list[str]]:
    """Mask `source` until a full round finds nothing (at most max_rounds redacting rounds, then one
    verification round). Returns (the clean stream, []) or (None, what was still found)."""
    current = source
    policy = state.policy
    for round_no in range(policy.max_rounds):
        out = workspace.new(f"{name}{round_no}")
        try:
            with current.open() as src:
                report = run_round(src, out.writer(), state, banners=banners and round_no == 0)
        finally:
            out.close()
        state.stats.rounds = max(state.stats.rounds, round_no + 1)
        if state.overflow:
            out.discard()
            return None, [f"more than {policy.max_known_values} distinct credential values"]
        if report.redactions == 0:
            if report.banner_spans:
                _drop(current, source)
                return out, []  # banners hidden, nothing else found
            out.discard()
            return current, []
        _drop(current, source)
        current = out
    with current.open() as src:
        report = run_round(src, None, state, banners=False)
    if report.redactions == 0 and not state.overflow:
        return current, []
    findings = list(state.findings) or ["too many distinct credential values"]
    _drop(current, source)
    return None, findings


def _drop(buffer: Buffer, keep: Buffer) -> None:
    if buffer is not keep:
        buffer.discard()


def find_only(source: Buffer, state: MaskState) -> list[str]:
    """What a stream still shows (descriptions only); empty when nothing is found."""
    with source.open() as src:
        report = run_round(src, None, state, banners=False)
    return list(state.findings) if report.redactions else []


def segments(stream: BinaryIO, separator: bytes = b"\xff") -> Iterator[bytes]:
    """The pieces of a stream ended by `separator` (a recording stream: one piece per event)."""
    rest = b""
    while chunk := stream.read(1 << 20):
        parts = (rest + chunk).split(separator)
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest


@contextlib.contextmanager
def opened(buffer: Buffer) -> Iterator[BinaryIO]:
    handle = buffer.open()
    try:
        yield handle
    finally:
        handle.close()
