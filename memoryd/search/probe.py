"""`status --deep` for the builtin index: really exercise what searches need, timed, and never raise.

Three checks, each `{ok, ms, error, …}` (`ok` is null when there was nothing to check):
* `embedding`: one query embedding through the agent's provider (a round trip to a remote API, or an
  inference of the local model);
* `vectorSearch`: one vector-leg query of the index with that vector (or a unit vector of the index's
  dimension when there is no provider), through the same backend a search would pick;
* `sqliteVec`: `vec_version()` and one KNN query of the sign-bit table, when the index has one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
import apsw
import numpy as np

from memoryd.embeddings.base import Vectors
from memoryd.errors import MemorydError
from memoryd.search.keyword import total_chunks
from memoryd.search.vector import ExactMatrixCache, knn_binary, search_vector
from memoryd.store import schema
from memoryd.store.readers import ReaderPool

PROBE_TEXT = "memoryd status probe"
EMBED_TIMEOUT_S = 30.0
ALL_SOURCES = ("memory", "sessions")

Check = dict[str, Any]


def _check(ok: bool | None = None, started: float | None = None, error: str | None = None, **extra: Any) -> Check:
    ms = None if started is None else round((time.perf_counter() - started) * 1000, 2)
    return {"ok": ok, "ms": ms, "error": error, **extra}


async def probe_embedding(embed: Callable[[str], Awaitable[Vectors]] | None) -> tuple[Check, Vectors | None]:
    """One query embedding; the check and the vector (None when it failed or there is no provider)."""
    if embed is None:
        return _check(error="no embedding provider"), None
    started = time.perf_counter()
    try:
        with anyio.fail_after(EMBED_TIMEOUT_S):
            vector = await embed(PROBE_TEXT)
    except TimeoutError:
        return _check(False, started, f"no answer within {EMBED_TIMEOUT_S:g} s"), None
    except MemorydError as exc:
        return _check(False, started, str(exc)), None
    values = np.asarray(vector, dtype=np.float32).ravel()
    if values.size == 0 or not np.isfinite(values).all():
        return _check(False, started, "the provider returned an empty or non-finite vector"), None
    return _check(True, started, dims=int(values.size)), vector


def probe_store(readers: ReaderPool, cache: ExactMatrixCache, model: str, vector: Vectors | None) -> dict[str, Check]:
    """The vector leg and sqlite-vec, queried once each on a read connection (blocking: run in a thread)."""
    with readers.reader() as (conn, vec):
        dims = schema.vec_dims(conn)
        if vector is not None:
            q = np.asarray(vector, dtype=np.float32).ravel()
        elif dims:
            q = np.full(dims, 1 / math.sqrt(dims), dtype=np.float32)
        else:
            q = None
        if q is None:
            search = _check(error="the index holds no vectors")
        elif dims is not None and q.size != dims:
            search = _check(False, error=f"the query vector has {q.size} dimensions, the index {dims}")
        else:
            started = time.perf_counter()
            try:
                hits = search_vector(
                    conn,
                    q,
                    k=1,
                    sources=ALL_SOURCES,
                    model=model,
                    vec_available=vec.available,
                    cache=cache,
                    total_chunks=total_chunks(conn),
                )
                search = _check(True, started, backend=hits.backend, hits=len(hits.hits))
            except MemorydError as exc:
                search = _check(False, started, str(exc))
        return {"vectorSearch": search, "sqliteVec": _probe_sqlite_vec(conn, vec.available, vec.error, q, model)}


def _probe_sqlite_vec(conn: apsw.Connection, available: bool, load_error: str | None, q: Any, model: str) -> Check:
    if not available:
        return _check(False, error=load_error or "sqlite-vec is not loaded")
    started = time.perf_counter()
    try:
        row = conn.execute("SELECT vec_version()").fetchone()
        version = str(row[0]) if row else None
        bits = schema.vbit_dims(conn)
        if bits is None or q is None or q.size != bits:
            return _check(True, started, version=version, knn=None)
        rows = knn_binary(conn, q, k=1, sources=ALL_SOURCES, model=model)
    except MemorydError as exc:
        return _check(False, started, str(exc))
    except apsw.Error as exc:  # the extension's own error is what the probe found
        return _check(False, started, f"{type(exc).__name__}: {exc}")
    return _check(True, started, version=version, knn=len(rows))
