"""Small, valid image and audio files written by code (no binary fixtures in the repository).

`png(...)` and `jpeg(...)` are real images any decoder opens (a PNG of one colour, a baseline JPEG of
one grey 8×8 block), `wav(...)` a real PCM WAV of a sine tone (the stdlib's `wave`). Different
arguments give different bytes, so tests can tell files apart by content.
"""

from __future__ import annotations

import io
import math
import struct
import wave
import zlib


def png(width: int = 4, height: int = 4, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A `width`×`height` PNG filled with one colour (8-bit RGB, no interlace)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    row = b"\x00" + bytes(rgb) * width  # filter type 0, then the pixels
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def jpeg(comment: str = "memoryd test") -> bytes:
    """A baseline JPEG of one mid-grey 8×8 block (every coefficient zero), with `comment` in a COM segment."""

    def segment(marker: int, data: bytes) -> bytes:
        return struct.pack(">BBH", 0xFF, marker, len(data) + 2) + data

    jfif = b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    quant = b"\x00" + bytes([1] * 64)  # table 0, all ones
    frame = struct.pack(">BHHB", 8, 8, 8, 1) + b"\x01\x11\x00"  # 8 bits, 8x8, one component
    # One-symbol Huffman tables: DC category 0 and the AC end-of-block, each the 1-bit code "0".
    dc = b"\x00" + bytes([1] + [0] * 15) + b"\x00"
    ac = b"\x10" + bytes([1] + [0] * 15) + b"\x00"
    scan = b"\x01\x01\x00\x00\x3f\x00"
    data = b"\x3f"  # bits 0 (DC 0) and 0 (EOB), padded with ones
    return (
        b"\xff\xd8"
        + segment(0xE0, jfif)
        + segment(0xFE, comment.encode())
        + segment(0xDB, quant)
        + segment(0xC0, frame)
        + segment(0xC4, dc)
        + segment(0xC4, ac)
        + segment(0xDA, scan)
        + data
        + b"\xff\xd9"
    )


def wav(seconds: float = 0.05, hz: float = 440.0, rate: int = 8000) -> bytes:
    """A mono 16-bit PCM WAV of a sine tone."""
    frames = b"".join(
        struct.pack("<h", int(12000 * math.sin(2 * math.pi * hz * n / rate))) for n in range(int(seconds * rate))
    )
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames)
    return buffer.getvalue()
