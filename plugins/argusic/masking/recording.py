"""asciicast v2 recordings, streamed: split into event streams, masked, re-emitted.

A recording is read line by line (each line is one JSON event ``[time, code, data]``, after the header
line). Every event's data goes to the stream of its code (output ``o``, input ``i``, everything else
together), ended by byte 0xFF, which never occurs in UTF-8: a secret split over events is whole in
its stream, and a redaction keeps the 0xFF bytes it covers, so every event keeps its place and its
time (an event may become shorter, or empty; the placeholder goes where the redaction starts). The
streams are masked like logs (banners only in the output stream), the header's strings like short
texts, and values found anywhere are masked everywhere: a stream is checked again whenever another
stream or the header brought new values. The served recording is then written event by event: an
event whose data did not change is copied byte for byte, a changed one is serialised again.

Memory stays bounded: one line at a time (lines over `MAX_LINE` bytes are refused) and the masking
engine's windows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import BinaryIO

import orjson

from argusic.masking.engine import MaskState, candidate_values
from argusic.masking.policy import MaskingError
from argusic.masking.stream import Buffer, Workspace, find_only, mask_rounds, segments

MAX_LINE = 16 << 20  # one event line (a pty read is a few KB; anything this big is refused)
STREAM_CODES = ("o", "i", "other")
_BLANK = 3
_FLUSH = 1 << 20


@dataclass
class _Split:
    header: dict
    header_line: bytes
    streams: list[Buffer]
    index: Buffer  # one byte per line after the header: stream number, or _BLANK
    events: list[int]


def _stream_of(code: str) -> int:
    return 0 if code == "o" else 1 if code == "i" else 2


def _read_line(src: BinaryIO, n: int) -> bytes:
    line = src.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise MaskingError(f"recording line {n} is longer than {MAX_LINE} bytes")
    return line


def parse_event(line: bytes, n: int) -> list:
    """One event line → [time, code, data]; MaskingError naming the line when it is not one."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            event = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise MaskingError(f"recording line {n} is not UTF-8: {err}") from None
        except json.JSONDecodeError as err:
            raise MaskingError(f"recording line {n} is not JSON: {err}") from None
    if (
        not isinstance(event, list)
        or len(event) != 3
        or not isinstance(event[0], int | float)
        or isinstance(event[0], bool)
        or not isinstance(event[1], str)
        or not isinstance(event[2], str)
    ):
        raise MaskingError(f"recording line {n} is not an event [time, code, data]")
    return event


def parse_header(line: bytes) -> dict:
    try:
        header = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise MaskingError(f"recording is not UTF-8: {err}") from None
    except json.JSONDecodeError as err:
        raise MaskingError(f"recording header is not JSON: {err}") from None
    if not isinstance(header, dict) or header.get("version") != 2:
        raise MaskingError("recording is not asciicast v2 (header version)")
    return header


def _split(src: BinaryIO, workspace: Workspace) -> _Split:
    header_line = _read_line(src, 1)
    header = parse_header(header_line)
    streams = [workspace.new(f"stream-{c}") for c in STREAM_CODES]
    writers = [b.writer() for b in streams]
    index = workspace.new("index")
    index_writer = index.writer()
    pending: list[list[bytes]] = [[], [], []]
    pending_size = [0, 0, 0]
    marks = bytearray()
    events = [0, 0, 0]
    n = 1
    try:
        while True:
            n += 1
            line = _read_line(src, n)
            if not line:
                break
            if not line.strip():
                marks.append(_BLANK)
                continue
            event = parse_event(line, n)
            sid = _stream_of(event[1])
            data = event[2].encode("utf-8", "surrogatepass") + b"\xff"
            pending[sid].append(data)
            pending_size[sid] += len(data)
            events[sid] += 1
            marks.append(sid)
            if pending_size[sid] >= _FLUSH:
                writers[sid].write(b"".join(pending[sid]))
                pending[sid], pending_size[sid] = [], 0
            if len(marks) >= _FLUSH:
                index_writer.write(marks)
                marks = bytearray()
        for sid in range(3):
            writers[sid].write(b"".join(pending[sid]))
        index_writer.write(marks)
    finally:
        for b in (*streams, index):
            b.close()
    return _Split(header, header_line, streams, index, events)


def _header_strings(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, list):
        return [s for v in obj for s in _header_strings(v)]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in (*_header_strings(k), *_header_strings(v))]
    return []


def _mask_header(obj, state: MaskState, workspace: Workspace, findings: list[str]):
    """Every string inside a JSON value masked (banners are not looked for in a header)."""
    if isinstance(obj, str):
        raw = obj.encode("utf-8", "surrogatepass")
        clean, remaining = mask_rounds(Buffer(data=raw), state, Workspace(None), banners=False)
        if clean is None:
            findings.extend(f"header: {f}" for f in remaining)
            return obj
        return clean.data.decode("utf-8", "surrogatepass")
    if isinstance(obj, list):
        return [_mask_header(v, state, workspace, findings) for v in obj]
    if isinstance(obj, dict):
        return {
            _mask_header(k, state, workspace, findings): _mask_header(v, state, workspace, findings)
            for k, v in obj.items()
        }
    return obj


