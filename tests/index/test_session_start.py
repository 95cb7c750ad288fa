"""`sync.on_session_start` (OpenClaw's onSessionStart): a conversation's first search syncs in the background.

Real actors, no watcher and no on-search sync, so only the session-start sync can index the note.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.conftest import AgentFactory, write
from tests.index.test_freshness import DEADLINE_S, paths, running

pytestmark = pytest.mark.anyio

KEY = "agent:main:direct:42"


async def test_the_first_search_of_a_conversation_starts_a_sync(workspace: Path, make_agent: AgentFactory) -> None:
    agent = make_agent(workspace, sync={"watch": False, "on_search": False})
    async with running(agent, watch=False) as (actor,):
        write(workspace / "memory" / "otter.md", "The otter family moved upstream.\n")
        await actor.search(
            "otter family", max_results=5, min_score=0, corpus="all", wait_fresh_ms=None, session_key=KEY
        )
        with anyio.fail_after(DEADLINE_S):
            while True:
                if await paths(actor, "otter family") == ["memory/otter.md"]:
                    break
                await anyio.sleep(0.05)  # a bounded retry of a query until the background sync is done
        last = actor.engine.state.last_sync
        assert last is not None and last.reason == "session-start"
        assert not actor.scheduler.session_started(KEY)  # once per conversation
        assert actor.scheduler.session_started("agent:main:direct:43")


async def test_off_it_starts_none(workspace: Path, make_agent: AgentFactory) -> None:
    agent = make_agent(workspace, sync={"watch": False, "on_search": False, "on_session_start": False})
    async with running(agent, watch=False) as (actor,):
        assert not actor.scheduler.session_started(KEY)
        assert not actor.scheduler.session_started(None)
