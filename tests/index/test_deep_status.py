"""`status` with `deep` really probes the builtin index: an embedding round trip, a vector-leg query and
sqlite-vec's own KNN, each timed; a failure is reported in the check, never raised."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from memoryd.config import AgentConfig
from memoryd.embeddings.select import Selection
from memoryd.index.actor import AgentIndex
from memoryd.server.schemas import protocol_dir
from tests.conftest import AgentFactory
from tests.fakes.hash_embedder import HashEmbedder

pytestmark = pytest.mark.anyio


async def _deep(agent: AgentConfig, embedder: HashEmbedder | None) -> tuple[dict[str, Any], dict[str, Any]]:
    async def factory(_agent: AgentConfig) -> Selection:
        return Selection(embedder, None if embedder else "provider = none: keyword-only by configuration")

    actor = AgentIndex(agent, provider_factory=factory)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(actor.run)
            await actor.request_sync("test")
            shallow = await actor.status()
            deep = await actor.status(deep=True)
            tg.cancel_scope.cancel()
    return shallow, deep


def _well_formed(probe: dict[str, Any]) -> None:
    schema = json.loads((protocol_dir() / "status.output.json").read_text())["properties"]["probe"]
    assert set(probe) == set(schema["required"])
    for check in probe.values():
        assert {"ok", "ms", "error"} <= set(check)
        assert check["ms"] is None or check["ms"] >= 0


async def test_a_deep_status_embeds_and_queries_every_vector_store(workspace: Path, make_agent: AgentFactory) -> None:
    embedder = HashEmbedder()
    shallow, deep = await _deep(make_agent(workspace), embedder)
    assert "probe" not in shallow
    probe = deep["probe"]
    _well_formed(probe)
    assert probe["embedding"]["ok"] is True and probe["embedding"]["dims"] == embedder.dims
    assert embedder.query_calls >= 1  # the round trip really ran
    assert probe["vectorSearch"]["ok"] is True and probe["vectorSearch"]["hits"] == 1
    assert probe["vectorSearch"]["backend"] in ("exact", "sqlite-vec")
    assert probe["sqliteVec"]["ok"] is True and probe["sqliteVec"]["version"]
    assert probe["sqliteVec"]["knn"] == 1  # 64 dims: the sign-bit table exists and answers


async def test_a_failing_provider_is_reported_by_the_probe(workspace: Path, make_agent: AgentFactory) -> None:
    embedder = HashEmbedder()
    agent = make_agent(workspace)
    _shallow, _deep_before = await _deep(agent, embedder)
    embedder.fail_queries = True
    _shallow, deep = await _deep(agent, embedder)
    embedding = deep["probe"]["embedding"]
    assert embedding["ok"] is False and embedding["error"]
    assert deep["probe"]["vectorSearch"]["ok"] is True  # the store is probed with a unit vector instead


async def test_without_a_provider_there_is_nothing_to_embed(workspace: Path, make_agent: AgentFactory) -> None:
    _shallow, deep = await _deep(make_agent(workspace, provider="none"), None)
    probe = deep["probe"]
    _well_formed(probe)
    assert probe["embedding"] == {"ok": None, "ms": None, "error": "no embedding provider"}
    assert probe["vectorSearch"]["ok"] is None  # a keyword-only index holds no vectors
    assert probe["sqliteVec"]["ok"] is True
