"""Embedding the chunks of prepared files: cache first, then the provider, batch by batch.

Every batch the provider answers is written to the embedding cache at once, so a sync that is
interrupted or rate-limited half-way resumes where it stopped instead of starting over.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import anyio.to_thread
import numpy as np

from memoryd.embeddings.base import EmbeddingProvider, Vectors
from memoryd.embeddings.batching import plan_batches
from memoryd.embeddings.retry import DEFAULT_RETRY_POLICY, RetryPolicy, with_retries
from memoryd.errors import EmbeddingError
from memoryd.index.sync import Outcome, Prepared
from memoryd.store.index import IndexStore


async def embed_prepared(
    provider: EmbeddingProvider,
    store: IndexStore,
    prepared: Sequence[Prepared],
    *,
    cache: bool,
    policy: RetryPolicy = DEFAULT_RETRY_POLICY,
    limiter: anyio.CapacityLimiter | None = None,
) -> list[Vectors | None]:
    """One (chunks × dims) array per changed file, None for the others."""
    fp = provider.fingerprint
    text_of: dict[str, str] = {}
    for item in prepared:
        if item.outcome is Outcome.CHANGED:
            for chunk in item.chunks:
                text_of.setdefault(chunk.hash, chunk.text)
    out: list[Vectors | None] = [None] * len(prepared)
    if not text_of:
        return out
    hashes = list(text_of)
    known: dict[str, np.ndarray] = await anyio.to_thread.run_sync(store.cache_lookup, fp, hashes) if cache else {}
    missing = [h for h in hashes if h not in known]
    gate = limiter or anyio.CapacityLimiter(1)
    for batch in plan_batches([text_of[h] for h in missing]):
        batch_hashes = [missing[i] for i in batch]
        texts = [text_of[h] for h in batch_hashes]

        async def call(t: list[str] = texts) -> Vectors:
            async with gate:
                return await provider.embed_documents(t)

        vectors = await with_retries(call, policy=policy)
        if vectors.shape[0] != len(batch_hashes):
            raise EmbeddingError(f"{fp.provider} returned {vectors.shape[0]} vectors for {len(batch_hashes)} texts")
        fresh = list(zip(batch_hashes, vectors, strict=True))
        known.update(fresh)
        if cache:

            def remember(items: list[tuple[str, np.ndarray]] = fresh) -> None:
                with store.transaction():
                    store.cache_store(fp, items)

            await anyio.to_thread.run_sync(remember)
    dims = {int(v.shape[-1]) for v in known.values()}
    if len(dims) > 1:
        raise EmbeddingError(f"{fp.provider} returned vectors of different dimensions: {sorted(dims)}")
    if dims:
        await anyio.to_thread.run_sync(store.ensure_vectors, dims.pop())
    for i, item in enumerate(prepared):
        if item.outcome is Outcome.CHANGED and item.chunks:
            out[i] = np.stack([known[c.hash] for c in item.chunks]).astype(np.float32, copy=False)
    return out
