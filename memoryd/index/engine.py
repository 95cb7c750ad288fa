"""One agent's index: sync, search, read, status (spec §3.7–3.13, §4.1–4.2).

The engine is the unit the daemon's actor drives and the CLI uses in-process. Its methods are
async; everything blocking (file I/O, chunking, SQLite) runs in worker threads, and writes go
through one writer connection, serialised by `_sync_lock`. Searches use pooled read connections
and never wait for a sync.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import anyio
import anyio.to_thread
import orjson
import structlog

from memoryd import heap
from memoryd.config import AgentConfig
from memoryd.embeddings.base import NO_PROVIDER, EmbeddingProvider, Fingerprint, Vectors
from memoryd.embeddings.batch import BatchEmbedder
from memoryd.errors import (
    CorruptDatabaseError,
    EmbeddingError,
    MemorydError,
    ReadonlyDatabaseError,
    SourceError,
    StoreError,
)
from memoryd.faults import crash_point
from memoryd.index.embedding import embed_prepared
from memoryd.index.sync import Prepared, SyncCounts, prepare_many, write_prepared
from memoryd.search.fuse import Candidate
from memoryd.search.keyword import search_relaxed, total_chunks
from memoryd.search.pipeline import (
    MAX_CANDIDATES,
    VECTOR_CANDIDATES,
    RankOptions,
    SearchResult,
    cut_hybrid,
    cut_single,
    openclaw_keyword_only,
    order_hybrid,
    order_single,
    to_results,
)
from memoryd.search.rerank import Reranker, build_reranker, rerank
from memoryd.search.timeframe import parse_timeframe
from memoryd.search.vector import (
    ExactMatrixCache,
    VectorBackend,
    VectorHits,
    complete_vector_scores,
    search_vector,
    warm_cache,
)
from memoryd.sources.discovery import SourceFile, index_path, list_memory_files, list_session_files
from memoryd.sources.readfile import FileSlice, read_memory_file
from memoryd.store import schema
from memoryd.store.db import VecState, connect, move_aside, translated
from memoryd.store.index import IndexMeta, IndexStore, now_ms
from memoryd.store.lock import WriterLock
from memoryd.store.readers import ReaderPool
from memoryd.store.reindex import Rebuild, cleanup_leftovers

log = structlog.get_logger(__name__)

BATCH_FILES = 256
INDEXED_AT_KEY = "indexed_at"
LAST_SYNC_KEY = "last_sync"
Corpus = str  # "memory" | "sessions" | "all"
Unlisted = tuple[str, str]
"""(source, index path) of a file or directory that exists but could not be inspected or listed."""
SearchMode = Literal["auto", "hybrid", "keyword", "vector"]
QUERY_EMBED_TIMEOUT_S = 15.0
"""A query embedding slower than this falls back to keyword-only rather than stall the search."""


@dataclass(frozen=True, slots=True)
class Progress:
    """Reported while a sync runs (the CLI draws a bar from it)."""

    phase: str
    files_done: int
    files_total: int
    chunks: int


ProgressFn = Callable[[Progress], None]


@dataclass(slots=True)
class SyncReport:
    reason: str
    full: bool
    counts: SyncCounts
    duration_ms: int
    at_ms: int
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "reason": self.reason,
            "full": self.full,
            "indexed": self.counts.indexed,
            "unchanged": self.counts.unchanged,
            "deleted": self.counts.deleted,
            "chunks": self.counts.chunks,
            "unreadable": list(self.counts.unreadable),
            "durationMs": self.duration_ms,
            "at": iso(self.at_ms),
            "error": self.error,
        }


@dataclass(slots=True)
class RecoveryStats:
    attempts: int = 0
    successes: int = 0
    failures: int = 0
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class _Ranked:
    """What `_ranked` found: the cut results and how they were found."""

    results: list[Candidate]
    mode: str
    backend: VectorBackend | None
    fallback: dict[str, str] | None
    rerank: dict[str, object] | None


@dataclass(frozen=True, slots=True)
class SearchResponse:
    results: list[SearchResult]
    mode: str
    provider: str
    model: str
    fallback: dict[str, str] | None
    freshness: dict[str, object]
    vector_backend: VectorBackend | None = None  # which vector search ran: sqlite-vec KNN or exact
    rerank: dict[str, object] | None = None  # what the optional rerank stage did, when configured

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
        return out


def iso(ms: int | None) -> str | None:
    if not ms:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def corpus_sources(corpus: Corpus) -> tuple[str, ...]:
    if corpus == "memory":
        return ("memory",)
    if corpus == "sessions":
        return ("sessions",)
    return ("memory", "sessions")


@dataclass(slots=True)
class _State:
    dirty: bool = True
    dirty_sessions: set[str] = field(default_factory=set)
    pending: int = 0
    indexed_at: int = 0
    last_sync: SyncReport | None = None
    readonly: RecoveryStats = field(default_factory=RecoveryStats)
    corrupt_moved_to: str | None = None
    last_sync_saved: str | None = None
    embedding_error: str | None = None
    provider_state: str = "none"  # none | loading | ready | unavailable


class IndexEngine:
    """An agent's index. `open()` before use, `close()` after."""

    def __init__(
        self,
        agent: AgentConfig,
        provider: EmbeddingProvider | None = None,
        *,
        provider_unavailable_reason: str | None = None,
        hold_writer_lock: bool = True,
    ) -> None:
        self.agent = agent
        self.settings = agent.settings
        self.provider = provider
        self.provider_unavailable_reason = provider_unavailable_reason
        self.fallback_from: str | None = None
        self.batch = BatchEmbedder(self.settings.remote.batch) if self.settings.remote.batch.enabled else None
        self._lock = WriterLock(agent.db_path)
        self._hold_lock = hold_writer_lock
        self._store: IndexStore | None = None
        vector = self.settings.store.vector
        self._readers = ReaderPool(agent.db_path, vec_path=vector.extension_path, vec_enabled=vector.enabled)
        self._sync_lock = anyio.Lock()
        self._vector_cache = ExactMatrixCache()
        self._vectors_warmed = False  # the in-memory copy is loaded once at start, then after each change
        self._reranker: Reranker | None = None
        self._reranker_error: str | None = None  # why the configured reranker could not be built
        self.state = _State()

    # ------------------------------------------------------------------ lifecycle

    @property
    def fingerprint(self) -> Fingerprint:
        return self.provider.fingerprint if self.provider is not None else NO_PROVIDER

    async def open(self) -> None:
        await anyio.to_thread.run_sync(self._open_blocking)

    def _open_blocking(self) -> None:
        if self._hold_lock:
            self._lock.acquire()
        cleanup_leftovers(self.agent.db_path)
        try:
            self._store = self._connect_writer()
        except CorruptDatabaseError as exc:
            self._recover_corrupt(exc)
        store = self._store_required()
        meta = store.read_meta()
        self.state.dirty = meta is None
        if meta is not None:
            self.state.indexed_at = meta.built_at
            with contextlib.suppress(ValueError, TypeError):
                self.state.indexed_at = max(self.state.indexed_at, int(store.get_value(INDEXED_AT_KEY) or 0))
        self.state.last_sync_saved = store.get_value(LAST_SYNC_KEY)

    def take_writer_lock(self) -> None:
        """Become the writer (raises WriterLockBusyError when another process is)."""
        self._lock.acquire()

    def _connect_writer(self) -> IndexStore:
        vector = self.settings.store.vector
        conn, vec = connect(self.agent.db_path, vec_path=vector.extension_path, vec_enabled=vector.enabled)
        try:
            with translated(f"opening {self.agent.db_path}"):
                schema.migrate(conn)
                schema.ensure_fts(conn, self.settings.store.fts.tokenizer)
                conn.execute("SELECT COUNT(*) FROM files").fetchone()
        except StoreError:
            conn.close()
            raise
        return IndexStore(conn, vec)

    def _recover_corrupt(self, exc: Exception) -> None:
        """Move a damaged database aside (never delete it) and start a fresh one; the next sync rebuilds."""
        log.error("index database is corrupt", agent=self.agent.id, error=str(exc))
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.conn.close()
            self._store = None
        self._readers.close()
        moved = move_aside(self.agent.db_path, f"corrupt-{int(time.time())}")
        self.state.corrupt_moved_to = str(moved)
        self._store = self._connect_writer()
        self.state.dirty = True

    async def aclose(self) -> None:
        """Close the reranker's connections, then the databases."""
        if self._reranker is not None:
            reranker, self._reranker = self._reranker, None
            await reranker.aclose()
        await anyio.to_thread.run_sync(self.close)

    def close(self) -> None:
        self._readers.close()
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.conn.close()
            self._store = None
        self._lock.release()

    def _store_required(self) -> IndexStore:
        if self._store is None:
            raise StoreError("the index is not open")
        return self._store

    @property
    def vec_state(self) -> VecState:
        return self._store_required().vec

    # ------------------------------------------------------------------ desired state

    def effective_sources(self) -> tuple[str, ...]:
        configured = self.settings.sources
        out = [s for s in ("memory", "sessions") if s in configured]
        if "sessions" in out and not self.agent.sessions_dir.is_dir():
            out.remove("sessions")
        return tuple(out)

    def scope_hash(self) -> str:
        extras = sorted(p.as_posix() for p in self.agent.extra_paths)
        data = {"extraPaths": extras, "multimodal": {"enabled": False, "modalities": [], "maxFileBytes": 0}}
        return hashlib.sha256(orjson.dumps(data)).hexdigest()

    def desired_meta(self, vector_dims: int | None) -> IndexMeta:
        fp = self.fingerprint
        return IndexMeta(
            model=fp.model,
            provider=fp.provider,
            provider_key=fp.provider_key,
            sources=self.effective_sources(),
            scope_hash=self.scope_hash(),
            chunk_tokens=self.settings.chunking.tokens,
            chunk_overlap=self.settings.chunking.overlap,
            fts_tokenizer=self.settings.store.fts.tokenizer,
            vector_dims=vector_dims,
            built_at=now_ms(),
        )

    def full_reindex_reasons(self, meta: IndexMeta | None) -> list[str]:
        """Why the index must be rebuilt from scratch (spec §3.9); empty when a delta sync will do."""
        if meta is None:
            return ["no index metadata"]
        want = self.desired_meta(None)
        checks = [
            (meta.model != want.model, f"model {meta.model} -> {want.model}"),
            (meta.provider != want.provider, f"provider {meta.provider} -> {want.provider}"),
            (meta.provider_key != want.provider_key, "provider settings changed"),
            (
                tuple(sorted(meta.sources)) != tuple(sorted(want.sources)),
                f"sources {meta.sources} -> {want.sources}",
            ),
            (meta.scope_hash != want.scope_hash, "extra paths changed"),
            (meta.chunk_tokens != want.chunk_tokens, "chunk size changed"),
            (meta.chunk_overlap != want.chunk_overlap, "chunk overlap changed"),
            (
                meta.fts_tokenizer != want.fts_tokenizer,
                f"tokenizer {meta.fts_tokenizer} -> {want.fts_tokenizer}",
            ),
            (
                self.provider is not None and self.vec_state.available and meta.vector_dims is None,
                "vectors missing",
            ),
        ]
        return [why for changed, why in checks if changed]

    # ------------------------------------------------------------------ sync

    def mark_dirty(self, *, sessions: Sequence[str] = ()) -> None:
        self.state.pending += 1
        if sessions:
            self.state.dirty_sessions.update(sessions)
        else:
            self.state.dirty = True

    async def sync(
        self,
        reason: str,
        *,
        force: bool = False,
        session_files: Sequence[Path] = (),
        progress: ProgressFn | None = None,
    ) -> SyncReport:
        """Bring the index up to date with the sources; a full safe rebuild when required or forced."""
        async with self._sync_lock:
            started = time.monotonic()
            pending_before = self.state.pending
            full = False
            try:
                try:
                    full, counts = await self._run_sync(reason, force, session_files, progress)
                except ReadonlyDatabaseError as exc:
                    full, counts = await self._readonly_recovery(exc, reason, force, session_files, progress)
                except CorruptDatabaseError as exc:
                    await anyio.to_thread.run_sync(self._recover_corrupt, exc)
                    full, counts = await self._run_sync(reason, True, (), progress)
            except MemorydError as exc:
                report = SyncReport(reason, full, SyncCounts(), _elapsed_ms(started), now_ms(), error=str(exc))
                self.state.last_sync = report
                self.state.dirty = True  # the index is behind the sources: never report it clean
                log.warning("sync failed", agent=self.agent.id, reason=reason, error=str(exc))
                raise
            stamp = now_ms()
            report = SyncReport(reason, full, counts, _elapsed_ms(started), stamp)
            self.state.last_sync = report
            self.state.indexed_at = stamp
            self.state.pending = max(0, self.state.pending - pending_before)
            with contextlib.suppress(MemorydError):
                await anyio.to_thread.run_sync(self._remember_sync, report)
            changed = full or counts.indexed > 0 or counts.deleted > 0
            if self.provider is not None and (changed or not self._vectors_warmed):
                with contextlib.suppress(MemorydError):
                    await anyio.to_thread.run_sync(self._warm_vectors)
                    self._vectors_warmed = True
            if changed:
                await anyio.to_thread.run_sync(heap.release_free_memory)
            log.info(
                "sync done",
                agent=self.agent.id,
                reason=reason,
                full=full,
                indexed=counts.indexed,
                deleted=counts.deleted,
                chunks=counts.chunks,
                ms=report.duration_ms,
            )
            return report

    def _warm_vectors(self) -> None:
        """Reload the vector leg's in-memory copy now, not in the next search (0.3 s at 100k chunks)."""
        with self._readers.reader() as (conn, vec):
            warm_cache(
                conn,
                self._vector_cache,
                model=self.fingerprint.model,
                vec_available=vec.available,
                total_chunks=total_chunks(conn),
            )

    def _remember_sync(self, report: SyncReport) -> None:
        """Persist when and how the index was last synced, so status in another process can tell."""
        store = self._store_required()
        saved = orjson.dumps(report.to_dict()).decode()
        with store.transaction():
            store.set_value(INDEXED_AT_KEY, str(report.at_ms))
            store.set_value(LAST_SYNC_KEY, saved)
        self.state.last_sync_saved = saved

    async def _readonly_recovery(
        self,
        exc: ReadonlyDatabaseError,
        reason: str,
        force: bool,
        session_files: Sequence[Path],
        progress: ProgressFn | None,
    ) -> tuple[bool, SyncCounts]:
        """Spec §3.11: reopen the database once and retry the sync."""
        rec = self.state.readonly
        rec.attempts += 1
        rec.last_error = str(exc)
        log.warning("index is read-only; reopening and retrying once", agent=self.agent.id, error=str(exc))

        def reopen() -> None:
            if self._store is not None:
                with contextlib.suppress(Exception):
                    self._store.conn.close()
            self._readers.close()
            self._store = self._connect_writer()

        try:
            await anyio.to_thread.run_sync(reopen)
            result = await self._run_sync(reason, force, session_files, progress)
        except MemorydError:
            rec.failures += 1
            raise
        rec.successes += 1
        return result

    async def _run_sync(
        self, reason: str, force: bool, session_files: Sequence[Path], progress: ProgressFn | None
    ) -> tuple[bool, SyncCounts]:
        store = self._store_required()

        def plan() -> tuple[list[SourceFile], list[str]]:
            targeted = self._targeted(session_files)
            reasons = ["forced"] if force and not targeted else self.full_reindex_reasons(store.read_meta())
            return targeted, reasons

        targeted, reasons = await anyio.to_thread.run_sync(plan)
        if reasons:
            log.info("full reindex", agent=self.agent.id, reason=reason, why=reasons)
            return True, await self._full_reindex(progress)
        if targeted:
            counts = await self._index(store, targeted, prune=(), full=False, progress=progress)
            self.state.dirty_sessions.difference_update(f.path for f in targeted)
            return False, counts
        files, unlisted = await anyio.to_thread.run_sync(self._discover)
        counts = await self._index(
            store, files, prune=self.effective_sources(), keep=unlisted, full=False, progress=progress
        )
        self.state.dirty = False
        self.state.dirty_sessions.clear()
        return False, counts

    def _targeted(self, session_files: Sequence[Path]) -> list[SourceFile]:
        if not session_files or "sessions" not in self.effective_sources():
            return []
        root = os.path.realpath(self.agent.sessions_dir)
        wanted = {os.path.realpath(p) for p in session_files}
        return [
            f
            for f in list_session_files(self.agent.sessions_dir)
            if os.path.realpath(f.abs_path) in wanted and os.path.dirname(os.path.realpath(f.abs_path)) == root
        ]

    def _discover(self) -> tuple[list[SourceFile], list[Unlisted]]:
        """The files to index, and the places that exist but could not be listed (their rows are kept)."""
        sources = self.effective_sources()
        files: list[SourceFile] = []
        unlisted: list[Unlisted] = []
        if "memory" in sources:
            hidden: list[Path] = []
            files.extend(list_memory_files(self.agent.workspace, self.agent.extra_paths, unlisted=hidden))
            unlisted.extend(("memory", index_path(p, self.agent.workspace)) for p in hidden)
        if "sessions" in sources:
            hidden = []
            files.extend(list_session_files(self.agent.sessions_dir, unlisted=hidden))
            unlisted.extend(("sessions", "sessions") for _ in hidden)
        return files, unlisted

    def _refuse_to_lose_rows(self, unreadable: Sequence[str], unlisted: Sequence[Unlisted]) -> None:
        """Raise SourceError if a rebuild would drop indexed files only because they could not be read."""
        store = self._store_required()
        cannot_read = set(unreadable)
        at_risk = sorted(
            path
            for source in ("memory", "sessions")
            for path in store.file_states(source)
            if path in cannot_read or _under(source, path, unlisted)
        )
        if at_risk:
            more = " …" if len(at_risk) > 5 else ""
            raise SourceError(
                f"cannot read {', '.join(at_risk[:5])}{more}: the rebuilt index was not swapped in, so their "
                "indexed rows are kept; fix the permissions (or delete them) and sync again"
            )

    async def _index(
        self,
        store: IndexStore,
        files: Sequence[SourceFile],
        *,
        prune: Sequence[str],
        full: bool,
        progress: ProgressFn | None,
        keep: Sequence[Unlisted] = (),
    ) -> SyncCounts:
        """Prepare, embed and write `files` in batches; then prune rows of vanished files in `prune` sources
        (never of files under `keep`: places that could not be listed, whose files may well exist)."""
        states = {}
        for source in ("memory", "sessions"):
            for path, st in (await anyio.to_thread.run_sync(store.file_states, source)).items():
                states[f"{source}\x00{path}"] = st
        total = SyncCounts()
        chunking = self.settings.chunking
        model = self.fingerprint.model
        for start in range(0, len(files), BATCH_FILES):
            batch = files[start : start + BATCH_FILES]
            batch_states = {
                f.path: states[f"{f.source}\x00{f.path}"] for f in batch if f"{f.source}\x00{f.path}" in states
            }
            prepared = await anyio.to_thread.run_sync(
                functools.partial(prepare_many, batch, batch_states, chunking, full=full)
            )
            try:
                vectors = await self._embed(store, prepared)
            except EmbeddingError as exc:
                # Keep the index usable: write these chunks for keyword search now, embed them next sync.
                log.warning("embedding failed; indexing keyword-only for now", agent=self.agent.id, error=str(exc))
                self.state.embedding_error = str(exc)
                write = functools.partial(write_prepared, store, prepared, model, None, missing_vectors=True)
            else:
                if self.provider is not None:
                    self.state.embedding_error = None
                write = functools.partial(write_prepared, store, prepared, model, vectors)
            counts = await anyio.to_thread.run_sync(write)
            total.add(counts)
            if full or counts.indexed or counts.deleted:
                crash_point("reindex:building" if full else "sync:after-batch")
            if progress is not None:
                progress(Progress("index", min(start + len(batch), len(files)), len(files), total.chunks))
        if prune:
            seen = {f"{f.source}\x00{f.path}" for f in files}
            stale: dict[str, list[str]] = {}
            for key in states:
                source, path = key.split("\x00", 1)
                if key not in seen and not _under(source, path, keep):
                    stale.setdefault(source, []).append(path)
            for source in ("memory", "sessions"):
                paths = stale.get(source, [])
                if source in prune and paths:

                    def delete(s: str = source, ps: list[str] = paths) -> int:
                        with store.transaction():
                            return store.delete_files(s, ps)

                    total.deleted += await anyio.to_thread.run_sync(delete)
        return total

    async def _embed(self, store: IndexStore, prepared: Sequence[Prepared]) -> list[Vectors | None] | None:
        """Vectors for each prepared file's chunks (None without a provider)."""
        if self.provider is None:
            return None
        return await embed_prepared(self.provider, store, prepared, cache=self.settings.cache.enabled, batch=self.batch)

    async def _full_reindex(self, progress: ProgressFn | None) -> SyncCounts:
        """Spec §3.10: build everything into a temporary database, then swap it in atomically."""
        rebuild = Rebuild(self.agent.db_path, self.settings)
        try:
            tmp_store = await anyio.to_thread.run_sync(rebuild.open)
            files, unlisted = await anyio.to_thread.run_sync(self._discover)
            counts = await self._index(tmp_store, files, prune=(), full=True, progress=progress)
            await anyio.to_thread.run_sync(self._refuse_to_lose_rows, counts.unreadable, unlisted)
            dims = await anyio.to_thread.run_sync(_vector_dims, tmp_store)
            meta = self.desired_meta(dims)
            await anyio.to_thread.run_sync(rebuild.finish, meta)
            crash_point("reindex:before-swap")
            await anyio.to_thread.run_sync(self._swap, rebuild)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(rebuild.abort)
            raise
        self.state.dirty = False
        self.state.dirty_sessions.clear()
        return counts

    def _swap(self, rebuild: Rebuild) -> None:
        with self._readers.paused():
            if self._store is not None:
                self._store.conn.close()
                self._store = None
            try:
                rebuild.swap_in()
                crash_point("reindex:after-swap")
            finally:
                self._store = self._connect_writer()

    # ------------------------------------------------------------------ search and read

    def freshness(self) -> dict[str, object]:
        return {
            "indexedAt": iso(self.state.indexed_at),
            "pending": self.state.pending,
            "dirty": self.state.dirty or bool(self.state.dirty_sessions),
        }

    async def is_empty(self) -> bool:
        def check() -> bool:
            with self._readers.reader() as (conn, _vec):
                return conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is None

        return await anyio.to_thread.run_sync(check)

    async def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        corpus: Corpus = "all",
        mode: SearchMode = "auto",
    ) -> SearchResponse:
        """Search without waiting for any sync (the caller decides whether to sync first).

        `auto` is hybrid when an embedding provider is ready, else keyword-only. A mode that needs
        vectors falls back to keyword-only (and says why in `fallback`) when the provider is
        missing or not ready, the query cannot be embedded, or the index holds no vectors yet.
        """
        q = query.strip()
        limit = max_results if max_results is not None else self.settings.query.max_results
        floor = min_score if min_score is not None else self.settings.query.min_score
        sources = [s for s in corpus_sources(corpus) if s in self.settings.sources]
        fp = self.fingerprint
        run, fallback = self._search_mode(mode)
        results: list[SearchResult] = []
        backend: VectorBackend | None = None
        reranked: dict[str, object] | None = None
        if q and sources and limit > 0:
            now = now_ms()
            today = datetime.fromtimestamp(now / 1000).date()  # the user's "today": local time
            frame = parse_timeframe(q, today) if self.settings.query.date_boost > 0 else None
            opts = RankOptions.from_settings(
                self.settings, max_results=limit, min_score=floor, now_ms=now, timeframe=frame
            )
            ranked = await self._ranked(q, run, sources, opts)
            cands, run, backend, reranked = ranked.results, ranked.mode, ranked.backend, ranked.rerank
            fallback = ranked.fallback or fallback
            results = to_results(cands)
        if fallback is None and self.fallback_from is not None:
            fallback = self.fallback_info()  # the configured provider failed; its fallback answered
        return SearchResponse(
            results=results,
            mode=run,
            provider=fp.provider,
            model=fp.model,
            fallback=fallback,
            freshness=self.freshness(),
            vector_backend=backend,
            rerank=reranked,
        )

    def _search_mode(self, wanted: SearchMode) -> tuple[str, dict[str, str] | None]:
        """The mode to try first, and the fallback already known (no provider, model not ready)."""
        reason = self._provider_unready_reason()
        if reason is None:
            return ("hybrid" if wanted == "auto" else wanted), None
        if wanted in ("auto", "keyword"):
            if self.provider is None and not self.provider_unavailable_reason:
                return "keyword", None
            return "keyword", {"from": self.settings.provider, "reason": reason}
        return "keyword", {"from": wanted, "reason": reason}

    def _provider_unready_reason(self) -> str | None:
        if self.provider is None:
            return self.provider_unavailable_reason or "no embedding provider is configured"
        state = str(getattr(self.provider, "state", "ready"))
        if state in ("loading", "error"):
            return f"the embedding model is {'still loading' if state == 'loading' else 'unavailable'}"
        return None

    async def _ranked(self, q: str, run: str, sources: Sequence[str], opts: RankOptions) -> _Ranked:
        """Embed the query, run the legs side by side, rank, rerank if configured, cut."""
        keyword_hits: list[Candidate] = []
        fallback: dict[str, str] | None = None
        strategy = self.settings.query.keyword_strategy
        if run == "keyword" and strategy == "openclaw":
            found = await anyio.to_thread.run_sync(self._openclaw_keyword, q, sources, opts)
            return _Ranked(found, "keyword", None, None, None)

        hits = VectorHits([], "none")
        # The query is embedded first, alone: the model uses every core, and sharing them with the
        # keyword leg made both slower. Then the two legs run side by side.
        vector = await self._embed_query(q) if run != "keyword" else None
        if isinstance(vector, str):
            fallback, vector = {"from": run, "reason": vector}, None

        async def keyword_leg() -> None:
            nonlocal keyword_hits
            keyword_hits = await anyio.to_thread.run_sync(self._keyword_leg, q, sources)

        async def vector_leg(query_vector: Vectors) -> None:
            nonlocal hits, fallback
            hits = await anyio.to_thread.run_sync(self._vector_leg, query_vector, sources)
            if hits.backend == "none":
                fallback = {"from": run, "reason": f"the index holds no vectors of {self.fingerprint.model} yet"}

        async with anyio.create_task_group() as tg:
            if run in ("hybrid", "keyword"):
                tg.start_soon(keyword_leg)
            if vector is not None:
                tg.start_soon(vector_leg, vector)
        if run == "hybrid" and vector is not None and hits.backend != "none":
            hits = VectorHits(
                await anyio.to_thread.run_sync(self._complete, vector, hits.hits, keyword_hits), hits.backend
            )
        if run != "keyword" and hits.backend == "none":
            if run == "vector":
                keyword_hits = await anyio.to_thread.run_sync(self._keyword_leg, q, sources)
            run = "keyword"
        mtime = self._mtime_lookup()
        hybrid = run == "hybrid"
        if hybrid:
            order = functools.partial(order_hybrid, hits.hits, keyword_hits, opts, mtime)
        else:
            order = functools.partial(order_single, hits.hits if run == "vector" else keyword_hits, opts, mtime)
        # Sorting a few hundred candidates is quick; mtime lookups (decay) and MMR (quadratic) go to a thread.
        ranked = await anyio.to_thread.run_sync(order) if opts.decay_enabled else order()
        ranked, rerank_info = await self._rerank(q, ranked)
        if hybrid:
            cut = functools.partial(cut_hybrid, ranked, keyword_hits, opts)
        else:
            cut = functools.partial(cut_single, ranked, opts)
        final = await anyio.to_thread.run_sync(cut) if opts.mmr_enabled else cut()
        return _Ranked(final, run, hits.backend if run != "keyword" else None, fallback, rerank_info)

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
        if self.provider is None:
            return "no embedding provider is configured"
        try:
            with anyio.fail_after(QUERY_EMBED_TIMEOUT_S):
                return await self.provider.embed_query(q)
        except EmbeddingError as exc:
            return f"query embedding failed: {exc}"
        except TimeoutError:
            return f"query embedding took over {QUERY_EMBED_TIMEOUT_S:g} s"

    def _keyword_leg(self, q: str, sources: Sequence[str]) -> list[Candidate]:
        with self._readers.reader() as (conn, _vec):
            return search_relaxed(
                conn, q, limit=MAX_CANDIDATES, sources=sources, tokenizer=self.settings.store.fts.tokenizer
            )

    def _vector_leg(self, vector: Vectors, sources: Sequence[str]) -> VectorHits:
        with self._readers.reader() as (conn, vec):
            return search_vector(
                conn,
                vector,
                k=VECTOR_CANDIDATES,
                sources=sources,
                model=self.fingerprint.model,
                vec_available=vec.available,
                cache=self._vector_cache,
                total_chunks=total_chunks(conn),
            )

    def _complete(self, vector: Vectors, hits: list[Candidate], keyword_hits: list[Candidate]) -> list[Candidate]:
        with self._readers.reader() as (conn, _vec):
            return complete_vector_scores(conn, vector, hits, keyword_hits, self.fingerprint.model)

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
        workspace = self.agent.workspace

        def mtime(path: str) -> int | None:
            try:
                return os.stat(workspace / path).st_mtime_ns // 1_000_000
            except OSError:
                return None

        return mtime

    def read_file(self, path: str, *, from_line: int | None = None, lines: int | None = None) -> FileSlice:
        return read_memory_file(path, self.agent.workspace, self.agent.extra_paths, from_line=from_line, lines=lines)

    # ------------------------------------------------------------------ status

    def fallback_info(self) -> dict[str, str] | None:
        """`{from, reason}` when the configured provider is not the one in use (or none is)."""
        reason = self.provider_unavailable_reason
        if self.fallback_from is not None and reason:
            return {"from": self.fallback_from, "reason": reason}
        if self.provider is None and reason:
            return {"from": self.settings.provider, "reason": reason}
        return None

    @staticmethod
    def missing_vector_files(store: IndexStore) -> int:
        with translated("counting files without vectors"):
            row = store.conn.execute("SELECT COUNT(*) FROM files WHERE hash LIKE 'novec:%'").fetchone()
        return int(row[0]) if row else 0

    def status(self) -> dict[str, object]:
        """The builtin status fields of spec §4.2, plus freshness and recovery details.

        Reads through a pooled reader connection, never the writer's: a sync may be using that one
        in another thread at this very moment.
        """
        with self._readers.reader() as (conn, reader_vec):
            return self._status(IndexStore(conn, reader_vec), self._store_required().vec)

    def _status(self, store: IndexStore, vec: VecState) -> dict[str, object]:
        counts = store.counts()
        meta = store.read_meta()
        fp = self.fingerprint
        s = self.settings
        last = self.state.last_sync
        try:
            db_size = sum(
                Path(f"{self.agent.db_path}{ext}").stat().st_size
                for ext in ("", "-wal")
                if Path(f"{self.agent.db_path}{ext}").exists()
            )
        except OSError:
            db_size = 0
        rec = self.state.readonly
        return {
            "agent": self.agent.id,
            "backend": "builtin",
            "files": sum(c.files for c in counts),
            "chunks": sum(c.chunks for c in counts),
            "dirty": self.state.dirty or bool(self.state.dirty_sessions),
            "workspaceDir": str(self.agent.workspace),
            "sessionsDir": str(self.agent.sessions_dir),
            "dbPath": str(self.agent.db_path),
            "dbSizeBytes": db_size,
            "provider": fp.provider,
            "model": fp.model,
            "requestedProvider": s.provider,
            "sources": list(self.effective_sources()),
            "extraPaths": [str(p) for p in self.agent.extra_paths],
            "sourceCounts": [{"source": c.source, "files": c.files, "chunks": c.chunks} for c in counts],
            "cache": {
                "enabled": s.cache.enabled,
                "entries": store.cache_count(),
                "maxEntries": s.cache.max_entries or None,
            },
            "fts": {"enabled": True, "available": True, "error": None, "tokenizer": s.store.fts.tokenizer},
            "vector": {
                "enabled": s.store.vector.enabled,
                "available": vec.available,
                "extensionPath": vec.extension_path,
                "loadError": vec.error,
                "dims": meta.vector_dims if meta else None,
            },
            "fallback": self.fallback_info(),
            "batch": self.batch.state() if self.batch is not None else {"enabled": False},
            "embedding": {
                "state": self.state.provider_state,
                "provider": fp.provider,
                "model": fp.model,
                "lastError": self.state.embedding_error,
                "filesWithoutVectors": self.missing_vector_files(store),
            },
            "searchMode": "hybrid" if self.provider is not None else "keyword",
            "rerank": {
                "provider": s.query.rerank.provider,
                "model": self._reranker.model if self._reranker is not None else s.query.rerank.model or None,
                "topN": s.query.rerank.top_n,
                "timeoutMs": s.query.rerank.timeout_ms,
                "error": self._reranker_error,
            },
            "providerUnavailableReason": self.provider_unavailable_reason,
            "readonlyRecovery": {
                "attempts": rec.attempts,
                "successes": rec.successes,
                "failures": rec.failures,
                "lastError": rec.last_error,
            },
            "corruptDatabaseMovedTo": self.state.corrupt_moved_to,
            "malformedTranscriptLines": store.bad_lines(),
            "indexedAt": iso(self.state.indexed_at),
            "pending": self.state.pending,
            "lastSync": last.to_dict() if last else _loads(self.state.last_sync_saved),
            "meta": None
            if meta is None
            else {
                "model": meta.model,
                "provider": meta.provider,
                "sources": list(meta.sources),
                "chunkTokens": meta.chunk_tokens,
                "chunkOverlap": meta.chunk_overlap,
                "ftsTokenizer": meta.fts_tokenizer,
                "builtAt": iso(meta.built_at),
            },
        }


def _under(source: str, path: str, places: Sequence[Unlisted]) -> bool:
    return any(source == s and (path == p or path.startswith(p + "/")) for s, p in places)


def _loads(text: str | None) -> object:
    if not text:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _vector_dims(store: IndexStore) -> int | None:
    if not store.vec.available:
        return None
    return schema.vec_dims(store.conn)


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
