"""The keyword leg: FTS5 bm25 over the chunk text, filtered by source (and model when vectors exist).

Queries are built only from quoted tokens (never raw user syntax), so no input can make MATCH
fail. With the trigram tokenizer, CJK tokens shorter than 3 characters cannot be matched by
trigrams and become LIKE conditions instead (spec §3.13).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import apsw

from memoryd.config import FtsTokenizer
from memoryd.search.expand import query_tokens
from memoryd.search.fuse import Candidate
from memoryd.search.scoring import bm25_rank_to_score
from memoryd.store.db import translated

SHORT_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u3131-\u3163]")


def _quote(token: str) -> str:
    return '"' + token.replace('"', "") + '"'


def _like_pattern(token: str) -> str:
    escaped = token.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def search_keyword(
    conn: apsw.Connection,
    terms: Sequence[str],
    *,
    operator: str,
    limit: int,
    sources: Sequence[str],
    model: str | None,
    tokenizer: FtsTokenizer,
) -> list[Candidate]:
    """Chunks matching `terms` joined by `operator` ("AND"/"OR"), best bm25 first.

    `snippet` holds the whole chunk text here; callers cut it at the end of the pipeline.
    """
    match_terms: list[str] = []
    likes: list[str] = []
    for term in terms:
        if tokenizer == "trigram" and len(term) < 3 and SHORT_CJK_RE.search(term):
            likes.append(_like_pattern(term))
        elif term:
            match_terms.append(_quote(term))
    if not match_terms and not likes:
        return []
    where: list[str] = []
    params: list[object] = []
    if match_terms:
        where.append("chunks_fts MATCH ?")
        params.append(f" {operator} ".join(match_terms))
    for pattern in likes:
        where.append("c.text LIKE ? ESCAPE '\\'")
        params.append(pattern)
    where.append(f"c.source IN ({','.join('?' * len(sources))})")
    params.extend(sources)
    if model is not None:
        where.append("c.model = ?")
        params.append(model)
    rank = "bm25(chunks_fts)" if match_terms else "0"
    source_table = "chunks_fts JOIN chunks c ON c.n = chunks_fts.rowid" if match_terms else "chunks c"
    sql = (
        f"SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.text, c.ts, {rank} AS r "
        f"FROM {source_table} WHERE {' AND '.join(where)} ORDER BY r ASC, c.n ASC LIMIT ?"
    )
    params.append(limit)
    with translated("keyword search"):
        rows: list[Any] = conn.execute(sql, params).fetchall()
    return [
        Candidate(
            id=str(cid),
            path=str(path),
            source=str(source),
            start_line=int(start),
            end_line=int(end),
            snippet=str(text),
            text_score=1.0 if not match_terms else bm25_rank_to_score(float(r)),
            ts_ms=int(ts),
        )
        for cid, path, source, start, end, text, ts, r in rows
    ]


def and_terms(query: str) -> list[str]:
    """OpenClaw's buildFtsQuery tokens: every `[\\p{L}\\p{N}_]+` run of the query."""
    return query_tokens(query)
