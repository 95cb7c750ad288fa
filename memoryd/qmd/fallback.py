"""Serve an agent from QMD while it works, from the builtin index the moment it does not (OpenClaw's
`FallbackMemoryManager`, spec §4.5 "Availability & fallback").

When the `qmd` binary is missing, or QMD's init, an update or a search fails, the failing search is
answered by the builtin index at once, and so is every later one, each saying
`fallback: {from: "qmd", reason}`. QMD is not retried on every call: after a failure the searcher
waits (`retry_ms`, doubling up to `retry_max_ms`), then builds a fresh backend (probe, collections,
boot update) in the background and switches back when it is up.

Unlike OpenClaw, which creates the builtin manager only after QMD fails, memoryd keeps the builtin
index running beside QMD, so the first fallback answer costs one builtin search, not an index build.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Protocol

import anyio
import structlog
from anyio.abc import TaskStatus

from memoryd.qmd.backend import QmdBackend
from memoryd.qmd.errors import QmdError
from memoryd.qmd.updates import UpdateRun
from memoryd.search.request import Answers, SearchRequest, SearchResponse

log = structlog.get_logger(__name__)

STARTING = "QMD is starting"


class Builtin(Answers, Protocol):
    """What the fallback needs from the builtin index: it answers searches and reports its status."""

    async def status(self) -> dict[str, object]: ...


BackendFactory = Callable[[], QmdBackend]


class FallbackSearcher:
    """QMD first, the builtin index when QMD fails; run `run()` in the agent's task group."""

    def __init__(self, make_backend: BackendFactory, builtin: Builtin, *, retry_s: float, retry_max_s: float) -> None:
        self._make_backend = make_backend
        self.builtin = builtin
        self.retry_s = retry_s
        self.retry_max_s = max(retry_s, retry_max_s)
        self.active: QmdBackend | None = None
        self.last: QmdBackend | None = None
        self.reason: str | None = STARTING
        self.failures = 0
        self.recoveries = 0
        self.last_failure_at: float | None = None
        self.next_retry_at: float | None = None
        self._changed = anyio.Event()

    # ------------------------------------------------------------------ lifecycle

    async def changed(self) -> None:
        """Wait for the next switch between QMD and the builtin index (for status watchers and tests)."""
        await self._changed.wait()

    def _announce(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start QMD; on failure fall back, wait out the backoff and try again, forever."""
        task_status.started()  # the builtin index answers while QMD comes up
        delay = self.retry_s
        while True:
            backend = self._make_backend()
            self.last = backend
            try:
                await backend.open()
            except QmdError as exc:
                self._fell_back(str(exc))
            else:
                async with anyio.create_task_group() as tg:
                    await tg.start(backend.run)
                    if self.failures:
                        self.recoveries += 1
                    self.active, self.reason, self.next_retry_at = backend, None, None
                    delay = self.retry_s
                    log.info("qmd serves searches", agent=backend.agent.id, version=backend.version)
                    self._announce()
                    await backend.failed.wait()
                    tg.cancel_scope.cancel()
                self._fell_back(backend.failure or "QMD stopped")
            self.next_retry_at = time.time() + delay
            await anyio.sleep(delay)
            delay = min(self.retry_max_s, delay * 2)

    async def run_once(self, *, as_is: bool = False, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """One attempt and no retries, for a one-shot command (the CLI without a daemon): started once it
        is known whether QMD serves; then QMD's updates run when asked (a sync, a search on a dirty
        index), with no boot update or timers, until cancelled. `as_is` takes QMD's index as it is
        (`--no-sync`): a search then never asks for an update first."""
        backend = self._make_backend()
        self.last = backend
        try:
            await backend.open()
        except QmdError as exc:
            self._fell_back(str(exc))
            task_status.started()
            return
        async with anyio.create_task_group() as tg:
            await tg.start(backend.updater.run)
            if as_is:
                backend.updater.dirty = False
            self.active, self.reason = backend, None
            task_status.started()
            await backend.failed.wait()
            self._fell_back(backend.failure or "QMD stopped")
            tg.cancel_scope.cancel()

    def _fell_back(self, reason: str) -> None:
        self.active = None
        self.reason = reason
        self.failures += 1
        self.last_failure_at = time.time()
        log.warning("qmd unavailable; serving from the builtin index", reason=reason)
        self._announce()

    # ------------------------------------------------------------------ inputs, forwarded to QMD

    def files_changed(self) -> None:
        if self.active is not None:
            self.active.files_changed()

    async def sync(self, reason: str, *, force: bool = False) -> UpdateRun | None:
        """Run a QMD update now (None when QMD is not serving); a failure switches to the builtin index."""
        backend = self.active
        if backend is None:
            return None
        try:
            return await backend.sync(reason, force=force)
        except QmdError:
            return None  # the backend marked itself failed; run() falls back

    # ------------------------------------------------------------------ queries

    async def search(self, request: SearchRequest) -> SearchResponse:
        backend = self.active
        if backend is not None and not backend.failed.is_set():
            try:
                return await backend.search(request)
            except QmdError as exc:
                reason = str(exc)  # names the command: "qmd search failed (exit 1): …"
                backend.mark_failed(reason)
                if self.active is backend:
                    self.active, self.reason = None, reason
        elif backend is not None and self.active is backend:  # failed (an update) before run() noticed
            self.active, self.reason = None, backend.failure or "QMD stopped"
        response = await self.builtin.search(request)
        return dataclasses.replace(response, fallback={"from": "qmd", "reason": self.reason or STARTING})

    def _fallback_info(self) -> dict[str, object]:
        return {
            "failures": self.failures,
            "recoveries": self.recoveries,
            "lastFailureAt": _iso(self.last_failure_at),
            "nextRetryAt": _iso(self.next_retry_at),
        }

    async def status(self) -> dict[str, object]:
        """QMD's status while it serves; otherwise the builtin status with `fallback: {from: "qmd", reason}`."""
        builtin = await self.builtin.status()
        summary = {k: builtin.get(k) for k in ("files", "chunks", "dbPath", "indexedAt", "dirty")}
        backend = self.active
        if backend is not None:
            qmd_status = await backend.status()
            details = qmd_status.get("qmd")
            if isinstance(details, dict):
                details.update(self._fallback_info())
            return {
                **builtin,
                **qmd_status,
                "requestedBackend": "qmd",
                "fallback": None,
                "builtinFallback": builtin.get("fallback"),
                "builtin": summary,
            }
        reason = self.reason or STARTING
        details = self.last.describe() if self.last is not None else {}
        return {
            **builtin,
            "backend": "builtin",
            "requestedBackend": "qmd",
            "fallback": {"from": "qmd", "reason": reason},
            "builtinFallback": builtin.get("fallback"),
            "qmd": {**details, "disabled": True, "reason": reason, **self._fallback_info()},
        }

    async def doctor(self) -> dict[str, object]:
        """QMD's own view (version, vectors), or why it cannot be run; never raises."""
        backend = self.active
        if backend is not None:
            return await backend.doctor()
        return await self._make_backend().doctor()


def _iso(at: float | None) -> str | None:
    return None if at is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