def _known_count(state: MaskState) -> int:
    return len(state.known) + len(state.generated)


def mask_cast(src_open, dst: BinaryIO, state: MaskState, workspace: Workspace) -> list[str]:
    """Mask a recording from `src_open()` into `dst`; returns findings when it must be withheld
    (nothing meaningful is written then). MaskingError when it is not an asciicast v2 recording."""
    with src_open() as src:
        split = _split(src, workspace)
    current = list(split.streams)
    checked_at = [-1, -1, -1]  # known-value count when each stream was last found clean
    header = split.header
    findings: list[str] = []
    for _ in range(state.policy.max_rounds + 1):
        for sid in range(3):
            if split.events[sid] == 0 or checked_at[sid] == _known_count(state):
                continue
            first = checked_at[sid] < 0
            clean, remaining = mask_rounds(
                current[sid], state, workspace, banners=first and sid == 0, name=f"{STREAM_CODES[sid]}-"
            )
            if clean is None:
                return [f"{STREAM_CODES[sid]!r} events: {f}" for f in remaining]
            if clean is not current[sid] and current[sid] is not split.streams[sid]:
                current[sid].discard()
            current[sid] = clean
            checked_at[sid] = _known_count(state)
        before = _known_count(state)
        findings = []
        header = _mask_header(split.header, state, workspace, findings)
        if findings:
            return findings
        if _known_count(state) == before and all(
            split.events[s] == 0 or checked_at[s] == before for s in range(3)
        ):
            break
    else:
        return ["values kept appearing in other streams"]
    _emit(src_open, dst, split, header, current)
    for b in (*split.streams, split.index, *current):
        b.discard()
    return []


def _emit(src_open, dst: BinaryIO, split: _Split, header: dict, current: list[Buffer]) -> None:
    """Write the served recording: unchanged events byte for byte, changed ones serialised again."""
    if header == split.header:
        dst.write(split.header_line if split.header_line.endswith(b"\n") else split.header_line + b"\n")
    else:
        dst.write(json.dumps(header, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n")
    changed = [current[s] is not split.streams[s] for s in range(3)]
    originals = [split.streams[s].open() for s in range(3) if changed[s]]
    masked = [current[s].open() for s in range(3) if changed[s]]
    try:
        orig_iter = dict(zip([s for s in range(3) if changed[s]], map(segments, originals), strict=True))
        new_iter = dict(zip([s for s in range(3) if changed[s]], map(segments, masked), strict=True))
        out: list[bytes] = []
        size = 0
        with split.index.open() as index_file, src_open() as src:
            src.readline(MAX_LINE + 1)  # the header line
            n = 1
            while marks := index_file.read(1 << 16):
                for sid in marks:
                    n += 1
                    line = src.readline(MAX_LINE + 1)
                    if sid == _BLANK or not changed[sid]:
                        out.append(line)
                    else:
                        before, after = next(orig_iter[sid]), next(new_iter[sid])
                        if before == after:
                            out.append(line)
                        else:
                            event = parse_event(line, n)
                            try:
                                event[2] = after.decode("utf-8", "surrogatepass")
                            except UnicodeDecodeError:
                                event[2] = after.decode("utf-8", "replace")
                            ending = b"\n" if line.endswith(b"\n") else b""
                            text = json.dumps(event, ensure_ascii=False)
                            out.append(text.encode("utf-8", "surrogatepass") + ending)
                    size += len(out[-1])
                    if size >= _FLUSH:
                        dst.write(b"".join(out))
                        out, size = [], 0
        dst.write(b"".join(out))
    finally:
        for f in (*originals, *masked):
            f.close()


def verify_cast(src_open, state: MaskState, workspace: Workspace) -> list[str]:
    """Findings in a served recording (empty: clean); unparseable is a finding."""
    try:
        with src_open() as src:
            split = _split(src, workspace)
    except MaskingError as err:
        return [f"unparseable: {err}"]
    findings = []
    for sid in range(3):
        if split.events[sid]:
            findings += [f"{STREAM_CODES[sid]!r} events: {f}" for f in find_only(split.streams[sid], state)]
    for s in _header_strings(split.header):
        text = Buffer(data=s.encode("utf-8", "surrogatepass"))
        findings += [f"header: {f}" for f in find_only(text, state)]
    for b in (*split.streams, split.index):
        b.discard()
    return findings


__all__ = ["MAX_LINE", "candidate_values", "mask_cast", "parse_event", "parse_header", "verify_cast"]
