"""Maximal marginal relevance (spec §3.15): reorder results so near-duplicates do not crowd the top.

Similarity is Jaccard overlap of cheap token sets (ASCII words, CJK unigrams and adjacent bigrams) of
the snippets; relevance is the min-max normalised score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from memoryd.search.fuse import Candidate

DEFAULT_MMR_LAMBDA = 0.7
_ASCII_TOKEN_RE = re.compile(r"[a-z0-9_]+")
# Kana, CJK Extension A, CJK Unified Ideographs, Hangul syllables, Hangul Jamo: scripts without spaces.
_CJK_CHAR_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff]")


def mmr_tokens(text: str) -> frozenset[str]:
    """Lowercase ASCII word tokens, every CJK-family character, and bigrams of CJK characters that are
    adjacent in the text."""
    lower = text.strip().lower()
    tokens: set[str] = set(_ASCII_TOKEN_RE.findall(lower))
    previous_cjk = ""
    for char in lower:
        if _CJK_CHAR_RE.match(char):
            tokens.add(char)
            if previous_cjk:
                tokens.add(previous_cjk + char)
            previous_cjk = char
        else:
            previous_cjk = ""
    return frozenset(tokens)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|A ∩ B| / |A ∪ B|; two empty sets are identical (1), one empty set shares nothing (0)."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    intersection = len(a & b)
    return intersection / (len(a) + len(b) - intersection)


def mmr_rerank(cands: Sequence[Candidate], lambda_: float = DEFAULT_MMR_LAMBDA) -> list[Candidate]:
    """Greedy MMR order over all candidates (none is dropped).

    Each step picks the candidate maximising `λ·relevance − (1−λ)·max similarity to those already
    picked`; ties go to the higher original score, then to the earlier candidate. λ is clamped to
    [0, 1] (non-finite means the default); λ = 1 is a plain stable sort by score.
    """
    if len(cands) <= 1:
        return list(cands)
    weight = min(1.0, max(0.0, lambda_)) if math.isfinite(lambda_) else DEFAULT_MMR_LAMBDA
    if weight == 1.0:
        return sorted(cands, key=lambda cand: -cand.score)
    tokens = [mmr_tokens(cand.snippet) for cand in cands]
    low = min(cand.score for cand in cands)
    spread = max(cand.score for cand in cands) - low
    relevance = [(cand.score - low) / spread if spread != 0 else 1.0 for cand in cands]
    remaining = list(range(len(cands)))
    max_similarity = [0.0] * len(cands)
    order: list[Candidate] = []
    while remaining:
        best_position = 0
        best_value = -math.inf
        for position, index in enumerate(remaining):
            value = weight * relevance[index] - (1 - weight) * max_similarity[index]
            if value > best_value or (
                value == best_value and cands[index].score > cands[remaining[best_position]].score
            ):
                best_position, best_value = position, value
        picked = remaining.pop(best_position)
        order.append(cands[picked])
        for index in remaining:
            max_similarity[index] = max(max_similarity[index], jaccard(tokens[index], tokens[picked]))
    return order
