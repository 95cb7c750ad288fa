"""OpenClaw's keyword leg: FTS5 bm25 over the chunk text, filtered by source (spec §3.13).

`search_keyword` joins the terms by AND or OR, with trigram's short-CJK LIKE conditions; the
OpenClaw-compatible FTS-only and hybrid paths use it. memoryd's own leg is `memoryd.search.relaxed`.
Also here: the index's row count read from FTS5's own record, which both legs need.

Queries are built only from quoted tokens (never raw user syntax), so no input can make MATCH fail.
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


def quote_term(token: str) -> str:
    """`token` as one FTS5 string (inner quotes dropped): no input can make MATCH fail."""
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
            match_terms.append(quote_term(term))
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


def total_chunks(conn: apsw.Connection) -> int:
    """Chunks in the index: the row count FTS5 keeps in its averages record (a COUNT(*) over 150k
    chunks takes 80 ms; this takes microseconds)."""
    rows = fts_rows(conn, "chunks_fts")
    if rows is not None:
        return rows
    with translated("counting the index"):
        fallback = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()
    return int(fallback[0]) if fallback else 0


def fts_rows(conn: apsw.Connection, table: str) -> int | None:
    """The row count of an FTS5 table (record 1 of its `_data` table starts with it), None if unknown."""
    with translated("counting the index"):
        row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is not None and isinstance(row[0], bytes) and row[0]:
        return _varint(row[0])
    return None


def _varint(data: bytes) -> int:
    """SQLite's big-endian varint at the start of `data` (FTS5 writes its row count that way)."""
    value = 0
    for index, byte in enumerate(data[:9]):
        if index == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return value
