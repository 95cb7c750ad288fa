"""The daemon trims its heap once requests stop (memoryd.idletrim), once per quiet spell."""

from __future__ import annotations

import time

import anyio
import anyio.from_thread
import pytest

from memoryd.idletrim import IdleTrim

pytestmark = pytest.mark.anyio

IDLE_S = 0.05
DEADLINE_S = 10.0


class Releases:
    """A stand-in for malloc_trim (called in a worker thread) that records when it ran."""

    def __init__(self) -> None:
        self.at: list[float] = []
        self.ran = anyio.Event()

    def __call__(self) -> bool:
        self.at.append(time.monotonic())

        def notify() -> None:  # in the loop's thread, which owns the event: the one current then
            self.ran.set()

        anyio.from_thread.run_sync(notify)
        return True

    async def after(self, moment: float) -> None:
        """Until a release ran after `moment` (within the deadline)."""
        with anyio.fail_after(DEADLINE_S):
            while not (self.at and self.at[-1] > moment):
                self.ran = anyio.Event()
                await self.ran.wait()


async def test_the_heap_is_trimmed_once_after_requests_stop_and_not_again_without_one() -> None:
    releases = Releases()
    trim = IdleTrim(IDLE_S, releases)
    async with anyio.create_task_group() as tg:
        await tg.start(trim.run)
        with anyio.move_on_after(20 * IDLE_S):  # nothing was asked: nothing to trim
            await releases.ran.wait()
        assert releases.at == []

        touched = time.monotonic()
        trim.touch()
        await releases.after(touched)
        assert len(releases.at) == 1 and releases.at[0] - touched >= IDLE_S

        releases.ran = anyio.Event()
        with anyio.move_on_after(20 * IDLE_S):  # quiet since: no second trim
            await releases.ran.wait()
        assert len(releases.at) == 1

        again = time.monotonic()
        trim.touch()  # the next spell
        await releases.after(again)
        assert len(releases.at) == 2
        tg.cancel_scope.cancel()


async def test_a_request_within_the_quiet_time_starts_it_again() -> None:
    """Requests every idle_s / 5: each trim comes at least idle_s after the request before it (whatever the
    scheduler does to the pauses between them, this holds by construction; a quiet time that did not start
    again at each request would trim during them)."""
    releases = Releases()
    trim = IdleTrim(IDLE_S, releases)
    touches: list[float] = []
    async with anyio.create_task_group() as tg:
        await tg.start(trim.run)
        for _ in range(20):
            touches.append(time.monotonic())
            trim.touch()
            await anyio.sleep(IDLE_S / 5)
        await releases.after(touches[-1])
        tg.cancel_scope.cancel()
    for released in releases.at:
        before = max(t for t in touches if t <= released)
        assert released - before >= IDLE_S
    assert releases.at[-1] > touches[-1]
