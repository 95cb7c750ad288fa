"""Answering a query over one agent's index (spec §3.13): legs, fusion, boosts, rerank, MMR, cut.

The `Searcher` reads through pooled read connections only, so it never waits for a sync and never
touches the writer. The index engine, the daemon's actor, the QMD fallback and the eval harness
all search through it with the same `SearchRequest`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import anyio
import anyio.to_thread

from memoryd.config import MemorySearchSettings
from memoryd.embeddings.active import ActiveProvider
from memoryd.embeddings.base import Vectors
from memoryd.errors import EmbeddingError, MemorydError
from memoryd.search import probe
from memoryd.search.features import RankingFeatures
from memoryd.search.fuse import Candidate
from memoryd.search.keyword import and_terms, search_keyword, total_chunks
from memoryd.search.pipeline import (
    MAX_CANDIDATES,
    VECTOR_CANDIDATES,
    RankOptions,
    SearchResult,
    best_evidence,
    candidate_pool,
    cut_hybrid,
    cut_single,
    openclaw_keyword_only,
    order_hybrid,
    order_single,
    to_results,
)
from memoryd.search.relaxed import FALLBACK_LEVEL, search_relaxed
from memoryd.search.request import SearchMode, SearchRequest, SearchResponse, corpus_sources
from memoryd.search.rerank import Reranker, build_reranker, rerank
from memoryd.search.smallindex import for_index_size
from memoryd.search.timeframe import parse_timeframe
from memoryd.search.vector import (
    ExactMatrixCache,
    VectorBackend,
    VectorHits,
    complete_vector_scores,
    search_vector,
    warm_cache,
)
from memoryd.store.index import now_ms
from memoryd.store.readers import ReaderPool

QUERY_EMBED_TIMEOUT_S = 15.0
"""A query embedding slower than this falls back to keyword-only rather than stall the search."""
Freshness = Callable[[], dict[str, object]]


@dataclass(frozen=True, slots=True)
class _Ranked:
    """What `_ranked` found: the cut results and how they were found."""

    results: list[Candidate]
    mode: str
    backend: VectorBackend | None
    fallback: dict[str, str] | None
    rerank: dict[str, object] | None
    evidence: float | None = None
    min_evidence: float = 0.0
    """The threshold the evidence was judged against (the configured one, or a small index's)."""


class Searcher:
    """One agent's search. `freshness` tells each answer how fresh the index is (the index knows, not us)."""

    def __init__(
        self,
        settings: MemorySearchSettings,
        readers: ReaderPool,
        provider: ActiveProvider,
        *,
        workspace: Path,
        freshness: Freshness,
        features: RankingFeatures | None = None,
    ) -> None:
        self.settings = settings
        self.features = features if features is not None else RankingFeatures()
        self._readers = readers
        self._active = provider
        self._workspace = workspace
        self._freshness = freshness
        self._vector_cache = ExactMatrixCache()
        self._reranker: Reranker | None = None
        self._reranker_error: str | None = None  # why the configured reranker could not be built

    async def aclose(self) -> None:
        """Close the reranker's connections."""
        if self._reranker is not None:
            reranker, self._reranker = self._reranker, None
            await reranker.aclose()

    async def search(self, request: SearchRequest) -> SearchResponse:
        """Search the index as it is (the caller decides whether to sync first).

        `auto` is hybrid when an embedding provider is ready, else keyword-only. A mode that needs
        vectors falls back to keyword-only (and says why in `fallback`) when the provider is
        missing or not ready, the query cannot be embedded, or the index holds no vectors yet.
        """
        q = request.query.strip()
        query_settings = self.settings.query
        limit = request.max_results if request.max_results is not None else query_settings.max_results
        floor = request.min_score if request.min_score is not None else query_settings.min_score
        sources = [s for s in corpus_sources(request.corpus) if s in self.settings.sources]
        provider, model = self._active.label()
        run, fallback = self._mode(request.mode)
        results: list[SearchResult] = []
        backend: VectorBackend | None = None
        reranked: dict[str, object] | None = None
        evidence: float | None = None
        min_evidence = 0.0
        if q and sources and limit > 0:
            now = now_ms()
            today = datetime.fromtimestamp(now / 1000).date()  # the user's "today": local time
            frame = parse_timeframe(q, today) if query_settings.date_boost > 0 else None
            opts = RankOptions.from_settings(
                self.settings,
                max_results=limit,
                min_score=floor,
                now_ms=now,
                timeframe=frame,
                min_score_configured=request.min_score is None,
            )
            ranked = await self._ranked(q, run, sources, opts)
            cands, run, backend, reranked = ranked.results, ranked.mode, ranked.backend, ranked.rerank
            evidence, min_evidence = ranked.evidence, ranked.min_evidence
            fallback = ranked.fallback or fallback
            window_for = "" if self.settings.compat == "openclaw" else q  # OpenClaw serves each chunk's head
            results = to_results(cands, window_for, self.settings.store.fts.tokenizer)
        if fallback is None and self._active.fallback_from is not None:
            fallback = self._active.fallback_info()  # the configured provider failed; its fallback answered
        return SearchResponse(
            results=results,
            mode=run,
            provider=provider,
            model=model,
            fallback=fallback,
            freshness=self._freshness(),
            vector_backend=backend,
            rerank=reranked,
            evidence=evidence,
            min_evidence=min_evidence,
        )

    def _mode(self, wanted: SearchMode) -> tuple[str, dict[str, str] | None]:
        """The mode to try first, and the fallback already known (no provider, model not ready)."""
        reason = self._active.unready_reason()
        if reason is None:
            return ("hybrid" if wanted == "auto" else wanted), None
        if wanted in ("auto", "keyword"):
            if self._active.provider is None and not self._active.unavailable_reason and self._active.loading is None:
                return "keyword", None
            return "keyword", {"from": self._active.requested, "reason": reason}
        return "keyword", {"from": wanted, "reason": reason}

    async def _ranked(self, q: str, run: str, sources: Sequence[str], opts: RankOptions) -> _Ranked:
        """Embed the query, run the legs side by side, rank, rerank if configured, cut.

        Whenever no vector can take part (no provider, the query embedding failed, the index holds no
        vectors yet), the answer is the keyword-only path's, so every fallback answers alike.
        """
        openclaw = self.settings.query.keyword_strategy == "openclaw"
        if openclaw:
            opts = replace(opts, text_score="bm25")  # OpenClaw fuses its bm25 mapping, whatever text_score says
        if run == "keyword":
            return await self._keyword_only(q, sources, opts, None)
        # The keyword leg runs beside the query embedding and then the vector leg. Embedding first, alone
        # (the model uses both cores), kept the model run at 4 ms instead of ~7 but put the keyword leg after
        # it: at 100k chunks, six alternated runs of 200 hybrid searches, side by side won five, by 0.5-1.5 ms.
        keyword_hits: list[Candidate] = []
        hits = VectorHits([], "none")
        vector: Vectors | str = "not embedded"
        completing = run == "hybrid" and not openclaw and self.features.vector_completion

        async def keyword_leg() -> None:
            nonlocal keyword_hits
            if openclaw:
                keyword_hits = await anyio.to_thread.run_sync(self._openclaw_hybrid_leg, q, sources, opts)
            else:
                leg = functools.partial(self._keyword_leg, q, sources, opts, vectors=completing)
                keyword_hits = await anyio.to_thread.run_sync(leg)

        async def vector_leg() -> None:
            nonlocal hits, vector
            vector = await self._embed_query(q)
            if not isinstance(vector, str):
                hits = await anyio.to_thread.run_sync(self._vector_leg, vector, sources)

        async with anyio.create_task_group() as tg:
            if run == "hybrid":
                tg.start_soon(keyword_leg)
            tg.start_soon(vector_leg)
        if isinstance(vector, str) or hits.backend == "none":
            model = self._active.fingerprint.model
            reason = vector if isinstance(vector, str) else f"the index holds no vectors of {model} yet"
            done = keyword_hits if run == "hybrid" and not openclaw else None
            return await self._keyword_only(q, sources, opts, {"from": run, "reason": reason}, done)
        if openclaw:
            # OpenClaw's vector leg: its candidate pool, and no cosine for keyword hits outside it.
            pool = candidate_pool(opts.max_results, self.settings.query.hybrid.candidate_multiplier)
            hits = replace(hits, hits=sorted(hits.hits, key=lambda c: -c.vector_score)[:pool])
        else:
            opts = for_index_size(opts, hits.chunks)  # a few chunks: lower thresholds (smallindex)
            if completing:  # the keyword hits carry their stored vectors: a matrix product, no read
                hits = replace(hits, hits=complete_vector_scores(vector, hits.hits, keyword_hits))
        mtime = self._mtime_lookup()
        hybrid = run == "hybrid"
        if hybrid:
            order = functools.partial(order_hybrid, hits.hits, keyword_hits, opts, mtime)
        else:
            order = functools.partial(order_single, hits.hits, opts, mtime)
        # Sorting a few hundred candidates is quick; mtime lookups (decay) and MMR (quadratic) go to a thread.
        ranked = await anyio.to_thread.run_sync(order) if opts.decay_enabled else order()
        ranked, rerank_info = await self._rerank(q, ranked)
        if hybrid:
            cut = functools.partial(cut_hybrid, ranked, keyword_hits, opts)
        else:
            cut = functools.partial(cut_single, ranked, opts)
        final = await anyio.to_thread.run_sync(cut) if opts.mmr_enabled else cut()
        evidence = best_evidence(ranked, opts) if hybrid and not openclaw else None
        return _Ranked(final, run, hits.backend, None, rerank_info, evidence, opts.min_evidence)

    async def _keyword_only(
        self,
        q: str,
        sources: Sequence[str],
        opts: RankOptions,
        fallback: dict[str, str] | None,
        keyword_hits: list[Candidate] | None = None,
    ) -> _Ranked:
        """The keyword-only answer: OpenClaw's FTS-only path (keyword_strategy "openclaw") or memoryd's
        relaxed leg, ranked, reranked if configured and cut with a strict minScore."""
        if self.settings.query.keyword_strategy == "openclaw":
            found = await anyio.to_thread.run_sync(self._openclaw_keyword, q, sources, opts)
            return _Ranked(found, "keyword", None, fallback, None)
        listed = opts.min_score <= FALLBACK_LEVEL  # the ranking as it is: the stop-word fallback's hits too
        if keyword_hits is None or listed:
            leg = functools.partial(self._keyword_leg, q, sources, opts, fallback=listed)
            keyword_hits = await anyio.to_thread.run_sync(leg)
        order = functools.partial(order_single, keyword_hits, opts, self._mtime_lookup())
        ranked = await anyio.to_thread.run_sync(order) if opts.decay_enabled else order()
        ranked, rerank_info = await self._rerank(q, ranked)
        cut = functools.partial(cut_single, ranked, opts)
        final = await anyio.to_thread.run_sync(cut) if opts.mmr_enabled else cut()
        return _Ranked(final, "keyword", None, fallback, rerank_info)

    async def _rerank(self, q: str, ranked: list[Candidate]) -> tuple[list[Candidate], dict[str, object] | None]:
        """The optional rerank stage (query.rerank): never fails a search, reports what it did."""
        settings = self.settings.query.rerank
        if settings.provider == "none":
            return ranked, None
        if self._reranker is None and self._reranker_error is None:
            try:
                self._reranker = build_reranker(settings)
            except MemorydError as exc:
                self._reranker_error = str(exc)
        if self._reranker is None:
            reason = self._reranker_error or "no reranker"
            return ranked, {"applied": False, "reason": reason, "ms": 0.0, "provider": settings.provider}
        outcome = await rerank(
            q,
            ranked,
            self._reranker,
            top_n=settings.top_n,
            timeout_s=settings.timeout_ms / 1000,
            weight=settings.weight,
        )
        info = outcome.to_dict() | {"provider": self._reranker.name, "model": self._reranker.model}
        return outcome.candidates, info

    async def _embed_query(self, q: str) -> Vectors | str:
        """The query's vector, or why there is none."""
        provider = self._active.provider
        if provider is None:
            return "no embedding provider is configured"
        try:
            with anyio.fail_after(QUERY_EMBED_TIMEOUT_S):
                return await provider.embed_query(q)
        except EmbeddingError as exc:
            return f"query embedding failed: {exc}"
        except TimeoutError:
            return f"query embedding took over {QUERY_EMBED_TIMEOUT_S:g} s"

    def _keyword_leg(
        self, q: str, sources: Sequence[str], _opts: RankOptions, *, fallback: bool = False, vectors: bool = False
    ) -> list[Candidate]:
        """The relaxed leg; its stop-word fallback only when asked (`_keyword_only` at a min_score that can
        serve hits scored ~0): hybrid drops those hits, and finding them costs the stop words' rows. With
        `vectors`, each hit carries its stored vector of the active model (hybrid's completion)."""
        features = self.features.keyword
        if features.stop_word_fallback and not fallback:
            features = replace(features, stop_word_fallback=False)
        with self._readers.reader() as (conn, _vec):
            return search_relaxed(
                conn,
                q,
                limit=MAX_CANDIDATES,
                sources=sources,
                tokenizer=self.settings.store.fts.tokenizer,
                features=features,
                vectors_of=self._active.fingerprint.model if vectors else None,
            )

    def _openclaw_hybrid_leg(self, q: str, sources: Sequence[str], opts: RankOptions) -> list[Candidate]:
        """OpenClaw's hybrid keyword leg: every token ANDed, bm25 mapped to r/(1+r), its candidate pool."""
        pool = candidate_pool(opts.max_results, self.settings.query.hybrid.candidate_multiplier)
        with self._readers.reader() as (conn, _vec):
            return search_keyword(
                conn,
                and_terms(q),
                operator="AND",
                limit=pool,
                sources=sources,
                model=None,
                tokenizer=self.settings.store.fts.tokenizer,
            )

    def _vector_leg(self, vector: Vectors, sources: Sequence[str]) -> VectorHits:
        with self._readers.reader() as (conn, vec):
            return search_vector(
                conn,
                vector,
                k=VECTOR_CANDIDATES,
                sources=sources,
                model=self._active.fingerprint.model,
                vec_available=vec.available,
                cache=self._vector_cache,
                total_chunks=total_chunks(conn),
            )

    def _openclaw_keyword(self, q: str, sources: Sequence[str], opts: RankOptions) -> list[Candidate]:
        with self._readers.reader() as (conn, _vec):
            return openclaw_keyword_only(
                conn,
                q,
                self.settings,
                sources=sources,
                max_results=opts.max_results,
                min_score=opts.min_score,
                now_ms=opts.now_ms,
                mtime_lookup=self._mtime_lookup(),
            )

    def _mtime_lookup(self) -> Callable[[str], int | None]:
        workspace = self._workspace

        def mtime(path: str) -> int | None:
            try:
                return os.stat(workspace / path).st_mtime_ns // 1_000_000
            except OSError:
                return None

        return mtime

    def warm_vectors(self) -> None:
        """Reload the vector leg's in-memory copy now, not in the next search (0.3 s at 100k chunks); blocking."""
        with self._readers.reader() as (conn, vec):
            warm_cache(
                conn,
                self._vector_cache,
                model=self._active.fingerprint.model,
                vec_available=vec.available,
                total_chunks=total_chunks(conn),
            )

    async def probe(self) -> dict[str, object]:
        """`status --deep`: one query embedding and one query of each vector store, timed (memoryd.search.probe)."""
        provider = self._active.provider
        embedding, vector = await probe.probe_embedding(provider.embed_query if provider is not None else None)
        model = self._active.fingerprint.model
        stores = await anyio.to_thread.run_sync(probe.probe_store, self._readers, self._vector_cache, model, vector)
        return {"probe": {"embedding": embedding, **stores}}

    def report(self) -> dict[str, object]:
        """The searcher's part of status: the rerank stage, and why it could not be built if it could not."""
        rerank_settings = self.settings.query.rerank
        return {
            "rerank": {
                "provider": rerank_settings.provider,
                "model": self._reranker.model if self._reranker is not None else rerank_settings.model or None,
                "topN": rerank_settings.top_n,
                "timeoutMs": rerank_settings.timeout_ms,
                "error": self._reranker_error,
            }
        }
