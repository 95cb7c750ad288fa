"""Voyage embeddings against a loopback server speaking Voyage's wire format."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

from memoryd.embeddings.base import Fingerprint, normalize_rows
from memoryd.embeddings.remote import RemoteSettings
from memoryd.embeddings.voyage import VoyageProvider
from memoryd.errors import EmbeddingAuthError, EmbeddingRateLimitError
from tests.fakes.embedding_servers import VoyageFake, fake_vector

KEY = "pa-test-key"
pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[VoyageFake]:
    with VoyageFake(api_key=KEY) as fake:
        yield fake


@pytest.fixture
async def provider(server: VoyageFake) -> AsyncIterator[VoyageProvider]:
    p = VoyageProvider(RemoteSettings(base_url=server.base_url), env={"VOYAGE_API_KEY": KEY})
    yield p
    await p.aclose()


async def test_queries_and_documents_are_sent_with_their_input_type(
    provider: VoyageProvider, server: VoyageFake
) -> None:
    query = await provider.embed_query("when is the launch?")
    documents = await provider.embed_documents(["launch is in May", "budget is fixed"])
    np.testing.assert_allclose(query, normalize_rows(fake_vector("when is the launch?")), rtol=1e-6)
    assert documents.shape == (2, 8)
    bodies = [r.json() for r in server.requests]
    assert bodies == [
        {"model": "voyage-4-large", "input": ["when is the launch?"], "input_type": "query"},
        {"model": "voyage-4-large", "input": ["launch is in May", "budget is fixed"], "input_type": "document"},
    ]
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_the_provider_key_is_provider_and_model_as_in_openclaw(provider: VoyageProvider) -> None:
    assert provider.fingerprint.provider_key == Fingerprint("voyage", "voyage-4-large").provider_key


async def test_a_chosen_output_dimension_is_requested_and_changes_the_provider_key(server: VoyageFake) -> None:
    settings = RemoteSettings(base_url=server.base_url, api_key=KEY, output_dimensionality=4)
    provider = VoyageProvider(settings, env={})
    try:
        assert (await provider.embed_query("q")).shape == (1, 4)
    finally:
        await provider.aclose()
    assert server.requests[0].json()["output_dimension"] == 4
    assert provider.fingerprint.provider_key != Fingerprint("voyage", "voyage-4-large").provider_key


async def test_errors_in_voyages_detail_format_are_translated(provider: VoyageProvider, server: VoyageFake) -> None:
    server.enqueue(server.unauthorized(), server.rate_limited(retry_after="4"))
    with pytest.raises(EmbeddingAuthError, match="HTTP 401: Provided API key is invalid"):
        await provider.embed_query("q")
    with pytest.raises(EmbeddingRateLimitError) as caught:
        await provider.embed_query("q")
    assert caught.value.retry_after == 4.0


async def test_max_input_tokens_follow_the_spec_table(server: VoyageFake) -> None:
    provider = VoyageProvider(RemoteSettings(model="voyage/voyage-3-lite"), env={"VOYAGE_API_KEY": KEY})
    await provider.aclose()
    assert (provider.model, provider.max_input_tokens) == ("voyage-3-lite", 16000)


def test_a_missing_key_is_the_auth_error_auto_selection_skips() -> None:
    with pytest.raises(EmbeddingAuthError, match=r"^No API key found for provider voyage$"):
        VoyageProvider(RemoteSettings(), env={"OPENAI_API_KEY": "sk-elsewhere"})
