"""`memoryd serve` (the daemon in the foreground) and `memoryd mcp` (MCP over stdio)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TextIO

import anyio

from memoryd import daemon
from memoryd import logging as logs
from memoryd.cli.agents import choose
from memoryd.cli.exits import EXIT_OK
from memoryd.cli.link import start_daemon
from memoryd.config import Config
from memoryd.daemon import DaemonService
from memoryd.errors import DaemonRunningError
from memoryd.index.supervisor import Supervisor
from memoryd.index.watcher import Watcher
from memoryd.runtime.record import EXIT_ALREADY_RUNNING
from memoryd.server.stdio import run_bridge, serve_stdio


def serve(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    d = cfg.daemon
    stream: TextIO | None = None
    if d.log_file:
        log_path = Path(d.log_file).expanduser()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        stream = log_path.open("a", encoding="utf-8")
    logs.configure(args.log_level or d.log_level, args.log_format or d.log_format, stream)
    try:
        return daemon.run(cfg, config_path=args.config, socket_path=args.socket)
    except DaemonRunningError as exc:  # one line, and a status systemd's RestartPreventExitStatus= knows
        sys.stderr.write(f"memoryd serve: {exc}\n")
        return EXIT_ALREADY_RUNNING


def mcp(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    logs.configure(args.log_level or "warning")
    agent = choose(args, cfg)
    if args.standalone or args.workspace is not None:
        solo = dataclasses.replace(cfg, agents={agent.id: agent})
        anyio.run(_standalone, solo, agent.id, cfg.daemon.max_line_bytes)
        return EXIT_OK
    anyio.run(run_bridge, start_daemon(args, cfg), agent.id)
    return EXIT_OK


async def _standalone(cfg: Config, agent_id: str, max_line_bytes: int) -> None:
    supervisor = Supervisor(cfg)
    service = DaemonService(supervisor)
    watcher = Watcher(lambda: list(supervisor.actors.values()))
    async with anyio.create_task_group() as tg:
        await tg.start(supervisor.run)
        await tg.start(watcher.run)
        await serve_stdio(service, agent_id, max_line_bytes=max_line_bytes)
        tg.cancel_scope.cancel()
