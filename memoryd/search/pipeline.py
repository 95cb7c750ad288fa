"""The search paths of spec §3.13, from a query's legs to ranked, cut results.

* hybrid: the keyword and vector legs fused: anchored on plain bm25's order (`fusion="anchored"`, the
  default: `fuse.merge_anchored`, levelled by `anchored_levels`), OpenClaw's weighted merge with its relaxed
  fallback (`"weighted"`) or reciprocal-rank fusion (`"rrf"`);
* vector-only and keyword-only;
* OpenClaw's own FTS-only path (`keyword_strategy="openclaw"`), kept exact because its tests pin it.

Then temporal decay and MMR per settings, and the minScore / maxResults cut. Two promises OpenClaw
does not keep: top-k is monotonic (each leg always fetches the same pool, whatever maxResults is,
and the cut is a prefix of one ranked list), and a search can return nothing (abstention): every
score here is an absolute measure of relevance, never one relative to the other results, so a
question about something the memory does not hold scores low everywhere. Hybrid abstains on the
query's best *evidence* (`evidence`), not on the fused score: a keyword match counts only as far as
it covers the question, so one common word shared with an unrelated chunk does not make an answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import apsw

from memoryd.config import FtsTokenizer, Fusion, MemorySearchSettings
from memoryd.media import NO_LINES, media_kind
from memoryd.search.decay import apply_decay
from memoryd.search.expand import extract_keywords
from memoryd.search.fuse import (
    DEFAULT_RRF_K,
    Candidate,
    merge_anchored,
    merge_rrf,
    merge_weighted,
    ranking_key,
    select_results,
)
from memoryd.search.keyword import and_terms, search_keyword
from memoryd.search.mmr import mmr_rerank
from memoryd.search.scoring import lexical_boost_score
from memoryd.search.snippets import best_window, query_stems
from memoryd.search.timeframe import TimeFrame, boost_timeframe

Mode = Literal["hybrid", "keyword", "vector"]
KeywordStrategy = Literal["relaxed", "openclaw"]
MtimeLookup = Callable[[str], int | None]
MAX_CANDIDATES = 200
"""The keyword leg always returns up to this many candidates (OpenClaw: maxResults x 4, which made
top-k depend on maxResults)."""
VECTOR_CANDIDATES = 50
"""...and the vector leg this many: with the 400-candidate rescoring pool this keeps the KNN within
its latency budget at 1M chunks. Top-k is monotonic up to maxResults = 50."""
MMR_POOL = 100
"""MMR reorders the best this many candidates (it is quadratic); the rest keep their order."""
KEYWORD_STRATEGY: KeywordStrategy = "relaxed"
"""Default keyword leg until the config carries `query.keyword_strategy`."""
TextScore = Literal["coverage", "bm25"]
FUSION_TEXT_SCORE: TextScore = "coverage"
"""Which keyword score the hybrid fuses, until the config carries `query.hybrid.text_score`:
"coverage" (the keyword leg's own score, coverage and bm25 in equal parts) or "bm25" (OpenClaw's
r/(1+r) of the bm25 rank, which saturates near 1 for any OR match and so barely separates hits:
on LoCoMo it made hybrid worse than the keyword leg alone)."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str
    citation: str | None = None
    """`path#L<s>-L<e>` once `search.citations` decorated the result; None when citations are off."""
    snippet_lines: tuple[int, int] | None = None
    """The file lines the snippet shows, when they are known (a note's chunk maps line for line; a
    transcript's chunk text does not map onto JSONL lines): the citation names these."""
    snippet_match_at: int = 0
    """Where the matching window opens in `snippet` (UTF-16 units), past the context lines taken back before
    it; 0 when the snippet opens on it (memoryd.search.snippets.Window.match_at)."""
    retained: bool = False
    """A transcript deleted from disk, served from the retention store (memoryd.index.retention)."""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "path": self.path,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "score": round(self.score, 6),
            "snippet": self.snippet,
            "source": self.source,
            "citation": self.citation,
        }
        if self.snippet_lines is not None:
            out["snippetStartLine"], out["snippetEndLine"] = self.snippet_lines
        if self.snippet_match_at > 0:
            out["snippetMatchOffset"] = self.snippet_match_at
        if self.start_line == NO_LINES:  # an image or audio file (multimodal memory): no lines
            out["kind"] = media_kind(self.path)
        if self.retained:
            out["retained"] = True
        return out


