"""Ranking after the legs: weighted and RRF fusion, single legs, minScore, monotonic top-k."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.search.fuse import Candidate
from memoryd.search.pipeline import RankOptions, rank_hybrid, rank_single, scaled_rrf
from tests.search.candidates import hit, no_mtime


def opts(**kw: object) -> RankOptions:
    base: dict[str, object] = {"max_results": 6, "min_score": 0.35, "fusion": "weighted"}
    base.update(kw)
    return RankOptions(**base)  # type: ignore[arg-type]


def test_weighted_hybrid_scores_are_the_spec_weighted_sum() -> None:
    ranked = rank_hybrid([hit("a", vector=0.8), hit("b", vector=0.5)], [hit("b", text=0.9)], opts(), no_mtime)
    assert [c.id for c in ranked] == ["b", "a"]
    assert [c.score for c in ranked] == pytest.approx([0.7 * 0.5 + 0.3 * 0.9, 0.7 * 0.8])


def test_an_exact_keyword_hit_survives_through_the_relaxed_fallback() -> None:
    # Nothing reaches minScore 0.35; the keyword hit scores 0.3 x 1.0 = 0.3 >= min(0.35, textWeight).
    ranked = rank_hybrid([hit("v", vector=0.3)], [hit("k", text=1.0)], opts(), no_mtime)
    assert [c.id for c in ranked] == ["k"]


def test_without_keyword_hits_nothing_below_min_score_is_returned() -> None:
    assert rank_hybrid([hit("v", vector=0.3)], [], opts(), no_mtime) == []


def test_a_single_leg_is_cut_strictly_at_min_score() -> None:
    hits = [hit("a", score=0.9), hit("b", score=0.4), hit("c", score=0.2)]
    assert [c.id for c in rank_single(hits, opts(), no_mtime)] == ["a", "b"]
    assert [c.id for c in rank_single(hits, opts(min_score=0.95), no_mtime)] == []


def test_rrf_puts_the_chunk_both_legs_rank_first_on_top_at_the_best_weighted_score() -> None:
    vector = [hit("both", vector=0.9), hit("v", vector=0.5)]
    keyword = [hit("both", text=0.8), hit("k", text=0.6)]
    fused = scaled_rrf(vector, keyword, opts(fusion="rrf"))
    assert fused[0].id == "both"
    assert fused[0].score == pytest.approx(0.7 * 0.9 + 0.3 * 0.8)
    assert all(c.score < fused[0].score for c in fused[1:])


def test_rrf_abstains_when_nothing_is_relevant_in_absolute_terms() -> None:
    vector = [hit("a", vector=0.12), hit("b", vector=0.1)]
    assert rank_hybrid(vector, [], opts(fusion="rrf"), no_mtime) == []


candidate_lists = st.lists(st.tuples(st.integers(0, 30), st.floats(0, 1), st.floats(0, 1)), min_size=0, max_size=40)


@given(
    vector=candidate_lists,
    keyword=candidate_lists,
    fusion=st.sampled_from(["weighted", "rrf"]),
    mmr=st.booleans(),
    min_score=st.floats(0, 0.6),
    small=st.integers(1, 10),
    extra=st.integers(0, 10),
)
def test_top_k_is_monotonic_in_max_results(
    vector: list[tuple[int, float, float]],
    keyword: list[tuple[int, float, float]],
    fusion: str,
    mmr: bool,
    min_score: float,
    small: int,
    extra: int,
) -> None:
    v = [hit(f"c{i}", vector=s) for i, s, _t in vector]
    k = [hit(f"c{i}", text=t) for i, _s, t in keyword]

    def hybrid(n: int) -> list[Candidate]:
        return rank_hybrid(v, k, opts(max_results=n, min_score=min_score, fusion=fusion, mmr_enabled=mmr), no_mtime)

    def single(n: int) -> list[Candidate]:
        return rank_single(v, opts(max_results=n, min_score=min_score, mmr_enabled=mmr), no_mtime)

    assert hybrid(small) == hybrid(small + extra)[:small]
    assert single(small) == single(small + extra)[:small]
