import os
import sys
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pixelart  # noqa: E402


class PixelartTest(unittest.TestCase):
    def test_corners(self):
        self.assertEqual(pixelart.pixel(0, 0, 64, 32)[:2], (0, 0))
        self.assertEqual(pixelart.pixel(63, 31, 64, 32)[:2], (255, 255))

    def test_png_roundtrip(self):
        rows = pixelart.render(4, 2)
        png = pixelart.encode_png(rows, 4, 2)
        self.assertTrue(png.startswith(b"\x89PNG"))
        start = png.index(b"IDAT") + 4
        length = int.from_bytes(png[start - 8 : start - 4], "big")
        self.assertEqual(zlib.decompress(png[start : start + length]), b"".join(b"\x00" + r for r in rows))


if __name__ == "__main__":
    unittest.main()
