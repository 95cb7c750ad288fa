"""Candidates for the ranking tests, built the way the legs hand them to fusion."""

from __future__ import annotations

from memoryd.search.fuse import Candidate


def no_mtime(path: str) -> int | None:
    """An mtime lookup that knows no file (decay then treats every chunk as undated)."""
    return None


def hit(
    cid: str,
    *,
    vector: float = 0.0,
    text: float = 0.0,
    score: float | None = None,
    coverage: float = 0.0,
    bm25: float = 0.0,
) -> Candidate:
    """One leg's hit on `memory/<cid>.md`; `score` defaults to the leg's own score (the larger one)."""
    return Candidate(
        id=cid,
        path=f"memory/{cid}.md",
        source="memory",
        start_line=1,
        end_line=2,
        snippet=f"snippet {cid}",
        vector_score=vector,
        text_score=text,
        score=score if score is not None else max(vector, text),
        coverage=coverage,
        bm25=bm25,
    )
