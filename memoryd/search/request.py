"""The one search protocol: a `SearchRequest` in, a `SearchResponse` out.

Every part that answers searches — the builtin `Searcher`, the QMD backend, the QMD fallback, the
actor's view of its builtin index — takes the same request, so the arguments of `memory_search`
are spelled out once, here, and passed along whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from memoryd.search.pipeline import SearchResult
from memoryd.search.vector import VectorBackend

Corpus = str  # "memory" | "sessions" | "all"
SearchMode = Literal["auto", "hybrid", "keyword", "vector"]


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What a client asked for; `None` means the agent's configured default."""

    query: str
    max_results: int | None = None
    min_score: float | None = None
    corpus: Corpus = "all"
    mode: SearchMode = "auto"
    wait_fresh_ms: int | None = None
    """How long a caller that owns syncs (the actor, QMD) may wait for a fresher index; the searcher never waits."""
    session_key: str | None = None
    """OpenClaw's session key of the conversation asking (`agent:<id>:<rest>`): `citations = "auto"` leaves
    the footer out when it names a channel or group."""

    def __post_init__(self) -> None:
        # A NUL is text to the client but ends a string in SQLite's C API (FTS5 read `door\0x` as an
        # unterminated string): it separates words, as a space does.
        if "\x00" in self.query:
            object.__setattr__(self, "query", self.query.replace("\x00", " "))


@dataclass(frozen=True, slots=True)
class SearchResponse:
    results: list[SearchResult]
    mode: str
    provider: str
    model: str | None
    fallback: dict[str, str] | None
    freshness: dict[str, object]
    vector_backend: VectorBackend | None = None  # which vector search ran: sqlite-vec KNN or exact
    rerank: dict[str, object] | None = None  # what the optional rerank stage did, when configured
    citations: str | None = None  # the configured citations mode, once the results were decorated
    evidence: float | None = None
    """memoryd's hybrid: the best candidate's evidence (`pipeline.evidence`), which `min_evidence` judges."""
    min_evidence: float = 0.0
    """The threshold `evidence` was judged against (the agent's `query.min_evidence`; 0 at `minScore` 0)."""
    indexing: dict[str, object] | None = None
    """While a first index or rebuild runs, or chunks still wait for vectors: the index's progress (status's
    `progress` block), so the agent can tell the user that the answer is partial or keyword-only in part."""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "results": [r.to_dict() for r in self.results],
            "mode": self.mode,
            "provider": self.provider,
            "model": self.model,
            "fallback": self.fallback,
            "freshness": self.freshness,
            "vectorBackend": self.vector_backend,
        }
        if self.rerank is not None:
            out["rerank"] = self.rerank
        if self.citations is not None:
            out["citations"] = self.citations
        if self.evidence is not None:
            out["evidence"] = round(self.evidence, 6)
            out["minEvidence"] = self.min_evidence
        if self.indexing is not None:
            out["indexing"] = self.indexing
        return out


class Answers(Protocol):
    """Anything that answers a search request."""

    async def search(self, request: SearchRequest) -> SearchResponse: ...


def corpus_sources(corpus: Corpus) -> tuple[str, ...]:
    if corpus == "memory":
        return ("memory",)
    if corpus == "sessions":
        return ("sessions",)
    return ("memory", "sessions")