@dataclass(frozen=True, slots=True)
class RankOptions:
    """Everything that shapes the ranking after the legs ran."""

    max_results: int
    min_score: float
    min_evidence: float = 0.0
    """Hybrid answers nothing when no candidate's `evidence` reaches this (0 = never abstain)."""
    vector_weight: float = 0.7
    text_weight: float = 0.3
    fusion: Fusion = "weighted"
    rrf_k: int = DEFAULT_RRF_K
    text_score: TextScore = FUSION_TEXT_SCORE
    mmr_enabled: bool = False
    mmr_lambda: float = 0.7
    decay_enabled: bool = False
    half_life_days: float = 30
    now_ms: int = 0
    timeframe: TimeFrame | None = None
    date_boost: float = 0.0
    min_score_configured: bool = False
    """`min_score` is the agent's `query.min_score` (the request gave none): a small index may lower it
    (memoryd.search.smallindex)."""

    @classmethod
    def from_settings(
        cls,
        settings: MemorySearchSettings,
        *,
        max_results: int,
        min_score: float,
        now_ms: int,
        timeframe: TimeFrame | None = None,
        min_score_configured: bool = False,
    ) -> RankOptions:
        """`min_score` 0 asks for the ranking as it is (scores of 0 or more) with no abstention. OpenClaw's keyword
        strategy measures no coverage, so it never abstains on evidence either."""
        hybrid = settings.query.hybrid
        rrf_k = hybrid.rrf_k
        text_score: TextScore = hybrid.text_score
        relaxed = settings.query.keyword_strategy == "relaxed"
        return cls(
            max_results=max_results,
            min_score=min_score,
            min_evidence=settings.query.min_evidence if relaxed and min_score > 0 else 0.0,
            vector_weight=hybrid.vector_weight,
            text_weight=hybrid.text_weight,
            fusion=hybrid.fusion,
            rrf_k=int(rrf_k),
            text_score=text_score,
            mmr_enabled=hybrid.mmr.enabled,
            mmr_lambda=hybrid.mmr.lambda_,
            decay_enabled=hybrid.temporal_decay.enabled,
            half_life_days=hybrid.temporal_decay.half_life_days,
            now_ms=now_ms,
            timeframe=timeframe,
            date_boost=settings.query.date_boost,
            min_score_configured=min_score_configured,
        )


def rank_hybrid(
    vector: Sequence[Candidate], keyword: Sequence[Candidate], opts: RankOptions, mtime_lookup: MtimeLookup
) -> list[Candidate]:
    """Fuse both legs, decay, sort, diversify, then minScore with OpenClaw's relaxed fallback."""
    return cut_hybrid(order_hybrid(vector, keyword, opts, mtime_lookup), keyword, opts)


def order_hybrid(
    vector: Sequence[Candidate], keyword: Sequence[Candidate], opts: RankOptions, mtime_lookup: MtimeLookup
) -> list[Candidate]:
    """The fused ranking before diversity and cut: fusion, decay, date boost, sort (a rerank goes next)."""
    if opts.text_score == "coverage":
        keyword = [c.with_text_score(c.score if c.absolute is None else c.absolute) for c in keyword]
    if opts.fusion == "anchored":  # hits of stop words alone keep their bm25 share (plain bm25 ranks them too)
        return anchored_levels(_order(merge_anchored(vector, keyword), opts, mtime_lookup), opts)
    keyword = [c for c in keyword if c.absolute != 0.0]  # hits of stop words alone: keyword-only's fallback
    if opts.fusion == "rrf":
        merged = scaled_rrf(vector, keyword, opts)
    else:
        merged = merge_weighted(vector, keyword, opts.vector_weight, opts.text_weight)
    return _order(merged, opts, mtime_lookup)


def cut_hybrid(ranked: Sequence[Candidate], keyword: Sequence[Candidate], opts: RankOptions) -> list[Candidate]:
    """Nothing when the best evidence is below min_evidence; else MMR, then minScore with OpenClaw's
    relaxed fallback to keyword hits, then maxResults."""
    if opts.min_evidence > 0 and best_evidence(ranked, opts) < opts.min_evidence:
        return []
    return select_results(_diversify(ranked, opts), keyword, opts.min_score, opts.max_results, opts.text_weight)


def evidence(cand: Candidate, opts: RankOptions) -> float:
    """How much a candidate shows the memory holds something about the question, in [0, 1]:
    `vector_weight x cosine + text_weight x keyword score x coverage`.

    The fused score adds the keyword score whole, and bm25's mapping gives a chunk sharing one word
    of the question ~0.4 however little of it the chunk covers; scaled by that coverage, one common
    word is no evidence. Decay, date boost and rerank move the ranking, not this.
    """
    return opts.vector_weight * max(cand.vector_score, 0.0) + opts.text_weight * cand.text_score * cand.coverage


def best_evidence(cands: Sequence[Candidate], opts: RankOptions) -> float:
    """The best candidate's evidence (0 when there is none)."""
    return max((evidence(c, opts) for c in cands), default=0.0)


