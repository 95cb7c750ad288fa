"""The rerank stage inside the engine's search: real index, real HTTP reranker on loopback, never fatal."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from memoryd.index.engine import IndexEngine
from tests.conftest import AgentFactory
from tests.fakes.hash_embedder import HashEmbedder
from tests.index.test_engine_search import build_workspace
from tests.search.test_rerank import RerankFake

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class SubstringRerankFake(RerankFake):
    """TEI's wire format; a document's relevance is set by the first listed word it contains."""

    def __init__(self, words: dict[str, float]) -> None:
        super().__init__("tei", api_key=None)
        self.words = words

    def _rerank(self, request: Any, match: Any) -> Any:
        documents: list[str] = request.json()["texts"]
        self.relevance = {d: next((s for w, s in self.words.items() if w in d), 0.0) for d in documents}
        return super()._rerank(request, match)


@pytest.fixture
def tei() -> Iterator[SubstringRerankFake]:
    with SubstringRerankFake({"tomatoes": 1.0}) as server:
        yield server


async def engine_for(ws: Path, make_agent: AgentFactory, agent_id: str = "main", **rerank: Any) -> IndexEngine:
    query: dict[str, Any] = {"rerank": rerank} if rerank else {}
    eng = IndexEngine(make_agent(ws, agent_id, query=query), HashEmbedder())
    await eng.open()
    await eng.sync("test")
    return eng


@pytest.fixture
async def plain(tmp_path: Path, make_agent: AgentFactory) -> AsyncIterator[IndexEngine]:
    eng = await engine_for(build_workspace(tmp_path), make_agent)
    try:
        yield eng
    finally:
        await eng.aclose()


async def test_without_a_reranker_replies_carry_no_rerank_field(plain: IndexEngine) -> None:
    resp = await plain.search("golden retriever", min_score=0)
    assert resp.rerank is None and "rerank" not in resp.to_dict()


async def test_the_reranker_reorders_the_fused_head_and_says_so(
    tmp_path: Path, make_agent: AgentFactory, tei: SubstringRerankFake
) -> None:
    eng = await engine_for(build_workspace(tmp_path), make_agent, provider="tei", base_url=tei.base_url, weight=1.0)
    try:
        resp = await eng.search("dog golden retriever", min_score=0, max_results=3)
    finally:
        await eng.aclose()
    assert resp.results[0].path == "memory/garden.md"  # the reranker's choice, not the fused one
    assert resp.rerank is not None and resp.rerank["applied"] is True and resp.rerank["reason"] is None
    assert resp.rerank["provider"] == "tei"
    sent = tei.requests[-1].json()
    assert sent["query"] == "dog golden retriever" and any("tomatoes" in t for t in sent["texts"])


async def test_a_stalled_reranker_costs_only_its_deadline_and_the_fused_order_stands(
    tmp_path: Path, make_agent: AgentFactory, tei: SubstringRerankFake, plain: IndexEngine
) -> None:
    expected = [r.citation for r in (await plain.search("golden retriever", min_score=0)).results]
    eng = await engine_for(
        build_workspace(tmp_path / "second"),
        make_agent,
        "second",
        provider="tei",
        base_url=tei.base_url,
        timeout_ms=300,
    )
    tei.enqueue(tei.stall())
    try:
        started = time.monotonic()
        with anyio.fail_after(10):
            resp = await eng.search("golden retriever", min_score=0)
        elapsed = time.monotonic() - started
    finally:
        tei.close()  # releases the stalled request
        await eng.aclose()
    assert elapsed >= 0.25  # the 0.3 s deadline was waited out (a timer may fire a hair early), not skipped
    assert resp.rerank is not None and resp.rerank["applied"] is False
    assert "took over" in str(resp.rerank["reason"])
    assert [r.citation for r in resp.results] == expected


async def test_a_reranker_without_its_api_key_is_reported_and_search_still_answers(
    tmp_path: Path, make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("CO_API_KEY", raising=False)
    eng = await engine_for(build_workspace(tmp_path), make_agent, provider="cohere", base_url="http://127.0.0.1:9")
    try:
        resp = await eng.search("golden retriever", min_score=0)
    finally:
        await eng.aclose()
    assert resp.results and resp.results[0].path == "MEMORY.md"
    assert resp.rerank is not None and resp.rerank["applied"] is False
    assert "COHERE_API_KEY" in str(resp.rerank["reason"])
