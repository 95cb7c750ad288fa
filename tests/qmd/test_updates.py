"""`qmd update` / `qmd embed` scheduling: joined, queued, debounced, retried, repaired, backed off."""

from __future__ import annotations

import fcntl
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from memoryd.qmd.collections import CollectionManager, plan_collections
from memoryd.qmd.errors import QmdCommandError, QmdTimeoutError
from memoryd.qmd.exporter import SessionExporter
from memoryd.qmd.runner import QmdRunner, qmd_environment
from memoryd.qmd.settings import QmdSettings, QmdUpdateSettings, SearchMode
from memoryd.qmd.updates import EMBED_BACKOFF_BASE_S, EmbedGate, QmdUpdater
from tests.conftest import transcript_line, write
from tests.qmd.standin import HANG_TIMEOUT_MS, StandIn

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def running(
    standin: StandIn,
    tmp_path: Path,
    *,
    mode: SearchMode = "search",
    clock: Callable[[], float] | None = None,
    exporter: SessionExporter | None = None,
    **update: int | str,
) -> AsyncIterator[QmdUpdater]:
    settings = QmdSettings(search_mode=mode, update=QmdUpdateSettings(**update))  # type: ignore[arg-type]
    env = qmd_environment(
        dict(os.environ), command=(str(standin.path),), xdg_config=tmp_path / "cfg", xdg_cache=tmp_path / "cache"
    )
    runner = QmdRunner((str(standin.path),), env=env, cwd=tmp_path)
    manager = CollectionManager(runner, plan_collections("main", tmp_path / "ws", settings), timeout_s=10)
    await manager.ensure()
    updater = QmdUpdater(
        runner, settings, manager, gate=EmbedGate(tmp_path / "embed.lock"), exporter=exporter, clock=clock or Clock()
    )
    async with anyio.create_task_group() as tg:
        await tg.start(updater.run)
        with anyio.fail_after(20):
            yield updater
        tg.cancel_scope.cancel()


async def test_requests_made_while_an_update_runs_join_it(standin: StandIn, tmp_path: Path) -> None:
    standin.fail("update", sleep=0.3)
    async with running(standin, tmp_path) as updater:
        first = updater.request("watch")
        while updater.current is None:
            await updater.progress()
        joined = [updater.request("search"), updater.request("interval")]
        assert all(run is first for run in joined)
        await first.done.wait()
    assert len(standin.calls("update")) == 1


async def test_a_forced_request_during_an_update_queues_exactly_one_more(standin: StandIn, tmp_path: Path) -> None:
    standin.fail("update", sleep=0.3)
    async with running(standin, tmp_path) as updater:
        first = updater.request("watch")
        while updater.current is None:
            await updater.progress()
        queued = updater.request("cli", force=True)
        assert queued is not first and updater.request("cli-again", force=True) is queued
        await queued.done.wait()
    assert len(standin.calls("update")) == 2


async def test_a_non_forced_update_within_the_debounce_is_skipped(standin: StandIn, tmp_path: Path) -> None:
    clock = Clock()
    async with running(standin, tmp_path, clock=clock, debounce_ms=15_000) as updater:
        await updater.update("boot", force=True)
        skipped = await updater.update("interval")
        assert skipped.skipped
        clock.now += 16
        assert not (await updater.update("interval")).skipped
        await updater.update("cli", force=True)
    assert len(standin.calls("update")) == 3


async def test_a_boot_update_retries_timeouts_twice_then_fails(standin: StandIn, tmp_path: Path) -> None:
    standin.fail("update", hang=True)
    async with running(standin, tmp_path, update_timeout_ms=HANG_TIMEOUT_MS) as updater:
        with pytest.raises(QmdTimeoutError):
            await updater.update("boot", force=True)
        assert updater.dirty and "timed out" in (updater.state.last_update_error or "")
        with pytest.raises(QmdTimeoutError):
            await updater.update("interval", force=True)
    assert len(standin.calls("update")) == 3 + 1  # boot: 3 attempts; any other reason: 1


async def test_errors_that_retrying_cannot_fix_are_not_retried(standin: StandIn, tmp_path: Path) -> None:
    standin.fail("update", exit=1, stderr="EACCES: permission denied\n")
    async with running(standin, tmp_path) as updater:
        with pytest.raises(QmdCommandError):
            await updater.update("boot", force=True)
    assert len(standin.calls("update")) == 1


async def test_corrupt_collection_metadata_is_repaired_once_by_recreating_collections(
    standin: StandIn, tmp_path: Path
) -> None:
    standin.fail("update", exit=1, stderr="SqliteError: UNIQUE constraint failed: documents.collection, documents.path")
    async with running(standin, tmp_path) as updater:
        removes = len(standin.calls("collection remove"))
        with pytest.raises(QmdCommandError):
            await updater.update("watch", force=True)
        assert len(standin.calls("collection remove")) == removes + 3
        with pytest.raises(QmdCommandError):
            await updater.update("watch", force=True)
        assert len(standin.calls("collection remove")) == removes + 3  # only ever once
    assert len(standin.calls("update")) == 3


async def test_embed_runs_only_with_vectors_and_backs_off_after_a_failure(standin: StandIn, tmp_path: Path) -> None:
    clock = Clock()
    async with running(standin, tmp_path, clock=clock) as keyword_only:
        await keyword_only.update("boot", force=True)
    assert standin.calls("embed") == []

    standin.fail("embed", hang=True)
    async with running(standin, tmp_path, mode="query", clock=clock, embed_timeout_ms=HANG_TIMEOUT_MS) as updater:
        run = await updater.update("boot", force=True)  # an embed failure never fails the update
        assert run.error is None and updater.state.embed_failures == 1
        assert updater.state.embed_backoff_until == clock.now + EMBED_BACKOFF_BASE_S
        await updater.update("cli", force=True)
        assert len(standin.calls("embed")) == 1  # backing off: not tried again
        clock.now += EMBED_BACKOFF_BASE_S + 1
        await updater.update("cli", force=True)
        assert updater.state.embed_backoff_until == clock.now + 2 * EMBED_BACKOFF_BASE_S  # doubled
        standin.heal("embed")
        clock.now += 3 * EMBED_BACKOFF_BASE_S
        await updater.update("cli", force=True)
        summary = updater.state.to_dict()  # what status shows
        assert (summary["embeds"], summary["embedBackoffUntil"], summary["lastEmbedError"]) == (1, None, None)


async def test_embedding_waits_for_the_machine_wide_lock(tmp_path: Path) -> None:
    gate = EmbedGate(tmp_path / "qmd" / "embed.lock")
    (tmp_path / "qmd").mkdir()
    other = os.open(tmp_path / "qmd" / "embed.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(other, fcntl.LOCK_EX)
        entered = []
        with anyio.fail_after(5), pytest.raises(QmdTimeoutError, match="stayed busy"):
            async with gate.hold(wait_s=0.3):
                entered.append("while held elsewhere")
        fcntl.flock(other, fcntl.LOCK_UN)
        async with gate.hold(wait_s=1):
            entered.append("once free")
        assert entered == ["once free"]
    finally:
        os.close(other)


async def test_transcripts_are_exported_before_each_update(standin: StandIn, tmp_path: Path) -> None:
    write(tmp_path / "sessions" / "s1.jsonl", transcript_line("user", "hello there") + "\n")
    exporter = SessionExporter(tmp_path / "sessions", tmp_path / "export")
    async with running(standin, tmp_path, exporter=exporter) as updater:
        await updater.update("boot", force=True)
        assert (tmp_path / "export" / "s1.md").read_text(encoding="utf-8").endswith("User: hello there\n")
