"""An agent whose backend is QMD: with the binary missing, the builtin index answers and says so."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from memoryd.index.actor import AgentIndex
from tests.conftest import AgentFactory

pytestmark = pytest.mark.anyio


async def test_missing_qmd_binary_falls_back_to_the_builtin_index(
    workspace: Path, tmp_path: Path, make_agent: AgentFactory
) -> None:
    agent = make_agent(workspace, backend="qmd", qmd={"command": str(tmp_path / "no-such-qmd")})
    actor = AgentIndex(agent, state_dir=tmp_path / "state")
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(actor.run)
            await actor.request_sync("test")
            resp = await actor.search("golden retriever", max_results=3, min_score=0, corpus="all", wait_fresh_ms=None)
            status = await actor.status()
            tg.cancel_scope.cancel()
    assert [r.path for r in resp.results] == ["MEMORY.md"]
    assert resp.fallback is not None and resp.fallback["from"] == "qmd"
    assert status["fallback"] is not None
