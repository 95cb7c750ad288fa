"""Status is assembled from the parts' own reports, in one print order, with no field given twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.index.engine import IndexEngine
from memoryd.index.status import ORDER, assemble
from tests.conftest import AgentFactory
from tests.fakes.hash_embedder import HashEmbedder

pytestmark = pytest.mark.anyio


def test_a_block_several_parts_fill_is_merged_in_print_order() -> None:
    status = assemble(
        {"embedding": {"provider": "local", "model": "m"}, "extra": 1},
        {"embedding": {"filesWithoutVectors": 0}},
        {"agent": "a", "embedding": {"state": "ready", "lastError": None}},
    )
    assert list(status) == ["agent", "embedding", "extra"]
    embedding = status["embedding"]
    assert isinstance(embedding, dict)
    assert list(embedding) == ["state", "provider", "model", "lastError", "filesWithoutVectors"]


@pytest.mark.parametrize(
    "second",
    [{"files": 2}, {"embedding": {"model": "other"}}, {"embedding": "not a block"}],
)
def test_a_field_two_parts_report_is_refused(second: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="reported twice"):
        assemble({"files": 1, "embedding": {"model": "m"}}, second)


async def test_the_engine_reports_every_field_once_in_print_order(workspace: Path, make_agent: AgentFactory) -> None:
    engine = IndexEngine(make_agent(workspace), HashEmbedder())
    await engine.open()
    try:
        await engine.sync("test")
        status = engine.status()
    finally:
        engine.close()
    assert list(status) == list(ORDER)
    embedding = status["embedding"]
    assert isinstance(embedding, dict)
    assert list(embedding) == list(ORDER["embedding"])
    assert (status["provider"], status["searchMode"], status["files"]) == ("hash", "hybrid", 4)
