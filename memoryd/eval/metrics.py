"""Ranking metrics over line-level relevance, defined as in the team's LoCoMo notes.

A retrieved chunk is relevant when it is in an evidence file and its line range covers an
evidence line. Recall@k counts evidence *lines* covered by the top k (so a question with three
evidence turns is a third answered by a chunk holding one of them); nDCG uses binary gains per
*chunk*, with the ideal ranking being min(relevant chunks in the whole index, k) relevant chunks.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

EvidenceLine = tuple[str, int]  # (workspace-relative path, 1-based line)
Evidence = Collection[EvidenceLine]


@dataclass(frozen=True, slots=True)
class Span:
    """Where a chunk sits: its file and inclusive 1-based line range."""

    path: str
    start_line: int
    end_line: int

    def covers(self, line: EvidenceLine) -> bool:
        return line[0] == self.path and self.start_line <= line[1] <= self.end_line

    def is_relevant(self, evidence: Evidence) -> bool:
        return any(self.covers(line) for line in evidence)


def recall_at(ranked: Sequence[Span], evidence: Evidence, k: int) -> float:
    """Share of the evidence lines covered by at least one of the first k chunks."""
    if not evidence:
        return 0.0
    covered = {line for line in evidence if any(span.covers(line) for span in ranked[:k])}
    return len(covered) / len(evidence)


def ndcg_at(ranked: Sequence[Span], evidence: Evidence, relevant_in_index: int, k: int) -> float:
    """Binary-gain nDCG@k; the ideal puts min(relevant_in_index, k) relevant chunks first."""
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(relevant_in_index, k) + 1))
    if ideal == 0:
        return 0.0
    hits = [rank for rank, span in enumerate(ranked[:k], 1) if span.is_relevant(evidence)]
    gained = sum(1 / math.log2(rank + 1) for rank in hits)
    return gained / ideal


def reciprocal_rank(ranked: Sequence[Span], evidence: Evidence, k: int) -> float:
    """1/rank of the first relevant chunk among the first k, 0 when none is."""
    for rank, span in enumerate(ranked[:k], 1):
        if span.is_relevant(evidence):
            return 1 / rank
    return 0.0


def count_relevant(chunks: Iterable[Span], evidence: Evidence) -> int:
    """How many chunks of an index are relevant to the question (the nDCG ideal's size)."""
    return sum(1 for span in chunks if span.is_relevant(evidence))


@dataclass(frozen=True, slots=True)
class QuestionScore:
    category: int
    recall_5: float
    recall_10: float
    ndcg_10: float
    reciprocal_rank: float


def score_question(ranked: Sequence[Span], evidence: Evidence, ideal: int, category: int) -> QuestionScore:
    """Every metric for one question, from its top 10 chunks; `ideal` = its relevant chunks in the index."""
    return QuestionScore(
        category=category,
        recall_5=recall_at(ranked, evidence, 5),
        recall_10=recall_at(ranked, evidence, 10),
        ndcg_10=ndcg_at(ranked, evidence, ideal, 10),
        reciprocal_rank=reciprocal_rank(ranked, evidence, 10),
    )


@dataclass(frozen=True, slots=True)
class Summary:
    """Means over a set of questions (all zero when the set is empty)."""

    n: int
    recall_5: float
    recall_10: float
    ndcg_10: float
    mrr: float

    def to_dict(self) -> dict[str, float | int]:
        return {
            "recall@5": round(self.recall_5, 4),
            "recall@10": round(self.recall_10, 4),
            "ndcg@10": round(self.ndcg_10, 4),
            "mrr": round(self.mrr, 4),
            "n": self.n,
        }


def summarise(scores: Sequence[QuestionScore]) -> Summary:
    n = len(scores)
    if n == 0:
        return Summary(0, 0.0, 0.0, 0.0, 0.0)
    return Summary(
        n=n,
        recall_5=math.fsum(s.recall_5 for s in scores) / n,
        recall_10=math.fsum(s.recall_10 for s in scores) / n,
        ndcg_10=math.fsum(s.ndcg_10 for s in scores) / n,
        mrr=math.fsum(s.reciprocal_rank for s in scores) / n,
    )


def by_category(scores: Sequence[QuestionScore]) -> dict[int, Summary]:
    """One summary per category present, in category order."""
    categories = sorted({s.category for s in scores})
    return {c: summarise([s for s in scores if s.category == c]) for c in categories}


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (the smallest value with at least pct % of values at or below it)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]
