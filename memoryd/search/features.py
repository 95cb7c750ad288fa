"""Switches for the ranking's heuristics, so each can be measured off (the eval's ablation table).

Not configuration: users get the defaults, which stay on only while every dev set measures them as
helping (issue 14's rule: no set hurt by more than 0.005 R@5, the mean helped). The eval harness
builds searchers with one feature off at a time; the daemon always runs `RankingFeatures()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class KeywordFeatures:
    """The relaxed keyword leg's parts on top of bm25 over an OR of the question's words."""

    stop_words: bool = True
    """Drop stop words and filler verbs from the query (off: every token is a term)."""
    coverage: bool = True
    """Weight bm25 by the share of the query's information a chunk covers, and score keyword-only
    answers by it (off: bm25 alone, mapped r/(1+r))."""
    proximity: bool = True
    """Reward chunks that keep the query's adjacent word pairs together."""
    df_caps: bool = True
    """Leave very common words out of the OR (off: every word is searched, whatever it costs)."""
    bm25_order: bool = True
    """Keyword-only: rank by bm25 times the bounded coverage and proximity factors, scaled to the best
    hit's absolute score (off: rank by the absolute score, coverage and saturated bm25 in equal parts).
    Hybrid's weighted and RRF fusions fuse the absolute score; the anchored one (the default) fuses each
    hit's raw bm25 and this keyword-only score."""
    bm25_share: float = 1.0
    """How much of the keyword-only score is the bm25-ordered one (the rest: the absolute score)."""
    bm25_stop_words: bool = True
    """Let the query's stop words join the content words' bm25 OR (df caps still apply): the base order is
    plain bm25's, as the floor asks it ("I", "my", "this" tell a user's own words from an answer's); coverage
    and proximity still count the content words only (off: bm25 over the content words)."""
    stop_word_fallback: bool = True
    """Keyword-only: after every content-word hit, the chunks plain bm25 finds by the query's other
    words (stop words), in plain bm25's order, scored 0 (never served at a min_score, no evidence)."""
    coverage_floor: float | None = None
    """bm25 is multiplied by floor + (1 - floor) x coverage (None: `relaxed.COVERAGE_FLOOR`)."""
    phrase_gain: float | None = None
    """...and by 1 + gain x the share of adjacent word pairs kept together (None: `relaxed.PHRASE_GAIN`)."""


@dataclass(frozen=True, slots=True)
class RankingFeatures:
    keyword: KeywordFeatures = field(default_factory=KeywordFeatures)
    vector_completion: bool = True
    """Give keyword hits outside the vector leg's pool their exact cosine (off: they fuse with 0)."""
