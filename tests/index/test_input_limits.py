"""Spec §3.4: with `chunking.tokens = 4000`, chunks reach every remote provider within its input limit.

Each loopback provider refuses an input longer than the limit memoryd holds for the model (in its own
error words and status), so a chunk sent whole would fail the sync's embedding and leave the file
without vectors. Before the split was wired in, all five cases ended with `embedding failed`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from memoryd.embeddings.limits import input_limit_bytes
from memoryd.embeddings.select import create_provider
from memoryd.index.engine import IndexEngine
from tests.conftest import AgentFactory, write
from tests.fakes.embedding_servers import EmbeddingFake, GeminiFake, MistralFake, OllamaFake, OpenAIFake, VoyageFake

pytestmark = pytest.mark.anyio

CASES = [
    ("openai", OpenAIFake, "text-embedding-3-small"),
    ("gemini", GeminiFake, "gemini-embedding-001"),
    ("voyage", VoyageFake, "voyage-3-lite"),
    ("mistral", MistralFake, "mistral-embed"),
    ("ollama", OllamaFake, "nomic-embed-text"),
]


def _long_note() -> str:
    """About 15 KB of prose in one 4000-token chunk, with accented and CJK text (several bytes a character)."""
    lines = [f"Line {i}: the café ledger noted entry {i} — 会議の記録 {i}, the orchid count rose." for i in range(150)]
    return "# Ledger\n\n" + "\n".join(lines) + "\n"


@pytest.fixture
def note(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws / "memory" / "ledger.md", _long_note())
    write(ws / "MEMORY.md", "# Memory\n\nShort note about the orchids.\n")
    return ws


@pytest.mark.parametrize(("name", "fake_cls", "model"), CASES)
async def test_long_chunks_are_split_within_the_providers_limit(
    note: Path, make_agent: AgentFactory, tmp_path: Path, name: str, fake_cls: type[EmbeddingFake], model: str
) -> None:
    limit = input_limit_bytes(name, model)
    fake = OllamaFake() if fake_cls is OllamaFake else fake_cls(api_key="k")
    with fake as server:
        server.max_input_bytes = limit
        agent = make_agent(
            note,
            provider=name,
            model=model,
            remote={"base_url": server.base_url, "api_key": "k"},
            chunking={"tokens": 4000, "overlap": 0},
        )
        provider = await create_provider(name, agent.settings, cache_dir=tmp_path / "cache", explicit_model=True)
        engine = IndexEngine(agent, provider)
        await engine.open()
        try:
            await engine.sync("test")
            assert engine.state.embedding_error is None
            resp = await engine.search("café ledger orchid count", min_score=0)
        finally:
            engine.close()
            await provider.aclose()
        assert 0 < server.longest_input <= limit
    assert resp.mode == "hybrid"
    assert "memory/ledger.md" in {r.path for r in resp.results}
    with contextlib.closing(sqlite3.connect(agent.db_path)) as conn:
        pieces = conn.execute(
            "SELECT start_line, end_line, text, embedding FROM chunks WHERE path = 'memory/ledger.md' ORDER BY rowid"
        ).fetchall()
    assert len(pieces) > 1  # one 4000-token chunk became several pieces...
    assert all(len(text.encode()) <= limit and emb for _s, _e, text, emb in pieces)  # ...each embedded
    assert "".join(text for _s, _e, text, _emb in pieces) == _long_note()  # nothing lost
