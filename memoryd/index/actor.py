"""AgentIndex: the actor that owns one agent's index inside the daemon.

It owns the engine (and so the database writer) and a mailbox. Watcher changes, transcript
events, interval ticks and client sync requests all become messages; the actor coalesces what
is queued (debouncing watcher bursts) and runs one sync at a time. Searches never wait for a
sync: a search on a dirty index starts a background sync and answers from the index as it is,
unless the caller asked to wait (`wait_fresh_ms`) or the index has never been built.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread
import structlog
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from memoryd.config import AgentConfig
from memoryd.embeddings.base import EmbeddingProvider
from memoryd.embeddings.select import Selection
from memoryd.errors import DaemonError, MemorydError
from memoryd.index.engine import IndexEngine
from memoryd.index.sessions import SessionDeltaTracker
from memoryd.index.state import SyncReport
from memoryd.isotime import iso
from memoryd.qmd.backend import QmdBackend
from memoryd.qmd.fallback import FallbackSearcher
from memoryd.qmd.updates import EmbedGate
from memoryd.search.request import SearchRequest, SearchResponse
from memoryd.sources.discovery import list_session_files
from memoryd.sources.readfile import FileSlice

log = structlog.get_logger(__name__)

MAILBOX_SIZE = 1024


@dataclass(slots=True)
class _SyncJob:
    """A request to sync, possibly with someone waiting for its report."""

    reason: str
    force: bool = False
    session_files: tuple[Path, ...] = ()
    watch: bool = False
    done: anyio.Event | None = None
    report: list[SyncReport | BaseException] = field(default_factory=list)


ProviderFactory = Callable[[AgentConfig], Awaitable[Selection]]
FallbackFactory = Callable[[AgentConfig, str], Awaitable[EmbeddingProvider]]
BOOTSTRAP_WAIT_S = 10.0
"""How long a first search waits for the very first index build before answering with what exists."""
EMBEDDING_RETRY_MAX_S = 900.0
"""The longest wait between two retries of files left without vectors (the delay doubles up to this)."""


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
        send, recv = anyio.create_memory_object_stream[_SyncJob](MAILBOX_SIZE)
        self._send: MemoryObjectSendStream[_SyncJob] = send
        self._recv: MemoryObjectReceiveStream[_SyncJob] = recv
        self._synced = anyio.Event()
        self._first_sync = anyio.Event()
        self._sessions = SessionDeltaTracker(
            self.settings.sync.sessions.delta_bytes, self.settings.sync.sessions.delta_messages
        )
        self._pending_transcripts: set[Path] = set()
        self._transcript_wakeup = anyio.Event()
        self._syncing = False
        self._embedding_failed = anyio.Event()
        self._retry_delay_s = self.settings.sync.embedding_retry_ms / 1000
        self._next_retry_at: float | None = None
        self.started_at = time.time()
        self.watch_mode = "off"
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
                tg.start_soon(self._consume)
                tg.start_soon(self._transcript_loop)
                if self.settings.sync.interval_minutes > 0:
                    tg.start_soon(self._interval_loop)
                if self.settings.sync.embedding_retry_ms > 0:
                    tg.start_soon(self._embedding_retry_loop)
                if self._provider_factory is not None:
                    tg.start_soon(self._load_provider)
                self._post(_SyncJob("startup"))
                task_status.started()
        finally:
            self._send.close()
            self._recv.close()
            with anyio.CancelScope(shield=True):
                await self.engine.aclose()

    async def _load_provider(self) -> None:
        """Pick the embedding provider in the background: start-up never waits for a model to load.

        Syncs wait for this (a loading model must not look like "no provider" and trigger a
        keyword-only rebuild); searches do not — they run keyword-only until the model is ready.
        """
        assert self._provider_factory is not None
        self.engine.state.provider_state = "loading"
        try:
            selection = await self._provider_factory(self.agent)
        except MemorydError as exc:
            selection = Selection(None, str(exc))
        self.engine.provider = selection.provider
        self.engine.provider_unavailable_reason = selection.reason
        self.engine.fallback_from = selection.fallback_from
        self.engine.state.provider_state = "ready" if selection.provider is not None else "unavailable"
        self._provider_resolved.set()

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
        self._post(_SyncJob("fallback", force=True))

    def _post(self, job: _SyncJob) -> None:
        """Queue a fire-and-forget sync; a full mailbox already holds a sync that will cover it."""
        try:
            self._send.send_nowait(job)
        except anyio.WouldBlock:
            log.warning("mailbox full; change coalesced into the next sync", agent=self.agent.id)
            self.engine.mark_dirty()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.debug("agent index stopped; change dropped", agent=self.agent.id)

    # ------------------------------------------------------------------ inputs

    def files_changed(self, count: int = 1) -> None:
        """The watcher saw memory files change."""
        for _ in range(count):
            self.engine.mark_dirty()
        if self.qmd is not None:
            self.qmd.files_changed()
        if self.settings.sync.watch:
            self._post(_SyncJob("watch", watch=True))

    def transcript_updated(self, path: Path) -> None:
        """A transcript grew (watcher or client event); counted against the delta thresholds."""
        self._pending_transcripts.add(path)
        self._transcript_wakeup.set()
        if self.qmd is not None:
            self.qmd.files_changed()

    async def request_sync(self, reason: str, *, force: bool = False) -> SyncReport:
        job = _SyncJob(reason, force=force, done=anyio.Event())
        try:
            await self._send.send(job)  # waits for room: this caller wants the report
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise DaemonError(f"agent {self.agent.id!r} is stopping") from None
        if self.qmd is not None:
            await self.qmd.sync(reason, force=force)
        assert job.done is not None
        await job.done.wait()
        result = job.report[0]
        if isinstance(result, BaseException):
            raise result
        return result

    @property
    def queue_depth(self) -> int:
        return self._recv.statistics().current_buffer_used

    # ------------------------------------------------------------------ loops

    async def _consume(self) -> None:
        debounce = self.settings.sync.watch_debounce_ms / 1000
        await self._provider_resolved.wait()
        async with self._recv:
            async for first in self._recv:
                jobs = [first]
                if first.watch and first.done is None:
                    # Trailing debounce: wait until the watcher has been quiet for `debounce`.
                    while True:
                        with anyio.move_on_after(debounce):
                            jobs.append(await self._recv.receive())
                            if jobs[-1].done is not None:
                                break
                            continue
                        break
                while True:
                    try:
                        jobs.append(self._recv.receive_nowait())
                    except anyio.WouldBlock:
                        break
                await self._run_jobs(jobs)

    async def _run_jobs(self, jobs: list[_SyncJob]) -> None:
        force = any(j.force for j in jobs)
        targeted = [j for j in jobs if j.session_files]
        reason = next((j.reason for j in jobs if j.done is not None), jobs[0].reason)
        session_files: tuple[Path, ...] = ()
        if len(targeted) == len(jobs) and not force:
            session_files = tuple(dict.fromkeys(p for j in targeted for p in j.session_files))
        self._syncing = True
        try:
            report: SyncReport | BaseException = await self.engine.sync(
                reason, force=force, session_files=session_files
            )
        except MemorydError as exc:
            report = exc
        except Exception as exc:  # a bug: keep the actor alive, tell the waiters, log the traceback
            log.exception("sync crashed", agent=self.agent.id)
            report = MemorydError(f"internal error during sync: {exc}")
        finally:
            self._syncing = False
        if not isinstance(report, BaseException):
            await anyio.to_thread.run_sync(self._baseline_sessions)
        for job in jobs:
            if job.done is not None:
                job.report.append(report)
                job.done.set()
        self._first_sync.set()
        self._synced.set()
        self._synced = anyio.Event()
        if self.engine.state.embedding_error:
            await self._switch_to_fallback()
        if self.engine.state.embedding_error:
            self._embedding_failed.set()
        elif not isinstance(report, BaseException):
            self._retry_delay_s = self.settings.sync.embedding_retry_ms / 1000

    def _baseline_sessions(self) -> None:
        for f in list_session_files(self.agent.sessions_dir):
            self._sessions.baseline(f.abs_path)

    async def _transcript_loop(self) -> None:
        while True:
            await self._transcript_wakeup.wait()
            self._transcript_wakeup = anyio.Event()
            await anyio.sleep(self.settings.sync.sessions.debounce_ms / 1000)
            pending, self._pending_transcripts = self._pending_transcripts, set()
            qualifying = await anyio.to_thread.run_sync(self._qualifying, pending)
            if qualifying:
                self.engine.mark_dirty(sessions=[str(p) for p in qualifying])
                self._post(_SyncJob("session-delta", session_files=tuple(qualifying)))

    def _qualifying(self, pending: set[Path]) -> list[Path]:
        return [p for p in sorted(pending) if self._sessions.observe(p)]

    async def _embedding_retry_loop(self) -> None:
        """Files a sync indexed without vectors (the provider failed) are embedded by a later sync; without
        this, that sync would wait for the next file change. Backoff doubles from `embedding_retry_ms` up to
        EMBEDDING_RETRY_MAX_S and starts over once a sync embeds again."""
        while True:
            await self._embedding_failed.wait()
            self._next_retry_at = time.time() + self._retry_delay_s
            await anyio.sleep(self._retry_delay_s)
            self._next_retry_at = None
            self._embedding_failed = anyio.Event()  # set again by the next sync that fails to embed
            if self.engine.state.embedding_error:  # no other sync succeeded meanwhile
                self._retry_delay_s = min(self._retry_delay_s * 2, EMBEDDING_RETRY_MAX_S)
                self._post(_SyncJob("embedding-retry"))

    async def _interval_loop(self) -> None:
        while True:
            await anyio.sleep(self.settings.sync.interval_minutes * 60)
            self._post(_SyncJob("interval"))

    # ------------------------------------------------------------------ queries

    async def search(
        self,
        query: str,
        *,
        max_results: int | None,
        min_score: float | None,
        corpus: str,
        wait_fresh_ms: int | None,
    ) -> SearchResponse:
        """Search through QMD when it is the agent's backend (it falls back to the builtin index itself)."""
        request = SearchRequest(
            query, max_results=max_results, min_score=min_score, corpus=corpus, wait_fresh_ms=wait_fresh_ms
        )
        if self.qmd is not None:
            return await self.qmd.search(request)
        return await self._builtin_search(request)

    async def _builtin_search(self, request: SearchRequest) -> SearchResponse:
        wait_fresh_ms = request.wait_fresh_ms
        if not self._first_sync.is_set() and await self.engine.is_empty():
            with anyio.move_on_after(BOOTSTRAP_WAIT_S):
                await self._first_sync.wait()  # bootstrap: nothing to answer from yet
        if wait_fresh_ms:
            with anyio.move_on_after(wait_fresh_ms / 1000):
                while self._stale():
                    if not self._syncing:
                        self._post(_SyncJob("search"))
                    await self._synced.wait()
        elif self._stale() and self.settings.sync.on_search and not self._syncing:
            self._post(_SyncJob("search"))
        return await self.engine.searcher.search(request)

    def _stale(self) -> bool:
        state = self.engine.state
        return state.dirty or bool(state.dirty_sessions) or state.pending > 0 or bool(self._pending_transcripts)

    async def get(self, path: str, *, from_line: int | None, lines: int | None) -> FileSlice:
        return await anyio.to_thread.run_sync(lambda: self.engine.read_file(path, from_line=from_line, lines=lines))

    async def status(self, *, deep: bool = False) -> dict[str, object]:
        if self.qmd is None:
            return await self._builtin_status()
        st = await self.qmd.status()
        if deep:
            st["qmdDoctor"] = await self.qmd.doctor()
        return st

    async def _builtin_status(self) -> dict[str, object]:
        st = await anyio.to_thread.run_sync(self.engine.status)
        st["watch"] = {"mode": self.watch_mode, "error": self.watch_error}
        st["queueDepth"] = self.queue_depth
        st["syncing"] = self._syncing
        st["pendingTranscripts"] = len(self._pending_transcripts)
        embedding = st.get("embedding")
        if isinstance(embedding, dict):
            at = self._next_retry_at
            embedding["nextRetryAt"] = None if at is None else iso(int(at * 1000))
        return st

    async def aclose(self) -> None:
        """Close the mailbox: the consumer finishes what is queued and stops."""
        with contextlib.suppress(anyio.ClosedResourceError):
            await self._send.aclose()


class _BuiltinView:
    """The builtin index as the QMD fallback sees it (search and status without the QMD layer)."""

    def __init__(self, actor: AgentIndex) -> None:
        self._actor = actor

    async def search(self, request: SearchRequest) -> SearchResponse:
        return await self._actor._builtin_search(request)

    async def status(self) -> dict[str, object]:
        return await self._actor._builtin_status()
