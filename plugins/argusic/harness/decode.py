"""Decode an output file for real and print what the decode returned (methodology section 16).

    python3 decode.py FILE [FILE ...]

Pure standard library. One line per file on stdout, starting with the format; exit 0 when every file
decoded, 1 when one did not (the reason is printed), 2 on bad usage. A file existing is not a result
and a header is not a check: WAV frames are read and their samples measured, PNG image data is
inflated and unfiltered row by row, JSON is parsed, text is decoded as UTF-8 and printed.
"""

from __future__ import annotations

import array
import json
import os
import struct
import sys
import wave
import zlib


class DecodeError(Exception):
    pass


def decode_wav(path: str) -> str:
    try:
        with wave.open(path, "rb") as w:
            channels, width, rate, nframes = (
                w.getnchannels(),
                w.getsampwidth(),
                w.getframerate(),
                w.getnframes(),
            )
            data = w.readframes(nframes)
    except (wave.Error, EOFError, struct.error) as exc:
        raise DecodeError(f"not a decodable WAV file: {exc}") from exc
    frames = len(data) // (channels * width) if channels and width else 0
    if frames == 0:
        raise DecodeError("WAV file holds no audio frames")
    if frames != nframes:
        raise DecodeError(f"header announces {nframes} frames but {frames} could be read")
    if width == 1:
        samples = [b - 128 for b in data]
        full = 128
    elif width == 2:
        a = array.array("h")
        a.frombytes(data[: len(data) // 2 * 2])
        if sys.byteorder == "big":
            a.byteswap()
        samples = list(a)
        full = 32768
    else:
        samples = []
        full = 1
    summary = (
        f"decoded {frames} frames ({channels} channel(s), {8 * width}-bit, {rate} Hz, {frames / rate:.3f} s)"
    )
    if samples:
        peak = max(abs(s) for s in samples)
        rms = (sum(s * s for s in samples) / len(samples)) ** 0.5
        crossings = sum(
            1
            for i in range(channels, len(samples), channels)
            if (samples[i - channels] < 0) != (samples[i] < 0)
        )
        summary += f"; peak {peak / full:.3f} of full scale, rms {rms / full:.3f}, {crossings} zero crossings"
        if peak == 0:
            summary += "; every sample is silent"
    return summary


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def decode_png(path: str) -> str:
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != b"\x89PNG\r\n\x1a\n":
        raise DecodeError("no PNG signature")
    pos = 8
    ihdr = None
    idat = []
    seen_iend = False
    while pos + 8 <= len(blob):
        (length,) = struct.unpack(">I", blob[pos : pos + 4])
        ctype = blob[pos + 4 : pos + 8]
        body = blob[pos + 8 : pos + 8 + length]
        crc_bytes = blob[pos + 8 + length : pos + 12 + length]
        if len(body) != length or len(crc_bytes) != 4:
            raise DecodeError(f"chunk {ctype!r} is truncated")
        if zlib.crc32(ctype + body) & 0xFFFFFFFF != struct.unpack(">I", crc_bytes)[0]:
            raise DecodeError(f"chunk {ctype.decode('latin-1')} fails its CRC")
        if ctype == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif ctype == b"IDAT":
            idat.append(body)
        elif ctype == b"IEND":
            seen_iend = True
            break
        pos += 12 + length
    if ihdr is None:
        raise DecodeError("no IHDR chunk")
    if not idat:
        raise DecodeError("no IDAT chunk")
    if not seen_iend:
        raise DecodeError("no IEND chunk")
    width, height, depth, ctype_, _comp, _filter, interlace = ihdr
    if width == 0 or height == 0:
        raise DecodeError("zero-sized image")
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error as exc:
        raise DecodeError(f"image data does not inflate: {exc}") from exc
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(ctype_)
    if channels is None:
        raise DecodeError(f"unknown colour type {ctype_}")
    if interlace:
        return f"inflated {len(raw)} bytes of interlaced {width}x{height} image data (colour type {ctype_})"
    bpp = max(1, channels * depth // 8)
    stride = (width * channels * depth + 7) // 8
    if len(raw) != height * (stride + 1):
        raise DecodeError(
            f"image data is {len(raw)} bytes, expected {height * (stride + 1)} for {width}x{height}"
        )
    prev = bytearray(stride)
    colours: set[bytes] = set()
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if ftype > 4:
            raise DecodeError(f"row {y} has invalid filter type {ftype}")
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = prev[i]
            if ftype == 1:
                line[i] = (line[i] + left) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + up) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif ftype == 4:
                upleft = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, up, upleft)) & 0xFF
        if depth == 8 and len(colours) <= 65536:
            for x in range(0, stride, bpp):
                colours.add(bytes(line[x : x + bpp]))
        prev = line
    summary = f"decoded {width}x{height} pixels ({depth}-bit, colour type {ctype_}), {height} rows unfiltered"
    if colours:
        summary += f", {len(colours)} distinct colour value(s)"
    return summary


def decode_json(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DecodeError(f"not valid JSON: {exc}") from exc
    if isinstance(value, dict):
        keys = list(value)
        shown = ", ".join(keys[:8]) + (", ..." if len(keys) > 8 else "")
        return f"parsed an object with {len(keys)} key(s): {shown}; " + _short(
            json.dumps(value, ensure_ascii=False)
        )
    if isinstance(value, list):
        return f"parsed an array of {len(value)} item(s); " + _short(json.dumps(value, ensure_ascii=False))
    return "parsed a " + type(value).__name__ + ": " + _short(json.dumps(value, ensure_ascii=False))


def decode_text(path: str) -> str:
    with open(path, "rb") as f:
        blob = f.read()
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"not UTF-8 text: {exc}") from exc
    if not text.strip():
        raise DecodeError("text file is empty")
    lines = text.splitlines()
    first = " | ".join(line.strip() for line in lines[:3] if line.strip())
    return f"read {len(lines)} line(s) of text: " + _short(first)


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


DECODERS = {
    ".wav": ("WAV", decode_wav),
    ".png": ("PNG", decode_png),
    ".json": ("JSON", decode_json),
}
TEXT_EXTENSIONS = {".txt", ".csv", ".tsv", ".md", ".log", ".out", ".html", ".xml", ".svg", ".yaml", ".yml"}


def decoder_for(path: str):
    ext = os.path.splitext(path)[1].lower()
    if ext in DECODERS:
        return DECODERS[ext]
    if ext in TEXT_EXTENSIONS:
        return ("TEXT", decode_text)
    return None


def decode(path: str) -> tuple[bool, str]:
    found = decoder_for(path)
    if found is None:
        return False, f"{path}: no decoder for this kind of file"
    kind, fn = found
    if not os.path.isfile(path):
        return False, f"{kind} {path}: file not found"
    try:
        return True, f"{kind} {path}: {fn(path)}"
    except (DecodeError, OSError) as exc:
        return False, f"{kind} {path}: decode failed: {exc}"


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: decode.py FILE [FILE ...]", file=sys.stderr)
        return 2
    ok_all = True
    for path in argv:
        ok, line = decode(path)
        print(line)
        ok_all = ok_all and ok
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
