"""memoryd's keyword leg: bm25 over an OR of a question's content words, plus coverage and proximity.

Natural questions rarely have every word in one chunk (an AND of every token matches nothing for
92% of LoCoMo questions), so this leg ranks bm25 over an OR of the content words (stop words
removed), adds the CJK n-gram side index, and rewards chunks that cover more of the query's
information and keep its word pairs together. Very common words are left out of the OR (FTS5 scores
every matching row before LIMIT, ~1 us per row): they still count towards coverage, but never make a
query scan most of the index. Each of these features can be switched off (`KeywordFeatures`) so the
eval's ablation can measure what it is worth.

Two scores per hit. The absolute score (`absolute`: coverage and bm25's mapping in equal parts) says
whether the index holds the question at all; hybrid fuses it and weighs it as evidence. Keyword-only
ranks by bm25 itself, moved only by the bounded coverage and proximity factors, at the best hit's
absolute level (`score`), and after every content-word hit come the chunks plain bm25 finds by the
question's stop words alone, in its order, scored near 0: a ranking plain bm25 cannot beat by
matching what this leg drops (issue 26: coverage-led ranking fell below plain bm25 on long answers).

Queries are built only from quoted tokens (never raw user syntax), so no input can make MATCH fail.
It runs over 400 lines: the plan, the budgeted FTS5 reads and the scoring are one leg, tuned together.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from memoryd.config import FtsTokenizer
from memoryd.search import termstats
from memoryd.search.expand import extract_keywords, is_stop_word, query_tokens
from memoryd.search.features import KeywordFeatures
from memoryd.search.fuse import Candidate
from memoryd.search.keyword import fts_rows, quote_term, total_chunks
from memoryd.search.scoring import bm25_rank_to_score
from memoryd.search.terms import contains, fold, starts_word, stem
from memoryd.store import schema
from memoryd.store.db import translated
from memoryd.store.ngrams import has_cjk, query_ngrams

__all__ = ["QueryPlan", "capped_df", "plan_query", "search_relaxed", "total_chunks"]

ALL_SOURCES = frozenset({"memory", "sessions"})
MAX_DF_SHARE = 0.1
"""A word in more than this share of the chunks is too common to be worth ranking over."""
MIN_DF_CAP = 2000
"""...but below this many matching chunks any word is cheap enough to keep."""
ROW_BUDGET = 20_000
"""Words are kept rarest first while their matching rows add up to at most this (the rarest always)."""
RECENT_WINDOW = 5000
"""When every word is too common, only the newest this many chunks are looked at (and not by bm25)."""
COVERAGE_FLOOR = 0.5
"""bm25 is multiplied by COVERAGE_FLOOR + (1 - COVERAGE_FLOOR) x coverage."""
PHRASE_GAIN = 0.5
"""...and by 1 + PHRASE_GAIN x the share of the query's adjacent word pairs found adjacent."""
COVERAGE_WEIGHT = 0.5
"""Keyword-only score = COVERAGE_WEIGHT x coverage + (1 - COVERAGE_WEIGHT) x bm25 score."""
MIN_LEVEL = 1e-3
"""When no hit holds a content word, bm25's order is kept at this level (below any useful min_score)."""
FALLBACK_LEVEL = 1e-6
"""Stop-word-only hits score at most this: bm25's order among them, below every content-word hit."""
# Conversational verbs that say how a memory was made, not what it is about.
_FILLER_VERBS = """
    say says said tell tells told talk talked talking discuss discussed discussing mention mentioned
    remember remembered recall know knew think thought
"""
_EXTRA_STOP_WORDS = frozenset(_FILLER_VERBS.split())


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """What the relaxed leg looks for: `words` in the main FTS table, `ngrams` in the CJK side
    index, and `units` (the query's content words and CJK words) for coverage."""

    words: tuple[str, ...]
    ngrams: tuple[str, ...]
    units: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]


