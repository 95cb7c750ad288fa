"""The vector leg on a real index: sqlite-vec's binary KNN with exact rescoring against the exact search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.search.vector import (
    BITS_IN_MEMORY_MAX,
    EXACT_MAX,
    RESCORE_MIN,
    ExactMatrixCache,
    coarse_in_memory,
    knn_binary,
    knn_exact,
    search_vector,
    warm_cache,
)
from memoryd.sources.chunking import Chunk, hash_text
from memoryd.store import schema
from memoryd.store.db import connect
from memoryd.store.index import IndexStore
from tests.search.ranking import SCORE_TOLERANCE, assert_same_ranking

DIMS = 128
BOTH = ("memory", "sessions")


def open_store(path: Path, *, vec: bool = True) -> IndexStore:
    conn, state = connect(path, vec_enabled=vec)
    schema.migrate(conn)
    schema.ensure_fts(conn, "unicode61")
    store = IndexStore(conn, state)
    store.ensure_vectors(DIMS)
    return store


def unit_rows(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    rows = rng.standard_normal((n, DIMS)).astype(np.float32)
    norms: npt.NDArray[np.float32] = np.linalg.norm(rows, axis=1, keepdims=True).astype(np.float32)
    return rows / norms


def put(store: IndexStore, path: str, vectors: np.ndarray, *, source: str = "memory", model: str = "m") -> None:
    chunks = [
        Chunk(start_line=i + 1, end_line=i + 1, text=f"{path} {i}", hash=hash_text(f"{path}{i}"))
        for i in range(len(vectors))
    ]
    with store.transaction():
        store.replace_file(
            source=source,
            path=path,
            file_hash=hash_text(path),
            mtime_ns=1,
            size=1,
            bad_lines=0,
            chunks=chunks,
            model=model,
            vectors=vectors,
        )


def fill(store: IndexStore, rng: np.random.Generator, files: int, per_file: int) -> None:
    for f in range(files):
        put(store, f"f{f}.md", unit_rows(rng, per_file), source=BOTH[f % 2])


def exact(store: IndexStore, q: np.ndarray, k: int, sources: tuple[str, ...] = BOTH) -> list[tuple[int, float]]:
    return knn_exact(ExactMatrixCache().matrix(store.conn, "m", DIMS), q, k=k, sources=sources)


def ids(pairs: list[tuple[int, float]]) -> list[int]:
    return [n for n, _score in pairs]


@pytest.fixture
def store(tmp_path: Path) -> IndexStore:
    return open_store(tmp_path / "index.sqlite")


def test_binary_knn_finds_most_of_the_exact_top_10_even_on_isotropic_random_data(store: IndexStore) -> None:
    # Uniform random unit vectors are the worst case for sign bits (no cluster structure: the nearest
    # neighbours are barely nearer than anything else); clustered data, like real embeddings, gets
    # the exact top 10 (the next test, and bench/search_bench.py). Whatever is found is scored with
    # its exact cosine.
    rng = np.random.default_rng(11)
    fill(store, rng, files=20, per_file=150)
    overlap = 0.0
    for q in unit_rows(rng, 50):
        got, want = knn_binary(store.conn, q, k=10, sources=BOTH, model="m"), dict(exact(store, q, 3000))
        overlap += len(set(ids(got)) & set(ids(exact(store, q, 10)))) / 10
        assert [s for _n, s in got] == pytest.approx([want[n] for n in ids(got)], abs=SCORE_TOLERANCE)
        assert [s for _n, s in got] == sorted((s for _n, s in got), reverse=True)
    assert overlap / 50 >= 0.8


def test_binary_knn_equals_the_exact_top_k_on_clustered_random_data(store: IndexStore) -> None:
    rng = np.random.default_rng(12)
    centres = unit_rows(rng, 60)
    for f in range(20):
        rows = centres[rng.integers(0, len(centres), 150)] + 0.08 * rng.standard_normal((150, DIMS))
        put(
            store,
            f"f{f}.md",
            (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32),
            source=BOTH[f % 2],
        )
    for raw in centres[:20] + 0.08 * rng.standard_normal((20, DIMS)):
        q = (raw / np.linalg.norm(raw)).astype(np.float32)
        got = knn_binary(store.conn, q, k=10, sources=BOTH, model="m")
        assert_same_ranking(got, exact(store, q, 20), 10)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), k=st.integers(1, 40))
def test_an_index_smaller_than_the_rescoring_pool_is_searched_exactly(
    tmp_path: Path, seed: int, n: int, k: int
) -> None:
    store = open_store(tmp_path / f"small-{seed}-{n}-{k}.sqlite")
    try:
        rng = np.random.default_rng(seed)
        put(store, "a.md", unit_rows(rng, n))
        q = unit_rows(rng, 1)[0]
        assert_same_ranking(knn_binary(store.conn, q, k=k, sources=BOTH, model="m"), exact(store, q, n), k)
    finally:
        store.conn.close()


def test_results_keep_to_the_asked_sources_and_model(store: IndexStore) -> None:
    rng = np.random.default_rng(3)
    fill(store, rng, files=4, per_file=50)
    put(store, "other.md", unit_rows(rng, 50), model="another-model")
    q = unit_rows(rng, 1)[0]
    hits = search_vector(
        store.conn,
        q,
        k=30,
        sources=("sessions",),
        model="m",
        vec_available=True,
        cache=ExactMatrixCache(),
        total_chunks=EXACT_MAX + 1,
    )
    assert hits.backend == "sqlite-vec"
    assert len(hits.hits) == 30
    assert {h.source for h in hits.hits} == {"sessions"}
    assert "other.md" not in {h.path for h in hits.hits}
    scores = [h.vector_score for h in hits.hits]
    assert scores == sorted(scores, reverse=True)
    assert all(h.score == h.vector_score for h in hits.hits)


def test_small_indexes_are_searched_exactly_even_with_sqlite_vec(store: IndexStore) -> None:
    rng = np.random.default_rng(6)
    fill(store, rng, files=2, per_file=40)
    hits = search_vector(
        store.conn,
        unit_rows(rng, 1)[0],
        k=5,
        sources=BOTH,
        model="m",
        vec_available=True,
        cache=ExactMatrixCache(),
        total_chunks=80,
    )
    assert hits.backend == "exact"


def test_the_exact_backend_runs_without_sqlite_vec_and_says_so(tmp_path: Path) -> None:
    store = open_store(tmp_path / "plain.sqlite", vec=False)
    rng = np.random.default_rng(5)
    fill(store, rng, files=2, per_file=40)
    q = unit_rows(rng, 1)[0]
    hits = search_vector(
        store.conn, q, k=5, sources=BOTH, model="m", vec_available=False, cache=ExactMatrixCache(), total_chunks=0
    )
    assert hits.backend == "exact"
    assert [h.vector_score for h in hits.hits] == pytest.approx([s for _n, s in exact(store, q, 5)])


def test_an_index_without_vectors_of_the_model_reports_no_backend(store: IndexStore) -> None:
    rng = np.random.default_rng(5)
    put(store, "a.md", unit_rows(rng, 3), model="another-model")
    q = unit_rows(rng, 1)[0]
    hits = search_vector(
        store.conn, q, k=5, sources=BOTH, model="m", vec_available=False, cache=ExactMatrixCache(), total_chunks=0
    )
    assert (hits.backend, hits.hits) == ("none", [])


def test_the_exact_matrix_follows_writes_and_deletes(store: IndexStore) -> None:
    rng = np.random.default_rng(9)
    cache = ExactMatrixCache()
    target = unit_rows(rng, 1)
    put(store, "a.md", unit_rows(rng, 5))

    def top_path() -> str:
        hits = search_vector(
            store.conn, target[0], k=1, sources=BOTH, model="m", vec_available=False, cache=cache, total_chunks=0
        )
        return hits.hits[0].path

    assert top_path() == "a.md"
    put(store, "b.md", target)
    assert top_path() == "b.md"
    with store.transaction():
        store.delete_files("memory", ["b.md"])
    assert top_path() == "a.md"


def test_deleted_and_replaced_files_leave_no_binary_rows(store: IndexStore) -> None:
    rng = np.random.default_rng(2)
    put(store, "a.md", unit_rows(rng, 10))
    put(store, "a.md", unit_rows(rng, 4))
    put(store, "b.md", unit_rows(rng, 3), source="sessions")
    with store.transaction():
        store.delete_files("sessions", ["b.md"])
    assert store.conn.execute(f"SELECT COUNT(*) FROM {schema.VBIT_TABLE}").fetchall() == [(4,)]


def test_a_binary_table_created_late_is_filled_from_the_stored_vectors(tmp_path: Path) -> None:
    store = open_store(tmp_path / "late.sqlite")
    rng = np.random.default_rng(4)
    put(store, "a.md", unit_rows(rng, 12))
    store.conn.execute(f"DROP TABLE {schema.VBIT_TABLE}")
    store.ensure_vectors(DIMS)
    q = unit_rows(rng, 1)[0]
    assert_same_ranking(knn_binary(store.conn, q, k=5, sources=BOTH, model="m"), exact(store, q, 12), 5)


def naive_hamming_pool(store: IndexStore, q: npt.NDArray[np.float32], pool: int) -> list[int]:
    """The `pool` nearest rowids by sign disagreement, computed from the float vectors directly."""
    rows: list[Any] = store.conn.execute("SELECT n, embedding FROM chunks ORDER BY n").fetchall()
    scored = [(int(np.sum((np.frombuffer(blob, dtype="<f4") > 0) != (q > 0))), int(n)) for n, blob in rows]
    return [n for _d, n in sorted(scored)[:pool]]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_the_in_memory_coarse_pass_reads_sqlite_vecs_bits_as_sqlite_vec_wrote_them(
    store: IndexStore, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    if not store.conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchall():
        fill(store, rng, files=10, per_file=60)
    q = unit_rows(rng, 1)[0]
    cache = ExactMatrixCache()
    pool = coarse_in_memory(cache.bits(store.conn, "m", DIMS), q, k=10, sources=BOTH)
    assert pool.tolist() == naive_hamming_pool(store, q, RESCORE_MIN)


def test_the_in_memory_pass_rescored_finds_the_exact_top_k_on_clustered_vectors(store: IndexStore) -> None:
    rng = np.random.default_rng(11)
    centres = unit_rows(rng, 8)
    for f in range(20):
        noisy = centres[f % 8] + 0.35 * unit_rows(rng, 100)
        put(store, f"c{f}.md", noisy / np.linalg.norm(noisy, axis=1, keepdims=True), source=BOTH[f % 2])
    asked = centres[:5] + 0.2 * unit_rows(rng, 5)  # questions near a topic, as real queries are
    for q in asked / np.linalg.norm(asked, axis=1, keepdims=True):
        hits = search_vector(
            store.conn,
            q,
            k=10,
            sources=BOTH,
            model="m",
            vec_available=True,
            cache=ExactMatrixCache(),
            total_chunks=EXACT_MAX + 1,
        )
        assert hits.backend == "sqlite-vec"
        assert [h.vector_score for h in hits.hits] == pytest.approx(
            [s for _n, s in exact(store, q, 10)], abs=SCORE_TOLERANCE
        )


def test_indexes_above_the_in_memory_cap_use_sqlite_vecs_knn(store: IndexStore) -> None:
    rng = np.random.default_rng(12)
    fill(store, rng, files=2, per_file=30)
    cache = ExactMatrixCache()
    q = unit_rows(rng, 1)[0]
    hits = search_vector(
        store.conn,
        q,
        k=5,
        sources=BOTH,
        model="m",
        vec_available=True,
        cache=cache,
        total_chunks=BITS_IN_MEMORY_MAX + 1,
    )
    assert [h.vector_score for h in hits.hits] == pytest.approx(
        [s for _n, s in knn_binary(store.conn, q, k=5, sources=BOTH, model="m")]
    )


def test_warming_loads_the_copy_the_next_search_uses(store: IndexStore) -> None:
    rng = np.random.default_rng(13)
    fill(store, rng, files=2, per_file=30)
    cache = ExactMatrixCache()
    warm_cache(store.conn, cache, model="m", vec_available=True, total_chunks=60)
    assert cache.matrix(store.conn, "m", DIMS) is cache.matrix(store.conn, "m", DIMS)  # loaded once, kept
    put(store, "new.md", unit_rows(rng, 3))  # a write changes the generation: the copy is reloaded
    before = cache.matrix(store.conn, "m", DIMS)
    assert before.rowids.size == 63
