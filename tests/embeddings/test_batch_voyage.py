"""Voyage's async batch API: OpenAI-shaped Files + Batches with the model and input type per job."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import numpy as np
import orjson
import pytest

from memoryd.config import BatchSettings
from memoryd.embeddings.base import normalize_rows
from memoryd.embeddings.batch import BatchEmbedder
from memoryd.embeddings.remote import RemoteSettings
from memoryd.embeddings.voyage import VoyageProvider
from memoryd.errors import EmbeddingError
from tests.fakes.batch_servers import FAST_RETRY, VoyageBatchFake, multipart
from tests.fakes.embedding_servers import fake_vector

KEY = "pa-test-batch-key"
TEXTS = ["alpha", "beta", "gamma"]
FAST = FAST_RETRY
DEADLINE_S = 10
pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[VoyageBatchFake]:
    with VoyageBatchFake(api_key=KEY) as fake:
        yield fake


@pytest.fixture
async def provider(server: VoyageBatchFake) -> AsyncIterator[VoyageProvider]:
    p = VoyageProvider(RemoteSettings(base_url=server.base_url, api_key=KEY, timeout_s=5), env={})
    yield p
    await p.aclose()


def embedder() -> BatchEmbedder:
    return BatchEmbedder(BatchSettings(enabled=True, poll_interval_ms=1), policy=FAST, timeout_s=5)


async def test_lines_carry_only_the_input_and_the_job_names_model_and_document_input_type(
    provider: VoyageProvider, server: VoyageBatchFake
) -> None:
    with anyio.fail_after(DEADLINE_S):
        vectors = await embedder().embed(provider, TEXTS)
    np.testing.assert_allclose(vectors, normalize_rows([fake_vector(t) for t in TEXTS]), rtol=1e-6)
    parts = multipart(server.requests_to("/v1/files")[0])
    assert parts is not None
    (upload,) = [p for p in parts if p.name == "file"]
    lines = [orjson.loads(line) for line in upload.data.splitlines() if line]
    assert lines == [{"custom_id": str(i), "body": {"input": t}} for i, t in enumerate(TEXTS)]
    create = server.requests_to("/v1/batches")[0].json()
    assert create["completion_window"] == "12h"
    assert create["endpoint"] == "/v1/embeddings"
    assert create["request_params"] == {"model": "voyage-4-large", "input_type": "document"}


async def test_a_chosen_output_dimension_is_a_job_parameter(server: VoyageBatchFake) -> None:
    settings = RemoteSettings(base_url=server.base_url, api_key=KEY, output_dimensionality=4)
    provider = VoyageProvider(settings, env={})
    try:
        with anyio.fail_after(DEADLINE_S):
            vectors = await embedder().embed(provider, ["alpha"])
    finally:
        await provider.aclose()
    assert vectors.shape == (1, 4)
    assert server.requests_to("/v1/batches")[0].json()["request_params"]["output_dimension"] == 4


async def test_a_failed_request_in_the_error_file_reports_voyages_detail_message(
    provider: VoyageProvider, server: VoyageBatchFake
) -> None:
    server.item_errors = {"0": "Input text exceeds the context length."}
    with anyio.fail_after(DEADLINE_S), pytest.raises(EmbeddingError) as caught:
        await embedder().embed(provider, TEXTS)
    assert "0: HTTP 400: Input text exceeds the context length." in str(caught.value)
