"""Freshness of a running agent: what is saved becomes searchable, whatever the clients do.

Real actors, the real watcher and real file changes. Every wait is a condition under a deadline
(`anyio.fail_after`); none of these tests asserts how long anything took.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from memoryd.config import AgentConfig
from memoryd.index.actor import AgentIndex
from memoryd.index.state import SyncReport
from memoryd.index.watcher import Watcher
from tests.conftest import AgentFactory, transcript_line, write

pytestmark = pytest.mark.anyio

DEADLINE_S = 30.0
"""Far above any debounce these tests configure: reaching it means the change was never indexed."""


@asynccontextmanager
async def running(*agents: AgentConfig, watch: bool = True) -> AsyncIterator[list[AgentIndex]]:
    """The agents' actors (and the watcher, when `watch`), after each one's first sync."""
    actors = [AgentIndex(agent) for agent in agents]
    async with anyio.create_task_group() as tg:
        for actor in actors:
            await tg.start(actor.run)
        if watch:
            await tg.start(Watcher(lambda: actors).run)
        for actor in actors:
            await actor.request_sync("test")
        yield actors
        tg.cancel_scope.cancel()


async def paths(actor: AgentIndex, query: str, *, wait_fresh_ms: int | None = None) -> list[str]:
    resp = await actor.search(query, max_results=5, min_score=0, corpus="all", wait_fresh_ms=wait_fresh_ms)
    return [r.path for r in resp.results]


async def test_a_note_saved_while_the_agent_searches_back_to_back_becomes_searchable(
    workspace: Path, make_agent: AgentFactory
) -> None:
    # Every search finds the index dirty and asks for a sync: that must never hold the sync back.
    agent = make_agent(workspace, sync={"watch_debounce_ms": 300})
    async with running(agent) as (actor,):
        write(workspace / "memory" / "zebra.md", "The zebra crossing outside is freshly painted.\n")
        with anyio.fail_after(DEADLINE_S):
            while await paths(actor, "zebra crossing") != ["memory/zebra.md"]:
                pass  # the next search, at once: a client searching back to back


async def test_a_note_is_indexed_while_another_file_keeps_changing(workspace: Path, make_agent: AgentFactory) -> None:
    # A file rewritten more often than the debounce would postpone every sync for good without a max-wait.
    agent = make_agent(workspace, sync={"watch_debounce_ms": 1000, "on_search": False})
    busy = workspace / "memory" / "busy.md"
    async with running(agent) as (actor,):
        write(workspace / "memory" / "ibis.md", "A scarlet ibis wades in the lagoon.\n")
        found = anyio.Event()

        async def keep_writing() -> None:
            n = 0
            while not found.is_set():
                n += 1
                await anyio.Path(busy).write_text(f"Busy log line {n}.\n")
                await anyio.sleep(0.1)  # pacing of the writer (ten saves a second), not synchronisation

        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_writing)
            with anyio.fail_after(DEADLINE_S):
                while True:
                    if await paths(actor, "scarlet ibis") == ["memory/ibis.md"]:
                        break
                    await anyio.sleep(0.05)  # a bounded re-query, not synchronisation
            found.set()


async def test_a_short_transcript_is_pending_then_indexed_when_it_goes_quiet(
    workspace: Path, make_agent: AgentFactory
) -> None:
    # Two messages are far below the delta thresholds (50 lines / 100 kB): they are indexed once the
    # transcript has been quiet for sessions.debounce_ms, and counted as pending until then.
    agent = make_agent(workspace, sync={"watch": False, "on_search": False, "sessions": {"debounce_ms": 200}})
    chat = workspace / "sessions" / "short.jsonl"
    async with running(agent, watch=False) as (actor,):
        write(chat, transcript_line("user", "Where is the pelican?") + "\n")
        with chat.open("a") as fh:
            fh.write(transcript_line("assistant", "The pelican sleeps on pier nine.") + "\n")
        actor.transcript_updated(chat)  # a client's "transcript updated" event
        resp = await actor.search("pelican pier", max_results=5, min_score=0, corpus="all", wait_fresh_ms=None)
        assert resp.freshness["dirty"] is True
        assert resp.freshness["pending"] == 1
        assert (await actor.status())["pendingTranscripts"] == 1
        with anyio.fail_after(DEADLINE_S):
            while True:
                fresh = (await actor.status())["pendingTranscripts"] == 0 and not actor.engine.freshness()["dirty"]
                if fresh:
                    break
                await anyio.sleep(0.05)  # polling status under a deadline
        assert await paths(actor, "pelican pier") == ["sessions/short.jsonl"]
        resp = await actor.search("pelican pier", max_results=5, min_score=0, corpus="all", wait_fresh_ms=None)
        assert (resp.freshness["pending"], resp.freshness["dirty"]) == (0, False)

        # More growth below the thresholds: a search that waits for freshness covers it.
        with chat.open("a") as fh:
            fh.write(transcript_line("user", "And the walrus naps on pier ten.") + "\n")
        actor.transcript_updated(chat)
        with anyio.fail_after(DEADLINE_S):
            assert await paths(actor, "walrus naps", wait_fresh_ms=20_000) == ["sessions/short.jsonl"]


async def test_wait_fresh_sees_a_write_the_watcher_has_not_reported(workspace: Path, make_agent: AgentFactory) -> None:
    # No watcher at all: only the stat pass of a waiting search can know about these changes.
    agent = make_agent(workspace, sync={"watch": False, "on_search": False})
    async with running(agent, watch=False) as (actor,):
        write(workspace / "memory" / "otter.md", "The otter family moved upstream.\n")
        (workspace / "memory" / "projects" / "garden.md").unlink()
        with anyio.fail_after(DEADLINE_S):
            assert await paths(actor, "otter family", wait_fresh_ms=20_000) == ["memory/otter.md"]
            assert await paths(actor, "tomatoes basil") == []
        with (workspace / "sessions" / "s1.jsonl").open("a") as fh:
            fh.write(transcript_line("user", "Remind me about the quince jam.") + "\n")
        with anyio.fail_after(DEADLINE_S):
            assert await paths(actor, "quince jam", wait_fresh_ms=20_000) == ["sessions/s1.jsonl"]
        # Nothing changed: a waiting search answers without a sync.
        syncs = actor.engine.state.last_sync
        assert await paths(actor, "quince jam", wait_fresh_ms=20_000) == ["sessions/s1.jsonl"]
        assert actor.engine.state.last_sync is syncs


async def _synced_until(actor: AgentIndex, query: str, expected: list[str]) -> SyncReport:
    """The report of the sync that made `query` find `expected` (rows are readable a moment before the
    engine records its report: wait for both)."""
    before = actor.engine.state.last_sync
    with anyio.fail_after(DEADLINE_S):
        while True:
            last = actor.engine.state.last_sync
            if last is not before and last is not None and await paths(actor, query) == expected:
                return last
            await anyio.sleep(0.05)  # a bounded re-query until the watcher's sync is done


async def test_an_edited_note_is_synced_alone(workspace: Path, make_agent: AgentFactory) -> None:
    """The watcher names the note it saw change: the sync reads that file and no other."""
    for n in range(20):
        write(workspace / "memory" / "many" / f"n{n}.md", f"# Note {n}\n\nRoutine entry number {n}.\n")
    agent = make_agent(workspace, sync={"watch_debounce_ms": 200, "on_search": False})
    async with running(agent) as (actor,):
        write(workspace / "memory" / "many" / "n7.md", "# Note 7\n\nThe heron nests by the old mill.\n")
        last = await _synced_until(actor, "heron nests mill", ["memory/many/n7.md"])
        assert last.reason == "watch" and not last.full
        assert (last.counts.indexed, last.counts.unchanged, last.counts.deleted) == (1, 0, 0)
        write(workspace / "MEMORY.md", "# Memory\n\n- The spare key is under the cactus.\n")  # a root note, by the poll
        last = await _synced_until(actor, "spare key cactus", ["MEMORY.md"])
        assert (last.counts.indexed, last.counts.unchanged) == (1, 0)


async def test_a_deleted_or_renamed_note_gets_a_sync_of_the_tree(workspace: Path, make_agent: AgentFactory) -> None:
    """Only a delta sync of the tree finds what is gone (and keeps an unreadable file's rows)."""
    agent = make_agent(workspace, sync={"watch_debounce_ms": 200, "on_search": False})
    async with running(agent) as (actor,):
        (workspace / "memory" / "projects" / "garden.md").unlink()
        last = await _synced_until(actor, "tomatoes basil", [])
        assert last.counts.deleted == 1 and last.counts.unchanged > 0
        (workspace / "memory" / "2026-01-05.md").rename(workspace / "memory" / "standup.md")
        last = await _synced_until(actor, "PostgreSQL migration backups", ["memory/standup.md"])
        assert last.counts.deleted == 1


async def test_a_note_saved_while_the_agent_searches_is_synced_alone(workspace: Path, make_agent: AgentFactory) -> None:
    """Searches find the index dirty and ask for a sync: of the named note only, not of the tree."""
    for n in range(20):
        write(workspace / "memory" / "many" / f"n{n}.md", f"# Note {n}\n\nRoutine entry number {n}.\n")
    agent = make_agent(workspace, sync={"watch_debounce_ms": 5000})  # the search's sync comes first
    async with running(agent) as (actor,):
        before = actor.engine.state.last_sync
        write(workspace / "memory" / "many" / "n3.md", "# Note 3\n\nA kingfisher dives at the weir.\n")
        searches = 0
        with anyio.fail_after(DEADLINE_S):
            while (
                await paths(actor, "kingfisher weir") != ["memory/many/n3.md"] or actor.engine.state.last_sync is before
            ):
                searches += 1  # the next search at once, as an agent searching on every turn
        last = actor.engine.state.last_sync  # the search's job, joined by the watcher's (named as "watch")
        assert last is not None and (last.counts.indexed, last.counts.unchanged) == (1, 0), f"after {searches} searches"


async def test_a_sync_of_named_transcripts_indexes_those_alone(workspace: Path, make_agent: AgentFactory) -> None:
    # What a session-end hook asks for: its own transcript now, not every file of the agent.
    agent = make_agent(workspace, sync={"watch": False, "on_search": False, "sessions": {"debounce_ms": 60_000}})
    async with running(agent, watch=False) as (actor,):
        ended, other = workspace / "sessions" / "ended.jsonl", workspace / "sessions" / "other.jsonl"
        write(ended, transcript_line("user", "The pelican firmware goes out on Friday.") + "\n")
        write(other, transcript_line("user", "The walrus accordion ships in May.") + "\n")
        report = await actor.request_sync("hook:SessionEnd", session_files=(ended,))
        assert report.counts.indexed == 1
        assert await paths(actor, "pelican firmware") == ["sessions/ended.jsonl"]
        assert await paths(actor, "walrus accordion") == []
        await actor.request_sync("test")
        assert await paths(actor, "walrus accordion") == ["sessions/other.jsonl"]
