"""When one agent's index syncs: a mailbox of sync requests, drained one sync at a time.

Watcher changes, transcript events, interval ticks, embedding retries and client requests all
become jobs; what is queued when a sync starts is coalesced into it. Watcher bursts are
debounced: only file events extend the quiet time (`sync.watch_debounce_ms`), never by more than
`sync.watch_max_wait_ms` in all, and any other job (a search that found the index dirty, a client,
the interval) ends the wait at once — so searching, however often, never holds indexing back.
Transcripts sync at a delta threshold while they grow, and with whatever is left once they go
quiet (`sync.sessions.debounce_ms`); until then they count as pending.
"""

from __future__ import annotations

import contextlib
import os
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
from memoryd.errors import DaemonError, MemorydError, describe, first_error
from memoryd.index.engine import IndexEngine
from memoryd.index.sessions import SessionDeltaTracker, TranscriptFeed
from memoryd.index.shortage import RESOURCE_RETRY_MAX_S, RESOURCE_RETRY_START_S, short_of_resources
from memoryd.index.state import SyncReport
from memoryd.sources.discovery import list_all_session_files
from memoryd.sources.session_roots import SessionRoot, transcript_index_path

log = structlog.get_logger(__name__)

MAILBOX_SIZE = 1024
EMBEDDING_RETRY_MAX_S = 900.0
"""The longest wait between two retries of files left without vectors (the delay doubles up to this)."""


MAX_CONVERSATIONS = 10_000
"""Session keys remembered for `sync.on_session_start`."""


@dataclass(slots=True)
class SyncJob:
    """A request to sync, possibly with someone waiting for its report."""

    reason: str
    force: bool = False
    session_files: tuple[Path, ...] = ()
    memory_files: tuple[Path, ...] = ()
    watch: bool = False
    done: anyio.Event | None = None
    report: list[SyncReport | BaseException] = field(default_factory=list)


