"""Image and audio files as memory (multimodal memory): what a file really is, and its one chunk.

The extension picks a file for indexing; its first bytes decide what it is. A file whose content is
not of the kind its name promises (a text file named `.png`, an MP3 named `.jpg`) is skipped rather
than sent to the provider mislabelled: OpenClaw falls back to the extension's type when sniffing
finds nothing, and the provider then rejects the request. A media file becomes one chunk whose text
is its caption (`Image file: vault/cat.png`) and whose hash is OpenClaw's entry hash, so the
embedding cache recognises a file it embedded before, under any chunk settings.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import orjson

from memoryd.media import Modality, caption

SkipReason = Literal["too-large", "wrong-type", "no-provider", "rejected"]
SKIP_REASONS: MappingProxyType[SkipReason, str] = MappingProxyType(
    {
        "too-large": "larger than multimodal.max_file_bytes",
        "wrong-type": "its content is not the kind of file its name says",
        "no-provider": "no embedding provider: media files need one (the agent runs keyword-only)",
        "rejected": "the embedding provider refused it as too large",
    }
)
"""Why a media file is not in the index (status counts them per reason)."""

SNIFF_BYTES = 64
"""How much of the start of a file the sniffer reads."""


@dataclass(frozen=True, slots=True)
class MediaRef:
    """What the index keeps of a media file between reading it and embedding it (not its bytes)."""

    modality: Modality
    mime_type: str
    caption: str
    data_hash: str
    """sha256 of the bytes: the file is re-read for embedding, and must not have changed since."""
    hash: str
    """The chunk's and the file's hash: OpenClaw's sha256 of `{path, contentText, mimeType, dataHash}`."""


def describe(path: str, modality: Modality, data: bytes) -> MediaRef | SkipReason:
    """The media file at index path `path` with content `data`, or why it is skipped (`wrong-type`)."""
    mime = sniff_mime(data[:SNIFF_BYTES])
    if mime is None or not mime.startswith(f"{modality}/"):
        return "wrong-type"
    text = caption(modality, path)
    data_hash = hashlib.sha256(data).hexdigest()
    entry = orjson.dumps({"path": path, "contentText": text, "mimeType": mime, "dataHash": data_hash})
    return MediaRef(modality, mime, text, data_hash, hashlib.sha256(entry).hexdigest())


def sniff_mime(head: bytes) -> str | None:
    """The MIME type the first bytes of a file announce, for the image and audio formats OpenClaw takes
    (PNG, JPEG, GIF, WebP, HEIC/HEIF; MP3, WAV, Ogg Vorbis/Opus, M4A, AAC, FLAC); None for anything else."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and len(head) >= 12:
        return {b"WEBP": "image/webp", b"WAVE": "audio/wav"}.get(head[8:12])
    if len(head) >= 12 and head[4:8] == b"ftyp":
        return _iso_media_type(head)
    if head.startswith(b"OggS"):
        return _ogg_type(head)
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head.startswith(b"ID3"):
        return "audio/mpeg"
    if len(head) >= 2 and head[0] == 0xFF:
        if head[1] & 0xF6 == 0xF0:  # ADTS sync word, layer 0: AAC
            return "audio/aac"
        if head[1] & 0xE0 == 0xE0 and (head[1] >> 1) & 0x3:  # MPEG audio frame sync, layer I-III
            return "audio/mpeg"
    return None


_HEIC_BRANDS = frozenset({b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis"})
_HEIF_BRANDS = frozenset({b"mif1", b"msf1"})
_M4A_BRANDS = frozenset({b"M4A ", b"M4B ", b"M4P "})


def _iso_media_type(head: bytes) -> str | None:
    """An ISO base media file (`ftyp` box): HEIC/HEIF images, M4A audio, else MP4 video."""
    size = int.from_bytes(head[0:4], "big")
    brands = {head[8:12]} | {head[i : i + 4] for i in range(16, min(size, len(head)) - 3, 4)}
    if brands & _HEIC_BRANDS:
        return "image/heic"
    if brands & _HEIF_BRANDS:
        return "image/heif"
    if brands & _M4A_BRANDS:
        return "audio/mp4"
    return "video/mp4"


def _ogg_type(head: bytes) -> str:
    """An Ogg stream by its first packet: Opus, Theora (video), else audio (Vorbis, FLAC, Speex)."""
    packet = head[28:36]
    if packet.startswith(b"OpusHead"):
        return "audio/opus"
    if packet.startswith((b"\x80theora", b"\x01video")):
        return "video/ogg"
    return "audio/ogg"
