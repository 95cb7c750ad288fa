"""`compat = "openclaw"`: the settings profile, OpenClaw's hybrid legs, and fallbacks that agree.

The fallback test failed on main before this change: with `keyword_strategy = "openclaw"` a failed
query embedding ran memoryd's own keyword leg with a strict minScore and returned nothing where the
no-provider path (OpenClaw's FTS-only path, relaxed floor) returned the note.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memoryd import config as config_mod
from memoryd.config import MemorySearchSettings
from memoryd.embeddings.base import EmbeddingProvider
from memoryd.index.engine import IndexEngine
from memoryd.search.request import SearchResponse
from tests.conftest import AgentFactory, write
from tests.fakes.hash_embedder import HashEmbedder


def _settings(table: dict[str, object]) -> MemorySearchSettings:
    return config_mod.build({"defaults": table}).agent(None).settings


def test_the_profile_pins_openclaws_search_and_keeps_what_the_user_chose() -> None:
    plain = _settings({})
    s = _settings({"compat": "openclaw"})
    q = s.query
    assert (q.keyword_strategy, q.hybrid.text_score, q.hybrid.fusion, q.date_boost) == (
        "openclaw",
        "bm25",
        "weighted",
        0,
    )
    assert (q.hybrid.vector_weight, q.hybrid.text_weight, q.min_score) == pytest.approx((0.7, 0.3, 0.35))
    assert q.min_evidence == 0  # OpenClaw has no abstention rule
    assert s.store.fts.tokenizer == "unicode61"
    assert plain.query.keyword_strategy == "relaxed"  # memoryd's defaults are untouched without the switch
    chosen = _settings(
        {
            "compat": "openclaw",
            "store": {"fts": {"tokenizer": "trigram"}},
            "query": {"min_score": 0.5, "hybrid": {"vector_weight": 0.6, "text_weight": 0.4, "fusion": "rrf"}},
        }
    )
    assert chosen.store.fts.tokenizer == "trigram"
    assert (chosen.query.min_score, chosen.query.hybrid.vector_weight) == pytest.approx((0.5, 0.6))
    assert chosen.query.hybrid.fusion == "weighted"  # memoryd-only knobs are pinned
    assert _settings({"compat": "openclaw", "query": {"min_evidence": 0.3}}).query.min_evidence == 0


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root / "MEMORY.md", "# Memory\n\n- My dog is a golden retriever named Biscuit.\n- Favourite editor: helix.\n")
    write(root / "memory" / "garden.md", "# Garden\n\nPlant tomatoes and basil in April, seedlings indoors.\n")
    write(root / "memory" / "trips.md", "# Trips\n\nThe Lisbon trip in March: TAP flight, hotel near Alfama.\n")
    return root


async def _answer(
    make_agent: AgentFactory, ws: Path, aid: str, embedder: EmbeddingProvider | None, question: str, **table: object
) -> SearchResponse:
    eng = IndexEngine(make_agent(ws, aid, citations="off", **table), embedder)
    await eng.open()
    try:
        await eng.sync("test")
        if isinstance(embedder, HashEmbedder):
            embedder.fail_queries = True
        return await eng.search(question)
    finally:
        eng.close()


@pytest.mark.anyio
@pytest.mark.parametrize("table", [{}, {"compat": "openclaw"}, {"query": {"keyword_strategy": "openclaw"}}])
async def test_a_failed_query_embedding_answers_as_the_no_provider_path(
    ws: Path, make_agent: AgentFactory, table: dict[str, object]
) -> None:
    query = "which editor do I use"
    none = await _answer(make_agent, ws, "plain", None, query, provider="none", **table)
    failed = await _answer(make_agent, ws, "failing", HashEmbedder(), query, **table)
    assert failed.mode == none.mode == "keyword"
    assert failed.fallback is not None and "query embedding failed" in failed.fallback["reason"]
    assert [(r.path, r.start_line, r.score) for r in failed.results] == [
        (r.path, r.start_line, r.score) for r in none.results
    ]
    if table:  # OpenClaw's FTS-only path finds the note (with memoryd's leg both agree on the same answer)
        assert [r.path for r in none.results][:1] == ["MEMORY.md"]


@pytest.mark.anyio
async def test_the_openclaw_hybrid_keyword_leg_ands_every_token(ws: Path, make_agent: AgentFactory) -> None:
    """With one query word missing from the note, OpenClaw's AND leg finds nothing there: the note's
    score is its cosine alone times 0.7; memoryd's relaxed leg adds a keyword score."""
    emb = HashEmbedder()
    query = "golden retriever zebra"
    eng = IndexEngine(make_agent(ws, "c", citations="off", compat="openclaw"), emb)
    await eng.open()
    try:
        await eng.sync("test")
        resp = await eng.search(query, min_score=0)
        full = await eng.search("golden retriever", min_score=0)
    finally:
        eng.close()
    assert resp.mode == "hybrid"
    top = next(r for r in resp.results if r.path == "MEMORY.md")
    cosine = float(np.dot(emb.vector(query)[0], emb.vector(top.snippet)[0]))
    assert top.score == pytest.approx(0.7 * cosine, abs=1e-4)
    both = next(r for r in full.results if r.path == "MEMORY.md")
    cosine_full = float(np.dot(emb.vector("golden retriever")[0], emb.vector(both.snippet)[0]))
    assert both.score > 0.7 * cosine_full + 1e-3  # every token present: the AND leg adds 0.3 x r/(1+r)
    assert both.score < 0.7 * cosine_full + 0.3