def scaled_rrf(vector: Sequence[Candidate], keyword: Sequence[Candidate], opts: RankOptions) -> list[Candidate]:
    """Reciprocal-rank fusion, on a scale where minScore still means something.

    Raw RRF scores depend only on ranks, so even nonsense has a "best" result. Here the RRF score is
    divided by its maximum (first in both legs = 1) and multiplied by the query's best weighted
    score (how relevant the best candidate is in absolute terms): the order is RRF's, the level says
    whether anything relevant was found.
    """
    fused = merge_rrf(vector, keyword, opts.rrf_k)
    if not fused:
        return []
    confidence = max(opts.vector_weight * c.vector_score + opts.text_weight * c.text_score for c in fused)
    top = 2.0 / (opts.rrf_k + 1)
    return [c.with_score(c.score / top * max(confidence, 0.0)) for c in fused]


LEVEL_STEP = 1e-9
"""Anchored levels fall by at least this per place, so a later sort by score keeps the anchored order."""


def anchored_levels(ranked: Sequence[Candidate], opts: RankOptions) -> list[Candidate]:
    """The anchored order (`merge_anchored`) with scores that mean what the weighted fusion's mean.

    Each place scores the best weighted score (`vector_weight x cosine + text_weight x keyword score`) of
    itself and every candidate below it: the scores fall along the order, and a min_score cut serves
    the order's prefix down to the last candidate whose own weighted score reaches it.
    """
    levels = [opts.vector_weight * max(c.vector_score, 0.0) + opts.text_weight * c.text_score for c in ranked]
    for i in range(len(levels) - 2, -1, -1):
        levels[i] = max(levels[i], levels[i + 1])
    for i in range(1, len(levels)):
        levels[i] = min(levels[i], levels[i - 1] - LEVEL_STEP)
    return [c.with_score(level) for c, level in zip(ranked, levels, strict=True)]


def rank_single(hits: Sequence[Candidate], opts: RankOptions, mtime_lookup: MtimeLookup) -> list[Candidate]:
    """One leg alone (vector-only or keyword-only): decay, sort, diversify, strict minScore, cut."""
    return cut_single(order_single(hits, opts, mtime_lookup), opts)


def order_single(hits: Sequence[Candidate], opts: RankOptions, mtime_lookup: MtimeLookup) -> list[Candidate]:
    """One leg's ranking before diversity and cut: decay, date boost, sort."""
    return _order(hits, opts, mtime_lookup)


def cut_single(ranked: Sequence[Candidate], opts: RankOptions) -> list[Candidate]:
    """MMR, then strict minScore, then maxResults."""
    return [c for c in _diversify(ranked, opts) if c.score >= opts.min_score][: max(0, opts.max_results)]


def _order(cands: Sequence[Candidate], opts: RankOptions, mtime_lookup: MtimeLookup) -> list[Candidate]:
    ranked = list(cands)
    if opts.decay_enabled:
        ranked = apply_decay(ranked, opts.now_ms, opts.half_life_days, mtime_lookup)
    if opts.timeframe is not None:
        ranked = boost_timeframe(ranked, opts.timeframe, opts.date_boost)
    ranked.sort(key=ranking_key)
    return ranked


def _diversify(ranked: Sequence[Candidate], opts: RankOptions) -> list[Candidate]:
    if opts.mmr_enabled and len(ranked) > 1:
        return mmr_rerank(ranked[:MMR_POOL], opts.mmr_lambda) + list(ranked[MMR_POOL:])
    return list(ranked)


def candidate_pool(max_results: int, multiplier: int) -> int:
    return min(MAX_CANDIDATES, max(1, math.floor(max_results * multiplier)))


def _boosted(query: str, hits: Sequence[Candidate]) -> list[Candidate]:
    return [replace(h, score=lexical_boost_score(query, h.snippet, h.path, h.text_score)) for h in hits]


def openclaw_keyword_only(
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


def to_results(
    cands: Sequence[Candidate], query: str = "", tokenizer: FtsTokenizer = "unicode61"
) -> list[SearchResult]:
    """The results served: each chunk's best window for `query` as its snippet (memoryd/search/snippets.py)."""
    stems = query_stems(query, tokenizer) if query else ()
    return [_result(c, stems) for c in cands]


def _result(cand: Candidate, stems: Sequence[str]) -> SearchResult:
    if cand.start_line == NO_LINES:
        return SearchResult(cand.path, cand.start_line, cand.end_line, cand.score, cand.snippet, cand.source)
    window = best_window(cand.snippet, stems)
    lines: tuple[int, int] | None = None
    if cand.source == "memory" and cand.snippet.count("\n") == cand.end_line - cand.start_line:  # line for line
        lines = (cand.start_line + window.first_line, cand.start_line + window.last_line)
    return SearchResult(
        cand.path,
        cand.start_line,
        cand.end_line,
        cand.score,
        window.text,
        cand.source,
        snippet_lines=lines,
        snippet_match_at=window.match_at,
    )