def plan_query(query: str, tokenizer: FtsTokenizer = "unicode61", *, stop_words: bool = True) -> QueryPlan:
    """Split a question into the terms of the relaxed leg (stop words and filler verbs removed,
    unless `stop_words` is off)."""
    if stop_words:
        keywords = [k for k in extract_keywords(query, tokenizer) if k not in _EXTRA_STOP_WORDS]
    else:
        keywords = list(dict.fromkeys(t.lower() for t in query_tokens(query)))
    words = [k for k in keywords if not has_cjk(k)]
    cjk = [k for k in keywords if has_cjk(k)]
    for token in query_tokens(query.lower()):
        if has_cjk(token):  # Latin parts glued to CJK ("API接口") that expansion drops
            words.extend(p for p in query_ngrams(token) if not has_cjk(p) and _is_content_word(p))
    multi = [k for k in cjk if len(k) > 1]
    cjk_units = multi or cjk
    ngrams = [g for unit in cjk_units for g in query_ngrams(unit)]
    words = list(dict.fromkeys(words))
    if tokenizer == "trigram":
        words = [w for w in words if len(w) >= 3]
    pairs = tuple(itertools.pairwise(words))
    return QueryPlan(
        words=tuple(words),
        ngrams=tuple(dict.fromkeys(ngrams + words)),
        units=tuple(dict.fromkeys(words + cjk_units)),
        pairs=pairs,
    )


def _is_content_word(word: str) -> bool:
    return len(word) >= 3 and not word.isdecimal() and not is_stop_word(word) and word not in _EXTRA_STOP_WORDS


def capped_df(conn: apsw.Connection, table: str, term: str, cap: int) -> int:
    """How many chunks contain `term`, counting no further than `cap` (cheap even for common words)."""
    with translated("keyword statistics"):
        row = conn.execute(
            f"SELECT COUNT(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?)", (quote_term(term), cap)
        ).fetchone()
    return int(row[0]) if row else 0


def search_relaxed(
    conn: apsw.Connection,
    query: str,
    *,
    limit: int,
    sources: Sequence[str],
    tokenizer: FtsTokenizer,
    features: KeywordFeatures | None = None,
    vectors_of: str | None = None,
) -> list[Candidate]:
    """Chunks matching any content word of `query`, best first.

    With `vectors_of` (a model), each content-word hit carries its stored embedding of that model
    (`Candidate.stored_vector`), read in the same statement as its text: hybrid then completes the
    cosines of these hits without a second read (`memoryd.search.vector.complete_vector_scores`).

    `text_score` is OpenClaw's bm25 mapping of the coverage-weighted bm25 (so weighted fusion stays
    comparable); `score` is the keyword-only score: coverage and bm25 in equal parts, in [0, 1].
    `snippet` holds the whole chunk text; callers cut it at the end of the pipeline.
    """
    features = features if features is not None else KeywordFeatures()
    plan = plan_query(query, tokenizer, stop_words=features.stop_words)
    if not plan.units or limit <= 0:
        return []
    held = termstats.stats(conn)
    total = max(termstats.cached(held, ("", "", -1), lambda: total_chunks(conn)), 1)
    cap = max(MIN_DF_CAP, int(MAX_DF_SHARE * total)) if features.df_caps else total + 1
    budget = ROW_BUDGET if features.df_caps else math.inf

    def df(table: str, term: str) -> int:
        return termstats.cached(held, (table, term, cap), lambda: capped_df(conn, table, term, cap))

    main_df = {w: df("chunks_fts", w) for w in plan.words}
    base_df = dict(main_df)
    if features.bm25_stop_words:  # bm25's OR as the floor asks it: the stop words too, within the caps
        for token in dict.fromkeys(t.lower() for t in query_tokens(query)):
            if token not in base_df and not has_cjk(token):
                base_df[token] = df("chunks_fts", token)
    side_df: dict[str, int] = {}
    cjk_rows = termstats.cached(held, (schema.CJK_TABLE, "", -1), lambda: fts_rows(conn, schema.CJK_TABLE) or 0)
    if cjk_rows != 0:  # no CJK text anywhere: nothing to look up
        side_df = {g: df(schema.CJK_TABLE, g) for g in plan.ngrams}
    ranks: dict[int, float] = {}
    _accumulate(ranks, _ranked(conn, "chunks_fts", base_df, cap=cap, budget=budget, limit=limit, sources=sources))
    _accumulate(ranks, _ranked(conn, schema.CJK_TABLE, side_df, cap=cap, budget=budget, limit=limit, sources=sources))
    best = sorted(ranks, key=lambda n: (-ranks[n], n))[:limit]
    idf = _unit_idf(plan, main_df, side_df, total)
    found = _score(conn, best, ranks, plan, idf, features=features, vectors_of=vectors_of) if best else []
    if features.stop_word_fallback and len(found) < limit:
        found += _fallback(
            conn,
            query,
            base_df,
            df,
            {int(n) for n in best},
            cap=cap,
            budget=budget,
            limit=limit - len(found),
            sources=sources,
        )
    return found


