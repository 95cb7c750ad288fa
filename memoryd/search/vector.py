"""The vector leg: the chunks whose embeddings are closest (cosine) to the query's.

OpenClaw scans every vector with `ORDER BY vec_distance_cosine(...)` (its issue #69666). Here the
scan is a sqlite-vec KNN (`MATCH ... AND k = ?`) over one sign bit per dimension, 8-20x cheaper to
scan than float32. sqlite-vec's KNN costs about rows x k, so the binary table is partitioned by
source and into VBIT_SHARDS shards, and each shard is asked for its share of the RESCORE_MIN
candidates; those are then rescored exactly with their float32 vectors, so the ranking and the
scores are exact cosines. bench/search_bench.py measures how often the exact top 10 survive the
coarse pass: all of them on clustered data like real embeddings, about 2/3 on uniform random
vectors, the worst case for sign bits.

Small indexes (up to EXACT_MAX chunks), and any index when sqlite-vec is missing (or before its binary
table exists), are searched exactly in process over a float32 matrix of all the index's vectors,
loaded once per index generation and kept by the caller: below that size a full matrix product is
faster than the KNN and never misses. Every answer says which backend ran.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import apsw
import numpy as np
import numpy.typing as npt
import orjson

from memoryd.search.fuse import Candidate
from memoryd.store import schema
from memoryd.store.db import translated
from memoryd.store.index import GENERATION_KEY

VectorBackend = Literal["sqlite-vec", "exact", "none"]
ALL_SOURCES = frozenset({"memory", "sessions"})
EXACT_MAX = 10_000
"""Indexes of at most this many chunks are searched exactly (a 15 MB matrix at 384 dims)."""
BITS_IN_MEMORY_MAX = 250_000
"""Up to this many chunks the coarse pass scans an in-memory copy of the sign bits (48 bytes a chunk at
384 dims: 12 MB at the cap) with numpy's popcount, ~3x faster than sqlite-vec's scan (no SIMD in its
wheel); larger indexes use sqlite-vec's KNN, which needs no copy. The copy is refreshed after writes
(`IndexEngine` warms it after each sync, so searches rarely wait for it)."""
RESCORE_MIN = 400
"""Fewest coarse candidates rescored exactly."""
RESCORE_FACTOR = 8
"""Coarse candidates per wanted result when more than RESCORE_MIN are wanted."""
SHARD_MARGIN = 2
"""Extra neighbours asked of every shard, for the shards that hold more than their share of the best."""

Floats = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class VectorHits:
    hits: list[Candidate]
    backend: VectorBackend
    chunks: int = 0
    """The index's size as the search saw it (its chunks of every source)."""


@dataclass(frozen=True, slots=True)
class SourceColumn:
    """Each row's source as a small integer code: filtering 100k rows by a string array (np.unique,
    np.isin on str) cost several milliseconds a query; by codes it costs microseconds."""

    names: tuple[str, ...]
    codes: npt.NDArray[np.int8]

    @classmethod
    def of(cls, sources: Sequence[str]) -> SourceColumn:
        names = tuple(sorted(set(sources)))
        lookup = {name: code for code, name in enumerate(names)}
        return cls(names, np.fromiter((lookup[s] for s in sources), dtype=np.int8, count=len(sources)))

    def keep(self, wanted: Sequence[str]) -> npt.NDArray[np.bool_] | None:
        """A row mask for `wanted`, or None when every row qualifies."""
        if set(self.names) <= set(wanted):
            return None
        codes = [code for code, name in enumerate(self.names) if name in wanted]
        return np.isin(self.codes, np.array(codes, dtype=np.int8))


@dataclass(frozen=True, slots=True)
class _Matrix:
    key: tuple[str, str, int]
    rowids: Ints
    sources: SourceColumn
    vectors: Floats


@dataclass(frozen=True, slots=True)
class _Bits:
    """The sign bits of an index's vectors as sqlite-vec packs them (LSB first), stored column-major:
    `columns[j]` holds word j of every chunk. Summing popcounts over a row's 6 words (axis 1 of a
    100k x 6 array) cost ~5 ms a query in numpy's reduction; adding 6 contiguous columns costs ~0.1."""

    key: tuple[str, str, int]
    rowids: Ints
    sources: SourceColumn
    columns: npt.NDArray[np.unsignedinteger[Any]]


