"""Running a command in this process, without the daemon: the agent's own engine, opened here.

Imported only when no daemon answers (or for `--workspace` agents): it pulls in the index, the
store and the embedding provider, which the socket path never needs.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from memoryd import logging as logs
from memoryd import paths
from memoryd.config import AgentConfig
from memoryd.embeddings.select import Selection, select_provider
from memoryd.index.engine import IndexEngine

T = TypeVar("T")


def run_engine(
    args: argparse.Namespace,
    agent: AgentConfig,
    body: Callable[[IndexEngine], Awaitable[T]],
    *,
    writer: bool,
    embed: bool = False,
) -> T:
    """Run `body` on the agent's engine in this process; `embed` loads the agent's embedding provider
    first, so an in-process index or search builds and reads the same index the daemon would.
    Logs go to stderr at `--log-level` (default: warning), set up here before anything logs."""
    logs.configure(args.log_level or "warning")

    async def main() -> T:
        selection = Selection(None)
        if embed:
            selection = await select_provider(agent.settings, cache_dir=paths.cache_dir())
        engine = IndexEngine(
            agent, selection.provider, provider_unavailable_reason=selection.reason, hold_writer_lock=writer
        )
        engine.fallback_from = selection.fallback_from
        engine.state.provider_state = "ready" if selection.provider else "unavailable"
        await engine.open()
        try:
            return await body(engine)
        finally:
            with anyio.CancelScope(shield=True):
                await engine.aclose()
            if selection.provider is not None:
                await selection.provider.aclose()

    return anyio.run(main)
