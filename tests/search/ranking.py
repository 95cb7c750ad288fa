"""Comparing two rankings of cosines that were computed by different code paths.

sqlite-vec's C loops and numpy's BLAS (whose kernels depend on the CPU) round float32 sums
differently: the same cosine differs by up to 1.8e-7 between them (measured on 128-dim random
vectors, AMD EPYC with AVX2), which is more than `pytest.approx`'s default relative 1e-6 for
cosines near 0.1, and enough to swap two items whose cosines are that close.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

SCORE_TOLERANCE = 1e-5
"""Fifty times the largest difference measured; still far below any real gap between two notes."""


def assert_same_ranking(
    got: Sequence[tuple[Hashable, float]],
    want: Sequence[tuple[Hashable, float]],
    k: int,
    *,
    tolerance: float = SCORE_TOLERANCE,
) -> None:
    """`got` is the top `k` of `want` (an exact ranking, which may go on longer): the same scores place
    by place, and at each place an item whose exact score is that place's score; so only items whose
    scores are within `tolerance` of each other may trade places."""
    exact = dict(want)
    assert len({key for key, _ in got}) == len(got) == min(k, len(want)), (got, want)
    for place, ((key, score), (_, wanted)) in enumerate(zip(got, want, strict=False)):
        assert abs(score - wanted) <= tolerance, (place, got, want)
        assert key in exact and abs(exact[key] - wanted) <= tolerance, (place, got, want)
