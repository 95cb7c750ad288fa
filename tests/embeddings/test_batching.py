"""Batch planning (UTF-8 byte budget, spec §3.12) and running batches with retries and a limit."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import anyio
import anyio.lowlevel
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.embeddings.base import Vectors, normalize_rows
from memoryd.embeddings.batching import embed_in_batches, plan_batches
from memoryd.embeddings.openai import OpenAIProvider
from memoryd.embeddings.remote import RemoteSettings
from memoryd.embeddings.retry import RetryPolicy
from memoryd.errors import EmbeddingAuthError, EmbeddingError
from tests.fakes.embedding_servers import OpenAIFake, fake_vector

NO_JITTER = RetryPolicy(rand=lambda: 0.0)


def size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


texts_strategy = st.lists(st.text(max_size=60), max_size=40)


@given(texts_strategy, st.integers(min_value=1, max_value=200), st.one_of(st.none(), st.integers(1, 6)))
def test_batches_cover_every_text_once_in_order(texts: list[str], max_bytes: int, max_items: int | None) -> None:
    plan = plan_batches(texts, max_bytes, max_items)
    assert [i for batch in plan for i in batch] == list(range(len(texts)))
    assert all(plan)


@given(texts_strategy, st.integers(min_value=1, max_value=200), st.one_of(st.none(), st.integers(1, 6)))
def test_a_batch_stays_within_budget_unless_it_is_one_oversized_text(
    texts: list[str], max_bytes: int, max_items: int | None
) -> None:
    for batch in plan_batches(texts, max_bytes, max_items):
        assert len(batch) == 1 or sum(size(texts[i]) for i in batch) <= max_bytes
        assert max_items is None or len(batch) <= max_items


@given(texts_strategy, st.integers(min_value=1, max_value=200), st.one_of(st.none(), st.integers(1, 6)))
def test_a_new_batch_starts_only_when_the_next_text_would_not_fit(
    texts: list[str], max_bytes: int, max_items: int | None
) -> None:
    plan = plan_batches(texts, max_bytes, max_items)
    for previous, following in itertools.pairwise(plan):
        used = sum(size(texts[i]) for i in previous)
        full = max_items is not None and len(previous) == max_items
        assert full or used + size(texts[following[0]]) > max_bytes


def test_the_default_budget_is_8000_utf8_bytes() -> None:
    two_byte = "é" * 2000  # 4000 bytes, 2000 characters
    assert plan_batches([two_byte, two_byte, "x"]) == [[0, 1], [2]]
    assert plan_batches(["a", "b" * 9000, "c"]) == [[0], [1], [2]]
    assert plan_batches([]) == []


class Recorder:
    """An embed function that records its batches and how many ran at once."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.running = 0
        self.most_at_once = 0

    async def __call__(self, texts: list[str]) -> Vectors:
        self.batches.append(texts)
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        self.running -= 1
        return normalize_rows([fake_vector(t) for t in texts])


@pytest.mark.anyio
async def test_rows_come_back_in_input_order_whatever_the_batching() -> None:
    texts = [f"text {i} " + "x" * (i * 37 % 300) for i in range(60)]
    recorder = Recorder()
    vectors = await embed_in_batches(texts, recorder, policy=NO_JITTER, max_bytes=1000)
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector(t) for t in texts]), rtol=1e-6)
    assert len(recorder.batches) == len(plan_batches(texts, 1000))
    assert recorder.most_at_once == 1


@pytest.mark.anyio
async def test_a_shared_limiter_bounds_requests_in_flight() -> None:
    recorder = Recorder()
    limiter = anyio.CapacityLimiter(2)
    texts = [f"t{i}" for i in range(12)]
    await embed_in_batches(texts, recorder, policy=NO_JITTER, max_items=1, limiter=limiter)
    assert len(recorder.batches) == 12
    assert recorder.most_at_once == 2


@pytest.mark.anyio
async def test_no_texts_make_no_calls() -> None:
    recorder = Recorder()
    assert (await embed_in_batches([], recorder, policy=NO_JITTER)).shape[0] == 0
    assert recorder.batches == []


@pytest.mark.anyio
async def test_a_final_error_is_raised_as_itself_not_as_a_group() -> None:
    async def reject(texts: list[str]) -> Vectors:
        raise EmbeddingAuthError("openai embeddings failed: HTTP 401: Incorrect API key provided.")

    with pytest.raises(EmbeddingAuthError):
        await embed_in_batches(["a", "b"], reject, policy=NO_JITTER, max_items=1, limiter=anyio.CapacityLimiter(2))


@pytest.fixture
def server() -> Iterator[OpenAIFake]:
    with OpenAIFake(api_key="k") as fake:
        yield fake


@pytest.mark.anyio
async def test_each_batch_is_retried_against_a_real_server(server: OpenAIFake) -> None:
    provider = OpenAIProvider(RemoteSettings(base_url=server.base_url, api_key="k"), env={})
    server.enqueue(server.rate_limited(retry_after="3"), server.server_error())
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    texts = ["a" * 5000, "b" * 5000, "c"]
    try:
        vectors = await embed_in_batches(texts, provider.embed_documents, policy=NO_JITTER, sleep=record)
    finally:
        await provider.aclose()
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector(t) for t in texts]), rtol=1e-6)
    assert waits == [3.0, 1.0]
    assert [len(r.json()["input"]) for r in server.requests] == [1, 1, 1, 2]


@pytest.mark.anyio
async def test_a_batch_that_keeps_failing_raises_its_error(server: OpenAIFake) -> None:
    provider = OpenAIProvider(RemoteSettings(base_url=server.base_url, api_key="k"), env={})
    server.enqueue(*[server.server_error()] * 4)
    try:
        with pytest.raises(EmbeddingError, match="HTTP 500"):
            await embed_in_batches(["a"], provider.embed_documents, policy=NO_JITTER, sleep=_no_wait)
    finally:
        await provider.aclose()
    assert len(server.requests) == 4


async def _no_wait(seconds: float) -> None:
    """Retries without waiting."""
