"""The floor every run is measured against: plain FTS5 bm25 over the very same chunks.

No stop words, no coverage, no caps, no vectors: an in-memory FTS5 table (unicode61, or porter
for reference) of the chunk texts memoryd indexed, queried with every `\\w+` token of the question
quoted and joined by OR, ranked by bm25. This is the baseline of the team's LoCoMo notes and of
issue 14; a ranking that falls below it on some set is fitted to another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import apsw

from memoryd.eval.metrics import Span
from memoryd.search.expand import query_tokens
from memoryd.store.db import translated

BaselineTokenizer = Literal["unicode61", "porter"]


@dataclass(frozen=True, slots=True)
class Chunk:
    span: Span
    text: str


class Bm25Baseline:
    """An in-memory FTS5 index of one index's chunks; `rank` answers a question with their spans."""

    def __init__(self, chunks: Sequence[Chunk], tokenizer: BaselineTokenizer = "unicode61") -> None:
        self._spans = [c.span for c in chunks]
        self._conn = apsw.Connection(":memory:")
        tokenize = "porter unicode61" if tokenizer == "porter" else "unicode61"
        with translated("building the bm25 baseline"):
            self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize='{tokenize}')")
            with self._conn:
                self._conn.executemany(
                    "INSERT INTO t(rowid, text) VALUES (?, ?)", ((i, c.text) for i, c in enumerate(chunks))
                )

    def rank(self, question: str, k: int) -> list[Span]:
        """The `k` best chunks for the OR of the question's tokens (none when it has no token)."""
        tokens = list(dict.fromkeys(t.replace('"', "") for t in query_tokens(question)))
        if not tokens or k <= 0:
            return []
        match = " OR ".join(f'"{t}"' for t in tokens)
        with translated("bm25 baseline search"):
            rows: list[Any] = self._conn.execute(
                "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid LIMIT ?", (match, k)
            ).fetchall()
        return [self._spans[int(r[0])] for r in rows]

    def close(self) -> None:
        self._conn.close()
