"""Fixtures for the QMD backend tests, and the `qmd` marker.

Tests marked `@pytest.mark.qmd` run the real QMD CLI (installed into `.qmd/` by
`scripts/install-qmd.sh`, or found at `$QMD_BIN`). They are deselected, not skipped, unless the
environment has `QMD=1`; with `QMD=1` a missing install fails them loudly.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memoryd.config import AgentConfig
from memoryd.index.engine import IndexEngine
from memoryd.search.request import SearchRequest, SearchResponse
from tests.conftest import AgentFactory
from tests.qmd.standin import StandIn, make_standin

REPO = Path(__file__).resolve().parents[2]
LOCAL_QMD = REPO / ".qmd" / "node_modules" / ".bin" / "qmd"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "qmd: runs the real QMD CLI (scripts/install-qmd.sh); selected only when QMD=1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("QMD") == "1":
        return
    deselected = [item for item in items if item.get_closest_marker("qmd") is not None]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item.get_closest_marker("qmd") is None]


@pytest.fixture
def standin(tmp_path: Path) -> StandIn:
    """A stand-in `qmd` that behaves like a healthy QMD until a test says otherwise."""
    return make_standin(tmp_path / "standin-bin")


@pytest.fixture
def real_qmd() -> Path:
    """The real QMD launcher; a test that asks for it must not pass silently without it."""
    explicit = os.environ.get("QMD_BIN", "").strip()
    path = Path(explicit) if explicit else LOCAL_QMD
    if not os.access(path, os.X_OK):
        pytest.fail(f"QMD=1 but no qmd at {path}: run scripts/install-qmd.sh (or set QMD_BIN)")
    return path


class EngineSearcher:
    """The builtin index (a real IndexEngine on real files) with AgentIndex's search/status shape."""

    def __init__(self, engine: IndexEngine) -> None:
        self.engine = engine
        self.searches = 0

    async def search(self, request: SearchRequest) -> SearchResponse:
        self.searches += 1
        return await self.engine.searcher.search(request)

    async def status(self) -> dict[str, object]:
        return self.engine.status()


@pytest.fixture
def agent(workspace: Path, make_agent: AgentFactory) -> AgentConfig:
    """The shared test workspace as agent `main`, its sessions beside it, watcher debounce short."""
    return make_agent(workspace, sync={"watch_debounce_ms": 50})


@pytest.fixture
async def builtin(agent: AgentConfig) -> AsyncIterator[EngineSearcher]:
    engine = IndexEngine(agent)
    await engine.open()
    try:
        await engine.sync("test")
        yield EngineSearcher(engine)
    finally:
        engine.close()
