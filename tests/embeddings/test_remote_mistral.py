"""Mistral embeddings against a loopback server speaking Mistral's wire format."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

from memoryd.embeddings.base import normalize_rows
from memoryd.embeddings.mistral import MistralProvider
from memoryd.embeddings.remote import RemoteSettings
from memoryd.errors import EmbeddingAuthError, EmbeddingRateLimitError
from tests.fakes.embedding_servers import MistralFake, fake_vector

KEY = "mistral-test-key"
pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[MistralFake]:
    with MistralFake(api_key=KEY) as fake:
        yield fake


@pytest.fixture
async def provider(server: MistralFake) -> AsyncIterator[MistralProvider]:
    p = MistralProvider(RemoteSettings(base_url=server.base_url), env={"MISTRAL_API_KEY": KEY})
    yield p
    await p.aclose()


async def test_documents_are_embedded_with_bearer_auth_and_normalised(
    provider: MistralProvider, server: MistralFake
) -> None:
    texts = ["le projet", "the project"]
    vectors = await provider.embed_documents(texts)
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector(t) for t in texts]), rtol=1e-6)
    (request,) = server.requests
    assert request.path == "/v1/embeddings"
    assert request.json() == {"model": "mistral-embed", "input": texts}
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_the_provider_key_is_provider_and_model(provider: MistralProvider) -> None:
    assert provider.fingerprint.key_data == {"provider": "mistral", "model": "mistral-embed"}
    assert provider.max_input_tokens == 8192


async def test_a_rejected_key_is_an_auth_error(server: MistralFake) -> None:
    provider = MistralProvider(RemoteSettings(base_url=server.base_url, api_key="wrong"), env={})
    try:
        with pytest.raises(EmbeddingAuthError, match="HTTP 401: Unauthorized"):
            await provider.embed_query("q")
    finally:
        await provider.aclose()


async def test_a_rate_limit_is_retryable_with_the_servers_wait(provider: MistralProvider, server: MistralFake) -> None:
    server.enqueue(server.rate_limited(retry_after="1"))
    with pytest.raises(EmbeddingRateLimitError) as caught:
        await provider.embed_query("q")
    assert caught.value.retry_after == 1.0


def test_a_missing_key_is_the_auth_error_auto_selection_skips() -> None:
    with pytest.raises(EmbeddingAuthError, match=r"^No API key found for provider mistral$"):
        MistralProvider(RemoteSettings(), env={})