def _fallback(
    conn: apsw.Connection,
    query: str,
    df: dict[str, int],
    count: Callable[[str, str], int],
    seen: set[int],
    *,
    cap: int,
    budget: float,
    limit: int,
    sources: Sequence[str],
) -> list[Candidate]:
    """What plain bm25 (an OR of every token of the question) finds beyond the content-word hits, in
    its order, scored 0: a one-line note that shares only "I" or "my" with the question still ranks
    for keyword-only, as it does for bm25, but is never served at a min_score nor counts as evidence."""
    full = dict(df)
    for token in dict.fromkeys(t.lower() for t in query_tokens(query)):
        if token not in full and not has_cjk(token):
            full[token] = count("chunks_fts", token)
    if set(full) == set(df):  # no other word to look for
        return []
    found = _ranked(
        conn, "chunks_fts", full, cap=cap, budget=budget, limit=limit + len(seen), sources=sources, recent=False
    )
    extra = [(n, r) for n, r in found if n not in seen][:limit]
    if not extra:
        return []
    with translated("reading keyword hits"):
        rows: list[Any] = conn.execute(
            "SELECT n, id, path, source, start_line, end_line, text, ts FROM chunks "
            f"WHERE n IN ({','.join(str(n) for n, _r in extra)})"
        ).fetchall()
    by_n = {int(r[0]): r for r in rows}
    top = max(r for _n, r in extra) or 1.0
    return [
        Candidate(
            id=str(cid),
            path=str(path),
            source=str(source),
            start_line=int(start),
            end_line=int(end),
            snippet=str(text),
            score=FALLBACK_LEVEL * relevance / top,
            ts_ms=int(ts),
            absolute=0.0,
        )
        for n, relevance in extra
        if n in by_n
        for _n, cid, path, source, start, end, text, ts in [by_n[n]]
    ]


def _accumulate(ranks: dict[int, float], found: Iterable[tuple[int, float]]) -> None:
    for n, relevance in found:
        ranks[n] = ranks.get(n, 0.0) + relevance


def _ranked(
    conn: apsw.Connection,
    table: str,
    df: dict[str, int],
    *,
    cap: int,
    budget: float,
    limit: int,
    sources: Sequence[str],
    recent: bool = True,
) -> list[tuple[int, float]]:
    """(rowid, -bm25) of the best `limit` rows of `table` for the affordable terms of `df` (when none is
    affordable: of the newest chunks, unless `recent` is off)."""
    present = sorted((count, term) for term, count in df.items() if count > 0)
    if not present:
        return []
    kept: list[str] = []
    rows = 0
    for count, term in present:
        if count >= cap or (kept and rows + count > budget):
            break
        kept.append(term)
        rows += count
    if not kept and not recent:
        return []
    if not kept:  # every term is in a large share of the index: the newest chunks holding them
        return _newest(conn, table, [term for _count, term in present], limit=limit, sources=sources)
    match = " OR ".join(quote_term(term) for term in kept)
    if set(sources) >= ALL_SOURCES:
        sql = f"SELECT rowid, bm25({table}) AS r FROM {table} WHERE {table} MATCH ? ORDER BY r ASC, rowid ASC LIMIT ?"
        params: list[object] = [match, limit]
    else:
        marks = ",".join("?" * len(sources))
        sql = (
            f"SELECT {table}.rowid, bm25({table}) AS r FROM {table} JOIN chunks c ON c.n = {table}.rowid "
            f"WHERE {table} MATCH ? AND c.source IN ({marks}) ORDER BY r ASC, {table}.rowid ASC LIMIT ?"
        )
        params = [match, *sources, limit]
    with translated("keyword search"):
        found: list[Any] = conn.execute(sql, params).fetchall()
    return [(int(n), max(0.0, -float(r))) for n, r in found if math.isfinite(float(r))]


