"""pixelart: draw a colour gradient with a checkerboard overlay and save it as a PNG (stdlib only)."""

from __future__ import annotations

import argparse
import os
import struct
import zlib


def pixel(x: int, y: int, width: int, height: int) -> tuple[int, int, int]:
    r = 255 * x // max(1, width - 1)
    g = 255 * y // max(1, height - 1)
    b = 200 if (x // 8 + y // 8) % 2 else 40
    return r, g, b


def render(width: int, height: int) -> list[bytes]:
    rows = []
    for y in range(height):
        row = bytearray()
        for x in range(width):
            row.extend(pixel(x, y, width, height))
        rows.append(bytes(row))
    return rows


def chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def encode_png(rows: list[bytes], width: int, height: int) -> bytes:
    raw = b"".join(b"\x00" + row for row in rows)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(raw, 9)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--height", type=int, default=32)
    parser.add_argument("--out", default="out/gradient.png")
    args = parser.parse_args()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "wb") as f:
        f.write(encode_png(render(args.width, args.height), args.width, args.height))
    print(f"pixelart: wrote {args.out} ({args.width}x{args.height})")


if __name__ == "__main__":
    main()
