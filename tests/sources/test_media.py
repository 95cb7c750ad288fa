"""Multimodal memory's pure parts: kinds and extensions, captions, MIME sniffing, a media file's chunk hash."""

from __future__ import annotations

import hashlib
import struct

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.media import MODALITIES, caption, classify, embeds_media, media_kind, normalise_modalities
from memoryd.sources.media import MediaRef, describe, sniff_mime
from tests.fakes.media_files import jpeg, png, wav


def _iso(brand: bytes, *compatible: bytes) -> bytes:
    body = brand + b"\x00\x00\x00\x00" + b"".join(compatible)
    return struct.pack(">I", 8 + len(body)) + b"ftyp" + body + b"\x00" * 16


def _ogg(first_packet: bytes) -> bytes:
    return b"OggS" + b"\x00" * 24 + first_packet + b"\x00" * 8


SAMPLES = [
    (png(), "image/png"),
    (jpeg(), "image/jpeg"),
    (b"GIF89a\x01\x00\x01\x00\x00\x00\x00", "image/gif"),
    (b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 8, "image/webp"),
    (_iso(b"heic", b"mif1", b"heic"), "image/heic"),
    (_iso(b"mif1", b"mif1"), "image/heif"),
    (wav(), "audio/wav"),
    (b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\x00" * 8, "audio/mpeg"),
    (b"\xff\xfb\x90\x64" + b"\x00" * 8, "audio/mpeg"),
    (b"\xff\xf1\x50\x80" + b"\x00" * 8, "audio/aac"),
    (b"fLaC\x00\x00\x00\x22" + b"\x00" * 8, "audio/flac"),
    (_ogg(b"\x01vorbis"), "audio/ogg"),
    (_ogg(b"OpusHead"), "audio/opus"),
    (_iso(b"M4A ", b"M4A ", b"mp42", b"isom"), "audio/mp4"),
    (_iso(b"isom", b"isom", b"mp41"), "video/mp4"),
    (_ogg(b"\x80theora"), "video/ogg"),
]


@pytest.mark.parametrize(("data", "mime"), SAMPLES, ids=[m for _, m in SAMPLES])
def test_the_first_bytes_name_the_format(data: bytes, mime: str) -> None:
    assert sniff_mime(data[:64]) == mime


@pytest.mark.parametrize("data", [b"", b"# just markdown\n", b"\x00\x01\x02", b"RIFF\x00\x00\x00\x00AVI LIST", b"\xff"])
def test_anything_else_is_not_media(data: bytes) -> None:
    assert sniff_mime(data) is None


@given(st.binary(max_size=80))
def test_sniffing_never_fails_on_arbitrary_bytes(data: bytes) -> None:
    mime = sniff_mime(data)
    assert mime is None or mime.split("/")[0] in ("image", "audio", "video")


def test_extensions_are_openclaws_and_case_insensitive() -> None:
    assert classify("Holiday.JPEG", MODALITIES) == "image"
    assert classify("voice.Opus", MODALITIES) == "audio"
    assert classify("voice.opus", ("image",)) is None  # a kind that is not enabled
    assert classify("clip.mp4", MODALITIES) is None
    assert classify("notes.md", MODALITIES) is None
    assert media_kind("../vault/cat.heif") == "image"


def test_all_expands_to_both_kinds_in_openclaws_order() -> None:
    assert normalise_modalities(["all"]) == ("image", "audio")
    assert normalise_modalities(["audio", "image", "audio"]) == ("image", "audio")
    assert normalise_modalities([]) == ()


def test_only_gemini_embedding_2_embeds_media() -> None:
    assert embeds_media("gemini", "gemini-embedding-2")
    assert embeds_media("gemini", "models/gemini-embedding-2-preview")
    assert not embeds_media("gemini", "gemini-embedding-001")
    assert not embeds_media("openai", "gemini-embedding-2")
    assert not embeds_media("local", "")


def test_a_media_file_is_one_caption_chunk_with_openclaws_entry_hash() -> None:
    data = png(rgb=(1, 2, 3))
    ref = describe("../vault/cat.png", "image", data)
    assert isinstance(ref, MediaRef)
    assert ref.caption == caption("image", "../vault/cat.png") == "Image file: ../vault/cat.png"
    assert ref.mime_type == "image/png"
    data_hash = hashlib.sha256(data).hexdigest()
    assert ref.data_hash == data_hash
    # OpenClaw's buildFileEntry: sha256 of JSON.stringify({path, contentText, mimeType, dataHash}).
    entry = '{"path":"../vault/cat.png","contentText":"Image file: ../vault/cat.png","mimeType":"image/png",'
    entry += f'"dataHash":"{data_hash}"}}'
    assert ref.hash == hashlib.sha256(entry.encode()).hexdigest()
    assert orjson.loads(entry)["mimeType"] == "image/png"


def test_content_that_is_not_the_kind_its_name_says_is_skipped() -> None:
    assert describe("vault/fake.png", "image", b"# a note named like a picture\n") == "wrong-type"
    assert describe("vault/song.jpg", "image", wav()) == "wrong-type"  # a WAV named .jpg
    assert describe("vault/photo.wav", "audio", jpeg()) == "wrong-type"
    assert isinstance(describe("vault/photo.jpg", "image", jpeg()), MediaRef)
