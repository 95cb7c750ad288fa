"""OpenAI's async batch API (Files + Batches) against a loopback server that runs real job lifecycles."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import numpy as np
import orjson
import pytest

from memoryd.config import BatchSettings
from memoryd.embeddings.base import normalize_rows
from memoryd.embeddings.batch import BatchEmbedder
from memoryd.embeddings.openai import OpenAIProvider
from memoryd.embeddings.remote import RemoteSettings
from memoryd.errors import EmbeddingError
from tests.fakes.batch_servers import FAST_RETRY, OpenAIBatchFake, multipart
from tests.fakes.embedding_servers import fake_vector

KEY = "sk-test-batch-0123456789"
TEXTS = ["alpha", "beta", "gamma", "delta", "epsilon"]
FAST = FAST_RETRY
DEADLINE_S = 10
pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[OpenAIBatchFake]:
    with OpenAIBatchFake(api_key=KEY) as fake:
        yield fake


@pytest.fixture
async def provider(server: OpenAIBatchFake) -> AsyncIterator[OpenAIProvider]:
    p = OpenAIProvider(RemoteSettings(base_url=server.base_url, api_key=KEY, timeout_s=5), env={})
    yield p
    await p.aclose()


def embedder(*, wait: bool = True, concurrency: int = 2, per_job: int = 50_000) -> BatchEmbedder:
    settings = BatchSettings(enabled=True, wait=wait, concurrency=concurrency, poll_interval_ms=1)
    return BatchEmbedder(settings, policy=FAST, timeout_s=5, max_requests_per_job=per_job)


async def failure(batch: BatchEmbedder, provider: OpenAIProvider, texts: list[str] = TEXTS) -> str:
    with anyio.fail_after(DEADLINE_S), pytest.raises(EmbeddingError) as caught:
        await batch.embed(provider, texts)
    return str(caught.value)


def expected(texts: list[str]) -> np.ndarray:
    return normalize_rows([fake_vector(t) for t in texts])


async def test_vectors_come_back_in_input_order_although_the_output_lines_are_shuffled(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.output_order = "shuffled"
    with anyio.fail_after(DEADLINE_S):
        vectors = await embedder().embed(provider, TEXTS)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    (job,) = server.jobs
    assert [cid for cid, _ in job.requests] == ["0", "1", "2", "3", "4"]


async def test_the_job_is_uploaded_created_and_polled_through_every_state_of_its_lifecycle(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    with anyio.fail_after(DEADLINE_S):
        await embedder().embed(provider, TEXTS[:2])
    upload = server.requests_to("/v1/files")[0]
    assert upload.method == "POST"
    assert upload.headers["authorization"] == f"Bearer {KEY}"
    parts = {p.name: p for p in multipart(upload) or []}
    assert parts["purpose"].data == b"batch"
    lines = [orjson.loads(line) for line in parts["file"].data.splitlines() if line]
    assert lines == [
        {
            "custom_id": str(i),
            "method": "POST",
            "url": "/v1/embeddings",
            "body": {"model": "text-embedding-3-small", "input": text},
        }
        for i, text in enumerate(TEXTS[:2])
    ]
    create = server.requests_to("/v1/batches")[0].json()
    assert create["endpoint"] == "/v1/embeddings"
    assert create["completion_window"] == "24h"
    assert create["input_file_id"].startswith("file-")
    (job,) = server.jobs
    assert job.state == "completed"
    # validating (create) -> in_progress -> finalizing -> completed: three status requests.
    assert server.polls == {job.job_id: 3}


async def test_a_requested_output_size_goes_into_every_request_body(server: OpenAIBatchFake) -> None:
    settings = RemoteSettings(base_url=server.base_url, api_key=KEY, output_dimensionality=4)
    provider = OpenAIProvider(settings, env={})
    try:
        with anyio.fail_after(DEADLINE_S):
            vectors = await embedder().embed(provider, ["alpha"])
    finally:
        await provider.aclose()
    assert vectors.shape == (1, 4)
    np.testing.assert_allclose(vectors, normalize_rows(fake_vector("alpha", 4)), rtol=1e-6)


async def test_more_texts_than_one_job_holds_run_as_several_jobs_at_most_concurrency_at_a_time(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.lifecycle = ("validating", "in_progress", "in_progress", "completed")
    with anyio.fail_after(DEADLINE_S):
        vectors = await embedder(concurrency=2, per_job=2).embed(provider, TEXTS)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    assert sorted(len(job.requests) for job in server.jobs) == [1, 2, 2]
    assert server.max_active == 2


async def test_one_job_at_a_time_when_concurrency_is_one(provider: OpenAIProvider, server: OpenAIBatchFake) -> None:
    with anyio.fail_after(DEADLINE_S):
        await embedder(concurrency=1, per_job=2).embed(provider, TEXTS)
    assert len(server.jobs) == 3
    assert server.max_active == 1


@pytest.mark.parametrize("end", ["failed", "expired", "cancelled"])
async def test_a_job_that_ends_without_success_raises_with_its_state(
    provider: OpenAIProvider, server: OpenAIBatchFake, end: str
) -> None:
    server.lifecycle = ("validating", "in_progress", end)
    message = await failure(embedder(), provider)
    assert f"batch {server.jobs[0].job_id} {end}" in message
    assert not server.requests_to("/content")


async def test_a_failed_job_names_the_errors_the_api_listed(provider: OpenAIProvider, server: OpenAIBatchFake) -> None:
    server.lifecycle = ("validating", "failed")
    server.job_errors = [{"code": "token_limit_exceeded", "message": "Enqueued token limit reached.", "line": None}]
    message = await failure(embedder(), provider)
    assert "failed: Enqueued token limit reached." in message


async def test_requests_that_failed_inside_a_completed_job_are_read_from_its_error_file(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.item_errors = {"2": "This model's maximum context length is 8192 tokens."}
    message = await failure(embedder(), provider)
    assert "failed for 1 of 5 requests: 2: HTTP 400: This model's maximum context length is 8192 tokens." in message
    assert len(server.requests_to("/content")) == 2  # output file and error file


async def test_a_job_whose_every_request_failed_has_only_an_error_file(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.item_errors = {"0": "bad input", "1": "bad input"}
    message = await failure(embedder(), provider, ["alpha", "beta"])
    assert "failed for 2 of 2 requests" in message


async def test_an_output_without_some_custom_ids_fails_and_names_them(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.drop_ids = {"1", "3"}
    message = await failure(embedder(), provider)
    assert "is missing 2 of 5 embeddings (custom ids 1, 3)" in message


async def test_an_output_line_for_a_custom_id_never_sent_fails_the_job(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.stray_ids = {"99"}
    message = await failure(embedder(), provider)
    assert "answered an unknown custom_id '99'" in message


async def test_without_wait_the_job_is_submitted_but_not_polled(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    message = await failure(embedder(wait=False), provider)
    assert "not waiting for it" in message
    assert len(server.jobs) == 1
    assert server.polls == {}


async def test_a_job_already_complete_when_created_is_not_polled(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.lifecycle = ("completed",)
    with anyio.fail_after(DEADLINE_S):
        vectors = await embedder(wait=False).embed(provider, TEXTS)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    assert server.polls == {}


async def test_a_transient_server_error_while_polling_is_retried(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.enqueue(server.server_error(), server.rate_limited(retry_after="0"), path="/v1/batches/")
    with anyio.fail_after(DEADLINE_S):
        vectors = await embedder().embed(provider, TEXTS)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-6)
    assert len(server.requests_to("/v1/batches/")) == 5


async def test_a_job_that_never_ends_times_out_and_is_cancelled(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.lifecycle = ("validating", "in_progress")
    # Long enough for the second poll (in_progress) on a loaded machine: ~5 ms apart here, 0.05 s was not always enough.
    batch = BatchEmbedder(BatchSettings(enabled=True, poll_interval_ms=1), policy=FAST, timeout_s=0.5)
    message = await failure(batch, provider)
    assert "timed out after 0.5 s (last state in_progress)" in message
    assert sorted(server.cancelled) == sorted(job.job_id for job in server.jobs)
    assert len(server.jobs) == 2  # the timeout is retried once
    assert all(server.polls[job.job_id] >= 1 for job in server.jobs)


async def test_a_rejected_key_is_an_error_of_the_upload(server: OpenAIBatchFake) -> None:
    provider = OpenAIProvider(RemoteSettings(base_url=server.base_url, api_key="sk-wrong"), env={})
    try:
        message = await failure(embedder(), provider)
    finally:
        await provider.aclose()
    assert "HTTP 401" in message
    assert "sk-wrong" not in message
    assert not server.jobs


async def test_when_one_job_fails_the_job_still_running_beside_it_is_cancelled(
    provider: OpenAIProvider, server: OpenAIBatchFake
) -> None:
    server.next_lifecycles = [("validating", "in_progress", "in_progress", "failed"), ("validating", "in_progress")]
    message = await failure(embedder(concurrency=2, per_job=1), provider, ["alpha", "beta"])
    assert len(server.jobs) == 2
    (failed,) = [job for job in server.jobs if f"batch {job.job_id} failed" in message]
    assert server.cancelled == [job.job_id for job in server.jobs if job is not failed]
