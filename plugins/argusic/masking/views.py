"""Normalised views of a window of raw bytes, each with a map back to raw offsets.

A secret can be shown in many ways that a plain search misses: split by colour codes or other
terminal escapes, overtyped with backspaces, wrapped over lines by a terminal or by `fold`, JSON- or
URL-escaped. Every finder runs on views in which those differences are undone:

* ``raw``: the bytes as they are (finds what lives inside an escape sequence's text, e.g. a title);
* ``stripped``: escape sequences and control characters removed, backspaces applied, lines kept;
* ``joined``: stripped without line breaks (a wrapped token is whole again, at any width);
* ``decoded`` / ``decoded-joined``: stripped with ``\\uXXXX``, ``\\xXX``, ``\\n``, ``\\/``, ``%XX``
  and ``&#...;`` decoded (built only when the window holds such escapes).

Views are built with C-speed operations (``re.split``, ``bytes.join``); the map from view offsets to
raw offsets is only computed when something was found in the window. A span of a view maps back to one
contiguous raw range covering everything in between (escapes and line breaks included).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

# Terminal escapes and control characters removed from the stripped view. 0xFF never occurs in UTF-8:
# it separates the events of a recording's stream (see recording.py) and is removed like a control.
_ESCAPES = (
    rb"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor moves, erase)
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (title etc.), terminated by BEL or ST
    rb"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS / SOS / PM / APC
    rb"|\x1b[ -/]*[0-~]"  # other escape sequences
    rb"|\x1b"  # a lone ESC
    rb"|\xc2\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI (U+009B)
    rb"|[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\xff]+"  # other controls (not \t \n \r, not backspace)
)
_STRIP_SPLIT = re.compile(b"(" + _ESCAPES + b")")
_EVENT_SPLIT = re.compile(rb"(\xff+)")
_LINE_BREAKS = re.compile(rb"([\r\n]+)")
_DECODE_TOKENS = (
    rb"\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}|\\[/\\\"'nrt]"
    rb"|%[0-9a-fA-F]{2}|&#[0-9]{1,7};|&#[xX][0-9a-fA-F]{1,6};|&amp;"
)
_DECODE_SPLIT = re.compile(b"(" + _DECODE_TOKENS + b")")
_HAS_DECODE_TOKEN = re.compile(_DECODE_TOKENS)
_C_ESCAPES = {b"/": b"/", b"\\": b"\\", b'"': b'"', b"'": b"'", b"n": b"\n", b"r": b"\r", b"t": b"\t"}
LINE_BREAK_BYTES = b"\r\n"


def decode_token(token: bytes) -> bytes:
    """The bytes an escape token stands for (UTF-8); the token itself when it is not valid."""
    try:
        if token[:2] in (b"\\u", b"\\x"):
            return chr(int(token[2:], 16)).encode("utf-8", "surrogatepass")
        if token[:1] == b"\\":
            return _C_ESCAPES[token[1:2]]
        if token[:1] == b"%":
            return bytes([int(token[1:], 16)])
        if token == b"&amp;":
            return b"&"
        body = token[2:-1]
        return chr(int(body[1:], 16) if body[:1] in b"xX" else int(body)).encode("utf-8", "surrogatepass")
    except (ValueError, OverflowError, KeyError):
        return token


class Map:
    """View offsets → source offsets. Segment k covers view [vstart[k], vstart[k+1]); an identity
    segment maps char i to sstart[k] + (i - vstart[k]); another maps each char to [sstart[k], send[k])."""

    __slots__ = ("vstart", "sstart", "send", "ident")

    def __init__(self, vstart: list[int], sstart: list[int], send: list[int], ident: list[bool]) -> None:
        self.vstart, self.sstart, self.send, self.ident = vstart, sstart, send, ident

    def char(self, i: int) -> tuple[int, int]:
        k = bisect_right(self.vstart, i) - 1
        if self.ident[k]:
            o = self.sstart[k] + (i - self.vstart[k])
            return o, o + 1
        return self.sstart[k], self.send[k]

    def span(self, i: int, j: int) -> tuple[int, int]:
        """Source range of view chars [i, j) (j > i)."""
        return self.char(i)[0], self.char(j - 1)[1]


def _split_map(pieces: list[bytes], replaced: list[bytes] | None) -> Map:
    """Map of a view made of pieces[0::2] (kept) and `replaced` (for pieces[1::2]) or nothing."""
    src_off = list(accumulate(map(len, pieces), initial=0))
    if replaced is None:  # odd pieces removed
        kept = pieces[0::2]
        vstart = list(accumulate(map(len, kept), initial=0))[:-1]
        sstart = src_off[0::2][: len(kept)]
        send = [s + len(p) for s, p in zip(sstart, kept, strict=True)]
        return Map(vstart, sstart, send, [True] * len(kept))
    view_pieces: list[bytes] = []
    ident: list[bool] = []
    for n, piece in enumerate(pieces):
        if n % 2:
            view_pieces.append(replaced[n // 2])
            ident.append(False)
        else:
            view_pieces.append(piece)
            ident.append(True)
    vstart = list(accumulate(map(len, view_pieces), initial=0))[:-1]
    return Map(vstart, src_off[:-1], src_off[1:], ident)


class View:
    """One normalised view: `data`, and lazily its map to the previous view (`parent`) and to raw."""

    def __init__(self, name: str, data: bytes, parent: View | None = None, build_map=None) -> None:
        self.name = name
        self.data = data
        self.parent = parent
        self._build_map = build_map
        self._map: Map | None = None

    @property
    def map(self) -> Map | None:
        if self._map is None and self._build_map is not None:
            self._map = self._build_map()
            self._build_map = None
        return self._map

    def raw_span(self, i: int, j: int) -> tuple[int, int]:
        """Raw range (window offsets) of view chars [i, j)."""
        view: View | None = self
        while view is not None and view.parent is not None:
            i, j = view.map.span(i, j)
            view = view.parent
        return i, j

    def raw_offset(self, i: int) -> int:
        return self.raw_span(i, i + 1)[0]


def _apply_backspaces(data: bytes) -> tuple[bytes, Map]:
    """Each backspace removes the character before it (a whole UTF-8 sequence), never a line break."""
    segments: list[list[int]] = []  # [start in data, length], in view order
    pos = 0
    for n, part in enumerate(data.split(b"\x08")):
        if n:  # a backspace precedes this part
            while segments and segments[-1][1] == 0:
                segments.pop()
            if segments:
                start, length = segments[-1]
                end = start + length
                if data[end - 1] not in LINE_BREAK_BYTES:
                    cut = 1
                    while cut < length and 0x80 <= data[end - cut] < 0xC0:
                        cut += 1
                    segments[-1][1] -= cut
            pos += 1
        if part:
            segments.append([pos, len(part)])
        pos += len(part)
    segments = [s for s in segments if s[1]]
    text = b"".join(data[s : s + n] for s, n in segments)
    vstart = list(accumulate((n for _, n in segments), initial=0))[:-1]
    return text, Map(vstart, [s for s, _ in segments], [s + n for s, n in segments], [True] * len(segments))


class Views:
    """Every view of one window of raw bytes."""

    def __init__(self, raw: bytes, *, decode: bool = True) -> None:
        self.raw = View("raw", raw)
        source = self.raw
        if b"\xff" in raw:  # event boundaries first: an escape sequence may be split over events
            events = _EVENT_SPLIT.split(raw)
            source = View("events", b"".join(events[0::2]), self.raw, lambda: _split_map(events, None))
        pieces = _STRIP_SPLIT.split(source.data)
        stripped = b"".join(pieces[0::2]) if len(pieces) > 1 else source.data
        base = source
        if len(pieces) > 1:
            base = View("stripped", stripped, source, lambda: _split_map(pieces, None))
        if b"\x08" in stripped:
            text, bs_map = _apply_backspaces(stripped)
            base = View("stripped", text, base, lambda: bs_map)
        if base is self.raw:
            base = View("stripped", raw, self.raw, lambda: Map([0], [0], [len(raw)], [True]))
        elif base is source:
            base = View("stripped", source.data, source, lambda: Map([0], [0], [len(source.data)], [True]))
        self.stripped = base
        self.joined = self._join(base, "joined")
        self.decoded: View | None = None
        self.decoded_joined: View | None = None
        if decode and _HAS_DECODE_TOKEN.search(base.data):
            dec_pieces = _DECODE_SPLIT.split(base.data)
            cache: dict[bytes, bytes] = {}
            replaced = [cache.get(t) or cache.setdefault(t, decode_token(t)) for t in dec_pieces[1::2]]
            data = b"".join(p if n % 2 == 0 else replaced[n // 2] for n, p in enumerate(dec_pieces))
            self.decoded = View("decoded", data, base, lambda: _split_map(dec_pieces, replaced))
            self.decoded_joined = self._join(self.decoded, "decoded-joined")

    @staticmethod
    def _join(view: View, name: str) -> View:
        if b"\r" not in view.data and b"\n" not in view.data:
            return View(name, view.data, view, lambda: Map([0], [0], [len(view.data)], [True]))
        pieces = _LINE_BREAKS.split(view.data)
        return View(name, b"".join(pieces[0::2]), view, lambda: _split_map(pieces, None))

    def all(self) -> list[View]:
        """Distinct views, raw first (a view equal to an earlier one adds nothing)."""
        out: list[View] = []
        for v in (self.raw, self.stripped, self.joined, self.decoded, self.decoded_joined):
            if v is not None and not any(v.data == o.data for o in out):
                out.append(v)
        return out

    def line_views(self) -> list[View]:
        """Views that keep line breaks (line rules, keys, banners)."""
        out = [self.stripped]
        if self.decoded is not None and self.decoded.data != self.stripped.data:
            out.append(self.decoded)
        if self.raw.data != self.stripped.data:
            out.append(self.raw)
        return out

    def format_views(self) -> list[View]:
        """Views for format rules and known values: lines kept and lines joined."""
        return self.all()
