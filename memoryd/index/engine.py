"""One agent's index: the parts that keep it true and the searcher that answers from it (spec §3.7–3.13).

The engine is the unit the daemon's actor drives and the CLI uses in-process. It puts the parts
together and keeps the order of things: `AgentDatabase` (writer lock, writer connection, pooled
readers, recoveries), `Indexer` (discovery -> prepare -> embed -> write, rebuild and swap),
`Searcher` (answering, never waiting for a sync) and `IndexState` (freshness, last sync). Its
methods are async; everything blocking runs in worker threads, and syncs are serialised by
`_sync_lock`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import anyio.to_thread
import orjson
import structlog

from memoryd import heap
from memoryd.config import AgentConfig, MemorySearchSettings
from memoryd.embeddings.active import ActiveProvider
from memoryd.embeddings.base import EmbeddingProvider, Fingerprint
from memoryd.embeddings.batch import BatchEmbedder
from memoryd.errors import CorruptDatabaseError, MemorydError, ReadonlyDatabaseError
from memoryd.index import plan
from memoryd.index.database import AgentDatabase
from memoryd.index.drift import drifted_paths
from memoryd.index.forget import Forget, forget
from memoryd.index.indexer import Indexer
from memoryd.index.integrity import Integrity, set_aside_suffix
from memoryd.index.reading import read_agent_file
from memoryd.index.roots import unreadable_now
from memoryd.index.state import IndexState, Progress, ProgressFn, RecoveryStats, SyncReport
from memoryd.index.status import assemble
from memoryd.index.sync import SyncCounts
from memoryd.isotime import iso
from memoryd.search.citations import cite
from memoryd.search.request import Corpus, SearchMode, SearchRequest, SearchResponse, corpus_sources
from memoryd.search.searcher import Searcher
from memoryd.sources.readfile import FileSlice
from memoryd.store.index import IndexMeta, IndexStore, now_ms

log = structlog.get_logger(__name__)

INDEXED_AT_KEY = "indexed_at"
LAST_SYNC_KEY = "last_sync"

__all__ = [  # what callers imported from here before the split; new code imports from the parts
    "Corpus",
    "IndexEngine",
    "Progress",
    "ProgressFn",
    "RecoveryStats",
    "SearchMode",
    "SearchResponse",
    "SyncReport",
    "corpus_sources",
    "iso",
]


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
        self.active = ActiveProvider(self.settings.provider, provider, provider_unavailable_reason)
        self.batch = BatchEmbedder(self.settings.remote.batch) if self.settings.remote.batch.enabled else None
        self.state = IndexState()
        self.database = AgentDatabase(agent, hold_writer_lock=hold_writer_lock)
        self.integrity = Integrity(agent, self.database.readers, self.state)
        self.indexer = Indexer(agent, self.database, self.active, self.state, self.batch)
        self.searcher = Searcher(
            self.settings,
            self.database.readers,
            self.active,
            workspace=agent.workspace,
            freshness=self.state.freshness,
        )
        self._sync_lock = anyio.Lock()
        self._vectors_warmed = False  # the in-memory copy is loaded once at start, then after each change
        self.keywords_ready = anyio.Event()  # a first sync wrote its chunks: searchable by keyword

    @property
    def settings(self) -> MemorySearchSettings:
        """The agent's settings (read-only: the indexer and the searcher were built from them)."""
        return self.agent.settings

    # ------------------------------------------------------------------ the provider in use (the actor swaps it)

    @property
    def provider(self) -> EmbeddingProvider | None:
        return self.active.provider

    @provider.setter
    def provider(self, provider: EmbeddingProvider | None) -> None:
        self.active.provider = provider

    @property
    def provider_unavailable_reason(self) -> str | None:
        return self.active.unavailable_reason

    @provider_unavailable_reason.setter
    def provider_unavailable_reason(self, reason: str | None) -> None:
        self.active.unavailable_reason = reason

    @property
    def fallback_from(self) -> str | None:
        return self.active.fallback_from

    @fallback_from.setter
    def fallback_from(self, provider_id: str | None) -> None:
        self.active.fallback_from = provider_id

    @property
    def fingerprint(self) -> Fingerprint:
        return self.active.fingerprint

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        await anyio.to_thread.run_sync(self._open_blocking)

    def _open_blocking(self) -> None:
        moved = self.database.open()
        if moved is not None:
            self.state.corrupt_moved_to = moved
            self.integrity.note(
                "opening it", f"it could not be opened as a database (moved to {moved})", moved_to=moved
            )
        store = self.database.store
        meta = store.read_meta()
        self.state.dirty = meta is None
        if meta is not None:
            self.state.indexed_at = meta.built_at
            with contextlib.suppress(ValueError, TypeError):
                self.state.indexed_at = max(self.state.indexed_at, int(store.get_value(INDEXED_AT_KEY) or 0))
        self.state.last_sync_saved = store.get_value(LAST_SYNC_KEY)
        self.indexer.retention.open()

    def take_writer_lock(self) -> None:
        """Become the writer (raises WriterLockBusyError when another process is)."""
        self.database.take_writer_lock()

    async def aclose(self) -> None:
        """Close the reranker's connections, then the databases."""
        await self.searcher.aclose()
        await anyio.to_thread.run_sync(self.close)

    def close(self) -> None:
        self.indexer.retention.close()
        self.database.close()

    def _store_required(self) -> IndexStore:
        return self.database.store

    # ------------------------------------------------------------------ desired state

    def effective_sources(self) -> tuple[str, ...]:
        return plan.effective_sources(self.agent)

    def full_reindex_reasons(self, meta: IndexMeta | None) -> list[str]:
        """Why the index must be rebuilt from scratch (spec §3.9); empty when a delta sync will do."""
        return self.indexer.full_reindex_reasons(meta)

    # ------------------------------------------------------------------ sync

    def mark_dirty(self, *, sessions: Sequence[str] = (), notes: Sequence[Path] = (), count: int = 1) -> None:
        """`count` changes are pending: of the transcripts `sessions` (index paths) or the notes `notes`
        (absolute paths; a sync of those files alone clears them), or anywhere (a delta sync clears them)."""
        self.state.pending += count
        if sessions or notes:
            self.state.dirty_sessions.update(sessions)
            self.state.dirty_notes.update(notes)
        else:
            self.state.dirty = True

    async def sync(
        self,
        reason: str,
        *,
        force: bool = False,
        session_files: Sequence[Path] = (),
        memory_files: Sequence[Path] = (),
        progress: ProgressFn | None = None,
        interrupted: Callable[[], bool] = lambda: False,
    ) -> SyncReport:
        """Bring the index up to date with the sources; a full safe rebuild when required or forced.

        `session_files` / `memory_files`: sync only these transcripts and notes (when they are the agent's).
        Files are keyword-searchable as each batch commits; chunks the embedding cache has no vector for are
        embedded after, newest first, until `interrupted()` says another sync waits (that one carries on)."""
        async with self._sync_lock, self.state.tracker.session():
            started = time.monotonic()
            pending_before = self.state.pending
            full = False
            try:
                try:
                    await anyio.to_thread.run_sync(self.integrity.check_header)
                    if self.integrity.pending:
                        full, counts = True, await self._rebuild_damaged(progress)
                    else:
                        full, counts = await self.indexer.run(reason, force, session_files, progress, memory_files)
                except ReadonlyDatabaseError as exc:
                    full, counts = await self._readonly_recovery(
                        exc, reason, force, session_files, progress, memory_files=memory_files
                    )
                except CorruptDatabaseError as exc:
                    self.integrity.note("a sync", str(exc))
                    full, counts = True, await self._rebuild_damaged(progress)
                if full:
                    self.integrity.rebuilt(None)  # a damaged file moved aside at open is rebuilt by any full sync
                self.keywords_ready.set()
                if full or counts.indexed:  # the batches' parsed files are garbage now: the vectors may take hours
                    await anyio.to_thread.run_sync(heap.release_free_memory)
                await self.indexer.embed_backlog(interrupted)
            except MemorydError as exc:
                degraded = self.state.degraded_report()
                report = SyncReport(
                    reason, full, SyncCounts(), _elapsed_ms(started), now_ms(), error=str(exc), degraded=degraded
                )
                self.state.last_sync = report
                self.state.dirty = True  # the index is behind the sources: never report it clean
                log.warning("sync failed", agent=self.agent.id, reason=reason, error=str(exc))
                raise
            stamp = now_ms()
            report = SyncReport(
                reason, full, counts, _elapsed_ms(started), stamp, degraded=self.state.degraded_report()
            )
            self.state.last_sync = report
            self.state.indexed_at = stamp
            self.state.pending = max(0, self.state.pending - pending_before)
            with contextlib.suppress(MemorydError):
                await anyio.to_thread.run_sync(self._remember_sync, report)
            changed = full or counts.indexed > 0 or counts.deleted > 0 or self.state.tracker.phase == "embedding"
            if self.provider is not None and (changed or not self._vectors_warmed):
                with contextlib.suppress(MemorydError):
                    await anyio.to_thread.run_sync(self.searcher.warm_vectors)
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

    async def _rebuild_damaged(self, progress: ProgressFn | None) -> SyncCounts:
        """Rebuild a damaged index beside it (searches read what is left meanwhile), then move it aside.
        If even that fails on the damage, move it aside first and rebuild into a fresh file."""
        try:
            counts, moved = await self.indexer.rebuild_damaged(progress, set_aside_suffix())
        except CorruptDatabaseError as exc:
            await anyio.to_thread.run_sync(self._recover_corrupt, exc)
            _full, counts = await self.indexer.run("corruption", True, (), progress)
        else:
            if moved is not None:
                self.state.corrupt_moved_to = str(moved)
        self.integrity.rebuilt(self.state.corrupt_moved_to)
        return counts

    def _recover_corrupt(self, exc: Exception) -> None:
        """Move a damaged database aside (never delete it) and start a fresh one; the next sync rebuilds."""
        self.state.corrupt_moved_to = self.database.recover_corrupt(exc)
        self.state.dirty = True

    def _remember_sync(self, report: SyncReport) -> None:
        """Persist when and how the index was last synced, so status in another process can tell."""
        store = self.database.store
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
        *,
        memory_files: Sequence[Path] = (),
    ) -> tuple[bool, SyncCounts]:
        """Spec §3.11: reopen the database once and retry the sync."""
        rec = self.state.readonly
        rec.attempts += 1
        rec.last_error = str(exc)
        log.warning("index is read-only; reopening and retrying once", agent=self.agent.id, error=str(exc))
        try:
            await anyio.to_thread.run_sync(self.database.reopen)
            result = await self.indexer.run(reason, force, session_files, progress, memory_files)
        except MemorydError:
            rec.failures += 1
            raise
        rec.successes += 1
        return result

    # ------------------------------------------------------------------ search and read

    def freshness(self) -> dict[str, object]:
        return self.state.freshness()

    def drift(self, session_files: Sequence[Path] = ()) -> list[str]:
        """Index paths whose file on disk differs from the index (new, changed, deleted): a stat pass, no
        reading; with `session_files`, only those transcripts. Blocking: run it in a worker thread."""
        return drifted_paths(self.agent, self.database.readers, session_files, self.indexer.retention.gone)

    async def is_empty(self) -> bool:
        def check() -> bool:
            with self.database.readers.reader() as (conn, _vec):
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
        session_key: str | None = None,
    ) -> SearchResponse:
        """`searcher.search` with the request spelled out, decorated with citations as a client receives it."""
        request = SearchRequest(
            query, max_results=max_results, min_score=min_score, corpus=corpus, mode=mode, session_key=session_key
        )
        resp = self.indexer.retention.mark(await self.searcher.search(request))
        return cite(resp, self.agent.settings.citations, session_key)

    async def check_retention(self) -> str | None:
        """The retention store's quick_check beside whatever runs; a damaged store is salvaged between syncs
        (it is the only copy of deleted transcripts: never started anew). What the check found, or None."""
        retention = self.indexer.retention
        problem = await anyio.to_thread.run_sync(retention.check)
        if problem is not None:
            async with self._sync_lock:
                await anyio.to_thread.run_sync(retention.salvage, problem)
        return problem

    async def forget(self, what: Forget) -> dict[str, object]:
        """Delete retained transcripts for good (memoryd.index.forget), never during a sync."""
        async with self._sync_lock:
            return await anyio.to_thread.run_sync(forget, self.indexer.retention, self.database.store, what)

    def read_file(self, path: str, *, from_line: int | None = None, lines: int | None = None) -> FileSlice:
        """Lines of a memory file, or the messages of a transcript (a path in a session root). Blocking."""
        if (kept := self.indexer.retention.read(path, from_line=from_line, lines=lines)) is not None:
            return kept  # a transcript deleted from disk, served from the retention store
        return read_agent_file(self.agent, path, from_line=from_line, lines=lines)

    # ------------------------------------------------------------------ status

    def status(self) -> dict[str, object]:
        """The builtin status fields of spec §4.2, plus freshness and recovery details: each part reports its own."""
        batch = self.batch.state() if self.batch is not None else {"enabled": False}
        return assemble(
            {"agent": self.agent.id, "backend": "builtin"},
            plan.scope_report(self.agent),
            self.database.report(),
            self.active.report(),
            {"batch": batch},
            self.searcher.report(),
            self.state.report(),
            self.integrity.report(),
            {"degraded": self._degraded_now(), "retention": self.indexer.retention.report()},
        )

    def _degraded_now(self) -> list[dict[str, str]]:
        places = [u.to_dict() for u in unreadable_now(self.agent, self.state.degraded)]
        damaged = self.state.damaged_index
        return [*places, damaged] if damaged is not None else places


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
