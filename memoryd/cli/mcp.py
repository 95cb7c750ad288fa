"""`memoryd mcp`: MCP over stdio for one agent, through the daemon or (`--standalone`) in-process.

Hosts wait for this process to answer `initialize` (the MCP Inspector gives up after 15 s), so the
daemon path imports only the byte bridge (`memoryd.server.bridge`) and the daemon lookup
(`memoryd.runtime.locate`): no daemon, MCP SDK, numpy or SQLite. Only `--standalone` loads them.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TextIO

import anyio

from memoryd.cli.agents import choose, only_served
from memoryd.cli.exits import EXIT_OK
from memoryd.cli.link import start_daemon
from memoryd.config import Config


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    if args.standalone or args.workspace is not None:
        agent = choose(args, cfg)
        solo = dataclasses.replace(cfg, agents={agent.id: agent})
        from memoryd import logging as logs

        logs.configure(args.log_level or "warning")
        anyio.run(_standalone, solo, agent.id, cfg.daemon.max_line_bytes)
        return EXIT_OK
    from memoryd.server.bridge import run_bridge

    anyio.run(run_bridge, start_daemon(args, cfg), args.agent, only_served)  # the daemon's agents decide
    return EXIT_OK


async def _standalone(cfg: Config, agent_id: str, max_line_bytes: int) -> None:
    from memoryd.daemon import DaemonService
    from memoryd.index.supervisor import Supervisor
    from memoryd.index.watcher import Watcher
    from memoryd.server.stdio import serve_stdio

    supervisor = Supervisor(cfg)
    service = DaemonService(supervisor)
    watcher = Watcher(lambda: list(supervisor.actors.values()))
    async with anyio.create_task_group() as tg:
        await tg.start(supervisor.run)
        await tg.start(watcher.run)
        await serve_stdio(service, agent_id, max_line_bytes=max_line_bytes)
        tg.cancel_scope.cancel()