class SyncScheduler:
    """Decides when the engine syncs; `after_sync` runs after every sync (the actor's fallback switch)."""

    def __init__(
        self,
        agent: AgentConfig,
        engine: IndexEngine,
        *,
        ready: anyio.Event,
        after_sync: Callable[[], Awaitable[None]],
    ) -> None:
        self.agent = agent
        self.settings = agent.settings
        self.engine = engine
        self._ready = ready  # syncs wait for the embedding provider to be known
        self._after_sync = after_sync
        send, recv = anyio.create_memory_object_stream[SyncJob](MAILBOX_SIZE)
        self._send: MemoryObjectSendStream[SyncJob] = send
        self._recv: MemoryObjectReceiveStream[SyncJob] = recv
        self.syncing = False
        self.sync_started = anyio.Event()  # set as each sync starts, then replaced (an idle-time check yields)
        self.first_sync = anyio.Event()
        self._synced = anyio.Event()
        self._last_result: SyncReport | BaseException | None = None
        self._search_sync_posted = False
        self._conversations: set[str] = set()  # session keys whose first search started a sync
        sessions = self.settings.sync.sessions
        self._sessions = SessionDeltaTracker(sessions.delta_bytes, sessions.delta_messages)
        self._transcripts = TranscriptFeed(sessions.debounce_ms / 1000)
        self._transcript_wakeup = anyio.Event()
        self._embedding_failed = anyio.Event()
        self._retry_delay_s = self.settings.sync.embedding_retry_ms / 1000
        self.next_retry_at: float | None = None
        self._short_of_resources = anyio.Event()
        self._resource_delay_s = RESOURCE_RETRY_START_S

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._consume)
                tg.start_soon(self._transcript_loop)
                if self.settings.sync.interval_minutes > 0:
                    tg.start_soon(self._interval_loop)
                if self.settings.sync.embedding_retry_ms > 0:
                    tg.start_soon(self._embedding_retry_loop)
                tg.start_soon(self._resource_retry_loop)
                self.post(SyncJob("startup"))
                task_status.started()
        finally:
            self._send.close()
            self._recv.close()

    async def aclose(self) -> None:
        """Close the mailbox: the consumer finishes what is queued and stops."""
        with contextlib.suppress(anyio.ClosedResourceError):
            await self._send.aclose()

    # ------------------------------------------------------------------ inputs

    def post(self, job: SyncJob) -> None:
        """Queue a fire-and-forget sync; a full mailbox already holds a sync that will cover it."""
        try:
            self._send.send_nowait(job)
        except anyio.WouldBlock:
            log.warning("mailbox full; change coalesced into the next sync", agent=self.agent.id)
            self.engine.mark_dirty()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.debug("agent index stopped; change dropped", agent=self.agent.id)

    def files_changed(self, count: int, notes: tuple[Path, ...] = ()) -> None:
        """Memory files changed: named workspace `notes` are synced alone, anything else by a delta sync."""
        self.engine.mark_dirty(notes=notes, count=count)
        if self.settings.sync.watch:
            self.post(SyncJob("watch", watch=True, memory_files=notes))

    def transcript_updated(self, path: Path) -> None:
        self._transcripts.event(path, anyio.current_time())
        self._transcript_wakeup.set()

    async def enqueue(self, job: SyncJob) -> SyncJob:
        """Queue a sync someone waits for, after what is queued (`report` gives its outcome). A job naming
        `memory_files` (a write) or `session_files` (a session-end hook) syncs only those, coalesced with
        other targeted jobs, or covered by a full delta sync queued beside it."""
        job.done = anyio.Event()
        try:
            await self._send.send(job)  # waits for room: this caller wants the report
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise DaemonError(f"agent {self.agent.id!r} is stopping") from None
        return job

    @staticmethod
    async def report(job: SyncJob) -> SyncReport:
        """The report of an enqueued sync; a failed sync raises."""
        assert job.done is not None
        await job.done.wait()
        result = job.report[0]
        if isinstance(result, BaseException):
            raise result
        return result

    @property
    def queue_depth(self) -> int:
        return self._recv.statistics().current_buffer_used

    # ------------------------------------------------------------------ what searches ask for

    def search_found(self) -> None:
        """A search is about to read the index: a dirty one gets a background sync (sync.on_search)."""
        if self.settings.sync.on_search and self._sync_wanted():
            self._post_search_sync()

    def session_started(self, session_key: str | None) -> bool:
        """The first search of a conversation (a session key not seen before) starts a background sync,
        as OpenClaw's `sync.onSessionStart` does once per key; True when it did."""
        if not session_key or not self.settings.sync.on_session_start or session_key in self._conversations:
            return False
        if len(self._conversations) >= MAX_CONVERSATIONS:
            self._conversations.clear()  # bounded memory: a forgotten key costs one more cheap delta sync
        self._conversations.add(session_key)
        self.post(SyncJob("session-start"))
        return True

    async def wait_fresh(self) -> None:
        """Until every change made before this call is indexed, or a sync fails (the caller bounds the wait).

        The watcher reports a change some 0.1 s after it is written (never, without a watcher): a stat
        pass of the sources first finds what it has not reported yet.
        """
        asked = anyio.current_time()
        try:
            changed = bool(await anyio.to_thread.run_sync(self.engine.drift))
        except MemorydError:
            changed = True  # the index cannot be read now: a sync will say why
        if changed:
            self.engine.mark_dirty()
        while self._sync_wanted() or self._transcripts.seen_before(asked):
            synced = self._synced
            self._post_search_sync()
            await synced.wait()
            if isinstance(self._last_result, BaseException):
                return  # the sync failed: answer from the index as it is (freshness says dirty)

    def freshness(self, engine_view: dict[str, object]) -> dict[str, object]:
        """The engine's freshness plus the transcript growth held back for its thresholds or quiet."""
        waiting = len(self._transcripts)
        pending = engine_view.get("pending")
        return engine_view | {
            "pending": (pending if isinstance(pending, int) else 0) + waiting,
            "dirty": bool(engine_view.get("dirty")) or waiting > 0,
        }

    def pending_transcripts(self) -> int:
        roots = self.agent.session_roots
        return len({_index_path(roots, p) for p in self._transcripts.paths()} | self.engine.state.dirty_sessions)

    def _post_search_sync(self) -> None:
        """One request on behalf of searches is enough until a sync starts; of the notes the watcher named
        alone when nothing else is dirty (a delta sync of the tree per saved note: 0.3 s at 10,000 notes)."""
        if not self._search_sync_posted and not self.syncing:
            self._search_sync_posted = True
            state = self.engine.state
            named = () if state.dirty or state.dirty_sessions else tuple(sorted(state.dirty_notes))
            self.post(SyncJob("search", memory_files=named))

    def _sync_wanted(self) -> bool:
        """Changes a search asks a sync for (transcript growth waits for its threshold or its quiet)."""
        state = self.engine.state
        return state.is_dirty or state.pending > 0

    # ------------------------------------------------------------------ loops

    async def _consume(self) -> None:
        await self._ready.wait()
        async with self._recv:
            async for first in self._recv:
                jobs = [first]
                if first.watch and first.done is None:
                    await self._debounce(jobs)
                while True:
                    try:
                        jobs.append(self._recv.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                await self._run_jobs(jobs)

    async def _debounce(self, jobs: list[SyncJob]) -> None:
        """Wait until the watcher has been quiet for `watch_debounce_ms`, or `watch_max_wait_ms` passed since
        the first event; a job that is not a file event ends the wait."""
        sync = self.settings.sync
        quiet = sync.watch_debounce_ms / 1000
        now = anyio.current_time()
        cap = now + sync.watch_max_wait_ms / 1000
        deadline = min(now + quiet, cap)
        while (remaining := deadline - anyio.current_time()) > 0:
            job: SyncJob | None = None
            with anyio.move_on_after(remaining):
                try:
                    job = await self._recv.receive()
                except anyio.EndOfStream:
                    return
            if job is None:
                return  # quiet for long enough
            jobs.append(job)
            if not job.watch or job.done is not None:
                return  # somebody asked for this sync: never make them wait
            deadline = min(anyio.current_time() + quiet, cap)

    async def _run_jobs(self, jobs: list[SyncJob]) -> None:
        force = any(j.force for j in jobs)
        reason = next((j.reason for j in jobs if j.done is not None), jobs[0].reason)
        narrow = not force and all(j.session_files or j.memory_files for j in jobs)
        session_files: tuple[Path, ...] = ()
        memory_files: tuple[Path, ...] = ()
        if narrow:
            session_files = tuple(dict.fromkeys(p for j in jobs for p in j.session_files))
            memory_files = tuple(dict.fromkeys(p for j in jobs for p in j.memory_files))
        self.syncing = True
        self.sync_started.set()
        self.sync_started = anyio.Event()
        self._search_sync_posted = False
        started = anyio.current_time()
        try:
            waiting = lambda: self.queue_depth > 0  # noqa: E731  (vectors wait while a queued sync writes keywords)
            report: SyncReport | BaseException = await self.engine.sync(
                reason, force=force, session_files=session_files, memory_files=memory_files, interrupted=waiting
            )
        except MemorydError as exc:
            report = exc
        except Exception as exc:  # a task group's wrapping, or a bug: keep the actor alive, tell the waiters
            inner = first_error(exc)
            if isinstance(inner, MemorydError):
                report = inner
            else:
                log.exception("sync crashed", agent=self.agent.id, error=describe(exc))
                report = MemorydError(f"internal error during sync: {describe(exc)}")
        finally:
            self.syncing = False
        if not isinstance(report, BaseException) and (session_files or not narrow):
            # A sync of every transcript, or of the named ones: their growth counts from here.
            synced = session_files if narrow else None
            await anyio.to_thread.run_sync(self._baseline_sessions, synced)
            self._transcripts.indexed(synced, since=started)
        self._last_result = report
        for job in jobs:
            if job.done is not None:
                job.report.append(report)
                job.done.set()
        self.first_sync.set()
        self._synced.set()
        self._synced = anyio.Event()
        await self._after_sync()
        if short_of_resources(report):
            self._short_of_resources.set()
        else:
            self._resource_delay_s = RESOURCE_RETRY_START_S
        if self.engine.state.embedding_error:
            self._embedding_failed.set()
        elif not isinstance(report, BaseException):
            self._retry_delay_s = self.settings.sync.embedding_retry_ms / 1000

    def _baseline_sessions(self, synced: tuple[Path, ...] | None) -> None:
        """Count growth from here on for the transcripts the sync indexed (None: every one)."""
        paths = synced if synced is not None else [f.abs_path for f in list_all_session_files(self.agent.session_roots)]
        for path in paths:
            self._sessions.baseline(path)

    async def _transcript_loop(self) -> None:
        """Sync transcripts that crossed a delta threshold, and those that went quiet with growth left."""
        feed = self._transcripts
        while True:
            await self._transcript_wakeup.wait()
            self._transcript_wakeup = anyio.Event()
            check_at = feed.next_check()
            if check_at is None:
                continue
            await anyio.sleep(max(0.0, check_at - anyio.current_time()))
            snapshot = feed.snapshot()
            quiet = feed.quiet(snapshot, anyio.current_time())
            try:
                due, gone = await anyio.to_thread.run_sync(self._due_transcripts, sorted(snapshot), quiet)
            except MemorydError as exc:  # the index cannot be read: let a sync try, and report
                log.warning("cannot compare transcripts with the index", agent=self.agent.id, error=str(exc))
                due, gone = quiet, False
            feed.settle(snapshot, quiet)
            if gone:
                self.engine.mark_dirty()  # a deleted transcript's rows go in a full delta sync
                self.post(SyncJob("session-delta"))
            if due:
                self.engine.mark_dirty(sessions=[_index_path(self.agent.session_roots, p) for p in due])
                self.post(SyncJob("session-delta", session_files=tuple(due)))
            if len(feed):
                self._transcript_wakeup.set()  # still growing: look again once it may have gone quiet

    def _due_transcripts(self, grown: list[Path], quiet: list[Path]) -> tuple[list[Path], bool]:
        """Transcripts past a delta threshold or quiet with growth the index lacks; whether a quiet one is gone."""
        due = [p for p in grown if self._sessions.observe(p)]
        gone = False
        if quiet:
            differ = set(self.engine.drift(quiet))
            roots = self.agent.session_roots
            due.extend(p for p in quiet if p not in due and _index_path(roots, p) in differ)
            gone = any(not os.path.lexists(p) for p in quiet)
        return due, gone

    async def _embedding_retry_loop(self) -> None:
        """Files a sync indexed without vectors (the provider failed) are embedded by a later sync; without
        this, that sync would wait for the next file change. Backoff doubles from `embedding_retry_ms` up to
        EMBEDDING_RETRY_MAX_S and starts over once a sync embeds again."""
        while True:
            await self._embedding_failed.wait()
            self.next_retry_at = time.time() + self._retry_delay_s
            await anyio.sleep(self._retry_delay_s)
            self.next_retry_at = None
            self._embedding_failed = anyio.Event()  # set again by the next sync that fails to embed
            if self.engine.state.embedding_error:  # no other sync succeeded meanwhile
                self._retry_delay_s = min(self._retry_delay_s * 2, EMBEDDING_RETRY_MAX_S)
                self.post(SyncJob("embedding-retry"))

    async def _resource_retry_loop(self) -> None:
        """Sync again after a sync that ran out of descriptors or memory (see RESOURCE_RETRY_MAX_S)."""
        while True:
            await self._short_of_resources.wait()
            self._short_of_resources = anyio.Event()
            log.warning(
                "sync ran short of descriptors or memory; retrying", agent=self.agent.id, in_s=self._resource_delay_s
            )
            await anyio.sleep(self._resource_delay_s)
            self._resource_delay_s = min(self._resource_delay_s * 2, RESOURCE_RETRY_MAX_S)
            self.engine.mark_dirty()
            self.post(SyncJob("resource-retry"))

    async def _interval_loop(self) -> None:
        while True:
            await anyio.sleep(self.settings.sync.interval_minutes * 60)
            self.post(SyncJob("interval"))


def _index_path(roots: tuple[SessionRoot, ...], transcript: Path) -> str:
    """How the index names a transcript (as `engine.drift` and the dirty set do)."""
    return transcript_index_path(roots, transcript) or f"sessions/{transcript.name}"
