"""While the embedding provider is still being created (the daemon does not wait for its model), replies and
status say which provider is loading, answer keyword-only and give the reason — not "provider none"."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from memoryd.config import AgentConfig
from memoryd.embeddings.select import Selection
from memoryd.index.actor import AgentIndex
from tests.conftest import AgentFactory
from tests.fakes.hash_embedder import HashEmbedder

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("provider", "loading"), [("auto", "local"), ("local", "local"), ("openai", "openai")])
async def test_a_loading_provider_is_named_and_the_answer_says_keyword_only_why(
    workspace: Path, make_agent: AgentFactory, provider: str, loading: str
) -> None:
    agent = make_agent(workspace, provider=provider)
    release = anyio.Event()

    async def factory(_agent: AgentConfig) -> Selection:
        await release.wait()  # the model is "loading" until the test lets it finish
        return Selection(HashEmbedder())

    with anyio.fail_after(30):  # an index built keyword-only first, so the search below has rows to answer from
        async with anyio.create_task_group() as tg:
            first = AgentIndex(agent)
            await tg.start(first.run)
            await first.request_sync("test")
            tg.cancel_scope.cancel()
    actor = AgentIndex(agent, provider_factory=factory)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(actor.run)
            resp = await actor.search("golden retriever", max_results=3, min_score=0, corpus="all", wait_fresh_ms=None)
            status = await actor.status()
            release.set()
            await actor.request_sync("test")
            ready = await actor.search("golden retriever", max_results=3, min_score=0, corpus="all", wait_fresh_ms=None)
            tg.cancel_scope.cancel()
    assert (resp.provider, resp.model, resp.mode) == (loading, None, "keyword")
    assert resp.fallback == {"from": provider, "reason": f"the {loading} embedding provider is still loading"}
    assert [r.path for r in resp.results][:1] == ["MEMORY.md"]  # keyword-only still answers
    assert status["embedding"]["state"] == "loading"  # type: ignore[index]
    assert (status["provider"], status["model"], status["searchMode"]) == (loading, None, "keyword")
    assert status["providerUnavailableReason"] == f"the {loading} embedding provider is still loading"
    assert (ready.provider, ready.mode, ready.fallback) == ("hash", "hybrid", None)
