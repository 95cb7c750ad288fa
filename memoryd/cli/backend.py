"""The agent's configured search backend, in this process: the builtin index, or QMD in front of it.

With `backend = "qmd"` an in-process search or status goes to QMD exactly as the daemon's would —
through `FallbackSearcher`, so a missing binary or a failing QMD is answered by the builtin index
with `fallback: {from: "qmd", reason}` — but with one attempt and no retry timers (`run_once`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio

from memoryd.config import AgentConfig
from memoryd.index.engine import IndexEngine
from memoryd.qmd.backend import QmdBackend
from memoryd.qmd.fallback import FallbackSearcher
from memoryd.search.request import SearchRequest, SearchResponse

T = TypeVar("T")


class BuiltinView:
    """The builtin index behind an open engine, as the QMD fallback answers from it."""

    def __init__(self, engine: IndexEngine) -> None:
        self.engine = engine

    async def search(self, request: SearchRequest) -> SearchResponse:
        return await self.engine.searcher.search(request)

    async def status(self) -> dict[str, object]:
        return self.engine.status()


async def with_qmd(
    agent: AgentConfig,
    engine: IndexEngine,
    state_dir: Path,
    body: Callable[[FallbackSearcher | None], Awaitable[T]],
    *,
    as_is: bool = False,
) -> T:
    """Run `body` with the agent's QMD searcher (None with the builtin backend), started and stopped here;
    `as_is` searches QMD's index without updating it first (`--no-sync`)."""
    if agent.settings.backend != "qmd":
        return await body(None)
    qmd = agent.settings.qmd
    searcher = FallbackSearcher(
        lambda: QmdBackend(agent, qmd, state_dir=state_dir),
        builtin=BuiltinView(engine),
        retry_s=qmd.fallback.retry_ms / 1000,
        retry_max_s=qmd.fallback.retry_max_ms / 1000,
    )
    async with anyio.create_task_group() as tg:
        await tg.start(functools.partial(searcher.run_once, as_is=as_is))
        try:
            result = await body(searcher)
        finally:
            tg.cancel_scope.cancel()
    return result
