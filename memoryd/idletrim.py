"""Hand the heap's free pages back once the daemon falls quiet after serving requests.

The heap is trimmed after every sync (`memoryd.index.engine`), but searches go on allocating from their
worker threads' arenas after it: in-process at 100k chunks, 600 hybrid searches from 4 clients left the
process at 215 MB, and one `malloc_trim` (3.7 ms) brought it to 176. So after requests, once none came
for IDLE_S, the heap is trimmed once; a daemon searched on every turn trims between turns, an idle one
never.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.to_thread
from anyio.abc import TaskStatus

from memoryd import heap

IDLE_S = 2.0
"""Quiet time after the last request before the heap is trimmed."""


class IdleTrim:
    """`touch()` on each request; `run()` trims once per quiet spell that follows requests."""

    def __init__(self, idle_s: float = IDLE_S, release: Callable[[], object] = heap.release_free_memory) -> None:
        self._idle_s = idle_s
        self._release = release
        self._touched = anyio.Event()

    def touch(self) -> None:
        self._touched.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._touched.wait()
            quiet = False
            while not quiet:  # a request within idle_s of the last one starts the quiet time again
                self._touched = anyio.Event()
                with anyio.move_on_after(self._idle_s) as waited:
                    await self._touched.wait()
                quiet = waited.cancelled_caught
            await anyio.to_thread.run_sync(self._release)
