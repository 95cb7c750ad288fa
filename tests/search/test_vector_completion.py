"""Keyword hits the vector leg did not return get their exact cosine before the hybrid fuses them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.search.fuse import Candidate, merge_weighted
from memoryd.search.relaxed import search_relaxed
from memoryd.search.vector import ExactMatrixCache, complete_vector_scores, search_vector
from memoryd.store.index import IndexStore
from tests.search.test_vector import DIMS, open_store, put, unit_rows

Floats = npt.NDArray[np.float32]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[IndexStore]:
    opened = open_store(tmp_path / "index.sqlite")
    yield opened
    opened.conn.close()


def keyword_hits(store: IndexStore, path: str, *, text_score: float = 0.5, model: str = "m") -> list[Candidate]:
    """Every chunk of `path` as the keyword leg returns it in a hybrid search: a text score, no vector
    score, its stored vector of `model` (the last test checks the leg's own)."""
    rows: list[Any] = store.conn.execute(
        "SELECT id, path, source, start_line, end_line, text, ts, "
        "CASE WHEN model = ? THEN coalesce(embedding, x'') END FROM chunks WHERE path = ? ORDER BY n",
        (model, path),
    ).fetchall()
    return [
        Candidate(
            id=str(cid),
            path=str(p),
            source=str(source),
            start_line=int(start),
            end_line=int(end),
            snippet=str(text),
            text_score=text_score,
            score=text_score,
            ts_ms=int(ts),
            stored_vector=None if blob is None else bytes(blob),
        )
        for cid, p, source, start, end, text, ts, blob in rows
    ]


def vector_leg(store: IndexStore, q: Floats, k: int) -> list[Candidate]:
    return search_vector(
        store.conn,
        q,
        k=k,
        sources=("memory", "sessions"),
        model="m",
        vec_available=False,
        cache=ExactMatrixCache(),
        total_chunks=0,
    ).hits


def basis(i: int) -> Floats:
    row = np.zeros(DIMS, dtype=np.float32)
    row[i] = 1.0
    return row


def mix(cosine: float, axis: int) -> Floats:
    """A unit vector whose cosine with basis(0) is `cosine`."""
    row: Floats = (cosine * basis(0) + np.sqrt(1 - cosine**2) * basis(axis)).astype(np.float32)
    return row


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), returned=st.integers(0, 40))
def test_missing_keyword_hits_get_their_exact_cosine_after_the_vector_hits(
    tmp_path: Path, seed: int, n: int, returned: int
) -> None:
    store = open_store(tmp_path / f"exact-{seed}-{n}-{returned}.sqlite")
    try:
        rng = np.random.default_rng(seed)
        vectors = unit_rows(rng, n)
        put(store, "a.md", vectors)
        q = unit_rows(rng, 1)[0] * np.float32(3.5)  # the query need not be normalised
        hits = vector_leg(store, q, min(returned, n))
        others = keyword_hits(store, "a.md")
        completed = complete_vector_scores(q, hits, others)

        assert completed[: len(hits)] == hits
        extra = completed[len(hits) :]
        by_id = {c.id: i for i, c in enumerate(others)}
        assert sorted(c.id for c in extra) == sorted(set(by_id) - {h.id for h in hits})
        cosines = vectors.astype(np.float64) @ (q / np.linalg.norm(q)).astype(np.float64)
        for cand in extra:
            want = float(cosines[by_id[cand.id]])
            assert cand.vector_score == pytest.approx(want, abs=1e-5)
            assert (cand.score, cand.text_score) == (cand.vector_score, 0.0)
            assert cand.path == "a.md" and cand.snippet == others[by_id[cand.id]].snippet
        assert [c.id for c in extra] == [c.id for c in sorted(extra, key=lambda c: (-c.vector_score, c.id))]
    finally:
        store.conn.close()


def test_equal_cosines_are_ordered_by_id(store: IndexStore) -> None:
    twin = mix(0.5, 1)
    put(store, "a.md", np.stack([twin, twin, twin, mix(0.9, 2)]))
    completed = complete_vector_scores(basis(0), [], keyword_hits(store, "a.md"))
    assert [c.vector_score for c in completed] == pytest.approx([0.9, 0.5, 0.5, 0.5])
    assert [c.id for c in completed[1:]] == sorted(c.id for c in completed[1:])


def test_nothing_missing_returns_the_vector_hits_unchanged(store: IndexStore) -> None:
    rng = np.random.default_rng(1)
    put(store, "a.md", unit_rows(rng, 6))
    q = unit_rows(rng, 1)[0]
    hits = vector_leg(store, q, 6)
    assert complete_vector_scores(q, hits, keyword_hits(store, "a.md")) == hits
    assert complete_vector_scores(q, hits, []) == hits


def test_keyword_hits_of_another_model_get_no_vector_score(store: IndexStore) -> None:
    rng = np.random.default_rng(2)
    put(store, "mine.md", unit_rows(rng, 3))
    put(store, "theirs.md", unit_rows(rng, 3), model="another-model")
    others = keyword_hits(store, "theirs.md") + keyword_hits(store, "mine.md")
    completed = complete_vector_scores(unit_rows(rng, 1)[0], [], others)
    assert {c.path for c in completed} == {"mine.md"}
    assert len(completed) == 3
    read_for_another = keyword_hits(store, "theirs.md", model="x") + keyword_hits(store, "mine.md", model="x")
    assert complete_vector_scores(unit_rows(rng, 1)[0], [], read_for_another) == []


