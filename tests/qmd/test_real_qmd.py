"""The real QMD CLI (keyword path, offline): selected with QMD=1, after scripts/install-qmd.sh."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from memoryd.config import AgentConfig
from memoryd.qmd.backend import QmdBackend
from memoryd.qmd.fallback import FallbackSearcher
from memoryd.qmd.settings import QmdLimitsSettings, QmdSessionSettings, QmdSettings, QmdUpdateSettings
from memoryd.search.request import SearchRequest
from tests.conftest import AgentFactory, write
from tests.qmd.conftest import EngineSearcher

pytestmark = [pytest.mark.anyio, pytest.mark.qmd]


def real_settings(qmd: Path, **kw: object) -> QmdSettings:
    base: dict[str, object] = {
        "command": str(qmd),
        "sessions": QmdSessionSettings(enabled=True),
        "update": QmdUpdateSettings(wait_for_boot_sync=True, interval="0", debounce_ms=0),
    }
    return QmdSettings(**{**base, **kw})  # type: ignore[arg-type]


@asynccontextmanager
async def running(agent: AgentConfig, qmd: QmdSettings, tmp_path: Path) -> AsyncIterator[QmdBackend]:
    backend = QmdBackend(agent, qmd, state_dir=tmp_path / "state")
    await backend.open()
    async with anyio.create_task_group() as tg:
        await tg.start(backend.run)  # waits for the boot update (wait_for_boot_sync)
        with anyio.fail_after(60):
            yield backend
        tg.cancel_scope.cancel()


async def paths(backend: QmdBackend, query: str, corpus: str = "all") -> list[tuple[str, int, int, str]]:
    resp = await backend.search(SearchRequest(query, corpus=corpus))
    return [(r.path, r.start_line, r.end_line, r.source) for r in resp.results]


async def test_keyword_search_through_real_qmd_cites_like_the_builtin_index(
    real_qmd: Path, agent: AgentConfig, tmp_path: Path
) -> None:
    async with running(agent, real_settings(real_qmd), tmp_path) as backend:
        assert backend.version and backend.version[0].isdigit()
        assert await paths(backend, "golden retriever") == [("MEMORY.md", 3, 4, "memory")]
        assert await paths(backend, "PostgreSQL migration") == [("memory/2026-01-05.md", 3, 3, "memory")]
        assert await paths(backend, "Lisbon", corpus="sessions") == [("sessions/s1.jsonl", 2, 4, "sessions")]
        assert await paths(backend, "quokka") == []  # notes.md is not a memory file
        assert await paths(backend, "quasar") == []  # node_modules is not indexed
        status = await backend.status()
        assert status["files"] == 4 and status["sourceCounts"] == [
            {"source": "memory", "files": 3, "chunks": 3},
            {"source": "sessions", "files": 1, "chunks": 1},
        ]
        assert (await backend.doctor())["vectors"] == 0


async def test_a_new_note_is_found_after_the_debounced_update(
    real_qmd: Path, agent: AgentConfig, tmp_path: Path
) -> None:
    async with running(agent, real_settings(real_qmd), tmp_path) as backend:
        assert await paths(backend, "marmalade") == []
        write(agent.workspace / "memory" / "pantry.md", "# Pantry\n\nBuy Seville oranges for marmalade.\n")
        updates = backend.updater.state.updates
        backend.files_changed()
        while backend.updater.state.updates == updates:
            await backend.updater.progress()
        assert await paths(backend, "marmalade") == [("memory/pantry.md", 3, 3, "memory")]


async def test_two_agents_never_see_each_others_notes(
    real_qmd: Path, agent: AgentConfig, make_agent: AgentFactory, tmp_path: Path
) -> None:
    other_ws = tmp_path / "other"
    write(other_ws / "MEMORY.md", "# Other\n\nThe retriever here is called Rex.\n")
    other = make_agent(other_ws, "work")
    async with (
        running(agent, real_settings(real_qmd), tmp_path) as main_backend,
        running(other, real_settings(real_qmd), tmp_path) as work_backend,
    ):
        assert [p for p, *_ in await paths(main_backend, "retriever")] == ["MEMORY.md"]
        assert [p for p, *_ in await paths(work_backend, "Biscuit")] == []
        assert [p for p, *_ in await paths(work_backend, "Rex")] == ["MEMORY.md"]
    assert main_backend.index_path != work_backend.index_path


async def test_real_qmd_query_mode_hangs_fetching_models_and_the_builtin_index_answers(
    real_qmd: Path, agent: AgentConfig, builtin: EngineSearcher, tmp_path: Path
) -> None:
    qmd = real_settings(
        real_qmd,
        search_mode="query",
        limits=QmdLimitsSettings(timeout_ms=1500),
        update=QmdUpdateSettings(wait_for_boot_sync=True, interval="0", embed_timeout_ms=1000),  # embed hangs too
    )

    def make() -> QmdBackend:
        return QmdBackend(agent, qmd, state_dir=tmp_path / "state")

    searcher = FallbackSearcher(make, builtin, retry_s=60, retry_max_s=60)
    async with anyio.create_task_group() as tg:
        await tg.start(searcher.run)
        with anyio.fail_after(60):
            while searcher.active is None:
                await searcher.changed()
            resp = await searcher.search(SearchRequest("golden retriever", corpus="memory"))
        tg.cancel_scope.cancel()
    assert [r.path for r in resp.results] == ["MEMORY.md"]
    assert resp.fallback is not None and "timed out after 1500 ms" in resp.fallback["reason"]
