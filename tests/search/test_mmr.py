from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.search.fuse import Candidate
from memoryd.search.mmr import jaccard, mmr_rerank, mmr_tokens


def chunk(cid: str, score: float, snippet: str) -> Candidate:
    return Candidate(id=cid, path=f"{cid}.md", source="memory", start_line=1, end_line=2, snippet=snippet, score=score)


def ids(cands: list[Candidate]) -> list[str]:
    return [c.id for c in cands]


def test_tokens_are_ascii_words_plus_cjk_unigrams_and_adjacent_bigrams() -> None:
    assert mmr_tokens("  Hello World_1 café 東京タワー ") == frozenset(
        {"hello", "world_1", "caf", "東", "京", "タ", "ワ", "ー", "東京", "京タ", "タワ", "ワー"}
    )


def test_cjk_characters_separated_by_other_text_form_no_bigram() -> None:
    assert mmr_tokens("東a京 한글") == frozenset({"東", "a", "京", "한", "글", "한글"})


def test_jaccard_is_intersection_over_union() -> None:
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)


def test_jaccard_of_empty_sets() -> None:
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(frozenset({"a"}), frozenset()) == 0.0


def test_mmr_picks_a_diverse_second_result_over_a_near_duplicate() -> None:
    cands = [
        chunk("top", 1.0, "deploy pipeline kubernetes cluster"),
        chunk("duplicate", 0.95, "deploy pipeline kubernetes cluster"),
        chunk("different", 0.9, "database backup schedule"),
        chunk("weak", 0.0, "unrelated words here"),
    ]
    assert ids(mmr_rerank(cands)) == ["top", "different", "duplicate", "weak"]


def test_lambda_one_is_a_plain_stable_sort_by_score() -> None:
    cands = [chunk("a", 0.2, "x"), chunk("b", 0.9, "x"), chunk("c", 0.2, "x")]
    assert ids(mmr_rerank(cands, 1.0)) == ["b", "a", "c"]


def test_lambda_is_clamped_and_non_finite_means_the_default() -> None:
    cands = [
        chunk("top", 1.0, "alpha beta"),
        chunk("dup", 0.9, "alpha beta"),
        chunk("other", 0.1, "gamma delta"),
    ]
    assert mmr_rerank(cands, 5.0) == mmr_rerank(cands, 1.0)
    assert mmr_rerank(cands, -3.0) == mmr_rerank(cands, 0.0)
    assert mmr_rerank(cands, math.nan) == mmr_rerank(cands, 0.7)


def test_equal_mmr_values_go_to_the_higher_score_then_the_earlier_candidate() -> None:
    # Equal scores normalise to relevance 1 for all; with nothing in common the first pick is a tie.
    cands = [chunk("first", 0.5, "aaa"), chunk("second", 0.5, "bbb"), chunk("third", 0.5, "ccc")]
    assert ids(mmr_rerank(cands)) == ["first", "second", "third"]


def test_zero_or_one_candidate_is_returned_as_is() -> None:
    only = [chunk("a", 0.3, "x")]
    assert mmr_rerank(only) == only
    assert mmr_rerank([]) == []


_SNIPPETS = st.sampled_from(["deploy api", "deploy api v2", "東京タワー", "backup", "", "東京 backup"])


@given(
    st.lists(st.tuples(st.floats(min_value=0, max_value=1), _SNIPPETS), max_size=8),
    st.floats(min_value=-1, max_value=2),
)
def test_mmr_reorders_and_never_drops(items: list[tuple[float, str]], lambda_: float) -> None:
    cands = [chunk(f"c{i}", score, snippet) for i, (score, snippet) in enumerate(items)]
    reranked = mmr_rerank(cands, lambda_)
    assert sorted(ids(reranked)) == sorted(ids(cands))
    if cands:
        assert reranked[0].score == max(c.score for c in cands)