def test_keyword_hits_stored_with_another_dimension_get_no_vector_score(tmp_path: Path) -> None:
    # Without sqlite-vec nothing pins the dimension of the stored vectors, so both sizes can coexist.
    store = open_store(tmp_path / "plain.sqlite", vec=False)
    try:
        rng = np.random.default_rng(3)
        put(store, "full.md", unit_rows(rng, 2))
        put(store, "short.md", unit_rows(rng, 2)[:, : DIMS // 2])
        others = keyword_hits(store, "short.md") + keyword_hits(store, "full.md")
        q = unit_rows(rng, 1)[0]
        assert {c.path for c in complete_vector_scores(q, [], others)} == {"full.md"}
        assert {c.path for c in complete_vector_scores(q[: DIMS // 2], [], others)} == {"short.md"}
    finally:
        store.conn.close()


def test_a_zero_query_vector_scores_every_missing_hit_zero(store: IndexStore) -> None:
    rng = np.random.default_rng(4)
    put(store, "a.md", unit_rows(rng, 3))
    completed = complete_vector_scores(np.zeros(DIMS), [], keyword_hits(store, "a.md"))
    assert [c.vector_score for c in completed] == [0.0, 0.0, 0.0]


def test_completion_lets_a_strong_keyword_and_vector_chunk_beat_a_vector_only_one(store: IndexStore) -> None:
    # The vector leg's pool (k = 1) holds only "vector-only.md" (cosine 0.6). "both.md" is nearly as
    # close (cosine 0.55) and the keyword leg's best hit, but outside the pool it fused as if its
    # cosine were 0: 0.3 * 0.9 = 0.27 against 0.7 * 0.6 = 0.42.
    put(store, "vector-only.md", mix(0.6, 1)[None, :])
    put(store, "both.md", mix(0.55, 2)[None, :])
    put(store, "far.md", np.stack([mix(0.1, 3), mix(-0.2, 4)]))
    q = basis(0)
    hits = vector_leg(store, q, 1)
    keyword = keyword_hits(store, "both.md", text_score=0.9)
    assert [h.path for h in hits] == ["vector-only.md"]

    before = merge_weighted(hits, keyword, 0.7, 0.3)
    assert [c.path for c in before] == ["vector-only.md", "both.md"]
    assert [c.score for c in before] == pytest.approx([0.42, 0.27])

    completed = complete_vector_scores(q, hits, keyword)
    after = merge_weighted(completed, keyword, 0.7, 0.3)
    assert [c.path for c in after] == ["both.md", "vector-only.md"]
    assert [c.score for c in after] == pytest.approx([0.7 * 0.55 + 0.3 * 0.9, 0.42], abs=1e-6)
    assert after[0].vector_score == pytest.approx(0.55, abs=1e-6)
    assert after[0].text_score == 0.9


def test_a_chunk_still_waiting_for_its_vector_stands_in_with_its_keyword_score(store: IndexStore) -> None:
    """Keyword first: some keyword hits have no vector yet; the others still get their exact cosine."""
    put(store, "a.md", np.stack([basis(0), mix(0.6, 1), basis(2)]))
    store.conn.execute(
        "UPDATE chunks SET embedding = NULL WHERE n = (SELECT n FROM chunks ORDER BY n LIMIT 1 OFFSET 1)"
    )
    others = keyword_hits(store, "a.md", text_score=0.3)
    completed = complete_vector_scores(basis(0), [], others)
    by_id = {c.id: c.vector_score for c in completed}
    assert [by_id[c.id] for c in others] == pytest.approx([1.0, 0.3, 0.0], abs=1e-6)
    assert [c.vector_score for c in completed] == sorted(by_id.values(), reverse=True)


def test_the_keyword_leg_reads_the_stored_vectors_it_is_asked_for(store: IndexStore) -> None:
    """What the completion above relies on, through the real leg: each hit's own embedding of the model
    asked for, x'' for a chunk still waiting for its vector, nothing for another model or when not asked."""
    rng = np.random.default_rng(5)
    vectors = unit_rows(rng, 3)
    put(store, "zebra.md", vectors)
    store.conn.execute("UPDATE chunks SET embedding = NULL WHERE start_line = 3")
    both = ("memory", "sessions")

    def leg(model: str | None) -> dict[int, bytes | None]:
        found = search_relaxed(store.conn, "zebra", limit=10, sources=both, tokenizer="unicode61", vectors_of=model)
        return {c.start_line: c.stored_vector for c in found}

    assert leg("m") == {1: vectors[0].astype("<f4").tobytes(), 2: vectors[1].astype("<f4").tobytes(), 3: b""}
    assert leg("another-model") == {1: None, 2: None, 3: None}
    assert leg(None) == {1: None, 2: None, 3: None}
