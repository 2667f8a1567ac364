"""Masking jobs: rounds over a stream until a round finds nothing, in memory or file → file."""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import shutil
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from argusic.masking.engine import MaskState, RoundReport, run_round
from argusic.masking.policy import MaskStats


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


SEGMENT = 64 << 20  # a round over a bigger file is cut into segments of this size


def mask_workers() -> int:
    """ARGUSIC_MASK_WORKERS: processes that mask the segments of a big file (default: 2, or 1 on a
    one-core machine). The served bytes do not depend on it: each segment starts from the state the
    round started with, whatever process runs it."""
    explicit = os.environ.get("ARGUSIC_MASK_WORKERS")
    if explicit:
        return max(1, int(explicit))
    return max(1, min(2, os.cpu_count() or 1))


@dataclass
class _SegmentResult:
    part: str
    report: RoundReport
    values: list[bytes]  # known values found, in the order they were found
    generated: list[bytes]
    stats: MaskStats
    findings: dict[str, None]
    overflow: bool


def _segment(job: tuple) -> _SegmentResult:
    """One segment of a round, from the state the round started with (a worker process runs it)."""
    policy, known, generated, source, part, start, stop, banners = job
    state = MaskState(policy)
    for value in known:
        state.known.add(value)
    for value in generated:
        state.generated.add(value)
    with open(source, "rb") as src, open(part, "wb") as dst:
        report = run_round(src, dst, state, banners=banners, start=start, stop=stop)
    return _SegmentResult(
        part,
        report,
        state.known.values[len(known) :],
        state.generated.values[len(generated) :],
        state.stats,
        state.findings,
        state.overflow,
    )


def _merge_stats(into: MaskStats, other: MaskStats) -> None:
    into.credentials_masked += other.credentials_masked
    for block in other.key_blocks:
        into.add_key(block)
    into.banner_lines_hidden += other.banner_lines_hidden
    into.machine_fields_hidden += other.machine_fields_hidden
    into.banners |= other.banners
    into.detector_types |= other.detector_types
    into.values_not_tracked += other.values_not_tracked


def run_round_segments(
    source: Buffer, out: Buffer | None, state: MaskState, workspace: Workspace, *, banners: bool
) -> RoundReport:
    """One round over a stream: in one pass when it is small (or in memory), else segment by
    segment (in worker processes), each segment's output appended in order."""
    size = source.size()
    if source.path is None or size <= SEGMENT or workspace.folder is None:
        with source.open() as src:
            dst = out.writer() if out is not None else None
            try:
                return run_round(src, dst, state, banners=banners)
            finally:
                if out is not None:
                    out.close()
    bounds = [(a, min(size, a + SEGMENT)) for a in range(0, size, SEGMENT)]
    known, generated = list(state.known.values), list(state.generated.values)
    jobs = [
        (state.policy, known, generated, str(source.path), str(workspace.new("part").path), a, b, banners)
        for a, b in bounds
    ]
    workers = min(mask_workers(), len(jobs))
    if workers > 1:
        # Forked workers inherit the compiled rules: nothing is compiled or loaded again.
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(_segment, jobs))
    else:
        results = [_segment(job) for job in jobs]
    report = RoundReport()
    state.findings = {}
    dst = out.writer() if out is not None else None
    try:
        for result in results:  # in segment order: the same values in the same order, any worker count
            if dst is not None:
                with open(result.part, "rb") as part:
                    shutil.copyfileobj(part, dst, 1 << 20)
            Path(result.part).unlink(missing_ok=True)
            report.redactions += result.report.redactions
            report.banner_spans += result.report.banner_spans
            report.size_in += result.report.size_in
            for value in result.values:
                state.known.add(value)
            for value in result.generated:
                state.generated.add(value)
            state.known.overflow |= result.overflow
            _merge_stats(state.stats, result.stats)
            state.findings.update(result.findings)
    finally:
        if out is not None:
            out.close()
    return report


def mask_rounds(
    source: Buffer, state: MaskState, workspace: Workspace, *, banners: bool, name: str = "round"
) -> tuple[Buffer | None, list[str]]:
    """Mask `source` until a full round finds nothing (at most max_rounds redacting rounds, then one
    verification round). Returns (the clean stream, []) or (None, what was still found)."""
    current = source
    policy = state.policy
    for round_no in range(policy.max_rounds):
        out = workspace.new(f"{name}{round_no}")
        report = run_round_segments(current, out, state, workspace, banners=banners and round_no == 0)
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
    report = run_round_segments(current, None, state, workspace, banners=False)
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
