"""Recall@k, nDCG@10, MRR and percentiles over line-level relevance, on hand-computed cases."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.eval.metrics import (
    EvidenceLine,
    QuestionScore,
    Span,
    by_category,
    count_relevant,
    ndcg_at,
    percentile,
    recall_at,
    reciprocal_rank,
    score_question,
    summarise,
)

Lines = frozenset[EvidenceLine]
EVIDENCE: Lines = frozenset({("a", 3), ("a", 9), ("b", 2)})
RANKED = [
    Span("b", 10, 20),  # right file, wrong lines
    Span("a", 1, 5),  # covers a:3
    Span("c", 1, 9),  # covers line 9 of another file
    Span("a", 8, 12),  # covers a:9
    Span("a", 2, 4),  # covers a:3 again: relevant, but no new line
    Span("b", 1, 3),  # covers b:2, at rank 6
    Span("a", 13, 20),
]


def test_a_chunk_is_relevant_only_in_the_evidence_file_and_over_an_evidence_line() -> None:
    assert [span.is_relevant(EVIDENCE) for span in RANKED] == [False, True, False, True, True, True, False]
    assert Span("a", 3, 3).covers(("a", 3)) and not Span("a", 4, 8).covers(("a", 3))


def test_recall_counts_covered_evidence_lines() -> None:
    assert recall_at(RANKED, EVIDENCE, 5) == pytest.approx(2 / 3)
    assert recall_at(RANKED, EVIDENCE, 10) == 1.0
    assert recall_at(RANKED, EVIDENCE, 1) == 0.0


def test_ndcg_uses_binary_gains_and_an_ideal_of_the_relevant_chunks_in_the_index() -> None:
    # DCG: ranks 2, 4, 5, 6 -> 0.63093 + 0.43068 + 0.38685 + 0.35621 = 1.80467.
    # Five relevant chunks in the index: ideal 1 + 0.63093 + 0.5 + 0.43068 + 0.38685 = 2.94846.
    assert ndcg_at(RANKED, EVIDENCE, 5, 10) == pytest.approx(0.61207, abs=1e-5)
    # Twelve relevant chunks in the index: the ideal stops at ten (4.54364).
    assert ndcg_at(RANKED, EVIDENCE, 12, 10) == pytest.approx(0.39719, abs=1e-5)
    assert ndcg_at(RANKED, EVIDENCE, 0, 10) == 0.0


def test_reciprocal_rank_is_that_of_the_first_relevant_chunk_within_k() -> None:
    assert reciprocal_rank(RANKED, EVIDENCE, 10) == 0.5
    assert reciprocal_rank(RANKED, EVIDENCE, 1) == 0.0
    assert reciprocal_rank([], EVIDENCE, 10) == 0.0


def test_a_question_scores_every_metric_and_summaries_average_them_per_category() -> None:
    hard = score_question(RANKED, EVIDENCE, 5, category=1)
    easy = score_question([Span("a", 1, 20)], frozenset({("a", 3), ("a", 9)}), 1, category=4)
    assert (easy.recall_5, easy.recall_10, easy.ndcg_10, easy.reciprocal_rank) == (1.0, 1.0, 1.0, 1.0)
    overall = summarise([hard, easy])
    assert overall.n == 2
    assert overall.recall_5 == pytest.approx((2 / 3 + 1) / 2)
    assert overall.recall_10 == 1.0
    assert overall.ndcg_10 == pytest.approx((0.61207 + 1) / 2, abs=1e-5)
    assert overall.mrr == 0.75
    assert list(by_category([easy, hard])) == [1, 4]
    assert by_category([easy, hard])[1].mrr == 0.5
    assert overall.to_dict() == {"recall@5": 0.8333, "recall@10": 1.0, "ndcg@10": 0.806, "mrr": 0.75, "n": 2}
    assert summarise([]).n == 0


def test_count_relevant_counts_chunks_not_lines() -> None:
    assert count_relevant(RANKED, EVIDENCE) == 4


def test_percentiles_use_the_nearest_rank() -> None:
    values = [float(v) for v in range(100, 0, -1)]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (50.0, 99.0, 100.0)
    assert percentile([7.0], 99) == 7.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([], 50) == 0.0


spans = st.builds(
    lambda path, start, length: Span(path, start, start + length),
    st.sampled_from(["a", "b"]),
    st.integers(1, 30),
    st.integers(0, 6),
)
evidence_lines = st.tuples(st.sampled_from(["a", "b"]), st.integers(1, 36))
evidence_sets = st.frozensets(evidence_lines, min_size=1, max_size=5)


@given(st.lists(spans, max_size=15), evidence_sets)
def test_metrics_stay_in_range_and_recall_grows_with_k(ranked: list[Span], evidence: Lines) -> None:
    score: QuestionScore = score_question(ranked, evidence, count_relevant(ranked, evidence), category=4)
    assert 0.0 <= score.recall_5 <= score.recall_10 <= 1.0
    assert 0.0 <= score.ndcg_10 <= 1.0 + 1e-12
    found = any(s.is_relevant(evidence) for s in ranked[:10])
    assert (score.ndcg_10 > 0) == (score.reciprocal_rank > 0) == found


@given(st.lists(spans, max_size=15), evidence_sets)
def test_putting_every_relevant_chunk_first_is_the_ideal_ranking(ranked: list[Span], evidence: Lines) -> None:
    best = sorted(ranked, key=lambda s: not s.is_relevant(evidence))
    relevant = count_relevant(ranked, evidence)
    assert ndcg_at(best, evidence, relevant, 10) == (pytest.approx(1.0) if relevant else 0.0)
