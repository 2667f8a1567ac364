"""The rounds' fast paths (issue 27) find what the plain definitions find.

* encoded runs: base64 and hex runs located with `maximal_runs` (numpy) and hex runs read inside the
  base64 runs give the same decoded bytes as the regular-expression definition (every maximal run of
  24 base64 characters, of 32 hex digits, decoded at every alignment);
* escape tokens (``\\uXXXX``, ``%XX``, ``&#...;``): candidates whose next byte cannot go on a token
  are not matched; the tokens found are every token of the text;
* end to end: a token printed only in base64 (each byte alignment, standard and url-safe) or in hex,
  placed across window and segment borders, is masked.
"""

from __future__ import annotations

import base64
import binascii
import re

import pytest
from argusic.masking import engine, mask_log_file, stream, views
from argusic.masking.engine import B64_MIN_RUN, HEX_MIN_RUN, decoded_runs
from argusic.masking.values import STANDARD_ALPHABET
from hypothesis import given, settings
from hypothesis import strategies as st

_B64_RUN = re.compile(rb"[A-Za-z0-9+/_\-]{%d,}" % B64_MIN_RUN)
_HEX_RUN = re.compile(rb"[0-9a-fA-F]{%d,}" % HEX_MIN_RUN)


def _reference_decoded_runs(data: bytes) -> bytes:
    """The definition: every greedy base64 run holding a capital and a non-hex character (4
    alignments) and every greedy hex run (2 alignments), decoded as the rounds decoded them."""
    b64 = [r for r in _B64_RUN.findall(data) if re.search(rb"[A-Z]", r) and re.search(rb"[^0-9a-fA-F]", r)]
    hexes = _HEX_RUN.findall(data)
    out = []
    if b64:
        runs = [r.translate(STANDARD_ALPHABET) for r in b64]
        runs = [r + b"A" * (-len(r) % 4 + 4) for r in runs]
        for k in range(4):
            before, after = b"A" * ((4 - k) % 4), b"A" * k
            out.append(binascii.a2b_base64(before + (after + before).join(runs) + after))
    if hexes:
        runs = [r + b"0" * (len(r) % 2 + 4) for r in hexes]
        out.append(binascii.unhexlify(b"".join(runs)))
        out.append(binascii.unhexlify(b"0" + b"00".join(runs) + b"0"))
    return b"\n".join(out)


# Text made of pieces that make long runs likely: hex, base64 of both alphabets, separators.
_PIECES = st.sampled_from(
    [b"0123456789abcdef", b"DEADBEEF", b"Zm9vYmFy", b"ab+/", b"-_x", b"Q", b" ", b"\n", b"=", b".", b"\x00"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.binary(max_size=8)), max_size=60))
def test_decoded_runs_are_the_greedy_runs_decoded(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    assert decoded_runs(data) == _reference_decoded_runs(data)


def _every_token(data: bytes) -> list[int]:
    return [p for p in range(len(data)) if views._DECODE_TOKEN.match(data, p)]


_ESCAPY = st.sampled_from(
    [
        b"\\",
        b"%",
        b"&",
        b"u00e9",
        b"x41",
        b"41",
        b"zz",
        b"#65;",
        b"#x41;",
        b"amp;",
        b"n",
        b"/",
        b"]",
        b" ",
        b"\n",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_ESCAPY, st.binary(max_size=4)), max_size=40))
def test_decode_token_positions_are_every_token(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    found = views._decode_token_positions(data).tolist()
    every = _every_token(data)
    if len(every) <= len(data) // 64:  # the sparse path: exactly every token
        assert found == every
    # Either path: the same lines hold a token (what the decoded views are made of).
    lines = lambda positions: {data.count(b"\n", 0, p) for p in positions}  # noqa: E731
    assert lines(found) == lines(every)


def test_progress_percentages_are_not_escape_tokens() -> None:
    data = b"[ 45%] Building CXX object\n[100%] done %41 \\u0041 &#65; &amp; 50%\n" * 100
    assert views._decode_token_positions(data).tolist() == _every_token(data)


TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a format nobody named


def _encodings(prefix: bytes) -> dict[str, bytes]:
    raw = prefix + TOKEN.encode()
    return {
        "base64": base64.b64encode(raw),
        "base64url": base64.urlsafe_b64encode(b"\xfb\xff" + raw),
        "hex": raw.hex().encode(),
        "HEX": raw.hex().upper().encode(),
    }


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> int:
    """Segments of 64 KiB read with 16 KiB of context, windows of 32 KiB: many boundaries."""
    monkeypatch.setattr(stream, "SEGMENT", 64 << 10)
    monkeypatch.setattr(engine, "CONTEXT", 16 << 10)
    monkeypatch.setattr(engine, "WINDOW", 32 << 10)
    monkeypatch.setattr(engine, "OVERLAP", 4 << 10)
    return 64 << 10


@pytest.mark.parametrize("alignment", [0, 1, 2])
def test_a_token_printed_only_encoded_is_masked_across_borders(
    small_windows: int, alignment: int, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each encoding of the token (after 0, 1 or 2 bytes: every base64 alignment) on a segment border,
    and again every 7,001 bytes (window borders at every offset), in a build log."""
    monkeypatch.setenv("ARGUSIC_MASK_WORKERS", "1")
    prefix = b"u:"[:alignment]
    forms = _encodings(prefix)
    filler = b"".join(b"[%06d] compiling module_%d.c ... ok\n" % (i, i % 97) for i in range(20000))
    data = bytearray(filler[: small_windows * 4])
    places = [k * small_windows for k in range(1, 4)] + list(range(3000, len(data) - 400, 7001))
    names = sorted(forms)
    for n, middle in enumerate(places):
        encoded = forms[names[n % len(names)]]
        line = b" blob " + encoded + b" \n"
        at = middle - len(line) // 2
        data[at : at + len(line)] = line
    src, dst = tmp_path / "build.log", tmp_path / "served.log"
    src.write_bytes(bytes(data))
    result = mask_log_file(src, dst, [], workdir=tmp_path / "work")
    assert not result.withheld, result.reason
    served = dst.read_bytes()
    for name, encoded in forms.items():
        assert encoded not in served, name
    assert served.count(b"[masked]") >= len(places)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([b"\xff", b"\xff\xff", b"ab", b"\x1b[31m", b"c", b"\n", b""]), max_size=30),
    st.data(),
)
def test_the_events_view_maps_as_the_runs_removed(pieces: list[bytes], draw) -> None:
    """A recording stream's events view (bytes.split) has the text and the raw offsets of the view
    made by removing each run of 0xFF with the regular expression."""
    raw = views.View("raw", b"".join(pieces))
    fast = views._events_view(raw)
    slow, _ = views._stage(raw, "events", views._EVENT_SPLIT)
    assert fast.data == slow.data
    size = len(fast.data)
    if size and slow is not raw:
        spans = draw.draw(
            st.lists(st.tuples(st.integers(0, size - 1), st.integers(1, size)).map(sorted), max_size=10)
        )
        spans = [(a, b) for a, b in spans if b > a] or [(0, size)]
        assert fast.raw_spans(spans) == slow.raw_spans(spans)
        assert [fast.raw_span(a, b) for a, b in spans] == [slow.raw_span(a, b) for a, b in spans]
