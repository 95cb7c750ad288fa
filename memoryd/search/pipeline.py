"""The search paths of spec §3.13, from a query to ranked, cut results.

Only the FTS-only path (no embedding provider) lives here so far; the hybrid and vector-only
paths plug in at `run_search`'s mode switch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import apsw

from memoryd.config import MemorySearchSettings
from memoryd.search.decay import apply_decay
from memoryd.search.expand import extract_keywords
from memoryd.search.fuse import Candidate, ranking_key
from memoryd.search.keyword import and_terms, search_keyword
from memoryd.search.scoring import lexical_boost_score, truncate_snippet

Mode = Literal["hybrid", "keyword", "vector"]
MAX_CANDIDATES = 200


@dataclass(frozen=True, slots=True)
class SearchResult:
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str

    @property
    def citation(self) -> str:
        """`path#L<s>` or `path#L<s>-L<e>` (spec §4.1)."""
        if self.start_line == self.end_line:
            return f"{self.path}#L{self.start_line}"
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "score": round(self.score, 6),
            "snippet": self.snippet,
            "source": self.source,
            "citation": self.citation,
        }


def candidate_pool(max_results: int, multiplier: int) -> int:
    return min(MAX_CANDIDATES, max(1, math.floor(max_results * multiplier)))


def _boosted(query: str, hits: Sequence[Candidate]) -> list[Candidate]:
    return [replace(h, score=lexical_boost_score(query, h.snippet, h.path, h.text_score)) for h in hits]


def keyword_only(
    conn: apsw.Connection,
    query: str,
    settings: MemorySearchSettings,
    *,
    sources: Sequence[str],
    max_results: int,
    min_score: float,
    now_ms: int,
    mtime_lookup: Callable[[str], int | None],
) -> list[Candidate]:
    """Spec §3.13 FTS-only path: AND query, else one search per expanded keyword; lexical boost."""
    tokenizer = settings.store.fts.tokenizer
    pool = candidate_pool(max_results, settings.query.hybrid.candidate_multiplier)

    def leg(terms: Sequence[str], operator: str) -> list[Candidate]:
        return search_keyword(
            conn, terms, operator=operator, limit=pool, sources=sources, model=None, tokenizer=tokenizer
        )

    ranked = _boosted(query, leg(and_terms(query), "AND"))
    if not ranked:
        best: dict[str, Candidate] = {}
        for keyword in extract_keywords(query, tokenizer) or [query.strip()]:
            for hit in _boosted(keyword, leg([keyword], "AND")):
                if hit.id not in best or hit.score > best[hit.id].score:
                    best[hit.id] = hit
        ranked = list(best.values())
    decay = settings.query.hybrid.temporal_decay
    if decay.enabled:
        ranked = apply_decay(ranked, now_ms, decay.half_life_days, mtime_lookup)
    ranked.sort(key=ranking_key)
    strict = [c for c in ranked if c.score >= min_score]
    return (strict or ranked)[:max_results]


def to_results(cands: Sequence[Candidate]) -> list[SearchResult]:
    return [
        SearchResult(c.path, c.start_line, c.end_line, c.score, truncate_snippet(c.snippet), c.source) for c in cands
    ]
