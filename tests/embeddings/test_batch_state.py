"""The batch failure state of spec §3.12 and the way back to the synchronous API, over a real fake server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import numpy as np
import pytest

from memoryd.config import BatchSettings
from memoryd.embeddings.base import Vectors, normalize_rows
from memoryd.embeddings.batch import BATCH_FAILURE_LIMIT, BatchEmbedder, supports_batch
from memoryd.embeddings.mistral import MistralProvider
from memoryd.embeddings.openai import OpenAIProvider
from memoryd.embeddings.remote import RemoteSettings
from memoryd.errors import EmbeddingError
from tests.fakes.batch_servers import FAST_RETRY, OpenAIBatchFake
from tests.fakes.embedding_servers import MistralFake, fake_vector

KEY = "sk-test-batch-0123456789"
TEXTS = ["alpha", "beta", "gamma"]
FAST = FAST_RETRY
SUCCESS = ("validating", "completed")
FAILURE = ("validating", "failed")
ENDLESS = ("validating", "in_progress")
DEADLINE_S = 10
pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[OpenAIBatchFake]:
    with OpenAIBatchFake(api_key=KEY) as fake:
        fake.lifecycle = SUCCESS
        yield fake


@pytest.fixture
async def provider(server: OpenAIBatchFake) -> AsyncIterator[OpenAIProvider]:
    p = OpenAIProvider(RemoteSettings(base_url=server.base_url, api_key=KEY, timeout_s=5), env={})
    yield p
    await p.aclose()


JOB_TIMEOUT_S = 2.0
"""For the tests whose first job never ends: it times out after this long, and the job after it must finish
within it (a handful of loopback polls, ~5 ms each here; 0.5 s left a loaded machine a 10x margin at best)."""


def embedder(*, enabled: bool = True, timeout_s: float = 30.0) -> BatchEmbedder:
    """A job that ends finishes long before `timeout_s`: only the never-ending ones wait it out."""
    settings = BatchSettings(enabled=enabled, poll_interval_ms=1, concurrency=3)
    return BatchEmbedder(settings, policy=FAST, timeout_s=timeout_s)


def expected(texts: list[str]) -> Vectors:
    return normalize_rows([fake_vector(t) for t in texts])


async def attempt(batch: BatchEmbedder, provider: OpenAIProvider) -> EmbeddingError | None:
    with anyio.fail_after(DEADLINE_S):
        try:
            await batch.embed(provider, TEXTS)
        except EmbeddingError as error:
            return error
    return None


async def test_one_failure_is_counted_and_batch_mode_stays_on(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.lifecycle = FAILURE
    batch = embedder()
    error = await attempt(batch, provider)
    assert error is not None
    assert (batch.failures, batch.disabled, batch.enabled) == (1, False, True)
    assert batch.last_error == str(error)
    assert batch.last_provider == "openai"


async def test_a_second_failure_switches_batch_mode_off_and_later_calls_go_straight_to_the_sync_api(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.lifecycle = FAILURE
    batch = embedder()
    await attempt(batch, provider)
    await attempt(batch, provider)
    assert (batch.failures, batch.disabled, batch.usable(provider)) == (BATCH_FAILURE_LIMIT, True, False)
    jobs = len(server.jobs)
    with anyio.fail_after(DEADLINE_S):
        vectors = await batch.embed_or_fallback(provider, TEXTS, provider.embed_documents)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    assert len(server.jobs) == jobs
    with pytest.raises(EmbeddingError, match="batch mode is off"):
        await batch.embed(provider, TEXTS)
    assert batch.failures == BATCH_FAILURE_LIMIT


async def test_a_success_clears_the_failure_count_and_the_last_error(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.next_lifecycles = [FAILURE, SUCCESS]
    batch = embedder()
    await attempt(batch, provider)
    assert batch.failures == 1
    assert await attempt(batch, provider) is None
    assert (batch.failures, batch.last_error, batch.last_provider, batch.enabled) == (0, None, None, True)


async def test_a_timeout_is_retried_once_and_a_success_on_the_retry_counts_as_success(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.next_lifecycles = [ENDLESS, SUCCESS]
    batch = embedder(timeout_s=JOB_TIMEOUT_S)
    with anyio.fail_after(DEADLINE_S):
        vectors = await batch.embed(provider, TEXTS)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    assert batch.failures == 0
    assert server.cancelled == [server.jobs[0].job_id]


async def test_a_timeout_whose_retry_fails_too_counts_twice_and_switches_batch_mode_off(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.next_lifecycles = [ENDLESS, FAILURE]
    batch = embedder(timeout_s=JOB_TIMEOUT_S)
    error = await attempt(batch, provider)
    assert error is not None
    assert "failed" in str(error)
    assert (batch.failures, batch.disabled) == (2, True)
    assert len(server.jobs) == 2


async def test_after_a_failure_the_same_texts_are_embedded_through_the_synchronous_api(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.lifecycle = FAILURE
    batch = embedder()
    with anyio.fail_after(DEADLINE_S):
        vectors = await batch.embed_or_fallback(provider, TEXTS, provider.embed_documents)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    (sync,) = server.requests_to("/v1/embeddings")
    assert sync.json()["input"] == TEXTS
    assert batch.failures == 1


async def test_a_successful_batch_does_not_touch_the_synchronous_api(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    async def never(texts: list[str]) -> Vectors:
        raise AssertionError("the fallback ran although the batch succeeded")

    with anyio.fail_after(DEADLINE_S):
        vectors = await embedder().embed_or_fallback(provider, TEXTS, never)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    assert not server.requests_to("/v1/embeddings")


async def test_batch_mode_switched_off_in_the_settings_never_submits_a_job(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    batch = embedder(enabled=False)
    assert not batch.usable(provider)
    with anyio.fail_after(DEADLINE_S):
        await batch.embed_or_fallback(provider, TEXTS, provider.embed_documents)
    with pytest.raises(EmbeddingError, match="batch mode is off"):
        await batch.embed(provider, TEXTS)
    assert not server.jobs
    assert batch.state()["enabled"] is False


async def test_a_provider_without_a_batch_api_is_embedded_synchronously_and_counts_nothing() -> None:
    with MistralFake(api_key=KEY) as mistral_server:
        provider = MistralProvider(RemoteSettings(base_url=mistral_server.base_url, api_key=KEY), env={})
        try:
            batch = embedder()
            assert not supports_batch(provider)
            with anyio.fail_after(DEADLINE_S):
                vectors = await batch.embed_or_fallback(provider, TEXTS, provider.embed_documents)
            with pytest.raises(EmbeddingError, match="no async batch API"):
                await batch.embed(provider, TEXTS)
        finally:
            await provider.aclose()
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    assert batch.failures == 0


async def test_no_texts_means_no_job(provider: OpenAIProvider, server: OpenAIBatchFake) -> None:
    vectors = await embedder().embed(provider, [])
    assert vectors.shape[0] == 0
    assert not server.requests


async def test_the_status_object_uses_openclaws_field_names(provider: OpenAIProvider, server: OpenAIBatchFake) -> None:
    server.lifecycle = FAILURE
    settings = BatchSettings(enabled=True, wait=True, concurrency=3, poll_interval_ms=1, timeout_minutes=60)
    batch = BatchEmbedder(settings, policy=FAST)
    await attempt(batch, provider)
    assert batch.state() == {
        "enabled": True,
        "failures": 1,
        "limit": 2,
        "wait": True,
        "concurrency": 3,
        "pollIntervalMs": 1,
        "timeoutMs": 3_600_000,
        "lastError": batch.last_error,
        "lastProvider": "openai",
    }
    assert batch.last_error is not None
