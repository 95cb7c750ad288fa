"""Vectors after keywords (issue 24, item 1): embed the chunks the index holds without a vector.

A sync writes every changed file's chunks at once, keyword-searchable, with the vectors the embedding
cache already has; the rest are left NULL and embedded here, slice by slice, newest files first (the
session a user just had is the one they ask about). Every slice is one transaction, so a kill at any
point loses at most the slice being embedded: the next sync finds the chunks still without a vector
and carries on. Searches meanwhile answer hybrid where vectors exist and by keywords alone elsewhere
(`memoryd.search.vector.complete_vector_scores`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

import anyio.to_thread
import numpy as np

from memoryd.embeddings.base import EmbeddingProvider
from memoryd.embeddings.batch import BatchEmbedder
from memoryd.faults import crash_point
from memoryd.index.embedding import embed_texts
from memoryd.index.tracker import Tracker
from memoryd.media import NO_LINES
from memoryd.store import schema
from memoryd.store.db import translated
from memoryd.store.index import GENERATION_KEY, IndexStore, vector_blob

SLICE_CHUNKS = 256
"""Chunks embedded and committed together: a few provider batches, small enough that a sync waiting
for the writer is let in within seconds even at a few chunks per second."""


def pending_count(store: IndexStore, model: str) -> int:
    """Chunks of `model` without a vector (media chunks are embedded with their file, never here)."""
    with translated("counting chunks without vectors"):
        row = store.conn.execute(
            "SELECT COUNT(*) FROM chunks WHERE embedding IS NULL AND model = ? AND start_line != ?", (model, NO_LINES)
        ).fetchone()
    return int(row[0]) if row else 0


def _pending(store: IndexStore, model: str, limit: int) -> list[tuple[int, str, str]]:
    """Up to `limit` chunks without a vector, newest file first: (rowid, chunk hash, text)."""
    with translated("reading chunks without vectors"):
        rows = store.conn.execute(
            "SELECT c.n, c.hash, c.text FROM chunks c JOIN files f ON f.source = c.source AND f.path = c.path "
            "WHERE c.embedding IS NULL AND c.model = ? AND c.start_line != ? "
            "ORDER BY f.mtime_ns DESC, c.n ASC LIMIT ?",
            (model, NO_LINES, limit),
        ).fetchall()
    return [(int(str(n)), str(h), str(t)) for n, h, t in rows]


def _write(store: IndexStore, rows: Sequence[tuple[int, np.ndarray]]) -> None:
    """Store the vectors of one slice (and their binary copies) in one transaction."""
    with store.transaction():
        with translated("writing vectors"):
            store.conn.executemany(
                "UPDATE chunks SET embedding = ? WHERE n = ? AND embedding IS NULL",
                [(vector_blob(v), n) for n, v in rows],
            )
            if store.vec.available:
                bits = schema.vbit_dims(store.conn)
                if bits is not None:
                    marks = ",".join("?" * len(rows))
                    store.conn.execute(
                        f"INSERT INTO {schema.VBIT_TABLE}(rowid, source, shard, embedding) "
                        "SELECT n, source, n % ?, vec_quantize_binary(embedding) FROM chunks "
                        f"WHERE n IN ({marks}) AND length(embedding) = ?",
                        (schema.VBIT_SHARDS, *(n for n, _ in rows), bits * 4),
                    )
        store.set_value(GENERATION_KEY, uuid.uuid4().hex)


async def embed_backlog(
    provider: EmbeddingProvider,
    store: IndexStore,
    tracker: Tracker,
    *,
    cache: bool,
    batch: BatchEmbedder | None = None,
    interrupted: Callable[[], bool] = lambda: False,
) -> int:
    """Embed chunks without vectors until none is left or `interrupted()` says a sync is waiting; returns how
    many are left. Raises EmbeddingError as a sync does (the chunks stay keyword-only until the next)."""
    model = provider.fingerprint.model
    left = await anyio.to_thread.run_sync(pending_count, store, model)
    if not left:
        return 0
    tracker.embedding(left)
    while left and not interrupted():
        rows = await anyio.to_thread.run_sync(_pending, store, model, SLICE_CHUNKS)
        if not rows:
            break
        text_of = {h: t for _n, h, t in rows}
        known = await embed_texts(provider, store, text_of, cache=cache, batch=batch)
        found = [(n, known[h]) for n, h, _t in rows if h in known]
        await anyio.to_thread.run_sync(_write, store, found)
        crash_point("vectors:after-slice")
        tracker.embedded(len(found))
        left = (
            max(0, left - len(found))
            if len(found) == len(rows)
            else await anyio.to_thread.run_sync(pending_count, store, model)
        )
    return left
