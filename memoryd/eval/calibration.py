"""The two thresholds of what is served, swept: `min_score` (per result) and `min_evidence` (per answer).

Every question is asked once at min_score 0 (the ranking, which never abstains); what a threshold pair
would have served is then read off that ranking, so one run shows R@10, empty answers and abstention at
every value without asking again. Each sweep varies one threshold with the other at the agent's default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.eval.metrics import EvidenceLine

MIN_SCORES = tuple(round(0.05 * i, 2) for i in range(1, 11))
"""min_score values the report shows R@10, empty answers and abstention for."""
MIN_EVIDENCES = tuple(round(0.02 * i, 2) for i in range(3, 11))
"""...and min_evidence values (hybrid only: other modes have no evidence to judge)."""


@dataclass(frozen=True, slots=True)
class Asked:
    """One question's ranking: (score, the evidence lines each result covers) best first, and the
    answer's evidence (None where the mode has none)."""

    ranked: Sequence[tuple[float, frozenset[EvidenceLine]]]
    evidence: float | None
    share: float = 1.0
    """The share of the configured thresholds the answering index applies (below 1 for an index of a
    few chunks: memoryd.search.smallindex), so a sweep's values are the configured ones."""

    def served(self, min_score: float, min_evidence: float) -> list[tuple[float, frozenset[EvidenceLine]]]:
        """What the search answers when configured with these thresholds (min_score above 0: a request at 0
        never abstains)."""
        if self.evidence is not None and self.evidence < min_evidence * self.share:
            return []
        return [(score, lines) for score, lines in self.ranked if score >= min_score * self.share]


def rows(
    answerable: Sequence[tuple[Asked, int]],
    probes: Sequence[Asked],
    thresholds: Sequence[tuple[float, float]],
) -> list[dict[str, float]]:
    """Per (min_score, min_evidence): R@10 of what is served, answerable questions served nothing (each
    with its count of evidence lines) and probes served nothing (abstention)."""
    out: list[dict[str, float]] = []
    for min_score, min_evidence in thresholds:
        recalls, empty = [], 0
        for asked, total in answerable:
            served = asked.served(min_score, min_evidence)
            covered = {line for _score, lines in served for line in lines}
            recalls.append(len(covered) / total if total else 0.0)
            empty += not served
        n = max(1, len(recalls))
        abstain = sum(1 for p in probes if not p.served(min_score, min_evidence)) / max(1, len(probes))
        out.append(
            {
                "min_score": min_score,
                "min_evidence": min_evidence,
                "recall@10": round(sum(recalls) / n, 4),
                "empty_share": round(empty / n, 4),
                "abstain": round(abstain, 4),
            }
        )
    return out


def sweeps(
    answerable: Sequence[tuple[Asked, int]],
    probes: Sequence[Asked],
    *,
    min_score: float,
    min_evidence: float,
) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """The min_score sweep at the default min_evidence, and the min_evidence sweep at the default
    min_score (empty when no question has evidence: a mode without the rule)."""
    by_score = rows(answerable, probes, [(t, min_evidence) for t in MIN_SCORES])
    has_evidence = any(a.evidence is not None for a, _total in answerable)
    by_evidence = rows(answerable, probes, [(min_score, e) for e in MIN_EVIDENCES]) if has_evidence else []
    return by_score, by_evidence
