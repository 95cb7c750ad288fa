"""Hybrid fusion of the keyword and vector legs, and the final minScore / maxResults cut (spec §3.13).

Two promises OpenClaw does not keep: results do not depend on the order in which equally scored
candidates arrive (every sort ends on a total key), and top-k is monotonic (`maxResults=1` returns the
first result of `maxResults=5`), because the cut is a plain prefix of one ranked list.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memoryd.errors import ConfigError

DEFAULT_RRF_K = 60
ANCHOR_VECTOR_GAIN = 4.0
"""Anchored fusion: a chunk's bm25 share is multiplied by 1 + this x its cosine..."""
ANCHOR_KEYWORD_GAIN = 0.5
"""...and by 1 + this x its keyword-leg score relative to the leg's best..."""
ANCHOR_VECTOR_SHARE = 1.0
"""...and this x its cosine is added, so a chunk no query word reaches still ranks by meaning."""


@dataclass(slots=True)
class Candidate:
    """One chunk on its way through search; `score` is the fused (later decayed) ranking score.

    Treated as immutable (every change returns a copy) but not declared frozen: a frozen dataclass's
    constructor sets each field through `object.__setattr__` (1.5 us for these 13 fields against 0.27),
    and a hybrid search builds ~1,200 of them.
    """

    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    snippet: str
    vector_score: float = 0.0
    text_score: float = 0.0
    score: float = 0.0
    ts_ms: int = 0  # a timestamp known for the chunk (transcript message time), 0 if none
    coverage: float = 0.0
    """The idf-weighted share of the query's words the chunk holds (memoryd's keyword leg; 0 for a
    chunk only the vector leg found)."""
    absolute: float | None = None
    """memoryd's keyword leg: the hit's absolute keyword score (coverage and bm25's mapping in equal
    parts), which hybrid fuses and weighs as evidence; `score` holds the keyword-only ranking's."""
    bm25: float = 0.0
    """memoryd's keyword leg: the chunk's plain bm25 relevance (-bm25) over every affordable word of the
    query, stop words included: the base order of the anchored fusion."""
    stored_vector: bytes | None = None
    """The chunk's embedding as stored, when the keyword leg read it with the hit for hybrid's vector
    completion (`b""`: the chunk waits for its vector); None when not read or of another model."""

    def with_score(self, score: float) -> Candidate:
        """This candidate with another `score`: what `dataclasses.replace` does, at half its cost (a
        search rescores ~800 candidates, one or more times each; tests/search/test_fuse.py keeps the
        field list whole)."""
        return self._rescored(self.vector_score, self.text_score, score)

    def with_text_score(self, text_score: float) -> Candidate:
        """This candidate with another `text_score` (see `with_score`)."""
        return self._rescored(self.vector_score, text_score, self.score)

    def as_vector_hit(self, cosine: float) -> Candidate:
        """This candidate as the vector leg returns a hit: cosine as vector and fused score, no text score."""
        return self._rescored(cosine, 0.0, cosine)

    def as_keyword_hit(self) -> Candidate:
        """This candidate as the keyword leg's alone: no vector score (see `with_score`)."""
        return self._rescored(0.0, self.text_score, self.score)

    def joined(self, keyword_hit: Candidate) -> Candidate:
        """This vector hit with what the keyword leg found of the same chunk: its text score, snippet (when
        it has one), coverage and the later timestamp (see `with_score`: with `dataclasses.replace` here, the
        fusion of a hybrid search at 100k chunks took 2.4 ms p50 instead of 2.0)."""
        return self._rescored(
            self.vector_score,
            keyword_hit.text_score,
            self.score,
            snippet=keyword_hit.snippet or self.snippet,
            ts_ms=max(self.ts_ms, keyword_hit.ts_ms),
            coverage=keyword_hit.coverage,
        )

    def _rescored(
        self,
        vector_score: float,
        text_score: float,
        score: float,
        *,
        snippet: str | None = None,
        ts_ms: int | None = None,
        coverage: float | None = None,
    ) -> Candidate:
        return Candidate(
            self.id,
            self.path,
            self.source,
            self.start_line,
            self.end_line,
            self.snippet if snippet is None else snippet,
            vector_score,
            text_score,
            score,
            self.ts_ms if ts_ms is None else ts_ms,
            self.coverage if coverage is None else coverage,
            self.absolute,
            self.bm25,
            self.stored_vector,
        )


def ranking_key(cand: Candidate) -> tuple[float, str, int, int, str, str]:
    """Score descending, then path, lines, source and id: a total order, so ties never hang on input order."""
    return (-cand.score, cand.path, cand.start_line, cand.end_line, cand.source, cand.id)


def merge_weighted(
    vector: Sequence[Candidate],
    keyword: Sequence[Candidate],
    vector_weight: float,
    text_weight: float,
) -> list[Candidate]:
    """OpenClaw's mergeHybridResults: union by chunk id, `score = vw·vectorScore + tw·textScore`.

    A keyword hit on a vector hit brings its text score and (non-empty) snippet; a hit found by one
    leg only scores 0 on the other.
    """
    merged = _union(vector, keyword)
    scored = [cand.with_score(vector_weight * cand.vector_score + text_weight * cand.text_score) for cand in merged]
    return sorted(scored, key=ranking_key)


