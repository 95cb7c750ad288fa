"""Gemini embeddings against a loopback server speaking the Generative Language API's wire format."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

from memoryd.embeddings.base import normalize_rows
from memoryd.embeddings.gemini import GeminiProvider
from memoryd.embeddings.remote import RemoteSettings
from memoryd.embeddings.retry import is_retryable
from memoryd.errors import EmbeddingAuthError, EmbeddingError, EmbeddingQuotaError, EmbeddingRateLimitError
from tests.fakes.embedding_servers import GeminiFake, fake_vector

KEY = "AIza-test-key"
pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[GeminiFake]:
    with GeminiFake(api_key=KEY) as fake:
        yield fake


@pytest.fixture
async def provider(server: GeminiFake) -> AsyncIterator[GeminiProvider]:
    p = GeminiProvider(RemoteSettings(base_url=server.base_url, api_key=KEY), env={})
    yield p
    await p.aclose()


async def failure(provider: GeminiProvider) -> EmbeddingError:
    with pytest.raises(EmbeddingError) as caught:
        await provider.embed_query("what did we decide?")
    return caught.value


async def test_a_query_uses_embed_content_with_the_query_task_type(
    provider: GeminiProvider, server: GeminiFake
) -> None:
    vector = await provider.embed_query("what did we decide?")
    np.testing.assert_allclose(vector, normalize_rows(fake_vector("what did we decide?")), rtol=1e-6)
    (request,) = server.requests
    assert request.path == "/v1beta/models/gemini-embedding-001:embedContent"
    assert request.json() == {
        "model": "models/gemini-embedding-001",
        "content": {"parts": [{"text": "what did we decide?"}]},
        "taskType": "RETRIEVAL_QUERY",
    }
    assert request.headers["x-goog-api-key"] == KEY
    assert request.query == {}
    assert "authorization" not in request.headers


async def test_documents_use_batch_embed_contents_with_the_document_task_type(
    provider: GeminiProvider, server: GeminiFake
) -> None:
    texts = ["alpha", "beta", "gamma"]
    vectors = await provider.embed_documents(texts)
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector(t) for t in texts]), rtol=1e-6)
    (request,) = server.requests
    assert request.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    sent = request.json()["requests"]
    assert [r["content"]["parts"][0]["text"] for r in sent] == texts
    assert {r["taskType"] for r in sent} == {"RETRIEVAL_DOCUMENT"}
    assert {r["model"] for r in sent} == {"models/gemini-embedding-001"}


async def test_more_than_a_hundred_documents_are_split_into_requests_in_order(
    provider: GeminiProvider, server: GeminiFake
) -> None:
    texts = [f"note {i}" for i in range(150)]
    vectors = await provider.embed_documents(texts)
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector(t) for t in texts]), rtol=1e-6)
    assert [len(r.json()["requests"]) for r in server.requests] == [100, 50]


async def test_output_dimensionality_is_requested_and_keyed(server: GeminiFake) -> None:
    settings = RemoteSettings(
        base_url=server.base_url,
        api_key=KEY,
        model="models/gemini-embedding-001",
        output_dimensionality=4,
        headers={"X-Goog-Api-Key": KEY, "X-Project": "p1"},
    )
    provider = GeminiProvider(settings, env={})
    try:
        assert (await provider.embed_documents(["a", "b"])).shape == (2, 4)
        assert (await provider.embed_query("q")).shape == (1, 4)
    finally:
        await provider.aclose()
    assert server.requests[0].json()["requests"][0]["outputDimensionality"] == 4
    assert server.requests[1].json()["outputDimensionality"] == 4
    assert server.requests[0].headers["x-project"] == "p1"
    assert provider.fingerprint.key_data == {
        "provider": "gemini",
        "baseUrl": server.base_url,
        "model": "gemini-embedding-001",
        "outputDimensionality": 4,
        "headers": [["x-project", "p1"]],
    }


async def test_the_key_comes_from_gemini_api_key_then_google_api_key(server: GeminiFake) -> None:
    for env in ({"GEMINI_API_KEY": KEY, "GOOGLE_API_KEY": "other"}, {"GOOGLE_API_KEY": KEY}):
        provider = GeminiProvider(RemoteSettings(base_url=server.base_url), env=env)
        try:
            await provider.embed_query("hi")
        finally:
            await provider.aclose()
    assert [r.headers["x-goog-api-key"] for r in server.requests] == [KEY, KEY]


def test_a_missing_key_is_the_auth_error_auto_selection_skips() -> None:
    with pytest.raises(EmbeddingAuthError, match=r"^No API key found for provider gemini$"):
        GeminiProvider(RemoteSettings(), env={})


async def test_an_invalid_key_answered_with_400_is_still_an_auth_error(server: GeminiFake) -> None:
    provider = GeminiProvider(RemoteSettings(base_url=server.base_url, api_key="AIza-wrong"), env={})
    try:
        error = await failure(provider)
    finally:
        await provider.aclose()
    assert isinstance(error, EmbeddingAuthError)
    assert "API key not valid" in str(error)
    assert not is_retryable(error)


async def test_a_per_minute_quota_429_carries_the_retry_info_delay(
    provider: GeminiProvider, server: GeminiFake
) -> None:
    server.enqueue(server.rate_limited(retry_delay="27.5s"))
    error = await failure(provider)
    assert isinstance(error, EmbeddingRateLimitError)
    assert error.retry_after == 27.5


async def test_a_retry_after_header_wins_over_retry_info(provider: GeminiProvider, server: GeminiFake) -> None:
    server.enqueue(server.rate_limited(retry_after="3"))
    error = await failure(provider)
    assert isinstance(error, EmbeddingRateLimitError)
    assert error.retry_after == 3.0


async def test_a_used_up_daily_quota_is_final(provider: GeminiProvider, server: GeminiFake) -> None:
    server.enqueue(server.quota_exhausted())
    error = await failure(provider)
    assert isinstance(error, EmbeddingQuotaError)
    assert "daily quota" in str(error)


async def test_an_overloaded_model_is_a_rate_limit_and_an_internal_error_is_retryable(
    provider: GeminiProvider, server: GeminiFake
) -> None:
    server.enqueue(server.overloaded(), server.server_error())
    assert isinstance(await failure(provider), EmbeddingRateLimitError)
    internal = await failure(provider)
    assert type(internal) is EmbeddingError
    assert is_retryable(internal)


async def test_a_batch_answer_with_a_vector_missing_is_named(provider: GeminiProvider, server: GeminiFake) -> None:
    server.enqueue(server.wrong_count())
    with pytest.raises(EmbeddingError, match="expected 3 vectors, got 2"):
        await provider.embed_documents(["a", "b", "c"])


async def test_malformed_json_is_named(provider: GeminiProvider, server: GeminiFake) -> None:
    server.enqueue(server.malformed_json())
    assert "not valid JSON" in str(await failure(provider))


async def test_max_input_tokens_follow_the_spec_table() -> None:
    async def limit(model: str) -> int:
        provider = GeminiProvider(RemoteSettings(api_key=KEY, model=model), env={})
        await provider.aclose()
        return provider.max_input_tokens

    assert await limit("") == 2048
    assert await limit("gemini-embedding-2-preview") == 8192
    assert await limit("some-future-model") == 2048
