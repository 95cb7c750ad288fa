"""The index's quick_check as the agent starts and then in idle time, so damage nothing reads is found.

A search reads a few pages; a sync the ones it writes. Pages that neither touches (overwritten by a
disk, another program, a bad write) stayed damaged and unreported until a restart ran the start-up
check. So after the start-up check (`store.quick_check`), the check runs again at most every
`store.quick_check_interval_minutes` (default 30; 0: only at start), and only when the file or its
WAL changed since the last check began (a sync wrote, or something else did): an index nobody
touches costs nothing. It is O(size), ~8 s for 300 MB, so it is bounded: one worker thread, one loop
(never beside itself), and it yields to syncs — it starts only when no sync runs or is queued, and a
sync starting meanwhile stops it (it runs again once the agent is idle). Damage it finds is noted in
`Integrity` and rebuilt from the sources like any other (`on_damage`); status says when it last ran,
why (`trigger`: start or idle) and what it found (`integrityCheck`).

The retention store (deleted transcripts' only copy) is checked after the index, on its own reader, and a
damaged one is salvaged (`Retention.salvage`) rather than found only when a restart opens it.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.to_thread
import structlog

from memoryd.config.settings import StoreSettings
from memoryd.errors import MemorydError
from memoryd.index.integrity import Integrity, Trigger
from memoryd.index.scheduler import SyncScheduler
from memoryd.store.retained import retained_path

log = structlog.get_logger(__name__)

Stamp = tuple[tuple[int, int, int] | None, ...]
"""(inode, size, mtime ns) of the database, the retention store and their WALs; None for a file not there."""


class Checkup:
    """One agent's integrity checks; `run` is its one loop, `sync_ended` is called after every sync."""

    def __init__(
        self,
        integrity: Integrity,
        scheduler: SyncScheduler,
        db_path: Path,
        settings: StoreSettings,
        on_damage: Callable[[], None],
        *,
        retention_check: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self._integrity = integrity
        self._scheduler = scheduler
        self._db_path = db_path
        self._settings = settings
        self._on_damage = on_damage
        self._retention_check = retention_check
        self._checked: Stamp | None = None  # the files as the last completed check began
        self._synced = anyio.Event()
        self.checked = anyio.Event()
        """Set when a check (the index's and the retention store's) completes, then replaced by a new one."""

    def sync_ended(self) -> None:
        self._synced.set()
        self._synced = anyio.Event()

    async def run(self) -> None:
        if not self._settings.quick_check:
            return
        await self._check("start")  # beside the first sync: damage done while stopped is found at once
        interval_s = self._settings.quick_check_interval_minutes * 60
        if interval_s <= 0:
            return
        while True:
            await anyio.sleep(interval_s)
            if await anyio.to_thread.run_sync(self._stamp) != self._checked:
                while not await self._check("idle"):
                    pass  # a sync started: after it, the agent idle again, the check runs from the start

    async def _check(self, trigger: Trigger) -> bool:
        """One quick_check in a worker thread; False when a sync stopped it (idle-time checks yield)."""
        if trigger == "idle":
            await self._until_idle()
        stamp = await anyio.to_thread.run_sync(self._stamp)
        stop = threading.Event()
        done = None
        try:
            async with anyio.create_task_group() as tg:
                if trigger == "idle":
                    tg.start_soon(self._yield_to_sync, stop)
                check = functools.partial(self._integrity.run_quick_check, trigger, stop)
                done = await anyio.to_thread.run_sync(check, abandon_on_cancel=True)
                tg.cancel_scope.cancel()
        except MemorydError as exc:
            log.warning("integrity check could not run", agent=self._integrity.agent.id, error=str(exc))
            return True  # said; the next change of the file makes it due again
        finally:
            stop.set()
            self._integrity.interrupt()  # cancelled (the agent stops): the abandoned thread ends at once
        self._on_damage()
        if done is None:
            return False
        if self._retention_check is not None:
            try:
                await self._retention_check()
            except MemorydError as exc:
                log.warning("retention store check could not run", agent=self._integrity.agent.id, error=str(exc))
        self._checked = stamp
        self.checked.set()
        self.checked = anyio.Event()
        return True

    async def _until_idle(self) -> None:
        while self._scheduler.syncing or self._scheduler.queue_depth:
            await self._synced.wait()

    async def _yield_to_sync(self, stop: threading.Event) -> None:
        await self._scheduler.sync_started.wait()
        stop.set()
        self._integrity.interrupt()

    def _stamp(self) -> Stamp:
        files = (self._db_path, retained_path(self._db_path))
        return tuple(_file_stamp(Path(f"{path}{ext}")) for path in files for ext in ("", "-wal"))


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
