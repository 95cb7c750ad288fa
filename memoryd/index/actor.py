"""AgentIndex: the actor that owns one agent's index inside the daemon.

It owns the engine (and so the database writer) and a sync scheduler (a mailbox drained one
sync at a time: see `scheduler`). Searches never wait for a sync: a search on a dirty index
starts a background sync and answers from the index as it is, unless the caller asked to wait
(`wait_fresh_ms`) or the index has never been built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.to_thread
import structlog
from anyio.abc import TaskStatus

from memoryd.config import AgentConfig
from memoryd.embeddings.base import EmbeddingProvider
from memoryd.embeddings.select import Selection, first_candidate
from memoryd.errors import CorruptDatabaseError, MemorydError
from memoryd.index.checkup import Checkup
from memoryd.index.engine import IndexEngine
from memoryd.index.forget import Forget
from memoryd.index.integrity import Corruption
from memoryd.index.saving import SaveReport, save
from memoryd.index.scheduler import SyncJob, SyncScheduler
from memoryd.index.state import SyncReport
from memoryd.isotime import iso
from memoryd.qmd.backend import QmdBackend
from memoryd.qmd.fallback import FallbackSearcher
from memoryd.qmd.updates import EmbedGate
from memoryd.search.citations import cite
from memoryd.search.request import SearchRequest, SearchResponse
from memoryd.sources.readfile import FileSlice
from memoryd.sources.write import Target

log = structlog.get_logger(__name__)

ProviderFactory = Callable[[AgentConfig], Awaitable[Selection]]
FallbackFactory = Callable[[AgentConfig, str], Awaitable[EmbeddingProvider]]
BOOTSTRAP_WAIT_S = 10.0
"""How long a first search waits for the very first index build before answering with what exists."""


class AgentIndex:
    def __init__(
        self,
        agent: AgentConfig,
        *,
        provider_factory: ProviderFactory | None = None,
        fallback_factory: FallbackFactory | None = None,
        state_dir: Path | None = None,
        qmd_gate: EmbedGate | None = None,
    ) -> None:
        self.agent = agent
        self.settings = agent.settings
        self._provider_factory = provider_factory
        self._fallback_factory = fallback_factory
        self._provider_resolved = anyio.Event()
        if provider_factory is None:
            self._provider_resolved.set()
        self.engine = IndexEngine(agent)
        self.scheduler = SyncScheduler(agent, self.engine, ready=self._provider_resolved, after_sync=self._after_sync)
        self.checkup = Checkup(
            self.engine.integrity,
            self.scheduler,
            agent.db_path,
            self.settings.store,
            self._rebuild_if_damaged,
            retention_check=self.engine.check_retention,
        )
        self.watch_mode = "off"
        self._rebuild_asked_for: Corruption | None = None
        self.watch_error: str | None = None
        self.qmd: FallbackSearcher | None = None
        if self.settings.backend == "qmd":
            qmd = self.settings.qmd
            root = state_dir or agent.db_path.parent.parent.parent
            self.qmd = FallbackSearcher(
                lambda: QmdBackend(agent, qmd, state_dir=root, gate=qmd_gate),
                builtin=_BuiltinView(self),
                retry_s=qmd.fallback.retry_ms / 1000,
                retry_max_s=qmd.fallback.retry_max_ms / 1000,
            )

    # ------------------------------------------------------------------ lifecycle

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        await self.engine.open()
        try:
            async with anyio.create_task_group() as tg:
                if self.qmd is not None:
                    # The builtin index keeps syncing beside QMD: that is what makes the fallback instant.
                    await tg.start(self.qmd.run)
                await tg.start(self.scheduler.run)
                tg.start_soon(self.checkup.run)
                if self._provider_factory is not None:
                    tg.start_soon(self._load_provider)
                task_status.started()
        finally:
            with anyio.CancelScope(shield=True):
                await self.engine.aclose()

    async def _load_provider(self) -> None:
        """Pick the embedding provider in the background: start-up never waits for a model to load.

        Syncs wait for this (a loading model must not look like "no provider" and trigger a
        keyword-only rebuild); searches do not — they run keyword-only until the model is ready.
        """
        assert self._provider_factory is not None
        self.engine.state.provider_state = "loading"
        self.engine.active.loading = first_candidate(self.settings)
        try:
            selection = await self._provider_factory(self.agent)
        except MemorydError as exc:
            selection = Selection(None, str(exc))
        finally:
            self.engine.active.loading = None
        self.engine.provider = selection.provider
        self.engine.provider_unavailable_reason = selection.reason
        self.engine.fallback_from = selection.fallback_from
        self.engine.state.provider_state = "ready" if selection.provider is not None else "unavailable"
        self._provider_resolved.set()

    def _rebuild_if_damaged(self) -> None:
        """Damage found anywhere (the check, a read, a sync) and no rebuild asked for yet: ask for one."""
        damage = self.engine.integrity.corruption
        if damage is not None and damage.pending and damage is not self._rebuild_asked_for:
            self._rebuild_asked_for = damage
            self.scheduler.post(SyncJob("corruption"))

    async def _after_sync(self) -> None:
        self.checkup.sync_ended()
        if self.engine.state.embedding_error:
            await self._switch_to_fallback()

    async def _switch_to_fallback(self) -> None:
        """Spec §3.7 step 7: embedding failed during a sync and a fallback is configured — use it."""
        fallback = self.settings.fallback
        current = self.engine.provider
        if self._fallback_factory is None or current is None or self.engine.fallback_from is not None:
            return
        if fallback in ("none", current.id):
            return
        try:
            provider = await self._fallback_factory(self.agent, fallback)
        except MemorydError as exc:
            log.warning("fallback embedding provider unavailable", agent=self.agent.id, error=str(exc))
            return
        reason = self.engine.state.embedding_error or "embedding failed"
        log.warning("switching to the fallback embedding provider", agent=self.agent.id, fallback=fallback)
        self.engine.fallback_from = current.id
        self.engine.provider_unavailable_reason = reason
        self.engine.provider = provider
        self.engine.state.embedding_error = None
        self.scheduler.post(SyncJob("fallback", force=True))

    # ------------------------------------------------------------------ inputs

    def files_changed(self, count: int = 1, notes: tuple[Path, ...] = ()) -> None:
        """The watcher saw memory files change: `notes` names them when a sync of those alone will do."""
        if self.qmd is not None:
            self.qmd.files_changed()
        self.scheduler.files_changed(count, notes)

    def transcript_updated(self, path: Path) -> None:
        """A transcript grew (watcher or client event): synced at a delta threshold or when it goes quiet."""
        self.scheduler.transcript_updated(path)
        if self.qmd is not None:
            self.qmd.files_changed()

    async def request_sync(
        self, reason: str, *, force: bool = False, session_files: tuple[Path, ...] = ()
    ) -> SyncReport:
        """Sync now and wait for the report: everything, or only `session_files` (no debounce)."""
        job = await self.scheduler.enqueue(SyncJob(reason, force=force, session_files=session_files))
        if self.qmd is not None:
            await self.qmd.sync(reason, force=force)
        return await self.scheduler.report(job)

    async def write(self, text: str, *, target: Target, heading: str | None) -> SaveReport:
        """Append an entry (`memory_write`), then sync that one file before answering: searchable on return."""
        written, filed_under = await save(self.agent, text, target=target, heading=heading)
        job = await self.scheduler.enqueue(SyncJob("write", memory_files=(written.abs_path,)))
        if self.qmd is not None:
            self.qmd.files_changed()
            await self.qmd.sync("write")
        try:
            await self.scheduler.report(job)
        except MemorydError as exc:
            log.warning("entry saved but not indexed", agent=self.agent.id, path=written.path, error=str(exc))
            return SaveReport(written, target, filed_under, indexed=False, index_error=str(exc))
        return SaveReport(written, target, filed_under, indexed=True)

    @property
    def queue_depth(self) -> int:
        return self.scheduler.queue_depth

    # ------------------------------------------------------------------ queries

    async def search(
        self,
        query: str,
        *,
        max_results: int | None,
        min_score: float | None,
        corpus: str,
        wait_fresh_ms: int | None,
        session_key: str | None = None,
    ) -> SearchResponse:
        """Search through QMD when it is the agent's backend (it falls back to the builtin index itself),
        then add citations per the agent's `citations` setting."""
        request = SearchRequest(
            query,
            max_results=max_results,
            min_score=min_score,
            corpus=corpus,
            wait_fresh_ms=wait_fresh_ms,
            session_key=session_key,
        )
        self.scheduler.session_started(session_key)
        resp = await self.qmd.search(request) if self.qmd is not None else await self._builtin_search(request)
        return cite(resp, self.agent.settings.citations, session_key)

    async def _builtin_search(self, request: SearchRequest) -> SearchResponse:
        scheduler = self.scheduler
        if not scheduler.first_sync.is_set() and await self.engine.is_empty():
            with anyio.move_on_after(BOOTSTRAP_WAIT_S):  # bootstrap: nothing to answer from yet
                await _first(scheduler.first_sync, self.engine.keywords_ready)  # keywords written, vectors may follow
        if request.wait_fresh_ms:
            with anyio.move_on_after(request.wait_fresh_ms / 1000):
                await scheduler.wait_fresh()
        else:
            scheduler.search_found()
        try:
            resp = await self.engine.searcher.search(request)
        except CorruptDatabaseError:
            self._rebuild_if_damaged()
            raise CorruptDatabaseError(self.engine.integrity.message()) from None
        self._rebuild_if_damaged()  # another reader may have met damage this one did not
        resp = self.engine.indexer.retention.mark(resp)
        indexing = self.engine.state.tracker.indexing()
        return dataclasses.replace(resp, freshness=scheduler.freshness(resp.freshness), indexing=indexing)

    async def forget(self, what: Forget) -> dict[str, object]:
        """`memoryd/forget`: delete retained transcripts for good (between syncs, as the engine runs them)."""
        return await self.engine.forget(what)

    async def get(self, path: str, *, from_line: int | None, lines: int | None) -> FileSlice:
        return await anyio.to_thread.run_sync(lambda: self.engine.read_file(path, from_line=from_line, lines=lines))

    async def status(self, *, deep: bool = False) -> dict[str, object]:
        """Status; `deep` also probes: an embedding round trip and a query of each vector store of the
        builtin index (which serves QMD's fallback too), and QMD's own doctor when QMD is the backend."""
        if self.qmd is None:
            st = await self._builtin_status()
        else:
            st = await self.qmd.status()
            if deep:
                st["qmdDoctor"] = await self.qmd.doctor()
        if deep:
            st.update(await self.engine.searcher.probe())
        return st

    async def _builtin_status(self) -> dict[str, object]:
        st = await anyio.to_thread.run_sync(self.engine.status)
        self._rebuild_if_damaged()
        scheduler = self.scheduler
        st["watch"] = {"mode": self.watch_mode, "error": self.watch_error}
        st["queueDepth"] = scheduler.queue_depth
        st["syncing"] = scheduler.syncing
        st["pendingTranscripts"] = scheduler.pending_transcripts()
        fresh = scheduler.freshness(self.engine.freshness())
        st["dirty"], st["pending"] = fresh["dirty"], fresh["pending"]
        embedding = st.get("embedding")
        if isinstance(embedding, dict):
            at = scheduler.next_retry_at
            embedding["nextRetryAt"] = None if at is None else iso(int(at * 1000))
        return st

    async def aclose(self) -> None:
        """Close the mailbox: the consumer finishes what is queued and stops."""
        await self.scheduler.aclose()


async def _first(*events: anyio.Event) -> None:
    """Return when any of `events` is set."""
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)


class _BuiltinView:
    """The builtin index as the QMD fallback sees it (search and status without the QMD layer)."""

    def __init__(self, actor: AgentIndex) -> None:
        self._actor = actor

    async def search(self, request: SearchRequest) -> SearchResponse:
        return await self._actor._builtin_search(request)

    async def status(self) -> dict[str, object]:
        return await self._actor._builtin_status()
