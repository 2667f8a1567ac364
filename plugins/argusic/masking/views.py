"""Normalised views of a window of raw bytes, each with a map back to raw offsets.

A secret can be shown in many ways that a plain search misses: split by colour codes or other
terminal escapes, overtyped with backspaces, wrapped over lines by a terminal or by `fold`, JSON- or
URL-escaped. Every finder runs on views in which those differences are undone:

* ``raw``: the bytes as they are (finds what lives inside an escape sequence's text, e.g. a title);
* ``stripped``: escape sequences and control characters removed, backspaces applied, lines kept;
* ``joined``: stripped without line breaks (a wrapped token is whole again, at any width);
* ``decoded`` / ``decoded-joined``: stripped with ``\\uXXXX``, ``\\xXX``, ``\\n``, ``\\/``, ``%XX``
  and ``&#...;`` decoded (built only when the window holds such escapes).

Views are built with C-speed operations (regular expressions that start with a literal byte,
``bytes.replace``/``translate``/``join``, numpy); the map from view offsets to raw offsets is only
computed when something was found in the window. A span of a view maps back to one contiguous raw
range covering everything in between (escapes and line breaks included).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

# Terminal escape sequences (each starts with ESC, so the scan jumps from ESC to ESC).
_ESCAPE_SPLIT = re.compile(
    rb"(\x1b(?:"
    rb"\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor moves, erase)
    rb"|\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (title etc.), terminated by BEL or ST
    rb"|[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS / SOS / PM / APC
    rb"|[ -/]*[0-~]"  # other escape sequences
    rb")?)"  # or a lone ESC
)
_C1_CSI_SPLIT = re.compile(rb"(\xc2\x9b[0-?]*[ -/]*[@-~])")  # 8-bit CSI (U+009B in UTF-8)
# Other control characters (not \t \n \r, not backspace, not ESC); 0xFF never occurs in UTF-8: it
# ends the events of a recording's stream (recording.py) and goes first, see Views.
_CONTROLS = bytes([*range(0x00, 0x08), 0x0B, 0x0C, *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])
_NOT_CONTROLS = bytes(b for b in range(256) if b not in _CONTROLS)
_CONTROL_SPLIT = re.compile(b"([" + re.escape(_CONTROLS) + b"]+)")
_EVENT_SPLIT = re.compile(rb"(\xff+)")
_DECODE_SPLIT = re.compile(
    rb"(\\(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[/\\\"'nrt])"
    rb"|%[0-9a-fA-F]{2}"
    rb"|&(?:#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|amp;))"
)
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


def run_table(alphabet: bytes) -> bytes:
    """A translation table for `maximal_runs`: 1 for each byte of the alphabet, else 0."""
    return bytes(1 if b in alphabet else 0 for b in range(256))


def maximal_runs(data: bytes, table: bytes, minimum: int) -> list[bytes]:
    """The maximal runs of at least `minimum` bytes of an alphabet (`table`: `run_table`), found with
    numpy: what a greedy `[alphabet]{minimum,}` finds."""
    if len(data) < minimum:
        return []
    inside = np.frombuffer(data.translate(table), dtype=np.bool_)
    edges = np.flatnonzero(inside[1:] != inside[:-1]) + 1  # starts and ends alternate
    if inside[0]:
        edges = np.concatenate(([0], edges))
    if inside[-1]:
        edges = np.concatenate((edges, [len(data)]))
    starts, ends = edges[0::2], edges[1::2]
    long = (ends - starts) >= minimum
    return [data[a:b] for a, b in zip(starts[long].tolist(), ends[long].tolist(), strict=True)]


class Map:
    """View offsets → source offsets, as segments. Segment k covers view [vstart[k], vstart[k+1]); an
    identity segment maps char i to sstart[k] + (i - vstart[k]); another maps each char to the whole
    source range [sstart[k], send[k]) (a decoded escape stands for all of its bytes)."""

    __slots__ = ("vstart", "sstart", "send", "ident")

    def __init__(self, vstart: np.ndarray, sstart: np.ndarray, send: np.ndarray, ident: np.ndarray | None):
        self.vstart, self.sstart, self.send, self.ident = vstart, sstart, send, ident

    @classmethod
    def identity(cls, size: int) -> Map:
        zero = np.zeros(1, dtype=np.int64)
        return cls(zero, zero, np.array([size], dtype=np.int64), None)

    def char(self, i: int) -> tuple[int, int]:
        k = int(np.searchsorted(self.vstart, i, side="right")) - 1
        if self.ident is None or self.ident[k]:
            o = int(self.sstart[k]) + (i - int(self.vstart[k]))
            return o, o + 1
        return int(self.sstart[k]), int(self.send[k])

    def span(self, i: int, j: int) -> tuple[int, int]:
        """Source range of view chars [i, j) (j > i)."""
        return self.char(i)[0], self.char(j - 1)[1]

    def spans(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`span` for many view ranges at once (arrays of starts and ends)."""
        ks = np.searchsorted(self.vstart, i, side="right") - 1
        ke = np.searchsorted(self.vstart, j - 1, side="right") - 1
        start = self.sstart[ks] + (i - self.vstart[ks])
        end = self.sstart[ke] + (j - 1 - self.vstart[ke]) + 1
        if self.ident is not None:
            start = np.where(self.ident[ks], start, self.sstart[ks])
            end = np.where(self.ident[ke], end, self.send[ke])
        return start, end

    def segment_starts(self) -> np.ndarray:
        return self.vstart


