"""The engine's search modes end to end: real files, a real index, a deterministic embedding provider."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memoryd.index.engine import IndexEngine
from tests.conftest import AgentFactory, transcript_line, write
from tests.fakes.hash_embedder import HashEmbedder
from tests.search.ranking import assert_same_ranking

pytestmark = pytest.mark.anyio

NOTES = {
    "MEMORY.md": "# Memory\n\n- My dog is a golden retriever named Biscuit.\n- Favourite editor: helix.\n",
    "memory/garden.md": "# Garden\n\nPlant tomatoes and basil in April, water the seedlings daily.\n",
    "memory/travel.md": "# Travel\n\nFlight to Lisbon on March 3rd, hotel near the Alfama district.\n",
    "memory/zh.md": "# 笔记\n\n我们之前讨论的部署方案是使用容器和API接口。\n",
    "memory/ja.md": "# メモ\n\n会議で話した予算は来月に承認される予定です。\n",
    "memory/ko.md": "# 메모\n\n어제 회의에서 새로운 디자인 시안을 논의했다.\n",
    "memory/es.md": "# Notas\n\nGuardé el pasaporte en el cajón del escritorio de la oficina.\n",
    "memory/ar.md": "# ملاحظات\n\nموعد طبيب الأسنان يوم الخميس القادم في العيادة.\n",
}


def build_workspace(root: Path) -> Path:
    ws = root / "ws"
    for rel, text in NOTES.items():
        write(ws / rel, text)
    write(
        ws / "sessions" / "s1.jsonl",
        "\n".join(
            [
                transcript_line("user", "Can you remind me which vet treats Biscuit?"),
                transcript_line("assistant", "Biscuit sees Dr. Moreau at the Riverside veterinary clinic."),
            ]
        )
        + "\n",
    )
    return ws


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return build_workspace(tmp_path)


@pytest.fixture
async def hybrid(ws: Path, make_agent: AgentFactory) -> AsyncIterator[IndexEngine]:
    eng = IndexEngine(make_agent(ws), HashEmbedder())
    await eng.open()
    try:
        await eng.sync("test")
        yield eng
    finally:
        eng.close()


@pytest.fixture
async def keyword(ws: Path, make_agent: AgentFactory) -> AsyncIterator[IndexEngine]:
    eng = IndexEngine(make_agent(ws))
    await eng.open()
    try:
        await eng.sync("test")
        yield eng
    finally:
        eng.close()


async def test_auto_runs_hybrid_with_a_provider_and_says_which_vector_search_ran(hybrid: IndexEngine) -> None:
    resp = await hybrid.search("golden retriever Biscuit")
    assert resp.mode == "hybrid"
    assert resp.vector_backend == "exact"  # a small index is searched exactly
    assert resp.fallback is None
    assert resp.results[0].path == "MEMORY.md"
    assert resp.to_dict()["vectorBackend"] == "exact"


async def test_large_indexes_use_sqlite_vec_knn_with_the_same_answer(
    hybrid: IndexEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    exact = await hybrid.search("golden retriever Biscuit", mode="vector", min_score=0)
    monkeypatch.setattr("memoryd.search.vector.EXACT_MAX", 0)
    knn = await hybrid.search("golden retriever Biscuit", mode="vector", min_score=0)
    assert knn.vector_backend == "sqlite-vec"
    assert_same_ranking(
        [((r.path, r.start_line), r.score) for r in knn.results],
        [((r.path, r.start_line), r.score) for r in exact.results],
        len(exact.results),
    )


async def test_auto_runs_keyword_only_without_a_provider(keyword: IndexEngine) -> None:
    resp = await keyword.search("golden retriever")
    assert (resp.mode, resp.vector_backend, resp.fallback) == ("keyword", None, None)
    assert [r.path for r in resp.results] == ["MEMORY.md"]


async def test_each_mode_can_be_asked_for(hybrid: IndexEngine) -> None:
    for mode in ("hybrid", "keyword", "vector"):
        resp = await hybrid.search("tomatoes basil seedlings", mode=mode)
        assert resp.mode == mode
        assert resp.results[0].path == "memory/garden.md"
        assert (resp.vector_backend is None) == (mode == "keyword")


async def test_vector_only_search_keeps_to_the_asked_corpus(hybrid: IndexEngine) -> None:
    resp = await hybrid.search("which veterinary clinic for Biscuit", mode="vector", corpus="sessions", min_score=0)
    assert [r.path for r in resp.results] == ["sessions/s1.jsonl"]
    everywhere = await hybrid.search("which veterinary clinic for Biscuit", mode="vector", min_score=0)
    assert {r.source for r in everywhere.results} == {"memory", "sessions"}


async def test_a_failing_query_embedding_falls_back_to_keyword_and_says_so(ws: Path, make_agent: AgentFactory) -> None:
    provider = HashEmbedder()
    eng = IndexEngine(make_agent(ws), provider)
    await eng.open()
    try:
        await eng.sync("test")
        provider.fail_queries = True
        resp = await eng.search("golden retriever")
        assert resp.mode == "keyword"
        assert resp.fallback is not None and "query embedding failed" in resp.fallback["reason"]
        assert resp.fallback["from"] == "hybrid"
        assert [r.path for r in resp.results] == ["MEMORY.md"]
        vector = await eng.search("golden retriever", mode="vector")
        assert vector.mode == "keyword" and vector.fallback is not None and vector.fallback["from"] == "vector"
        assert [r.path for r in vector.results] == ["MEMORY.md"]
    finally:
        eng.close()


async def test_a_model_still_loading_means_keyword_only_without_waiting(ws: Path, make_agent: AgentFactory) -> None:
    provider = HashEmbedder()
    eng = IndexEngine(make_agent(ws), provider)
    await eng.open()
    try:
        await eng.sync("test")
        provider.state = "loading"
        resp = await eng.search("golden retriever")
        assert resp.mode == "keyword"
        assert resp.fallback is not None and "loading" in resp.fallback["reason"]
        assert provider.query_calls == 0
    finally:
        eng.close()


async def test_an_index_without_vectors_is_searched_by_keyword_and_says_why(ws: Path, make_agent: AgentFactory) -> None:
    agent = make_agent(ws)
    plain = IndexEngine(agent)
    await plain.open()
    await plain.sync("test")
    plain.close()
    eng = IndexEngine(agent, HashEmbedder())
    await eng.open()
    try:
        resp = await eng.search("golden retriever")
        assert resp.mode == "keyword"
        assert resp.fallback is not None and "no vectors" in resp.fallback["reason"]
        assert [r.path for r in resp.results] == ["MEMORY.md"]
    finally:
        eng.close()


async def test_without_sqlite_vec_the_exact_search_runs_and_agrees(ws: Path, make_agent: AgentFactory) -> None:
    eng = IndexEngine(make_agent(ws, store={"vector": {"enabled": False}}), HashEmbedder())
    await eng.open()
    try:
        await eng.sync("test")
        resp = await eng.search("golden retriever Biscuit", mode="vector")
        assert resp.vector_backend == "exact"
        assert resp.results[0].path == "MEMORY.md"
    finally:
        eng.close()


# Not "vector": vector-only scores are raw cosines, and the hash fake's word collisions reach 0.24 at
# 64 dims; hybrid halves them with the fusion weight (the real model is checked in test_served_defaults).
@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
async def test_nonsense_finds_nothing_at_the_default_min_score(hybrid: IndexEngine, mode: str) -> None:
    resp = await hybrid.search("zxqv blorft wugglenarf", mode=mode)  # type: ignore[arg-type]
    assert resp.results == []


async def test_the_first_result_does_not_depend_on_max_results(hybrid: IndexEngine) -> None:
    query = "Biscuit the dog and the vet"
    longer = await hybrid.search(query, max_results=5, min_score=0)
    for n in range(1, 5):
        shorter = await hybrid.search(query, max_results=n, min_score=0)
        assert shorter.results == longer.results[:n]


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("部署方案", "memory/zh.md"),
        ("之前讨论的方案", "memory/zh.md"),
        ("API", "memory/zh.md"),
        ("予算の承認", "memory/ja.md"),
        ("디자인 회의", "memory/ko.md"),
        ("¿Dónde guardé el pasaporte?", "memory/es.md"),
        ("pasaporte cajon", "memory/es.md"),
        ("موعد طبيب الأسنان", "memory/ar.md"),
    ],
)
async def test_queries_in_every_script_find_their_note_without_embeddings(
    keyword: IndexEngine, query: str, path: str
) -> None:
    resp = await keyword.search(query)
    assert resp.results and resp.results[0].path == path


async def test_the_openclaw_fts_path_is_still_reachable(keyword: IndexEngine) -> None:
    relaxed = keyword.searcher.settings
    keyword.searcher.settings = dataclasses.replace(
        relaxed, query=dataclasses.replace(relaxed.query, keyword_strategy="openclaw")
    )
    # OpenClaw's FTS-only path never empties its answer for a partial match (relaxed floor 0).
    resp = await keyword.search("tomatoes zxqv", min_score=0.99)
    assert [r.path for r in resp.results] == ["memory/garden.md"]
    keyword.searcher.settings = relaxed
    assert (await keyword.search("tomatoes zxqv", min_score=0.99)).results == []