def merge_rrf(
    vector: Sequence[Candidate],
    keyword: Sequence[Candidate],
    k: int = DEFAULT_RRF_K,
    vector_weight: float = 1.0,
    text_weight: float = 1.0,
) -> list[Candidate]:
    """Reciprocal-rank fusion: `score = Σ weight / (k + rank)` over the legs that found the chunk.

    Ranks come from each leg's own score (1 = best; equal scores share a rank), not from list
    positions, so shuffled inputs fuse identically. Leg scores are kept for diagnostics.
    """
    if not math.isfinite(k) or k < 0:
        raise ConfigError("rrf_k", f"must be a non-negative number, got {k!r}")
    vector_rank = _competition_ranks(vector, lambda cand: cand.vector_score)
    keyword_rank = _competition_ranks(keyword, lambda cand: cand.text_score)
    fused: list[Candidate] = []
    for cand in _union(vector, keyword):
        score = 0.0
        if cand.id in vector_rank:
            score += vector_weight / (k + vector_rank[cand.id])
        if cand.id in keyword_rank:
            score += text_weight / (k + keyword_rank[cand.id])
        fused.append(cand.with_score(score))
    return sorted(fused, key=ranking_key)


def merge_anchored(
    vector: Sequence[Candidate],
    keyword: Sequence[Candidate],
    *,
    vector_gain: float = ANCHOR_VECTOR_GAIN,
    keyword_gain: float = ANCHOR_KEYWORD_GAIN,
    vector_share: float = ANCHOR_VECTOR_SHARE,
) -> list[Candidate]:
    """bm25 as the base order, the other evidence as bounded adjustments (issue 26).

    `rank = b x (1 + vector_gain x cos) x (1 + keyword_gain x k) + vector_share x cos`, where `b` is the
    chunk's plain bm25 relevance over the best hit's (every query word, stop words too), `k` its keyword
    score over the leg's best and `cos` its cosine (negatives count 0). Among chunks the query's words
    reach, one overtakes another only when its factors outweigh their bm25 ratio, at most
    (1 + vector_gain) x (1 + keyword_gain); a chunk no word reaches ranks by its cosine alone, which a
    strong lexical hit outranks. Plain bm25 is what long, code-heavy answers are found by; the fusions
    that let the vector leg outvote it fell below it there. `score` holds the rank (not yet a level).
    """
    merged = _union(vector, keyword)
    best_bm25 = max((c.bm25 for c in keyword), default=0.0)
    best_keyword = max((c.score for c in keyword), default=0.0)
    bm25_of = {c.id: c.bm25 / best_bm25 for c in keyword} if best_bm25 > 0 else {}
    keyword_of = {c.id: c.score / best_keyword for c in keyword} if best_keyword > 0 else {}
    ranked: list[Candidate] = []
    for cand in merged:
        cosine = max(cand.vector_score, 0.0)
        factors = (1 + vector_gain * cosine) * (1 + keyword_gain * keyword_of.get(cand.id, 0.0))
        base = bm25_of.get(cand.id, 0.0) * factors
        ranked.append(cand.with_score(base + vector_share * cosine))
    return sorted(ranked, key=ranking_key)


def select_results(
    merged: Sequence[Candidate],
    keyword_hits: Sequence[Candidate],
    min_score: float,
    max_results: int,
    text_weight: float,
) -> list[Candidate]:
    """Apply minScore and maxResults to the ranked list, keeping its order (steps 4–5 of §3.13).

    When nothing reaches minScore but the keyword leg found something, fall back to the merged entries
    that are keyword hits and score at least `min(minScore, textWeight)`: an exact lexical hit can never
    reach minScore on its text score alone, and should not vanish for that.
    """
    if max_results <= 0:
        return []
    strict = [cand for cand in merged if cand.score >= min_score]
    if strict or not keyword_hits:
        return strict[:max_results]
    lexical_keys = {_location_key(hit) for hit in keyword_hits}
    relaxed_floor = min(min_score, text_weight)
    relaxed = [cand for cand in merged if _location_key(cand) in lexical_keys and cand.score >= relaxed_floor]
    return relaxed[:max_results]


def _union(vector: Sequence[Candidate], keyword: Sequence[Candidate]) -> list[Candidate]:
    """Candidates by chunk id with both leg scores filled in (ids are unique within a leg; on a
    duplicate the better-scoring entry wins)."""
    by_id: dict[str, Candidate] = {}
    for cand in vector:
        entry = cand if cand.text_score == 0.0 else cand.with_text_score(0.0)
        current = by_id.get(cand.id)
        if current is None or entry.vector_score > current.vector_score:
            by_id[cand.id] = entry
    keyword_best: dict[str, Candidate] = {}
    for cand in keyword:
        current = keyword_best.get(cand.id)
        if current is None or cand.text_score > current.text_score:
            keyword_best[cand.id] = cand
    for cand_id, hit in keyword_best.items():
        existing = by_id.get(cand_id)
        if existing is None:
            by_id[cand_id] = hit if hit.vector_score == 0.0 else hit.as_keyword_hit()
        else:
            by_id[cand_id] = existing.joined(hit)
    return list(by_id.values())


def _competition_ranks(leg: Sequence[Candidate], score_of: Callable[[Candidate], float]) -> dict[str, int]:
    """1 + the number of strictly better candidates in the leg ("1224" ranking), by chunk id."""
    best: dict[str, float] = {}
    for cand in leg:
        score = score_of(cand)
        if cand.id not in best or score > best[cand.id]:
            best[cand.id] = score
    ascending = sorted(best.values())
    total = len(ascending)
    return {cand_id: 1 + total - bisect.bisect_right(ascending, score) for cand_id, score in best.items()}


def _location_key(cand: Candidate) -> tuple[str, str, int, int]:
    return (cand.source, cand.path, cand.start_line, cand.end_line)
