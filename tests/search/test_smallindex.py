"""The thresholds a small index applies (memoryd.search.smallindex): a share of the configured ones that
grows with the index's size and reaches them at SMALL_INDEX_CHUNKS chunks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memoryd.search.pipeline import RankOptions
from memoryd.search.smallindex import FLOOR_SHARE, SMALL_INDEX_CHUNKS, for_index_size, size_share


@given(st.integers(min_value=0, max_value=10**7), st.integers(min_value=0, max_value=10**7))
def test_the_share_grows_with_the_index_and_stays_in_its_bounds(a: int, b: int) -> None:
    small, large = sorted((a, b))
    assert FLOOR_SHARE <= size_share(small) <= 1.0
    if small > 0:
        assert size_share(small) <= size_share(large)


def test_the_share_is_the_floor_at_one_chunk_and_whole_from_the_bound_on() -> None:
    assert size_share(1) == FLOOR_SHARE
    assert size_share(SMALL_INDEX_CHUNKS - 1) < 1.0
    assert size_share(SMALL_INDEX_CHUNKS) == size_share(10**6) == 1.0
    assert size_share(0) == 1.0  # an empty index answers nothing whatever the threshold


@given(st.integers(min_value=0, max_value=100), st.booleans())
def test_only_the_configured_min_score_is_scaled(chunks: int, configured: bool) -> None:
    opts = RankOptions(max_results=6, min_score=0.1, min_evidence=0.12, min_score_configured=configured)
    scaled = for_index_size(opts, chunks)
    share = size_share(chunks)
    assert scaled.min_evidence == opts.min_evidence * share
    assert scaled.min_score == (opts.min_score * share if configured else opts.min_score)
    assert (scaled.max_results, scaled.fusion, scaled.vector_weight) == (6, opts.fusion, opts.vector_weight)
