from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.errors import ConfigError
from memoryd.search.fuse import Candidate, merge_rrf, merge_weighted, select_results


def chunk(
    cid: str,
    *,
    vector: float = 0.0,
    text: float = 0.0,
    path: str | None = None,
    start: int = 1,
    snippet: str | None = None,
    source: str = "memory",
    score: float = 0.0,
) -> Candidate:
    return Candidate(
        id=cid,
        path=path if path is not None else f"memory/{cid}.md",
        source=source,
        start_line=start,
        end_line=start + 9,
        snippet=snippet if snippet is not None else f"text of {cid}",
        vector_score=vector,
        text_score=text,
        score=score,
    )


def test_weighted_merge_unions_by_id_and_weighs_both_legs() -> None:
    vector = [chunk("a", vector=0.9), chunk("b", vector=0.5)]
    keyword = [chunk("b", text=0.8, snippet="keyword b"), chunk("c", text=0.6)]
    merged = merge_weighted(vector, keyword, 0.7, 0.3)
    assert [c.id for c in merged] == ["a", "b", "c"]
    a, b, c = merged
    assert a.score == pytest.approx(0.63)
    assert (a.vector_score, a.text_score) == (0.9, 0.0)
    assert b.score == pytest.approx(0.7 * 0.5 + 0.3 * 0.8)
    assert (b.vector_score, b.text_score, b.snippet) == (0.5, 0.8, "keyword b")
    assert c.score == pytest.approx(0.18)
    assert (c.vector_score, c.text_score) == (0.0, 0.6)


def test_a_keyword_hit_without_snippet_keeps_the_vector_snippet() -> None:
    merged = merge_weighted([chunk("a", vector=0.5, snippet="vec")], [chunk("a", text=0.5, snippet="")], 0.5, 0.5)
    assert merged[0].snippet == "vec"


def test_weighted_ties_are_ordered_by_path_then_start_line() -> None:
    vector = [
        chunk("x", vector=0.5, path="b.md", start=1),
        chunk("y", vector=0.5, path="a.md", start=20),
        chunk("z", vector=0.5, path="a.md", start=3),
    ]
    assert [c.id for c in merge_weighted(vector, [], 1.0, 0.0)] == ["z", "y", "x"]


def test_rrf_sums_reciprocal_ranks_and_keeps_leg_scores() -> None:
    vector = [chunk("a", vector=0.9), chunk("b", vector=0.5)]
    keyword = [chunk("b", text=0.8), chunk("c", text=0.6)]
    fused = merge_rrf(vector, keyword)
    assert [c.id for c in fused] == ["b", "a", "c"]
    b, a, c = fused
    assert b.score == pytest.approx(1 / 62 + 1 / 61)
    assert a.score == pytest.approx(1 / 61)
    assert c.score == pytest.approx(1 / 62)
    assert (b.vector_score, b.text_score) == (0.5, 0.8)


def test_rrf_ranks_by_leg_score_and_equal_scores_share_a_rank() -> None:
    fused = merge_rrf([chunk("low", vector=0.1), chunk("a", vector=0.5), chunk("b", vector=0.5)], [], k=10)
    assert [(c.id, c.score) for c in fused] == [("a", 1 / 11), ("b", 1 / 11), ("low", 1 / 13)]


def test_rrf_weights_scale_each_leg() -> None:
    fused = merge_rrf([chunk("a", vector=0.9)], [chunk("b", text=0.9)], k=0, vector_weight=1.0, text_weight=2.0)
    assert [(c.id, c.score) for c in fused] == [("b", 2.0), ("a", 1.0)]


def test_rrf_rejects_a_negative_k() -> None:
    with pytest.raises(ConfigError):
        merge_rrf([chunk("a", vector=0.9)], [], k=-1)


def test_results_below_min_score_are_dropped_and_the_rest_cut_to_max_results() -> None:
    merged = [chunk(c, score=s) for c, s in [("a", 0.9), ("b", 0.6), ("c", 0.5), ("d", 0.2)]]
    assert [c.id for c in select_results(merged, [], 0.35, 2, 0.3)] == ["a", "b"]
    assert [c.id for c in select_results(merged, merged, 0.35, 10, 0.3)] == ["a", "b", "c"]


def test_the_relaxed_fallback_rescues_a_keyword_only_hit_below_min_score() -> None:
    vector = [chunk("semantic", vector=0.4)]
    keyword = [chunk("exact", text=1.0)]
    merged = merge_weighted(vector, keyword, 0.7, 0.3)
    assert all(c.score < 0.35 for c in merged)
    assert [c.id for c in select_results(merged, keyword, 0.35, 6, 0.3)] == ["exact"]


