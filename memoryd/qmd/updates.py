"""`qmd update` and `qmd embed` for one agent: one at a time, coalesced, debounced, retried, backed off.

Requests come from the boot, the interval timers, the watcher, searches on a dirty index and
clients. One worker task runs them: a request made while an update runs joins it, a forced one
queues a single follow-up run; a non-forced request within `debounce_ms` of the last update is
skipped. Each run first refreshes the exported transcripts, then runs `qmd update` (boot runs retry
twice on timeouts and SQLITE_BUSY, after 500 and 1000 ms; corrupt collection metadata is repaired
once by re-creating the collections), then `qmd embed` when vectors are in use and it is due.

`qmd embed` loads models and may run for minutes, so it is serialised by an `EmbedGate` (one per
daemon, shared by all agents, plus a file lock against other processes) and backs off after a
failure: 60 s, doubling, at most an hour. Its failures never fail the update.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread
import structlog
from anyio.abc import TaskStatus

from memoryd.qmd.collections import CollectionManager
from memoryd.qmd.errors import QmdError, QmdTimeoutError
from memoryd.qmd.exporter import SessionExporter
from memoryd.qmd.parse import is_busy, needs_collection_rebuild
from memoryd.qmd.runner import QmdRunner
from memoryd.qmd.settings import QmdSettings
from memoryd.runtime.private import make_private_dirs

log = structlog.get_logger(__name__)

BOOT_ATTEMPTS = 3
BOOT_RETRY_BASE_S = 0.5
EMBED_BACKOFF_BASE_S = 60.0
EMBED_BACKOFF_MAX_S = 3600.0
EMBED_LOCK_MIN_WAIT_S = 15 * 60.0
EMBED_KILL_GRACE_S = 2.0
_LOCK_POLL_START_S = 0.25
_LOCK_POLL_MAX_S = 10.0


class EmbedGate:
    """Lets one `qmd embed` run at a time: in this daemon (an anyio lock) and on this machine (flock)."""

    def __init__(self, lock_path: Path) -> None:
        self.lock_path = lock_path
        self._lock = anyio.Lock()

    def _open(self) -> int:
        make_private_dirs(self.lock_path.parent)
        return os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)

    @contextlib.asynccontextmanager
    async def hold(self, wait_s: float) -> AsyncIterator[None]:
        async with self._lock:
            fd = await anyio.to_thread.run_sync(self._open)
            try:
                await self._acquire(fd, wait_s)
                yield
            finally:
                os.close(fd)  # closing the descriptor releases the lock

    async def _acquire(self, fd: int, wait_s: float) -> None:
        delay = _LOCK_POLL_START_S
        with anyio.move_on_after(wait_s):
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    await anyio.sleep(delay)
                    delay = min(_LOCK_POLL_MAX_S, delay * 1.2)
                    continue
                return
        raise QmdTimeoutError(f"qmd embed lock {self.lock_path} stayed busy for {int(wait_s)} s")


@dataclass(slots=True)
class UpdateRun:
    """One requested update; everyone who asked while it was pending waits on `done`."""

    reason: str
    force: bool
    done: anyio.Event = field(default_factory=anyio.Event)
    error: QmdError | None = None
    skipped: bool = False


@dataclass(slots=True)
class UpdateState:
    """What status and doctor show about updates and embeddings (times are epoch seconds)."""

    last_update_at: float | None = None
    last_update_ms: int | None = None
    last_update_reason: str | None = None
    last_update_error: str | None = None
    updates: int = 0
    last_embed_at: float | None = None
    last_embed_error: str | None = None
    embed_failures: int = 0
    embed_backoff_until: float | None = None
    embeds: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "lastUpdateAt": _iso(self.last_update_at),
            "lastUpdateMs": self.last_update_ms,
            "lastUpdateReason": self.last_update_reason,
            "lastUpdateError": self.last_update_error,
            "updates": self.updates,
            "lastEmbedAt": _iso(self.last_embed_at),
            "lastEmbedError": self.last_embed_error,
            "embedFailures": self.embed_failures,
            "embedBackoffUntil": _iso(self.embed_backoff_until),
            "embeds": self.embeds,
        }


def _iso(at: float | None) -> str | None:
    if at is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


class QmdUpdater:
    """Runs one agent's updates and embeddings from a single worker task (`run`)."""

    def __init__(
        self,
        runner: QmdRunner,
        settings: QmdSettings,
        collections: CollectionManager,
        *,
        gate: EmbedGate,
        exporter: SessionExporter | None = None,
        clock: Callable[[], float] = time.time,
        on_failure: Callable[[UpdateRun], None] | None = None,
    ) -> None:
        self.runner = runner
        self.settings = settings
        self.collections = collections
        self.exporter = exporter
        self.gate = gate
        self.clock = clock
        self.on_failure = on_failure
        self.state = UpdateState()
        self.dirty = True
        self.current: UpdateRun | None = None
        self._next: UpdateRun | None = None
        self._wakeup = anyio.Event()
        self._progress = anyio.Event()
        self._repaired = False

    @property
    def uses_vectors(self) -> bool:
        return self.settings.search_mode != "search"

    async def progress(self) -> None:
        """Wait until the next update starts or finishes (for status watchers and tests)."""
        await self._progress.wait()

    def _announce(self) -> None:
        self._progress.set()
        self._progress = anyio.Event()

    @property
    def pending(self) -> UpdateRun | None:
        """The running update, else the queued one."""
        return self.current or self._next

    # ------------------------------------------------------------------ requests

    def request(self, reason: str, *, force: bool = False) -> UpdateRun:
        """Ask for an update without waiting: join the running one, or queue (and merge into) the next."""
        if self.current is not None and not force:
            return self.current
        if self._next is None:
            self._next = UpdateRun(reason, force)
            self._wakeup.set()
        elif force:
            self._next.force = True
        return self._next

    async def update(self, reason: str, *, force: bool = False) -> UpdateRun:
        """Request an update and wait for it; raise its error."""
        run = self.request(reason, force=force)
        await run.done.wait()
        if run.error is not None:
            raise run.error
        return run

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._wakeup.wait()
            self._wakeup = anyio.Event()
            while self._next is not None:
                job, self._next = self._next, None
                self.current = job
                self._announce()
                try:
                    await self._execute(job)
                except QmdError as exc:
                    job.error = exc
                finally:
                    self.current = None
                    job.done.set()
                    self._announce()
                if job.error is not None and self.on_failure is not None:
                    self.on_failure(job)

    # ------------------------------------------------------------------ one run

    def _debounced(self) -> bool:
        last = self.state.last_update_at
        debounce_s = self.settings.update.debounce_ms / 1000
        return last is not None and debounce_s > 0 and self.clock() - last < debounce_s

    async def _execute(self, job: UpdateRun) -> None:
        if not job.force and self._debounced():
            job.skipped = True
            return
        started = time.monotonic()
        self.dirty = False  # changes arriving while this run works set it again
        try:
            await self.export_sessions()
            await self._update_with_retry(job.reason)
        except QmdError as exc:
            self.dirty = True
            self.state.last_update_error = str(exc)
            log.warning("qmd update failed", reason=job.reason, error=str(exc))
            raise
        if self._embed_due(job.force):
            await self._embed(job.reason)
        self.state.last_update_at = self.clock()
        self.state.last_update_ms = int((time.monotonic() - started) * 1000)
        self.state.last_update_reason = job.reason
        self.state.last_update_error = None
        self.state.updates += 1

    async def export_sessions(self) -> None:
        """Refresh the exported transcripts (in a worker thread); nothing to do without an exporter."""
        exporter = self.exporter
        if exporter is None:
            return
        try:
            await anyio.to_thread.run_sync(exporter.export)
        except OSError as exc:
            raise QmdError(f"exporting session transcripts failed: {exc}") from None

    async def _update_once(self) -> None:
        timeout_s = self.settings.update.update_timeout_ms / 1000
        await self.runner.run(["update"], timeout_s=timeout_s, discard_stdout=True, kill_grace_s=1.0)

    async def _update_with_retry(self, reason: str) -> None:
        attempts = BOOT_ATTEMPTS if reason == "boot" or reason.startswith("boot:") else 1
        for attempt in range(1, attempts + 1):
            try:
                await self._update_repairing()
            except QmdError as exc:
                retryable = isinstance(exc, QmdTimeoutError) or is_busy(exc.detail)
                if attempt >= attempts or not retryable:
                    raise
                await anyio.sleep(BOOT_RETRY_BASE_S * 2 ** (attempt - 1))
            else:
                return

    async def _update_repairing(self) -> None:
        try:
            await self._update_once()
        except QmdError as exc:
            if self._repaired or not needs_collection_rebuild(exc.detail):
                raise
            self._repaired = True
            log.warning("qmd update hit corrupt collection metadata; re-creating collections", error=str(exc))
            await self.collections.rebuild()
            await self._update_once()

    def _embed_due(self, force: bool) -> bool:
        if not self.uses_vectors:
            return False
        now = self.clock()
        if self.state.embed_backoff_until is not None and now < self.state.embed_backoff_until:
            return False
        interval_s = self.settings.update.embed_interval_ms / 1000
        last = self.state.last_embed_at
        return force or last is None or (interval_s > 0 and now - last > interval_s)

    async def _embed(self, reason: str) -> None:
        timeout_s = self.settings.update.embed_timeout_ms / 1000
        wait_s = max(EMBED_LOCK_MIN_WAIT_S, timeout_s * 6)
        try:
            async with self.gate.hold(wait_s):
                await self.runner.run(
                    ["embed"], timeout_s=timeout_s, discard_stdout=True, kill_grace_s=EMBED_KILL_GRACE_S
                )
        except QmdError as exc:
            self.state.embed_failures += 1
            delay = min(EMBED_BACKOFF_MAX_S, EMBED_BACKOFF_BASE_S * 2 ** (self.state.embed_failures - 1))
            self.state.embed_backoff_until = self.clock() + delay
            self.state.last_embed_error = str(exc)
            log.warning("qmd embed failed; backing off", reason=reason, error=str(exc), backoff_s=delay)
            return
        self.state.last_embed_at = self.clock()
        self.state.last_embed_error = None
        self.state.embed_failures = 0
        self.state.embed_backoff_until = None
        self.state.embeds += 1