class ExactMatrixCache:
    """In-memory copies of one index's vectors, reloaded when the index's generation token (rewritten
    by every write) or the model changes: the float32 matrix (exact search of small indexes) and the
    sign-bit matrix (coarse pass of mid-size ones). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._matrix: _Matrix | None = None
        self._bits: _Bits | None = None

    def matrix(self, conn: apsw.Connection, model: str, dims: int) -> _Matrix:
        key = _cache_key(conn, model, dims)
        with self._lock:
            if self._matrix is None or self._matrix.key != key:
                self._matrix = None  # release the old matrix before building the new one
                self._matrix = _load_matrix(conn, key)
            return self._matrix

    def bits(self, conn: apsw.Connection, model: str, dims: int) -> _Bits:
        key = _cache_key(conn, model, dims)
        with self._lock:
            if self._bits is None or self._bits.key != key:
                self._bits = None
                self._bits = _load_bits(conn, key)
            return self._bits


def _cache_key(conn: apsw.Connection, model: str, dims: int) -> tuple[str, str, int]:
    with translated("reading the index generation"):
        row: Any = conn.execute("SELECT value FROM meta WHERE key = ?", (GENERATION_KEY,)).fetchone()
    return (str(row[0]) if row else "", model, dims)


def _load_bits(conn: apsw.Connection, key: tuple[str, str, int]) -> _Bits:
    _generation, _model, dims = key
    with translated("loading sign bits"):
        rows: list[Any] = conn.execute(f"SELECT rowid, source, embedding FROM {schema.VBIT_TABLE}").fetchall()
    width = (dims + 7) // 8
    raw = np.frombuffer(b"".join(bytes(r[2]) for r in rows), dtype=np.uint8).reshape(len(rows), width)
    words = raw.view(np.uint64) if width % 8 == 0 else raw  # 8x fewer elements to popcount when possible
    rowids = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
    return _Bits(key, rowids, SourceColumn.of([str(r[1]) for r in rows]), np.ascontiguousarray(words.T))


def _load_matrix(conn: apsw.Connection, key: tuple[str, str, int]) -> _Matrix:
    _generation, model, dims = key
    with translated("loading vectors"):
        rows: list[Any] = conn.execute(
            "SELECT n, source, embedding FROM chunks WHERE model = ? AND length(embedding) = ? ORDER BY n",
            (model, dims * 4),
        ).fetchall()
    vectors = np.empty((len(rows), dims), dtype=np.float32)
    for index, (_n, _source, blob) in enumerate(rows):
        vectors[index] = np.frombuffer(blob, dtype="<f4")
    rowids = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
    return _Matrix(key, rowids, SourceColumn.of([str(r[1]) for r in rows]), vectors)


def search_vector(
    conn: apsw.Connection,
    query: npt.ArrayLike,
    *,
    k: int,
    sources: Sequence[str],
    model: str,
    vec_available: bool,
    cache: ExactMatrixCache,
    total_chunks: int,
) -> VectorHits:
    """The `k` chunks of `sources` and `model` nearest to `query`, best first, `vector_score` = cosine.

    `total_chunks` (the index's size) picks the backend: exact up to EXACT_MAX, else sqlite-vec.
    """
    q = _unit(query)
    if k <= 0 or not sources or q.size == 0:
        return VectorHits([], "none", total_chunks)
    if total_chunks > EXACT_MAX and vec_available and schema.vbit_dims(conn) == q.size:
        backend: VectorBackend = "sqlite-vec"
        if total_chunks <= BITS_IN_MEMORY_MAX:
            coarse = coarse_in_memory(cache.bits(conn, model, q.size), q, k=k, sources=sources)
            scored = rescore(conn, q, coarse, k=k, model=model)
        else:
            scored = knn_binary(conn, q, k=k, sources=sources, model=model)
    else:
        matrix = cache.matrix(conn, model, q.size)
        if matrix.rowids.size == 0:
            return VectorHits([], "none", total_chunks)
        backend = "exact"
        scored = knn_exact(matrix, q, k=k, sources=sources)
    return VectorHits(_candidates(conn, scored), backend, total_chunks)


def warm_cache(
    conn: apsw.Connection, cache: ExactMatrixCache, *, model: str, vec_available: bool, total_chunks: int
) -> None:
    """Load the in-memory copy the next search of this index will use, so that search does not wait.
    `total_chunks` picks the copy as `search_vector` would."""
    dims = schema.vec_dims(conn)
    if dims is None or total_chunks == 0:
        return
    if total_chunks <= EXACT_MAX:
        cache.matrix(conn, model, dims)
    elif total_chunks <= BITS_IN_MEMORY_MAX and vec_available and schema.vbit_dims(conn) == dims:
        cache.bits(conn, model, dims)


def knn_binary(
    conn: apsw.Connection, q: Floats, *, k: int, sources: Sequence[str], model: str
) -> list[tuple[int, float]]:
    """Coarse hamming KNN in sqlite-vec, shard by shard (and source by source), then exact cosine
    rescoring of the union, best `k` first.

    All of it is one statement answering one row (JSON): one call into SQLite, so a concurrent
    Python thread (the keyword leg) cannot make this one queue for the GIL between steps.
    """
    pool = max(RESCORE_MIN, RESCORE_FACTOR * k)
    per_shard = -(-pool // schema.VBIT_SHARDS) + SHARD_MARGIN
    wanted = list(dict.fromkeys(sources))
    clauses = [""] if set(wanted) >= ALL_SOURCES else [f" AND source = ?{6 + i}" for i in range(len(wanted))]
    coarse = " UNION ALL ".join(
        f"SELECT rowid FROM {schema.VBIT_TABLE} WHERE embedding MATCH vec_quantize_binary(?1) AND k = ?2 "
        f"AND shard = {shard}{clause}"
        for clause in clauses
        for shard in range(schema.VBIT_SHARDS)
    )
    sql = (
        "SELECT json_group_array(json_array(n, s)) FROM ("
        "SELECT n, 1.0 - vec_distance_cosine(embedding, ?1) AS s FROM chunks "
        f"WHERE n IN ({coarse}) AND model = ?3 AND length(embedding) = ?4 ORDER BY s DESC, n ASC LIMIT ?5)"
    )
    blob = q.astype("<f4").tobytes()
    params = (blob, per_shard, model, q.size * 4, k, *(wanted if clauses != [""] else ()))
    with translated("vector search"):
        row: Any = conn.execute(sql, params).fetchone()
    return [(int(n), float(score)) for n, score in orjson.loads(row[0])] if row and row[0] else []


def coarse_in_memory(bits: _Bits, q: Floats, *, k: int, sources: Sequence[str]) -> Ints:
    """The rowids of the `max(RESCORE_MIN, RESCORE_FACTOR * k)` chunks nearest to `q` in hamming
    distance (ties broken by rowid, so the pool is deterministic)."""
    packed = np.packbits(q > 0, bitorder="little")
    query = packed.view(np.uint64) if bits.columns.dtype == np.uint64 else packed
    columns = bits.columns
    distance = np.zeros(columns.shape[1], dtype=np.uint16)  # at most the dimensions (< 65,536)
    for j in range(columns.shape[0]):
        distance += np.bitwise_count(columns[j] ^ query[j])
    rowids = bits.rowids
    keep = bits.sources.keep(sources)
    if keep is not None:
        distance, rowids = distance[keep], rowids[keep]
    pool = max(RESCORE_MIN, RESCORE_FACTOR * k)
    if rowids.size > pool:
        # The pool's farthest distance from a histogram (distances are small integers): a full
        # partition of 100k values cost ~2 ms, counting them ~0.2.
        kth = int(np.searchsorted(np.cumsum(np.bincount(distance)), pool))
        near = np.flatnonzero(distance <= kth)
        distance, rowids = distance[near], rowids[near]
    order = np.lexsort((rowids, distance))[:pool]
    return rowids[order]


def rescore(conn: apsw.Connection, q: Floats, rowids: Ints, *, k: int, model: str) -> list[tuple[int, float]]:
    """Exact cosines of the coarse candidates, best `k` first (ties by rowid): their stored vectors read
    in one statement, scored by one matrix product. sqlite-vec's `vec_distance_cosine` in the same
    statement took 1.8 ms for 400 candidates at 100k chunks against 1.3 (its wheel has no SIMD)."""
    if rowids.size == 0:
        return []
    with translated("vector search"):
        rows: list[Any] = conn.execute(
            f"SELECT n, embedding FROM chunks WHERE n IN ({_int_list(rowids.tolist())}) AND model = ? "
            "AND length(embedding) = ?",
            (model, q.size * 4),
        ).fetchall()
    if not rows:
        return []
    ids = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
    vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), q.size)
    norms = np.linalg.norm(vectors, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.where(norms > 0, (vectors @ q) / norms, np.float32(0.0)).astype(np.float32)
    finite = np.isfinite(scores)
    return _top(ids[finite], scores[finite], k)


def _int_list(values: Iterable[int]) -> str:
    """Integers inlined into SQL (they are ints, so this is safe; json_each was 5x slower here)."""
    return ",".join(str(int(v)) for v in values)


def knn_exact(matrix: _Matrix, q: Floats, *, k: int, sources: Sequence[str]) -> list[tuple[int, float]]:
    """Exact cosine KNN over the whole matrix (rows of other sources ignored)."""
    if matrix.rowids.size == 0:
        return []
    scores = matrix.vectors @ q
    keep = matrix.sources.keep(sources)
    if keep is not None:
        return _top(matrix.rowids[keep], scores[keep], k)
    return _top(matrix.rowids, scores, k)


def _top(ids: Ints, scores: Floats, k: int) -> list[tuple[int, float]]:
    """The `k` best (rowid, score) pairs, score descending, ties by rowid: a total order."""
    if ids.size > k:
        # Keep everything tied with the k-th score so the tie-break below sees all of them.
        kth = np.partition(scores, ids.size - k)[ids.size - k]
        keep = scores >= kth
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return [(int(ids[i]), float(scores[i])) for i in order]


def _candidates(conn: apsw.Connection, scored: Iterable[tuple[int, float]]) -> list[Candidate]:
    score_of = dict(scored)
    if not score_of:
        return []
    with translated("reading vector hits"):
        rows: list[Any] = conn.execute(
            f"SELECT n, id, path, source, start_line, end_line, text, ts FROM chunks WHERE n IN ({_int_list(score_of)})"
        ).fetchall()
    by_n = {
        int(n): Candidate(
            id=str(cid),
            path=str(path),
            source=str(source),
            start_line=int(start),
            end_line=int(end),
            snippet=str(text),
            vector_score=score_of[int(n)],
            score=score_of[int(n)],
            ts_ms=int(ts),
        )
        for n, cid, path, source, start, end, text, ts in rows
    }
    return [by_n[n] for n in score_of if n in by_n]


def complete_vector_scores(
    query: npt.ArrayLike, hits: Sequence[Candidate], others: Sequence[Candidate]
) -> list[Candidate]:
    """`hits` plus every candidate of `others` (the keyword leg's) that the vector leg did not return,
    with its exact cosine as `vector_score`.

    The vector leg returns a fixed pool; a keyword hit outside it would otherwise fuse with a vector
    score of 0, as if it meant nothing, and lose to weaker chunks that happen to be in both lists.
    The keyword leg read each hit's stored vector of the active model with its text (`search_relaxed`'s
    `vectors_of`), so this is one matrix product; a second indexed read of those vectors here cost ~1.1
    ms of a hybrid search at 100k chunks. A hit without one (another model) is left out.
    """
    q = _unit(query)
    have = {hit.id for hit in hits}
    width = q.size * 4
    missing = [
        cand
        for cand in others
        if cand.id not in have and cand.stored_vector is not None and len(cand.stored_vector) in (0, width)
    ]
    if not missing or q.size == 0:
        return list(hits)
    cosines = _cosines([cand.stored_vector or None for cand in missing], q)
    extra: list[Candidate] = []
    for cand, cosine in zip(missing, cosines, strict=True):
        # A chunk still waiting for its vector (keyword first) stands in with its keyword score, so it fuses
        # as the keyword-only path would rank it instead of as a chunk that means nothing.
        score = cosine if cand.stored_vector else cand.text_score
        if math.isfinite(score):
            extra.append(cand.as_vector_hit(score))
    extra.sort(key=lambda cand: (-cand.vector_score, cand.id))
    return [*hits, *extra]


def _cosines(blobs: Sequence[bytes | None], q: Floats) -> list[float]:
    """Each blob's dot product with `q` in one matrix product (0 for a missing blob), not one per row: the
    completion of a hybrid search at 100k chunks went 2.3 -> 2.1 ms p50 with the written-out union (fuse)."""
    present = [blob for blob in blobs if blob is not None]
    if not present:
        return [0.0] * len(blobs)
    products = iter((np.frombuffer(b"".join(present), dtype="<f4").reshape(len(present), -1) @ q).tolist())
    return [0.0 if blob is None else next(products) for blob in blobs]


def _unit(query: npt.ArrayLike) -> Floats:
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    q = np.where(np.isfinite(q), q, np.float32(0.0)).astype(np.float32)
    norm = float(np.linalg.norm(q))
    return q / norm if norm > 1e-10 else q
