"""`memoryd get`: lines of a memory file, through the daemon or in-process."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from memoryd.cli.agents import choose
from memoryd.cli.exits import EXIT_OK
from memoryd.cli.link import live_daemon, tool
from memoryd.cli.output import dump
from memoryd.config import AgentConfig, Config


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    live = live_daemon(args, cfg)
    if live is not None:
        arguments: dict[str, Any] = {"path": args.path}
        if args.from_line is not None:
            arguments["from"] = args.from_line
        if args.lines is not None:
            arguments["lines"] = args.lines
        got = tool(live, args.agent, "memory_get", arguments)
    else:
        got = _in_process(args, choose(args, cfg))
    text = str(got.get("text", ""))
    out.write(dump(got) + "\n" if args.json else text + ("" if text.endswith("\n") else "\n"))
    return EXIT_OK


def _in_process(args: argparse.Namespace, agent: AgentConfig) -> dict[str, Any]:
    from memoryd.cli.local import run_engine
    from memoryd.index.engine import IndexEngine

    async def body(engine: IndexEngine) -> dict[str, Any]:
        return engine.read_file(args.path, from_line=args.from_line, lines=args.lines).to_dict()

    return run_engine(args, agent, body, writer=False)
