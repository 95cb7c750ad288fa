"""Embedding the chunks of prepared files: cache first, then the provider, batch by batch.

Every batch the provider answers is written to the embedding cache at once, so a sync that is
interrupted or rate-limited half-way resumes where it stopped instead of starting over.

Vectors must have the dimension the index already holds: a delta sync uses the model the index
was built with (any change of model or provider settings rebuilds the index), so a differently
sized answer is a provider fault. It is refused before it reaches the cache or the index, where it
would otherwise replace the whole sqlite-vec table (and poison the cache) with a handful of rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import anyio.to_thread
import numpy as np

from memoryd.embeddings.base import EmbeddingProvider, Vectors
from memoryd.embeddings.batch import BatchEmbedder
from memoryd.embeddings.batching import plan_batches
from memoryd.embeddings.retry import DEFAULT_RETRY_POLICY, RetryPolicy, with_retries
from memoryd.errors import EmbeddingError
from memoryd.index.sync import Outcome, Prepared
from memoryd.store import schema
from memoryd.store.index import IndexStore


def index_dims(store: IndexStore) -> int | None:
    """The dimension of the vectors the index holds; None while it holds none (a new or rebuilt index)."""
    dims = schema.vec_dims(store.conn)
    if dims is None:
        meta = store.read_meta()
        dims = meta.vector_dims if meta is not None else None
    return dims


def _check_dims(fp_provider: str, vectors: Vectors, expected: int | None) -> None:
    got = int(vectors.shape[-1])
    if expected is not None and got != expected:
        raise EmbeddingError(
            f"{fp_provider} returned {got}-dimensional vectors, but this index holds {expected}-dimensional ones"
        )


async def embed_prepared(
    provider: EmbeddingProvider,
    store: IndexStore,
    prepared: Sequence[Prepared],
    *,
    cache: bool,
    policy: RetryPolicy = DEFAULT_RETRY_POLICY,
    limiter: anyio.CapacityLimiter | None = None,
    batch: BatchEmbedder | None = None,
    cache_only: bool = False,
) -> list[Vectors | None]:
    """One (chunks × dims) array per changed file, None for the others.

    `cache_only` (keyword first): only files whose every chunk is in the embedding cache get vectors;
    the others are written without and embedded afterwards (`memoryd.index.backlog`).
    """
    text_of: dict[str, str] = {}
    for item in prepared:
        if item.outcome is Outcome.CHANGED and item.media is None:  # media files: media_embedding.py
            for chunk in item.chunks:
                text_of.setdefault(chunk.hash, chunk.text)
    out: list[Vectors | None] = [None] * len(prepared)
    if not text_of:
        return out
    known = await embed_texts(
        provider, store, text_of, cache=cache, policy=policy, limiter=limiter, batch=batch, cache_only=cache_only
    )
    for i, item in enumerate(prepared):
        ready = item.outcome is Outcome.CHANGED and item.chunks and item.media is None
        if ready and all(c.hash in known for c in item.chunks):
            out[i] = np.stack([known[c.hash] for c in item.chunks]).astype(np.float32, copy=False)
    return out


async def embed_texts(
    provider: EmbeddingProvider,
    store: IndexStore,
    text_of: dict[str, str],
    *,
    cache: bool,
    policy: RetryPolicy = DEFAULT_RETRY_POLICY,
    limiter: anyio.CapacityLimiter | None = None,
    batch: BatchEmbedder | None = None,
    cache_only: bool = False,
) -> dict[str, np.ndarray]:
    """A vector for each text (by chunk hash): from the cache, then the provider (none with `cache_only`).

    With an async batch API enabled (`remote.batch.enabled`) the missing texts go to one batch job
    set first; when that fails (the embedder counts and eventually disables itself) the synchronous
    path below embeds whatever is still missing.
    """
    fp = provider.fingerprint
    hashes = list(text_of)
    expected = await anyio.to_thread.run_sync(index_dims, store)
    known: dict[str, np.ndarray] = await anyio.to_thread.run_sync(store.cache_lookup, fp, hashes) if cache else {}
    if expected is not None:
        known = {h: v for h, v in known.items() if int(v.shape[-1]) == expected}
    missing = [] if cache_only else [h for h in hashes if h not in known]
    if missing and batch is not None and batch.usable(provider):
        try:
            batch_vectors = await batch.embed(provider, [text_of[h] for h in missing])
        except EmbeddingError:
            pass  # counted and logged by the batch embedder; the synchronous path takes over
        else:
            _check_dims(fp.provider, batch_vectors, expected)
            fresh_batch = list(zip(missing, batch_vectors, strict=True))
            known.update(fresh_batch)
            if cache:

                def remember_batch(items: list[tuple[str, np.ndarray]] = fresh_batch) -> None:
                    with store.transaction():
                        store.cache_store(fp, items)

                await anyio.to_thread.run_sync(remember_batch)
            missing = []
    gate = limiter or anyio.CapacityLimiter(1)
    for planned in plan_batches([text_of[h] for h in missing]):
        batch_hashes = [missing[i] for i in planned]
        texts = [text_of[h] for h in batch_hashes]

        async def call(t: list[str] = texts) -> Vectors:
            async with gate:
                return await provider.embed_documents(t)

        vectors = await with_retries(call, policy=policy)
        if vectors.shape[0] != len(batch_hashes):
            raise EmbeddingError(f"{fp.provider} returned {vectors.shape[0]} vectors for {len(batch_hashes)} texts")
        _check_dims(fp.provider, vectors, expected)
        expected = int(vectors.shape[-1])
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
    return known
