"""Gemini's async batch embeddings (File API + asyncBatchEmbedContent + batch operations) on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import numpy as np
import orjson
import pytest

from memoryd.config import BatchSettings
from memoryd.embeddings.base import normalize_rows
from memoryd.embeddings.batch import UNAVAILABLE_MARKER, BatchEmbedder
from memoryd.embeddings.gemini import GeminiProvider
from memoryd.embeddings.remote import RemoteSettings
from memoryd.errors import EmbeddingError
from tests.fakes.batch_servers import FAST_RETRY, GeminiBatchFake, multipart
from tests.fakes.embedding_servers import fake_vector

KEY = "AIza-test-batch-key"
TEXTS = ["alpha", "beta", "gamma"]
FAST = FAST_RETRY
DEADLINE_S = 10
pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[GeminiBatchFake]:
    with GeminiBatchFake(api_key=KEY) as fake:
        yield fake


@pytest.fixture
async def provider(server: GeminiBatchFake) -> AsyncIterator[GeminiProvider]:
    p = GeminiProvider(RemoteSettings(base_url=server.base_url, api_key=KEY, timeout_s=5), env={})
    yield p
    await p.aclose()


def embedder(timeout_s: float = 5) -> BatchEmbedder:
    return BatchEmbedder(BatchSettings(enabled=True, poll_interval_ms=1), policy=FAST, timeout_s=timeout_s)


async def test_the_job_goes_through_upload_create_poll_and_download_with_the_key_in_a_header(
    provider: GeminiProvider, server: GeminiBatchFake
) -> None:
    with anyio.fail_after(DEADLINE_S):
        vectors = await embedder().embed(provider, TEXTS)
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector(t) for t in TEXTS]), rtol=1e-6)
    (job,) = server.jobs
    assert [(r.method, r.path) for r in server.requests] == [
        ("POST", "/upload/v1beta/files"),
        ("POST", "/v1beta/models/gemini-embedding-001:asyncBatchEmbedContent"),
        ("GET", f"/v1beta/{job.job_id}"),
        ("GET", f"/v1beta/{job.job_id}"),
        ("GET", f"/download/v1beta/{job.output_file}:download"),
    ]
    assert all(r.headers["x-goog-api-key"] == KEY and "key" not in r.query for r in server.requests)
    assert server.polls == {job.job_id: 2}


async def test_each_line_of_the_input_file_is_a_keyed_document_request(
    provider: GeminiProvider, server: GeminiBatchFake
) -> None:
    with anyio.fail_after(DEADLINE_S):
        await embedder().embed(provider, TEXTS[:2])
    upload = server.requests_to("/upload/")[0]
    assert upload.query == {"uploadType": "multipart"}
    parts = multipart(upload)
    assert parts is not None
    assert [p.content_type for p in parts] == ["application/json", "application/jsonl"]
    lines = [orjson.loads(line) for line in parts[1].data.splitlines() if line]
    assert lines == [
        {
            "key": str(i),
            "request": {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": text}]},
                "taskType": "RETRIEVAL_DOCUMENT",
            },
        }
        for i, text in enumerate(TEXTS[:2])
    ]
    create = server.requests_to(":asyncBatchEmbedContent")[0].json()
    assert create["batch"]["inputConfig"]["fileName"].startswith("files/")
    assert server.jobs[0].requests == [("0", "alpha"), ("1", "beta")]


async def test_an_endpoint_without_async_batch_embedding_switches_batch_mode_off_at_once(
    provider: GeminiProvider, server: GeminiBatchFake
) -> None:
    server.async_available = False
    batch = embedder()
    with anyio.fail_after(DEADLINE_S):
        vectors = await batch.embed_or_fallback(provider, TEXTS, provider.embed_documents)
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector(t) for t in TEXTS]), rtol=1e-6)
    assert batch.disabled
    assert batch.failures == batch.limit
    assert UNAVAILABLE_MARKER in (batch.last_error or "")
    assert len(server.requests_to(":batchEmbedContents")) == 1


async def test_a_failed_operation_raises_with_the_message_it_carries(
    provider: GeminiProvider, server: GeminiBatchFake
) -> None:
    server.lifecycle = ("BATCH_STATE_PENDING", "BATCH_STATE_FAILED")
    server.failure_message = "Input file is malformed."
    with anyio.fail_after(DEADLINE_S), pytest.raises(EmbeddingError) as caught:
        await embedder().embed(provider, TEXTS)
    assert str(caught.value).endswith(f"batch {server.jobs[0].job_id} BATCH_STATE_FAILED: Input file is malformed.")


async def test_an_error_inside_the_responses_file_fails_the_job(
    provider: GeminiProvider, server: GeminiBatchFake
) -> None:
    server.item_errors = {"1": "Request contains an invalid argument."}
    with anyio.fail_after(DEADLINE_S), pytest.raises(EmbeddingError) as caught:
        await embedder().embed(provider, TEXTS)
    assert "failed for 1 of 3 requests: 1: Request contains an invalid argument." in str(caught.value)


async def test_a_job_that_never_ends_is_cancelled_through_the_operation(
    provider: GeminiProvider, server: GeminiBatchFake
) -> None:
    server.lifecycle = ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING")
    with anyio.fail_after(DEADLINE_S), pytest.raises(EmbeddingError, match=r"timed out after 0\.05 s"):
        await embedder(timeout_s=0.05).embed(provider, TEXTS)
    assert len(server.requests_to(":cancel")) == 2
    assert sorted(server.cancelled) == sorted(job.job_id for job in server.jobs)
