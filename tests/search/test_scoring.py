from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.search.scoring import (
    bm25_rank_to_score,
    lexical_boost_score,
    truncate_snippet,
    utf16_len,
)


@pytest.mark.parametrize(
    ("rank", "score"),
    [(-1.0, 0.5), (-3.0, 0.75), (-0.25, 0.2), (0.0, 1.0), (1.0, 0.5), (3.0, 0.25)],
)
def test_bm25_ranks_map_to_the_spec_formula(rank: float, score: float) -> None:
    assert bm25_rank_to_score(rank) == pytest.approx(score)


@pytest.mark.parametrize("rank", [math.inf, -math.inf, math.nan])
def test_non_finite_bm25_ranks_score_one_in_a_thousand(rank: float) -> None:
    assert bm25_rank_to_score(rank) == pytest.approx(1 / 1000)


@given(
    st.floats(min_value=-1e6, max_value=0, exclude_max=True),
    st.floats(min_value=-1e6, max_value=0, exclude_max=True),
)
def test_a_more_negative_bm25_rank_never_scores_lower(a: float, b: float) -> None:
    better, worse = min(a, b), max(a, b)
    assert bm25_rank_to_score(better) >= bm25_rank_to_score(worse)
    assert 0 <= bm25_rank_to_score(worse) < 1


def test_the_lexical_boost_adds_coverage_density_path_and_length() -> None:
    # Q = {deploy, strategy}; T = {deploy, the, new, pipeline}; overlap 1.
    # 0.25 + 0.45·1/2 + 0.2·1/4 + 0.18 (path has "deploy") + min(30/160, 0.18) = 0.885
    score = lexical_boost_score("Deploy strategy", "Deploy the new deploy pipeline", "memory/deploy.md", 0.25)
    assert score == pytest.approx(0.885)


def test_the_lexical_boost_counts_each_query_token_once() -> None:
    once = lexical_boost_score("deploy", "deploy notes", "x.md", 0.0)
    assert lexical_boost_score("deploy DEPLOY deploy", "deploy notes", "x.md", 0.0) == once


def test_the_lexical_boost_is_capped_at_one() -> None:
    assert lexical_boost_score("deploy", "deploy " * 40, "memory/deploy.md", 0.9) == 1.0


def test_a_query_without_tokens_keeps_the_raw_text_score() -> None:
    assert lexical_boost_score("?!", "deploy notes", "memory/deploy.md", 0.4) == 0.4


def test_the_length_boost_counts_utf16_units() -> None:
    # Ten emoji are 20 UTF-16 units and no word tokens: only the length boost applies.
    assert lexical_boost_score("zzz", "😀" * 10, "a.md", 0.0) == pytest.approx(20 / 160)


def test_a_short_snippet_is_returned_whole() -> None:
    assert truncate_snippet("short note") == "short note"


def test_the_snippet_cut_never_splits_an_astral_character() -> None:
    assert truncate_snippet("a" * 699 + "😀" + "b") == "a" * 699
    assert truncate_snippet("a" * 698 + "😀" + "b") == "a" * 698 + "😀"


def test_a_non_positive_snippet_length_gives_nothing() -> None:
    assert truncate_snippet("abc", 0) == ""
    assert truncate_snippet("abc", -5) == ""


def test_utf16_length_counts_astral_characters_twice() -> None:
    assert utf16_len("a😀é") == 4


_SNIPPET_TEXT = st.text(alphabet=st.sampled_from(["a", "é", "語", "😀", "𠀋", " "]), max_size=60)


@given(_SNIPPET_TEXT, st.integers(min_value=0, max_value=80))
def test_a_snippet_is_the_longest_whole_character_prefix_within_the_limit(text: str, limit: int) -> None:
    snippet = truncate_snippet(text, limit)
    assert text.startswith(snippet)
    assert utf16_len(snippet) <= limit
    assert len(snippet.encode("utf-16-le")) // 2 == utf16_len(snippet)
    if snippet != text:
        assert utf16_len(text[: len(snippet) + 1]) > limit
