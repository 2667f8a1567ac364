"""A round over a file bigger than a segment runs segment by segment (in worker processes), each read
with context around it: a value straddling a segment boundary, or a window boundary inside a segment,
is still masked, and the served bytes do not depend on how many workers ran."""

from __future__ import annotations

import pytest
from argusic.masking import engine, mask_log_file, stream

KNOWN = "sk-ant-api03-" + "Q7vXk2mP9rT4wY8zB3nC6dF1gH5jK0lL" * 2 + "AA"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a format nobody named


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> int:
    """Segments of 64 KiB read with 16 KiB of context, windows of 32 KiB: many boundaries."""
    monkeypatch.setattr(stream, "SEGMENT", 64 << 10)
    monkeypatch.setattr(engine, "CONTEXT", 16 << 10)
    monkeypatch.setattr(engine, "WINDOW", 32 << 10)
    monkeypatch.setattr(engine, "OVERLAP", 4 << 10)
    return 64 << 10


def _log(segment: int, segments: int) -> bytes:
    """Build-log lines, with each value's middle on a segment boundary (the known value on even
    boundaries, the token on odd ones) and the token every 5,003 bytes besides (window boundaries)."""
    filler = b"".join(b"[%06d] compiling module_%d.c ... ok\n" % (i, i % 97) for i in range(60000))
    data = bytearray(filler[: segment * segments])
    near = lambda at: min(abs(at - k * segment) for k in range(segments + 1)) < 300  # noqa: E731
    places = [(at, TOKEN) for at in range(2000, len(data) - 200, 5003) if not near(at)]
    places += [(k * segment, KNOWN if k % 2 == 0 else TOKEN) for k in range(1, segments)]
    for middle, value in sorted(places):
        line = b" token " + value.encode() + b" \n"
        at = middle - 7 - len(value) // 2
        data[at : at + len(line)] = line
    return bytes(data)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_values_straddling_segment_boundaries_are_masked(
    small_segments: int, workers: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARGUSIC_MASK_WORKERS", workers)
    raw = _log(small_segments, 6)
    for k in range(1, 6):  # each boundary cuts a value
        value = (KNOWN if k % 2 == 0 else TOKEN).encode()
        at = k * small_segments
        assert value in raw[at - len(value) : at + len(value)] and value not in raw[at - len(value) : at]
    src, dst = tmp_path / "build.log", tmp_path / "served.log"
    src.write_bytes(raw)
    result = mask_log_file(src, dst, [KNOWN], workdir=tmp_path / "work")
    assert not result.withheld, result.reason
    served = dst.read_bytes()
    assert KNOWN.encode() not in served and TOKEN.encode() not in served
    assert KNOWN[20:40].encode() not in served and TOKEN[8:30].encode() not in served  # no half left
    assert served.count(b"[masked]") >= raw.count(KNOWN.encode()) + raw.count(TOKEN.encode())


def test_the_served_bytes_do_not_depend_on_the_worker_count(
    small_segments: int, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = _log(small_segments, 5)
    src = tmp_path / "build.log"
    src.write_bytes(raw)
    served = []
    for workers in ("1", "2"):
        monkeypatch.setenv("ARGUSIC_MASK_WORKERS", workers)
        dst = tmp_path / f"served-{workers}.log"
        assert not mask_log_file(src, dst, [KNOWN], workdir=tmp_path / f"work-{workers}").withheld
        served.append(dst.read_bytes())
    assert served[0] == served[1]
