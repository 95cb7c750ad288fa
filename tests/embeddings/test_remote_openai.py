"""OpenAI (and OpenAI-compatible) embeddings against a loopback server speaking OpenAI's wire format.

These tests also cover what every remote provider shares (remote.py, http_errors.py): error translation, response
checks, timeouts and normalisation.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import anyio
import anyio.to_thread
import numpy as np
import pytest

from memoryd.embeddings.base import EmbeddingProvider, Fingerprint, normalize_rows
from memoryd.embeddings.openai import OpenAIProvider
from memoryd.embeddings.remote import RemoteSettings
from memoryd.embeddings.retry import RetryPolicy, is_retryable, with_retries
from memoryd.errors import EmbeddingAuthError, EmbeddingError, EmbeddingQuotaError, EmbeddingRateLimitError
from tests.fakes.embedding_servers import OpenAIFake, fake_vector
from tests.fakes.http_server import RecordedRequest, Reply

KEY = "sk-test-0123456789"
pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[OpenAIFake]:
    with OpenAIFake(api_key=KEY) as fake:
        yield fake


@pytest.fixture
async def provider(server: OpenAIFake) -> AsyncIterator[OpenAIProvider]:
    p = OpenAIProvider(RemoteSettings(base_url=server.base_url, api_key=KEY, timeout_s=5), env={})
    yield p
    await p.aclose()


async def failure(provider: OpenAIProvider) -> EmbeddingError:
    with pytest.raises(EmbeddingError) as caught:
        await provider.embed_documents(["alpha", "beta"])
    return caught.value


async def test_documents_come_back_as_unit_rows_in_input_order(provider: OpenAIProvider, server: OpenAIFake) -> None:
    texts = ["alpha", "beta gamma", "ünïcødé 記憶"]
    vectors = await provider.embed_documents(texts)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector(t) for t in texts]), rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    (request,) = server.requests
    assert request.path == "/v1/embeddings"
    assert request.json() == {"model": "text-embedding-3-small", "input": texts}
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"


async def test_a_query_is_one_normalised_row(provider: OpenAIProvider, server: OpenAIFake) -> None:
    vector = await provider.embed_query("what did we decide?")
    np.testing.assert_allclose(vector, normalize_rows(fake_vector("what did we decide?")), rtol=1e-6)
    assert server.requests[0].json()["input"] == ["what did we decide?"]


async def test_items_are_placed_by_their_index_not_their_position(provider: OpenAIProvider, server: OpenAIFake) -> None:
    server.enqueue(server.reversed_order())
    vectors = await provider.embed_documents(["one", "two", "three"])
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector(t) for t in ("one", "two", "three")]), rtol=1e-6)


async def test_no_texts_means_no_request(provider: OpenAIProvider, server: OpenAIFake) -> None:
    assert (await provider.embed_documents([])).shape[0] == 0
    assert server.requests == []


async def test_the_provider_satisfies_the_protocol(provider: OpenAIProvider) -> None:
    assert isinstance(provider, EmbeddingProvider)
    assert (provider.id, provider.model, provider.max_input_tokens) == ("openai", "text-embedding-3-small", 8192)


async def test_a_compatible_base_url_and_extra_headers_are_used_and_keyed(server: OpenAIFake) -> None:
    settings = RemoteSettings(
        base_url=server.base_url + "/",
        api_key=KEY,
        headers={"X-Team": "memory", "Authorization": f"Bearer {KEY}"},
        model="openai/text-embedding-ada-002",
    )
    provider = OpenAIProvider(settings, env={})
    try:
        await provider.embed_query("hello")
    finally:
        await provider.aclose()
    (request,) = server.requests
    assert request.path == "/v1/embeddings"
    assert request.headers["x-team"] == "memory"
    assert request.json()["model"] == "text-embedding-ada-002"
    assert provider.max_input_tokens == 8191
    assert provider.fingerprint.key_data == {
        "provider": "openai",
        "baseUrl": server.base_url,
        "model": "text-embedding-ada-002",
        "headers": [["x-team", "memory"]],
    }


async def test_the_provider_key_changes_with_the_endpoint_but_not_with_the_api_key() -> None:
    async def key_of(settings: RemoteSettings) -> str:
        provider = OpenAIProvider(settings, env={})
        await provider.aclose()
        return provider.fingerprint.provider_key

    base = await key_of(RemoteSettings(base_url="http://127.0.0.1:9/v1", api_key="a"))
    assert base == await key_of(RemoteSettings(base_url="http://127.0.0.1:9/v1", api_key="b"))
    assert base != await key_of(RemoteSettings(base_url="http://127.0.0.1:10/v1", api_key="a"))
    assert base != Fingerprint("openai", "text-embedding-3-small").provider_key


async def test_output_dimensionality_is_requested_as_dimensions_and_keyed(server: OpenAIFake) -> None:
    provider = OpenAIProvider(RemoteSettings(base_url=server.base_url, api_key=KEY, output_dimensionality=4), env={})
    try:
        assert (await provider.embed_query("short")).shape == (1, 4)
    finally:
        await provider.aclose()
    assert server.requests[0].json()["dimensions"] == 4
    assert provider.fingerprint.key_data["dimensions"] == 4


async def test_the_key_comes_from_the_environment_when_not_configured(server: OpenAIFake) -> None:
    provider = OpenAIProvider(RemoteSettings(base_url=server.base_url), env={"OPENAI_API_KEY": f" {KEY} "})
    try:
        assert (await provider.embed_query("hi")).shape == (1, 8)
    finally:
        await provider.aclose()


def test_a_missing_key_is_the_auth_error_auto_selection_skips() -> None:
    with pytest.raises(EmbeddingAuthError) as caught:
        OpenAIProvider(RemoteSettings(), env={"OPENAI_API_KEY": "  "})
    assert str(caught.value) == "No API key found for provider openai"


async def test_a_rejected_key_is_a_final_auth_error(server: OpenAIFake) -> None:
    provider = OpenAIProvider(RemoteSettings(base_url=server.base_url, api_key="sk-wrong"), env={})
    try:
        error = await failure(provider)
    finally:
        await provider.aclose()
    assert isinstance(error, EmbeddingAuthError)
    assert "HTTP 401" in str(error)
    assert not is_retryable(error)


async def test_exhausted_quota_is_a_final_quota_error(provider: OpenAIProvider, server: OpenAIFake) -> None:
    server.enqueue(server.quota_exhausted())
    error = await failure(provider)
    assert isinstance(error, EmbeddingQuotaError)
    assert not is_retryable(error)


async def test_a_429_carries_retry_after_in_seconds(provider: OpenAIProvider, server: OpenAIFake) -> None:
    server.enqueue(server.rate_limited(retry_after="7"))
    error = await failure(provider)
    assert isinstance(error, EmbeddingRateLimitError)
    assert error.retry_after == 7.0


async def test_a_429_carries_retry_after_given_as_an_http_date(provider: OpenAIProvider, server: OpenAIFake) -> None:
    when = datetime.now(UTC) + timedelta(seconds=30)
    server.enqueue(server.rate_limited(retry_after=format_datetime(when, usegmt=True)))
    error = await failure(provider)
    assert isinstance(error, EmbeddingRateLimitError)
    assert error.retry_after is not None
    assert 20.0 < error.retry_after <= 30.0


async def test_a_429_takes_the_wait_from_openais_message_when_no_header_gives_it(
    provider: OpenAIProvider, server: OpenAIFake
) -> None:
    message = "Rate limit reached on tokens per min (TPM): Limit 1000000. Please try again in 1m30s."
    server.enqueue(server.rate_limited(message=message))
    error = await failure(provider)
    assert isinstance(error, EmbeddingRateLimitError)
    assert error.retry_after == 90.0


async def test_an_overloaded_server_is_a_rate_limit(provider: OpenAIProvider, server: OpenAIFake) -> None:
    server.enqueue(server.overloaded())
    error = await failure(provider)
    assert isinstance(error, EmbeddingRateLimitError)
    assert error.retry_after is None


async def test_a_server_error_is_a_retryable_embedding_error(provider: OpenAIProvider, server: OpenAIFake) -> None:
    server.enqueue(server.server_error(502))
    error = await failure(provider)
    assert type(error) is EmbeddingError
    assert "HTTP 502" in str(error)
    assert is_retryable(error)


async def test_a_client_error_is_final_and_names_the_servers_reason(server: OpenAIFake) -> None:
    provider = OpenAIProvider(RemoteSettings(base_url=server.base_url + "/v9", api_key=KEY), env={})
    try:
        error = await failure(provider)
    finally:
        await provider.aclose()
    assert "HTTP 404: Invalid URL (POST /v1/v9/embeddings)" in str(error)
    assert not is_retryable(error)


async def test_malformed_json_is_named(provider: OpenAIProvider, server: OpenAIFake) -> None:
    server.enqueue(server.malformed_json())
    error = await failure(provider)
    assert "not valid JSON" in str(error)
    assert not is_retryable(error)


async def test_a_missing_vector_is_named(provider: OpenAIProvider, server: OpenAIFake) -> None:
    server.enqueue(server.wrong_count())
    error = await failure(provider)
    assert "expected 2 vectors, got 1" in str(error)
    assert not is_retryable(error)


async def test_vectors_must_have_the_configured_dimensions(server: OpenAIFake) -> None:
    provider = OpenAIProvider(RemoteSettings(base_url=server.base_url, api_key=KEY, output_dimensionality=4), env={})
    server.enqueue(server.wrong_dims(512))
    try:
        error = await failure(provider)
    finally:
        await provider.aclose()
    assert "512 dimensions, expected the configured 4" in str(error)
    assert not is_retryable(error)


async def test_one_wrong_sized_answer_does_not_poison_later_answers(
    provider: OpenAIProvider, server: OpenAIFake
) -> None:
    """The index refuses wrong-sized vectors itself; the provider must not remember a bad first answer."""
    server.enqueue(server.wrong_dims(512))
    assert (await provider.embed_query("first")).shape == (1, 512)
    assert (await provider.embed_query("second")).shape == (1, 8)


async def test_a_response_without_data_is_named(provider: OpenAIProvider, server: OpenAIFake) -> None:
    server.enqueue(Reply.json({"object": "list"}))
    assert 'no "data" list' in str(await failure(provider))


async def test_a_slow_reply_times_out_retryably(server: OpenAIFake) -> None:
    provider = OpenAIProvider(RemoteSettings(base_url=server.base_url, api_key=KEY, timeout_s=0.2), env={})
    server.enqueue(server.stall())
    try:
        error = await failure(provider)
    finally:
        await provider.aclose()
    assert "timed out after 0.2 s" in str(error)
    assert is_retryable(error)


async def test_a_refused_connection_is_retryable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAIProvider(RemoteSettings(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY), env={})
    try:
        error = await failure(provider)
    finally:
        await provider.aclose()
    assert "connection error" in str(error)
    assert is_retryable(error)


async def test_an_echoed_key_is_masked_in_the_error(provider: OpenAIProvider, server: OpenAIFake) -> None:
    server.enqueue(server.error(400, f"Bad request for key {KEY}", kind="invalid_request_error"))
    error = await failure(provider)
    assert KEY not in str(error)
    assert "key ***" in str(error)


async def test_retries_outlast_a_rate_limit_and_a_server_error(provider: OpenAIProvider, server: OpenAIFake) -> None:
    server.enqueue(server.rate_limited(retry_after="2"), server.server_error())
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    policy = RetryPolicy(rand=lambda: 0.0)
    vectors = await with_retries(lambda: provider.embed_documents(["a", "b"]), policy=policy, sleep=record)
    assert vectors.shape == (2, 8)
    assert waits == [2.0, 1.0]
    assert len(server.requests) == 3


async def test_text_that_json_cannot_carry_is_named_without_a_request(
    provider: OpenAIProvider, server: OpenAIFake
) -> None:
    with pytest.raises(EmbeddingError, match="cannot be encoded as JSON"):
        await provider.embed_query("broken \ud800 surrogate")
    assert server.requests == []


async def test_one_provider_keeps_two_document_requests_in_flight_and_queries_pass_them(
    provider: OpenAIProvider, server: OpenAIFake
) -> None:
    """Agents share a provider (select.ProviderPool): their syncs together keep at most two document
    requests open, and a search's query embedding never queues behind them."""
    arrived = threading.Semaphore(0)
    query = "a search meanwhile"

    def documents_held(request: RecordedRequest) -> Reply:
        if request.json()["input"] == [query]:
            return server.dispatch(request)
        arrived.release()
        return server.stall()

    server.enqueue(*[documents_held] * 4)
    outcomes: list[BaseException] = []

    async def sync_batch(text: str) -> None:
        try:
            await provider.embed_documents([text])
        except EmbeddingError as exc:  # the server ends the held requests when it closes
            outcomes.append(exc)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for text in ("one", "two", "three"):
                tg.start_soon(sync_batch, text)
            for _ in range(2):
                assert await anyio.to_thread.run_sync(arrived.acquire, True, 5)
            assert (await provider.embed_query(query)).shape == (1, 8)
            held = [r for r in server.requests if r.json()["input"] != [query]]
            assert len(held) == 2  # the third batch waits for a slot
            server.close()
    assert len(outcomes) == 3
