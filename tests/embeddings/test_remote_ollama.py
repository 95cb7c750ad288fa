"""Ollama embeddings against a loopback server speaking Ollama's API, current and older."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from memoryd.embeddings.base import Fingerprint, normalize_rows
from memoryd.embeddings.ollama import OllamaProvider
from memoryd.embeddings.remote import RemoteSettings
from memoryd.embeddings.retry import is_retryable
from memoryd.errors import ConfigError, EmbeddingError
from tests.fakes.embedding_servers import OllamaFake, fake_vector

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[OllamaFake]:
    with OllamaFake() as fake:
        yield fake


@pytest.fixture
def legacy_server() -> Iterator[OllamaFake]:
    with OllamaFake(legacy_only=True) as fake:
        yield fake


async def test_texts_are_embedded_in_one_call_to_api_embed_without_credentials(server: OllamaFake) -> None:
    provider = OllamaProvider(RemoteSettings(base_url=server.base_url), env={})
    try:
        vectors = await provider.embed_documents(["one", "two"])
    finally:
        await provider.aclose()
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector("one"), fake_vector("two")]), rtol=1e-6)
    (request,) = server.requests
    assert request.path == "/api/embed"
    assert request.json() == {"model": "nomic-embed-text", "input": ["one", "two"]}
    assert "authorization" not in request.headers


async def test_an_older_server_is_used_through_api_embeddings_one_text_per_call(legacy_server: OllamaFake) -> None:
    provider = OllamaProvider(RemoteSettings(base_url=legacy_server.base_url), env={})
    try:
        vectors = await provider.embed_documents(["one", "two"])
        query = await provider.embed_query("three")
    finally:
        await provider.aclose()
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector("one"), fake_vector("two")]), rtol=1e-6)
    np.testing.assert_allclose(query, normalize_rows(fake_vector("three")), rtol=1e-6)
    assert [r.path for r in legacy_server.requests] == [
        "/api/embed",
        "/api/embeddings",
        "/api/embeddings",
        "/api/embeddings",
    ]
    assert [r.json()["prompt"] for r in legacy_server.requests[1:]] == ["one", "two", "three"]


async def test_a_model_that_is_not_pulled_is_named_and_not_mistaken_for_an_old_server(
    server: OllamaFake,
) -> None:
    provider = OllamaProvider(RemoteSettings(base_url=server.base_url, model="ollama/mxbai-embed-large"), env={})
    try:
        with pytest.raises(EmbeddingError, match='HTTP 404: model "mxbai-embed-large" not found') as caught:
            await provider.embed_query("q")
    finally:
        await provider.aclose()
    assert [r.path for r in server.requests] == ["/api/embed"]
    assert not is_retryable(caught.value)


async def test_a_missing_vector_is_named(server: OllamaFake) -> None:
    provider = OllamaProvider(RemoteSettings(base_url=server.base_url), env={})
    server.enqueue(server.wrong_count())
    try:
        with pytest.raises(EmbeddingError, match="expected 2 vectors, got 1"):
            await provider.embed_documents(["a", "b"])
    finally:
        await provider.aclose()


async def test_defaults_provider_key_and_limits() -> None:
    provider = OllamaProvider(env={})
    await provider.aclose()
    assert (provider.base_url, provider.model) == ("http://127.0.0.1:11434", "nomic-embed-text")
    assert provider.fingerprint.provider_key == Fingerprint("ollama", "nomic-embed-text").provider_key
    assert provider.max_input_tokens == 8192


def test_output_dimensionality_is_refused_because_ollama_cannot_honour_it() -> None:
    with pytest.raises(ConfigError, match="output_dimensionality"):
        OllamaProvider(RemoteSettings(output_dimensionality=256), env={})