def _newest(
    conn: apsw.Connection, table: str, terms: Sequence[str], *, limit: int, sources: Sequence[str]
) -> list[tuple[int, float]]:
    """The newest `limit` rows among the last RECENT_WINDOW chunks that hold any of `terms`, all at
    relevance 1 (coverage and proximity order them in `_score`).

    Not bm25: its idf counts the rows of each term by reading the term's whole posting list, whatever
    the rowid range (~15 ms per word in every chunk of a 100k-chunk index, 73 ms for a question of
    three such words), and words this common carry no idf worth the read.
    """
    with translated("keyword search"):
        top = conn.execute("SELECT COALESCE(MAX(n), 0) FROM chunks").fetchone()
        floor = (int(top[0]) if top else 0) - RECENT_WINDOW
        match = " OR ".join(quote_term(term) for term in terms)
        if set(sources) >= ALL_SOURCES:
            sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid > ? ORDER BY rowid DESC LIMIT ?"
            params: list[object] = [match, floor, limit]
        else:
            marks = ",".join("?" * len(sources))
            sql = (
                f"SELECT {table}.rowid FROM {table} JOIN chunks c ON c.n = {table}.rowid WHERE {table} MATCH ? "
                f"AND {table}.rowid > ? AND c.source IN ({marks}) ORDER BY {table}.rowid DESC LIMIT ?"
            )
            params = [match, floor, *sources, limit]
        found: list[Any] = conn.execute(sql, params).fetchall()
    return [(int(row[0]), 1.0) for row in found]


def _idf(df: int, total: int) -> float:
    """Lucene's always-positive bm25 idf (FTS5's clamps to ~0 for words in half the chunks)."""
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def _unit_idf(plan: QueryPlan, main_df: dict[str, int], side_df: dict[str, int], total: int) -> dict[str, float]:
    """Weights of the coverage units. A CJK pair found nowhere is dropped (it is usually a pair that
    straddles two words of the question); a missing Latin word is a real miss and weighs the most."""
    weights: dict[str, float] = {}
    for unit in plan.units:
        if has_cjk(unit):
            counts = [side_df.get(g, 0) for g in query_ngrams(unit) if has_cjk(g)]
            if counts and min(counts) > 0:
                weights[unit] = _idf(min(counts), total)
        else:
            weights[unit] = _idf(main_df.get(unit, 0) + side_df.get(unit, 0), total)
    return weights


def _has_phrase(text: str, pattern: re.Pattern[str]) -> bool:
    return any(starts_word(text, match.start()) for match in pattern.finditer(text))


