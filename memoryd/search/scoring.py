"""Score mappings of the keyword leg (spec §3.13): bm25 rank to [0, 1], the FTS-only lexical boost,
and the snippet cut.

Lengths are counted in UTF-16 code units, as OpenClaw counts them, so snippets and the length boost
come out the same for text outside the Basic Multilingual Plane (emoji, rare CJK).
"""

from __future__ import annotations

import math

from memoryd.search.expand import query_tokens

SNIPPET_MAX_CHARS = 700
_NON_FINITE_RANK_SCORE = 1 / 1000
_QUERY_COVERAGE_WEIGHT = 0.45
_DENSITY_WEIGHT = 0.2
_PATH_MATCH_BOOST = 0.18
_LENGTH_BOOST_CAP = 0.18
_LENGTH_BOOST_UNITS = 160


def bm25_rank_to_score(rank: float) -> float:
    """Map FTS5's bm25 rank (negative, more negative is better) to a score in (0, 1)."""
    if not math.isfinite(rank):
        return _NON_FINITE_RANK_SCORE
    if rank < 0:
        relevance = -rank
        return relevance / (1 + relevance)
    return 1 / (1 + rank)


def lexical_boost_score(query: str, text: str, path: str, text_score: float) -> float:
    """The FTS-only score (OpenClaw's scoreFallbackKeywordResult): bm25 plus query-token coverage,
    token density, path matches and a small length bonus, capped at 1.

    Without embeddings bm25 alone barely separates hits; these cheap lexical signals order them.
    """
    unique_query = {token.lower() for token in query_tokens(query)}
    if not unique_query:
        return text_score
    text_token_set = {token.lower() for token in query_tokens(text)}
    path_lower = path.lower()
    overlap = sum(1 for token in unique_query if token in text_token_set)
    coverage = overlap / len(unique_query)
    density = overlap / max(len(text_token_set), 1)
    path_boost = 0.0
    for token in unique_query:
        if token in path_lower:
            path_boost += _PATH_MATCH_BOOST
    length_boost = min(utf16_len(text) / _LENGTH_BOOST_UNITS, _LENGTH_BOOST_CAP)
    boost = coverage * _QUERY_COVERAGE_WEIGHT + density * _DENSITY_WEIGHT + path_boost + length_boost
    return min(1.0, text_score + boost)


def truncate_snippet(text: str, max_chars: int = SNIPPET_MAX_CHARS) -> str:
    """The first `max_chars` UTF-16 units of `text`, one shorter if the cut would split a surrogate pair."""
    if max_chars <= 0:
        return ""
    if len(text) <= max_chars // 2:
        return text
    encoded = text.encode("utf-16-le", errors="surrogatepass")
    if len(encoded) <= 2 * max_chars:
        return text
    end = 2 * max_chars
    if 0xD800 <= int.from_bytes(encoded[end - 2 : end], "little") <= 0xDBFF:
        end -= 2  # the cut would leave half of a surrogate pair
    return encoded[:end].decode("utf-16-le", errors="surrogatepass")


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript's `String.length` reports it."""
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2
