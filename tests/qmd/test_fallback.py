"""FallbackSearcher: QMD while it works, the builtin index (a real one here) the moment it does not."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from memoryd.config import AgentConfig
from memoryd.qmd.backend import QmdBackend
from memoryd.qmd.fallback import FallbackSearcher
from memoryd.qmd.settings import QmdLimitsSettings, QmdSettings, QmdUpdateSettings
from memoryd.search.request import SearchRequest
from tests.qmd.conftest import EngineSearcher
from tests.qmd.standin import StandIn, environment_without_qmd

pytestmark = pytest.mark.anyio

HITS = [{"collection": "memory-root-main", "path": "MEMORY.md", "docid": "#aa", "score": 0.8, "snippet": "Biscuit"}]


@asynccontextmanager
async def serving(
    agent: AgentConfig, builtin: EngineSearcher, tmp_path: Path, qmd: QmdSettings, *, retry_s: float = 60.0
) -> AsyncIterator[FallbackSearcher]:
    def make() -> QmdBackend:
        return QmdBackend(agent, qmd, state_dir=tmp_path / "state", base_env=environment_without_qmd())

    searcher = FallbackSearcher(make, builtin, retry_s=retry_s, retry_max_s=retry_s * 4)
    async with anyio.create_task_group() as tg:
        await tg.start(searcher.run)
        with anyio.fail_after(30):
            yield searcher
        tg.cancel_scope.cancel()


async def until(searcher: FallbackSearcher, condition: Callable[[], bool]) -> None:
    while not condition():
        await searcher.changed()


async def search(searcher: FallbackSearcher, query: str) -> Any:
    return await searcher.search(SearchRequest(query))


def qmd_settings(standin: StandIn, **kw: Any) -> QmdSettings:
    base: dict[str, Any] = {"command": str(standin.path), "update": QmdUpdateSettings(interval="0")}
    return QmdSettings(**{**base, **kw})


async def test_without_a_qmd_binary_the_builtin_index_answers_and_says_why(
    agent: AgentConfig, builtin: EngineSearcher, tmp_path: Path
) -> None:
    qmd = QmdSettings(command="qmd-is-not-installed")
    async with serving(agent, builtin, tmp_path, qmd) as searcher:
        first = await search(searcher, "golden retriever")  # whether QMD is still starting or already out
        assert first.fallback is not None and first.fallback["from"] == "qmd"
        await until(searcher, lambda: searcher.failures > 0)
        resp = await search(searcher, "golden retriever")
        status = await searcher.status()
        doctor = await searcher.doctor()
    assert [r.path for r in resp.results] == ["MEMORY.md"] and resp.provider == "none"
    assert resp.fallback is not None and resp.fallback["from"] == "qmd"
    assert "cannot run 'qmd-is-not-installed'" in resp.fallback["reason"]
    assert (status["backend"], status["requestedBackend"]) == ("builtin", "qmd")
    assert status["fallback"] == resp.fallback
    details = status["qmd"]
    assert isinstance(details, dict) and details["disabled"] is True and details["nextRetryAt"]
    assert doctor["version"] is None and "cannot run" in str(doctor["error"])


async def test_a_failing_search_is_answered_by_the_builtin_index_and_qmd_comes_back_later(
    standin: StandIn, agent: AgentConfig, builtin: EngineSearcher, tmp_path: Path
) -> None:
    standin.set(hits=HITS)
    async with serving(agent, builtin, tmp_path, qmd_settings(standin), retry_s=0.2) as searcher:
        await until(searcher, lambda: searcher.active is not None)
        served = await search(searcher, "biscuit")
        assert (served.provider, served.fallback) == ("qmd", None)
        assert (await searcher.status())["backend"] == "qmd"

        standin.fail("search", exit=1, stderr="Error: index.sqlite is corrupt\n")
        rescued = await search(searcher, "golden retriever")
        assert [r.path for r in rescued.results] == ["MEMORY.md"] and rescued.provider == "none"
        assert rescued.fallback is not None and "index.sqlite is corrupt" in rescued.fallback["reason"]

        standin.heal("search")
        await until(searcher, lambda: searcher.active is not None)
        back = await search(searcher, "biscuit")
        assert (back.provider, back.fallback) == ("qmd", None)
        assert searcher.recoveries == 1
        assert builtin.searches == 1


async def test_qmd_is_not_retried_on_every_call(
    standin: StandIn, agent: AgentConfig, builtin: EngineSearcher, tmp_path: Path
) -> None:
    standin.set(hits=HITS)
    async with serving(agent, builtin, tmp_path, qmd_settings(standin)) as searcher:
        await until(searcher, lambda: searcher.active is not None)
        standin.fail("search", exit=1, stderr="boom\n")
        for _ in range(5):
            assert (await search(searcher, "biscuit")).fallback is not None
        await until(searcher, lambda: searcher.failures == 1)
    assert len(standin.calls("search")) == 1  # only the search that failed reached QMD
    assert len(standin.calls("--version")) == 1  # no new probe within the 60 s backoff


async def test_a_hanging_search_is_answered_by_the_builtin_index_after_the_deadline(
    standin: StandIn, agent: AgentConfig, builtin: EngineSearcher, tmp_path: Path
) -> None:
    standin.fail("search", hang=True)
    qmd = qmd_settings(standin, limits=QmdLimitsSettings(timeout_ms=300))
    async with serving(agent, builtin, tmp_path, qmd) as searcher:
        await until(searcher, lambda: searcher.active is not None)
        resp = await search(searcher, "Lisbon flight")
    assert [r.path for r in resp.results] == ["sessions/s1.jsonl"]
    assert resp.fallback is not None and "timed out after 300 ms" in resp.fallback["reason"]


async def test_a_failed_update_hands_the_agent_to_the_builtin_index(
    standin: StandIn, agent: AgentConfig, builtin: EngineSearcher, tmp_path: Path
) -> None:
    standin.fail("update", exit=1, stderr="ENOSPC: no space left on device\n")
    async with serving(agent, builtin, tmp_path, qmd_settings(standin)) as searcher:
        await until(searcher, lambda: searcher.failures == 1)
        resp = await search(searcher, "golden retriever")
        assert await searcher.sync("cli", force=True) is None  # nothing to update while QMD is out
    assert resp.fallback is not None
    assert resp.fallback["reason"] == "qmd update failed (exit 1): ENOSPC: no space left on device (boot update)"


async def test_status_while_qmd_serves_keeps_a_summary_of_the_builtin_index(
    standin: StandIn, agent: AgentConfig, builtin: EngineSearcher, tmp_path: Path
) -> None:
    async with serving(agent, builtin, tmp_path, qmd_settings(standin)) as searcher:
        await until(searcher, lambda: searcher.active is not None)
        run = await searcher.sync("cli", force=True)
        status = await searcher.status()
        doctor = await searcher.doctor()
    assert run is not None and run.error is None
    assert (status["backend"], status["requestedBackend"], status["fallback"]) == ("qmd", "qmd", None)
    summary = status["builtin"]
    assert isinstance(summary, dict)
    assert (summary["files"], summary["dbPath"], summary["dirty"]) == (4, str(agent.db_path), False)
    assert doctor["version"] == "9.9.9"
