"""Gemini Embedding 2 embeds images and audio: inline parts on the wire, one request per file, size refusals."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

from memoryd.embeddings.base import MediaInput, media_embedder, normalize_rows
from memoryd.embeddings.gemini import GeminiProvider
from memoryd.embeddings.remote import RemoteSettings
from memoryd.embeddings.retry import is_retryable
from memoryd.errors import EmbeddingError, EmbeddingInputTooLargeError
from tests.fakes.embedding_servers import GeminiFake, fake_vector
from tests.fakes.media_files import png, wav

KEY = "AIza-test-key"
pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[GeminiFake]:
    with GeminiFake(api_key=KEY) as fake:
        yield fake


def _provider(server: GeminiFake, model: str = "gemini-embedding-2", dims: int = 0) -> GeminiProvider:
    settings = RemoteSettings(base_url=server.base_url, api_key=KEY, model=model, output_dimensionality=dims)
    return GeminiProvider(settings, env={})


@pytest.fixture
async def provider(server: GeminiFake) -> AsyncIterator[GeminiProvider]:
    p = _provider(server)
    yield p
    await p.aclose()


async def test_a_media_file_is_its_caption_and_its_bytes_in_one_request(
    provider: GeminiProvider, server: GeminiFake
) -> None:
    image, sound = png(), wav()
    items = [
        MediaInput("Image file: vault/cat.png", "image/png", image),
        MediaInput("Audio file: vault/song.wav", "audio/wav", sound),
    ]
    vectors = await provider.embed_media(items)
    assert [r.path for r in server.requests] == ["/v1beta/models/gemini-embedding-2:batchEmbedContents"] * 2
    first = server.requests[0].json()
    assert first == {
        "requests": [
            {
                "model": "models/gemini-embedding-2",
                "content": {
                    "parts": [
                        {"text": "Image file: vault/cat.png"},
                        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(image).decode()}},
                    ]
                },
                "taskType": "RETRIEVAL_DOCUMENT",
            }
        ]
    }
    assert server.media == [("image/png", image), ("audio/wav", sound)]
    expected = f"Image file: vault/cat.png<image/png:{hashlib.sha256(image).hexdigest()}>"
    np.testing.assert_allclose(vectors[0], normalize_rows(fake_vector(expected))[0], rtol=1e-6)
    assert vectors.shape == (2, 8)


async def test_output_dimensionality_is_asked_for_media_too(server: GeminiFake) -> None:
    provider = _provider(server, dims=16)
    try:
        vectors = await provider.embed_media([MediaInput("Image file: a.png", "image/png", png())])
    finally:
        await provider.aclose()
    assert vectors.shape == (1, 16)
    assert server.requests[0].json()["requests"][0]["outputDimensionality"] == 16


@pytest.mark.parametrize("html", [False, True], ids=["400 payload size", "413 front end"])
async def test_a_request_over_the_size_limit_is_input_too_large(
    provider: GeminiProvider, server: GeminiFake, html: bool
) -> None:
    server.max_request_bytes = 2000
    server.oversize_html = html
    with pytest.raises(EmbeddingInputTooLargeError) as caught:
        await provider.embed_media([MediaInput("Image file: big.png", "image/png", png(64, 64) + b"\x00" * 4000)])
    assert not is_retryable(caught.value)
    assert ("413" if html else "Request payload size exceeds the limit") in str(caught.value)


async def test_a_text_only_model_cannot_embed_media(server: GeminiFake) -> None:
    provider = _provider(server, model="gemini-embedding-001")
    try:
        assert not provider.embeds_media
        assert media_embedder(provider) is None
        with pytest.raises(EmbeddingError, match="cannot embed images or audio"):
            await provider.embed_media([MediaInput("Image file: a.png", "image/png", png())])
    finally:
        await provider.aclose()
    assert server.requests == []


async def test_the_fake_refuses_inline_data_for_a_text_only_model_as_the_api_does(server: GeminiFake) -> None:
    """The wire check itself: a text-only model gets a 400 for inline data (the provider never sends it)."""
    provider = _provider(server, model="gemini-embedding-2")
    try:
        assert media_embedder(provider) is provider
        server.media_models = frozenset()
        with pytest.raises(EmbeddingError, match="inline_data is not supported"):
            await provider.embed_media([MediaInput("Image file: a.png", "image/png", png())])
    finally:
        await provider.aclose()