def _score(
    conn: apsw.Connection,
    best: list[int],
    ranks: dict[int, float],
    plan: QueryPlan,
    idf: dict[str, float],
    *,
    features: KeywordFeatures,
    vectors_of: str | None,
) -> list[Candidate]:
    # The embedding only of the wanted model; x'' for a chunk of that model still waiting for its vector.
    vector = "CASE WHEN model = ? THEN coalesce(embedding, x'') END" if vectors_of is not None else "NULL"
    with translated("reading keyword hits"):
        rows: list[Any] = conn.execute(
            f"SELECT n, id, path, source, start_line, end_line, text, ts, {vector} FROM chunks "
            f"WHERE n IN ({','.join(str(n) for n in best)})",
            () if vectors_of is None else (vectors_of,),
        ).fetchall()
    stems = {unit: stem(unit) for unit in idf}
    pairs = plan.pairs if features.proximity else ()
    pair_patterns = [((a, b), re.compile(re.escape(fold(a)) + r"\W+" + re.escape(fold(b)) + r"\b")) for a, b in pairs]
    weight_total = sum(idf.values())
    floor = COVERAGE_FLOOR if features.coverage_floor is None else features.coverage_floor
    gain = PHRASE_GAIN if features.phrase_gain is None else features.phrase_gain
    out: list[Candidate] = []
    relevances: list[float] = []
    for n, cid, path, source, start, end, text, ts, blob in rows:
        folded = fold(str(text))
        found = {unit for unit in idf if contains(folded, stems[unit])}
        matched = sum(idf[unit] for unit in found)
        coverage = matched / weight_total if weight_total > 0 else 1.0
        # A pair is adjacent only where both of its words are found (each word is its stem with an ending):
        # the regex runs on those chunks alone.
        phrase = (
            sum(1 for (a, b), p in pair_patterns if a in found and b in found and _has_phrase(folded, p))
            / len(pair_patterns)
            if pair_patterns
            else 0.0
        )
        weight = floor + (1 - floor) * coverage if features.coverage else 1.0
        relevance = ranks[int(n)] * weight * (1 + gain * phrase)
        relevances.append(relevance)
        text_score = bm25_rank_to_score(-relevance)
        score = COVERAGE_WEIGHT * coverage + (1 - COVERAGE_WEIGHT) * text_score if features.coverage else text_score
        if matched == 0 and weight_total > 0 and features.bm25_stop_words:  # only stop words matched
            score = 0.0
        out.append(
            Candidate(
                id=str(cid),
                path=str(path),
                source=str(source),
                start_line=int(start),
                end_line=int(end),
                snippet=str(text),
                text_score=text_score,
                score=score,
                ts_ms=int(ts),
                coverage=coverage,
                absolute=score,
                bm25=ranks[int(n)],
                stored_vector=None if blob is None else bytes(blob),
            )
        )
    if features.bm25_order and out:
        content = [i for i, c in enumerate(out) if c.absolute != 0.0]
        stop_only = [i for i, c in enumerate(out) if c.absolute == 0.0]
        scaled = _bm25_scaled([out[i] for i in content], [relevances[i] for i in content], features.bm25_share)
        top = max((relevances[i] for i in stop_only), default=0.0) or 1.0
        level = min([FALLBACK_LEVEL] + [c.score / 2 for c in scaled])  # below the weakest content-word hit
        below = [out[i].with_score(level * relevances[i] / top) for i in stop_only]
        out = scaled + below  # hits of stop words alone rank after every content-word hit, as the fallback's do
    out.sort(key=lambda c: (-c.score, c.path, c.start_line, c.end_line, c.source, c.id))
    return out


def _bm25_scaled(cands: Sequence[Candidate], relevances: Sequence[float], share: float = 1.0) -> list[Candidate]:
    """Scores in bm25's order: each hit's share of the best relevance, times the best absolute score.

    The absolute score (coverage and bm25's mapping in equal parts) says whether the index holds the
    question at all, but bm25's mapping saturates, so ranking by it is ranking by coverage: long chunks
    holding every common word beat the one that holds the rare ones. Here the order is bm25's, moved
    only by the bounded coverage and proximity factors (a hit overtakes another only when its factors
    outweigh a bm25 ratio of at most (1 / floor) x (1 + gain)), and the level stays absolute: the best
    hit scores what the best hit scored before, so min_score and abstention keep their meaning.
    """
    if not cands:
        return []
    best_relevance = max(relevances)
    best_score = max([c.score for c in cands] + [MIN_LEVEL])
    if best_relevance <= 0:
        return list(cands)
    return [
        c.with_score(share * best_score * r / best_relevance + (1 - share) * c.score)
        for c, r in zip(cands, relevances, strict=True)
    ]
