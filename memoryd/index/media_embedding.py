"""Embedding the media files of prepared files (multimodal memory): cache first, then one request each.

A media file's bytes are read again here, one file at a time, and must still hash to what was
prepared; a file changed in between is left out of this pass (the next sync sees the change). A
file the provider refuses as too large is skipped, logged and counted, and the others go on, as
OpenClaw does; any other failure is the sync's embedding failure like a text chunk's (the caption
is then indexed for keyword search and embedded again next sync). Media never goes through the
async batch APIs: each file is its own request, up to `multimodal.max_file_bytes` of inline data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import anyio
import anyio.to_thread
import numpy as np
import structlog

from memoryd.config import FilesSettings
from memoryd.embeddings.base import EmbeddingProvider, MediaEmbedder, MediaInput, Vectors, media_embedder
from memoryd.embeddings.retry import DEFAULT_RETRY_POLICY, RetryPolicy, with_retries
from memoryd.errors import EmbeddingError, EmbeddingInputTooLargeError
from memoryd.index.embedding import index_dims
from memoryd.index.sync import Outcome, Prepared, read_source
from memoryd.media import DEFAULT_MAX_FILE_BYTES
from memoryd.sources.safefile import RefusedFileError
from memoryd.store.index import IndexStore

log = structlog.get_logger(__name__)

Dropped = Literal["rejected", "changed"]


@dataclass(slots=True)
class MediaVectors:
    """What embedding the media files of one batch gave: a (1 × dims) array per embedded file (by its
    index among the prepared files), and why each other one was not embedded."""

    vectors: dict[int, Vectors] = field(default_factory=dict)
    dropped: dict[int, Dropped] = field(default_factory=dict)


async def embed_media(
    provider: EmbeddingProvider,
    store: IndexStore,
    prepared: Sequence[Prepared],
    *,
    cache: bool,
    dims: int | None = None,
    rules: FilesSettings | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    policy: RetryPolicy = DEFAULT_RETRY_POLICY,
) -> MediaVectors:
    """Vectors for the changed media files among `prepared`. `dims`: the size of this batch's text
    vectors, if any; media vectors must match them and the index. Raises EmbeddingError as a sync's
    embedding fails (the provider cannot embed media, or failed for another reason than size)."""
    out = MediaVectors()
    todo = [(i, item) for i, item in enumerate(prepared) if item.outcome is Outcome.CHANGED and item.media]
    if not todo:
        return out
    embedder = media_embedder(provider)
    if embedder is None:
        raise EmbeddingError(f"{provider.id} model {provider.model} cannot embed images or audio")
    fp = provider.fingerprint
    expected = await anyio.to_thread.run_sync(index_dims, store) or dims
    hashes = [item.hash for _, item in todo]
    known = await anyio.to_thread.run_sync(store.cache_lookup, fp, hashes) if cache else {}
    for i, item in todo:
        hit = known.get(item.hash)
        if hit is not None and (expected is None or int(hit.shape[-1]) == expected):
            out.vectors[i] = hit.reshape(1, -1)
            expected = int(hit.shape[-1])
            continue
        got = await _embed_one(embedder, item, rules or FilesSettings(), max_file_bytes, policy)
        if isinstance(got, str):
            out.dropped[i] = got
            continue
        if expected is not None and int(got.shape[-1]) != expected:
            raise EmbeddingError(
                f"{fp.provider} returned {got.shape[-1]}-dimensional vectors for {item.file.path}, "
                f"but this index holds {expected}-dimensional ones"
            )
        expected = int(got.shape[-1])
        out.vectors[i] = got
        if cache:

            def remember(h: str = item.hash, row: np.ndarray = got[0]) -> None:
                with store.transaction():
                    store.cache_store(fp, [(h, row)])

            await anyio.to_thread.run_sync(remember)
    if expected is not None and out.vectors:
        await anyio.to_thread.run_sync(store.ensure_vectors, expected)
    return out


async def _embed_one(
    embedder: MediaEmbedder, item: Prepared, rules: FilesSettings, max_file_bytes: int, policy: RetryPolicy
) -> Vectors | Dropped:
    """One media file's vector, re-read from disk through the safe reader; or why it has none this pass."""
    ref = item.media
    assert ref is not None
    try:
        data, _ = await anyio.to_thread.run_sync(read_source, item.file, rules, max_file_bytes)
    except (OSError, RefusedFileError):  # it is no longer the file that was prepared
        data = b""
    if hashlib.sha256(data).hexdigest() != ref.data_hash:
        log.info("media file changed while it was indexed; left for the next sync", path=item.file.path)
        return "changed"
    media = MediaInput(ref.caption, ref.mime_type, data)
    try:
        return await with_retries(lambda: embedder.embed_media([media]), policy=policy)
    except EmbeddingInputTooLargeError as exc:
        log.warning(
            "media file refused by the embedding provider as too large; skipped",
            path=item.file.path,
            bytes=len(data),
            error=str(exc),
        )
        return "rejected"
