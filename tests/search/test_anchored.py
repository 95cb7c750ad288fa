"""The anchored fusion (issue 26): plain bm25's order, moved only by bounded vector and keyword factors."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from memoryd.search.fuse import ANCHOR_KEYWORD_GAIN, ANCHOR_VECTOR_GAIN, merge_anchored
from memoryd.search.pipeline import LEVEL_STEP, RankOptions, anchored_levels, rank_hybrid
from tests.search.candidates import hit, no_mtime


def opts(**kw: object) -> RankOptions:
    base: dict[str, object] = {
        "max_results": 10,
        "min_score": 0.0,
        "fusion": "anchored",
        "vector_weight": 0.5,
        "text_weight": 0.5,
    }
    base.update(kw)
    return RankOptions(**base)  # type: ignore[arg-type]


def ids(cands: object) -> list[str]:
    return [c.id for c in cands]  # type: ignore[attr-defined]


def test_bm25_sets_the_order_when_the_other_evidence_is_level() -> None:
    keyword = [hit("weak", text=0.9, score=0.9, bm25=4.0), hit("strong", text=0.5, score=0.9, bm25=10.0)]
    vector = [hit("weak", vector=0.4), hit("strong", vector=0.4)]
    assert ids(merge_anchored(vector, keyword)) == ["strong", "weak"]  # the weighted fusion puts "weak" first


def test_a_hit_overtakes_only_within_the_bound() -> None:
    bound = (1 + ANCHOR_VECTOR_GAIN) * (1 + ANCHOR_KEYWORD_GAIN)
    for ratio, expected in ((bound * 0.9, ["close", "top"]), (bound * 1.2, ["top", "close"])):
        keyword = [hit("top", score=0.01, bm25=ratio), hit("close", score=1.0, bm25=1.0)]
        vector = [hit("top", vector=0.0), hit("close", vector=1.0)]
        ranked = merge_anchored(vector, keyword, vector_share=0.0)
        assert ids(ranked) == expected


def test_a_chunk_no_word_reaches_ranks_by_meaning_below_a_strong_lexical_hit() -> None:
    keyword = [hit("lexical", text=0.6, score=0.6, bm25=5.0)]
    vector = [hit("lexical", vector=0.2), hit("meaning", vector=0.9), hit("noise", vector=0.1)]
    assert ids(merge_anchored(vector, keyword)) == ["lexical", "meaning", "noise"]
    assert ids(merge_anchored(vector, [])) == ["meaning", "lexical", "noise"]


def test_levels_fall_along_the_order_and_a_min_score_serves_a_prefix() -> None:
    keyword = [hit("a", text=0.1, score=0.1, bm25=9.0), hit("b", text=0.8, score=0.8, bm25=3.0)]
    vector = [hit("a", vector=0.1), hit("b", vector=0.2), hit("c", vector=0.05)]
    ranked = rank_hybrid(vector, keyword, opts(min_score=0.3), no_mtime)
    assert ids(ranked) == ["a", "b"]  # "a" ranks first; "b" (0.5 weighted) carries it past min_score
    assert ranked[0].score > ranked[1].score >= 0.5 - LEVEL_STEP


@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 20), st.booleans()), min_size=1, max_size=30),
    st.integers(1, 30),
)
def test_levels_are_strictly_decreasing_and_top_k_is_monotonic(
    rows: list[tuple[float, float, float, bool]], k: int
) -> None:
    vector = [hit(f"c{i}", vector=v) for i, (v, _t, _b, _kw) in enumerate(rows)]
    keyword = [hit(f"c{i}", text=t, score=t, bm25=b) for i, (_v, t, b, kw) in enumerate(rows) if kw]
    levels = anchored_levels(merge_anchored(vector, keyword), opts())
    assert all(x.score > y.score for x, y in itertools.pairwise(levels))
    full = rank_hybrid(vector, keyword, opts(max_results=30, min_score=0.2), no_mtime)
    assert ids(rank_hybrid(vector, keyword, opts(max_results=k, min_score=0.2), no_mtime)) == ids(full)[:k]


def test_a_hit_of_stop_words_alone_keeps_its_bm25_place_in_the_anchored_order_only() -> None:
    keyword = [
        hit("content", text=0.6, score=0.6, bm25=2.0),
        replace(hit("stop-only", text=0.05, score=0.05, bm25=6.0), absolute=0.0),
    ]
    vector = [hit("content", vector=0.3), hit("stop-only", vector=0.3), hit("unrelated", vector=0.1)]
    anchored = rank_hybrid(vector, keyword, opts(), no_mtime)
    assert ids(anchored) == ["stop-only", "content", "unrelated"]  # plain bm25 puts it first too
    assert anchored[0].score > anchored[1].score  # its level is the place's: min_score still serves a prefix
    weighted = rank_hybrid(vector, keyword, opts(fusion="weighted", text_score="coverage"), no_mtime)
    assert "stop-only" not in ids(weighted)[:1]
