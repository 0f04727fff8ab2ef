"""Reading pictures in tests without an imaging library: a PNG's size and how much it shows."""

from __future__ import annotations

import struct
import zlib


def png_size_and_rows(data: bytes) -> tuple[int, int, int]:
    """(width, height, distinct pixel rows) of an 8-bit non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, color = struct.unpack(">IIBB", data[16:26])
    assert depth == 8
    channels = {2: 3, 6: 4}[color]
    idat, at = b"", 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        if data[at + 4 : at + 8] == b"IDAT":
            idat += data[at + 8 : at + 8 + length]
        at += 12 + length
    raw = zlib.decompress(idat)
    stride = 1 + width * channels
    lines = {raw[i * stride : (i + 1) * stride] for i in range(height)}
    return width, height, len(lines)
