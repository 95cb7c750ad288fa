"""`memoryd get`: lines of a memory file, through the daemon or in-process."""

from __future__ import annotations

import argparse
import sys
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
    if args.json:
        out.write(dump(got) + "\n")
    elif (past := past_the_end(got)) is not None:
        sys.stderr.write(past)
    else:
        text = str(got.get("text", ""))
        out.write(text + ("" if text.endswith("\n") else "\n"))
    return EXIT_OK


def past_the_end(got: dict[str, Any]) -> str | None:
    """What to say when `--from` starts after the file's last line. The tool answers that with no lines
    and the file's `totalLines`, not an error (OpenClaw's memory_get), so the command exits 0 as well."""
    total, start = got.get("totalLines"), got.get("from")
    if got.get("lines") != 0 or not isinstance(total, int) or not isinstance(start, int) or start <= total:
        return None
    return (
        f"memoryd get: {got.get('path')} has {total} line{'' if total == 1 else 's'}; --from {start} is past its end\n"
    )


def _in_process(args: argparse.Namespace, agent: AgentConfig) -> dict[str, Any]:
    from memoryd.cli.local import run_engine
    from memoryd.index.engine import IndexEngine

    async def body(engine: IndexEngine) -> dict[str, Any]:
        return engine.read_file(args.path, from_line=args.from_line, lines=args.lines).to_dict()

    return run_engine(args, agent, body, writer=False)