def _lengths(pieces: list[bytes]) -> np.ndarray:
    return np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))


def _removed_map(pieces: list[bytes]) -> Map:
    """Map of a view made of pieces[0::2] (the odd pieces were removed)."""
    lengths = _lengths(pieces)
    src_start = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    kept = lengths[0::2]
    vstart = np.concatenate(([0], np.cumsum(kept)[:-1]))
    sstart = src_start[0::2]
    return Map(vstart, sstart, sstart + kept, None)


def _replaced_map(pieces: list[bytes], replaced: list[bytes]) -> Map:
    """Map of a view where pieces[1::2] were replaced by `replaced` (decoded escapes)."""
    lengths = _lengths(pieces)
    src_start = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    view_lengths = lengths.copy()
    view_lengths[1::2] = _lengths(replaced)
    vstart = np.concatenate(([0], np.cumsum(view_lengths)[:-1]))
    ident = np.ones(len(pieces), dtype=bool)
    ident[1::2] = False
    return Map(vstart, src_start, src_start + lengths, ident)


def _bytes_removed_map(data: bytes, removed: bytes) -> Map:
    """Map of `data` with every byte in `removed` taken out (line breaks of a joined view)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    mask = np.zeros(len(arr), dtype=bool)
    for b in removed:
        mask |= arr == b
    gone = np.flatnonzero(mask)
    sstart = np.concatenate(([0], gone + 1))
    send = np.concatenate((gone, [len(arr)]))
    vstart = np.concatenate(([0], np.cumsum(send - sstart)[:-1]))
    return Map(vstart.astype(np.int64), sstart.astype(np.int64), send.astype(np.int64), None)


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
    segments = [s for s in segments if s[1]] or [[0, 0]]
    text = b"".join(data[s : s + n] for s, n in segments)
    starts = np.array([s for s, _ in segments], dtype=np.int64)
    lengths = np.array([n for _, n in segments], dtype=np.int64)
    vstart = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    return text, Map(vstart, starts, starts + lengths, None)


class View:
    """One normalised view: `data`, and lazily its map to the view it was made from (`parent`)."""

    def __init__(self, name: str, data: bytes, parent: View | None = None, build_map=None) -> None:
        self.name = name
        self.data = data
        self.parent = parent
        self._build_map: Callable[[], Map] | None = build_map
        self._map: Map | None = None

    @property
    def map(self) -> Map:
        if self._map is None:
            self._map = self._build_map() if self._build_map is not None else Map.identity(len(self.data))
            self._build_map = None
        return self._map

    def raw_span(self, i: int, j: int) -> tuple[int, int]:
        """Raw range (window offsets) of view chars [i, j)."""
        view: View | None = self
        while view is not None and view.parent is not None:
            i, j = view.map.span(i, j)
            view = view.parent
        return i, j

    def raw_spans(self, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """`raw_span` for many ranges at once."""
        if not spans:
            return []
        i = np.fromiter((s for s, _ in spans), dtype=np.int64, count=len(spans))
        j = np.fromiter((e for _, e in spans), dtype=np.int64, count=len(spans))
        view: View | None = self
        while view is not None and view.parent is not None:
            i, j = view.map.spans(i, j)
            view = view.parent
        return list(zip(i.tolist(), j.tolist(), strict=True))

    def raw_offset(self, i: int) -> int:
        return self.raw_span(i, i + 1)[0]

    def renamed(self, name: str) -> View:
        """The same data under another name (a step that changed nothing)."""
        size = len(self.data)
        return View(name, self.data, self, lambda: Map.identity(size))


def _stage(view: View, name: str, pattern: re.Pattern) -> tuple[View, list[bytes]]:
    pieces = pattern.split(view.data)
    if len(pieces) == 1:
        return view, pieces
    return View(name, b"".join(pieces[0::2]), view, lambda: _removed_map(pieces)), pieces


def _events_view(source: View) -> View:
    """`source` without its 0xFF bytes (the ends of a recording's events): what removing each run of
    them (`_stage` with `_EVENT_SPLIT`) gives, split with `bytes.split` (C speed: the regular
    expression took 40% of a recording's views). Its map has a segment per event, empty ones
    included; an empty segment starts where the next one does, so every character maps as in the
    map of the runs (`test_the_events_view_maps_as_the_runs_removed`)."""
    parts = source.data.split(b"\xff")
    lengths = _lengths(parts)
    vstart = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    sstart = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
    return View("events", b"".join(parts), source, lambda: Map(vstart, sstart, sstart + lengths, None))


PAYLOAD_MIN = 8  # escape sequences shorter than this cannot hold a credential


def _payload_view(source: View, pieces: list[bytes]) -> View | None:
    """The text inside escape sequences (window titles, hyperlinks' URLs, DCS strings): not shown by
    a terminal, but present in the served bytes. One sequence per line."""
    lengths = _lengths(pieces)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    chosen = np.flatnonzero(lengths[1::2] >= PAYLOAD_MIN) * 2 + 1
    if not len(chosen):
        return None
    data = b"\n".join([pieces[n] for n in chosen.tolist()])
    sizes = lengths[chosen] + 1  # each with its separator
    vstart = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    sstart = offsets[chosen]
    return View("escapes", data, source, lambda: Map(vstart, sstart, sstart + sizes, None))


REGION_SEPARATOR = b"\n\x00\n"  # between the regions of a partial view (a barrier even when joined)


def _line_regions(data: bytes, positions: np.ndarray, context: int) -> list[tuple[int, int]]:
    """Line-aligned ranges of `data` holding `positions`, with `context` lines around each, merged."""
    nl = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    starts = np.concatenate(([0], nl + 1))
    ends = np.concatenate((nl + 1, [len(data)]))
    lines = np.unique(np.searchsorted(nl, positions, side="left"))
    low = np.maximum(lines - context, 0).tolist()
    high = np.minimum(lines + context, len(starts) - 1).tolist()
    merged: list[list[int]] = []
    for a, b in zip(low, high, strict=True):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(int(starts[a]), int(ends[b])) for a, b in merged]


def _decode_chunk(chunk: bytes) -> tuple[bytes, Map]:
    pieces = _DECODE_SPLIT.split(chunk)
    if len(pieces) == 1:
        return chunk, Map.identity(len(chunk))
    cache: dict[bytes, bytes] = {}
    replaced = [cache.get(t) or cache.setdefault(t, decode_token(t)) for t in pieces[1::2]]
    out = list(pieces)
    out[1::2] = replaced
    return b"".join(out), _replaced_map(pieces, replaced)


def _region_view(name: str, parent: View, regions: list[tuple[int, int]], transform) -> View:
    """A view of only some regions of `parent` (each through `transform`: bytes -> (bytes, Map)),
    separated by REGION_SEPARATOR: the other regions are the same as in the view beside it."""
    if regions == [(0, len(parent.data))]:
        data, whole = transform(parent.data)
        return View(name, data, parent, lambda: whole)
    parts: list[bytes] = []
    maps: list[tuple[int, int, Map]] = []
    for a, b in regions:
        data, region_map = transform(parent.data[a:b])
        parts.append(data)
        maps.append((a, len(data), region_map))

    def build() -> Map:
        vstart, sstart, send, ident = [], [], [], []
        offset = 0
        for a, size, m in maps:
            vstart.append(m.vstart + offset)
            sstart.append(m.sstart + a)
            send.append(m.send + a)
            ident.append(m.ident if m.ident is not None else np.ones(len(m.vstart), dtype=bool))
            offset += size + len(REGION_SEPARATOR)
        return Map(
            np.concatenate(vstart), np.concatenate(sstart), np.concatenate(send), np.concatenate(ident)
        )

    return View(name, REGION_SEPARATOR.join(parts), parent, build)


_DECODE_TOKEN = re.compile(_DECODE_SPLIT.pattern[1:-1])
_DECODE_STARTS = bytes(1 if b in b"\\%&" else 0 for b in range(256))  # a translation table
# The byte a token's second byte can be, by its first: `\\` then u x / \\ " ' n r t; `%` then a hex
# digit; `&` then # or a (of `&amp;`). A position whose next byte is not one of them starts no token.
_DECODE_SECOND = np.zeros((256, 256), dtype=bool)
_DECODE_SECOND[ord("\\"), list(b"ux/\\\"'nrt")] = True
_DECODE_SECOND[ord("%"), list(b"0123456789abcdefABCDEF")] = True
_DECODE_SECOND[ord("&"), list(b"#a")] = True


def _decode_token_positions(data: bytes) -> np.ndarray:
    """Offsets of the escape tokens of `data` (candidates found with numpy, each checked).

    A candidate is a token's first byte followed by a byte a token of that kind can go on with (the
    `%` of a `[ 45%]` progress line is not one): only those are matched, which finds the same tokens
    as matching at every first byte (`test_decode_token_positions_are_every_token`)."""
    if b"\\" not in data and b"%" not in data and b"&" not in data:
        return np.zeros(0, dtype=np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    candidates = np.flatnonzero(np.frombuffer(data[:-1].translate(_DECODE_STARTS), dtype=np.bool_))
    candidates = candidates[_DECODE_SECOND[arr[candidates], arr[candidates + 1]]]
    if len(candidates) > len(data) // 64:  # escape-dense text: one regular-expression pass is faster
        return np.array([m.start() for m in _DECODE_TOKEN.finditer(data)], dtype=np.int64)
    match = _DECODE_TOKEN.match
    return np.array([p for p in candidates.tolist() if match(data, p)], dtype=np.int64)


class Views:
    """Every view of one window of raw bytes."""

    def __init__(self, raw: bytes, *, decode: bool = True) -> None:
        self.raw = View("raw", raw)
        self.escapes: View | None = None
        self.typed: View | None = None
        view = self.raw
        if b"\xff" in raw:  # event boundaries first: an escape sequence may be split over events
            view = _events_view(view)
        if b"\x1b" in view.data:
            source = view
            view, pieces = _stage(view, "stripped", _ESCAPE_SPLIT)
            self.escapes = _payload_view(source, pieces)
        if b"\xc2\x9b" in view.data:
            view, _ = _stage(view, "stripped", _C1_CSI_SPLIT)
        if view.data.translate(None, _NOT_CONTROLS):
            view, _ = _stage(view, "stripped", _CONTROL_SPLIT)
        if b"\x08" in view.data:
            text, bs_map = _apply_backspaces(view.data)
            # What was typed before it was rubbed out is still in the served bytes: the lines that
            # hold backspaces, as typed (a backspace is a delimiter there).
            rubbed = np.flatnonzero(np.frombuffer(view.data, dtype=np.uint8) == 8)
            regions = _line_regions(view.data, rubbed, 0)
            self.typed = _region_view("typed", view, regions, lambda chunk: (chunk, Map.identity(len(chunk))))
            view = View("stripped", text, view, lambda: bs_map)
        self.stripped = view if view.name == "stripped" else view.renamed("stripped")
        self.joined = self._join(self.stripped, "joined")
        self.decoded: View | None = None
        self.decoded_joined: View | None = None
        tokens = _decode_token_positions(self.stripped.data) if decode else None
        if tokens is not None and len(tokens):
            # Only the lines with escapes (and one line around them, for a wrapped token) differ
            # from the stripped view: the decoded views hold those regions.
            regions = _line_regions(self.stripped.data, tokens, 1)
            if sum(b - a for a, b in regions) > len(self.stripped.data) // 2:
                regions = [(0, len(self.stripped.data))]
            self.decoded = _region_view("decoded", self.stripped, regions, _decode_chunk)
            self.decoded_joined = self._join(self.decoded, "decoded-joined")

    @staticmethod
    def _join(view: View, name: str) -> View:
        data = view.data.replace(b"\r", b"").replace(b"\n", b"")
        if len(data) == len(view.data):
            return view.renamed(name)
        source = view.data
        return View(name, data, view, lambda: _bytes_removed_map(source, LINE_BREAK_BYTES))

    def all(self) -> list[View]:
        """Distinct views for the finders (a view equal to an earlier one adds nothing)."""
        out: list[View] = []
        for v in (self.stripped, self.joined, self.decoded, self.decoded_joined, self.escapes, self.typed):
            if v is not None and not any(v.data == o.data for o in out):
                out.append(v)
        return out

    def line_views(self) -> list[View]:
        """Views that keep line breaks (line rules, keys, survivors), stripped first."""
        out = [self.stripped]
        for v in (self.decoded, self.escapes, self.typed):
            if v is not None and v.data != self.stripped.data:
                out.append(v)
        return out