def test_the_relaxed_fallback_matches_keyword_hits_by_location_and_applies_its_floor() -> None:
    merged = [chunk("m1", score=0.32, path="n.md", start=5), chunk("m2", score=0.1, path="n.md", start=40)]
    keyword = [chunk("other-id", path="n.md", start=5), chunk("k2", path="n.md", start=40)]
    assert [c.id for c in select_results(merged, keyword, 0.35, 6, 0.3)] == ["m1"]


def test_without_keyword_hits_nothing_below_min_score_is_returned() -> None:
    merged = [chunk("a", score=0.2)]
    assert select_results(merged, [], 0.35, 6, 0.3) == []


def test_zero_max_results_returns_nothing() -> None:
    assert select_results([chunk("a", score=0.9)], [], 0.0, 0, 0.3) == []


_SCORES = st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.5, 0.8, 1.0])


@st.composite
def _legs(draw: st.DrawFn) -> tuple[list[Candidate], list[Candidate]]:
    """Two legs over a shared chunk table, with many ties in score, path and lines."""
    ids = draw(st.lists(st.sampled_from([f"c{i}" for i in range(10)]), unique=True, max_size=10))
    table = {
        cid: (draw(st.sampled_from(["a.md", "b.md", "sessions/s.jsonl"])), draw(st.sampled_from([1, 5]))) for cid in ids
    }
    vector = [
        chunk(cid, vector=draw(_SCORES), path=path, start=start)
        for cid, (path, start) in table.items()
        if draw(st.booleans())
    ]
    keyword = [
        chunk(cid, text=draw(_SCORES), path=path, start=start, snippet=draw(st.sampled_from(["", "kw"])))
        for cid, (path, start) in table.items()
        if draw(st.booleans())
    ]
    return vector, keyword


def _shuffled(items: list[Candidate], rng: random.Random) -> list[Candidate]:
    copy = list(items)
    rng.shuffle(copy)
    return copy


def _search(vector: list[Candidate], keyword: list[Candidate], rrf: bool, max_results: int) -> list[str]:
    merged = merge_rrf(vector, keyword) if rrf else merge_weighted(vector, keyword, 0.7, 0.3)
    min_score = 0.0 if rrf else 0.35
    return [c.id for c in select_results(merged, keyword, min_score, max_results, 0.3)]


@given(_legs(), st.randoms(use_true_random=False), st.booleans(), st.integers(min_value=1, max_value=12))
def test_fusion_does_not_depend_on_the_order_of_its_inputs(
    legs: tuple[list[Candidate], list[Candidate]], rng: random.Random, rrf: bool, max_results: int
) -> None:
    vector, keyword = legs
    expected = _search(vector, keyword, rrf, max_results)
    assert _search(_shuffled(vector, rng), _shuffled(keyword, rng), rrf, max_results) == expected


@given(_legs(), st.booleans(), st.integers(min_value=1, max_value=12), st.integers(min_value=1, max_value=12))
def test_top_k_is_monotonic(legs: tuple[list[Candidate], list[Candidate]], rrf: bool, small: int, large: int) -> None:
    small, large = min(small, large), max(small, large)
    vector, keyword = legs
    assert _search(vector, keyword, rrf, small) == _search(vector, keyword, rrf, large)[:small]


def test_rescoring_copies_every_other_field() -> None:
    values: dict[str, object] = {}
    for i, f in enumerate(dataclasses.fields(Candidate)):  # every field, each set off its default
        values[f.name] = f"v{i}" if f.type == "str" else (i + 1 if f.type == "int" else i + 0.5)
    cand = Candidate(**values)  # type: ignore[arg-type]
    assert cand.with_score(9.0) == dataclasses.replace(cand, score=9.0)
    assert cand.with_text_score(9.0) == dataclasses.replace(cand, text_score=9.0)
    assert cand.as_vector_hit(0.25) == dataclasses.replace(cand, vector_score=0.25, text_score=0.0, score=0.25)
    assert cand.as_keyword_hit() == dataclasses.replace(cand, vector_score=0.0)
    other = dataclasses.replace(cand, snippet="theirs", text_score=7.5, ts_ms=10**9, coverage=0.75, absolute=0.1)
    assert cand.joined(other) == dataclasses.replace(
        cand, snippet="theirs", text_score=7.5, ts_ms=10**9, coverage=0.75
    )  # the vector hit's own absolute and bm25 stay
    assert cand.joined(dataclasses.replace(other, snippet="")).snippet == cand.snippet
