"""`memoryd remember TEXT`: memory_write from the command line, through the daemon or in-process.

Through the daemon it is the `memory_write` tool itself (same checks, same lock, searchable when it
returns). In-process it saves the same way and then syncs that one file, when no other process holds
the index's writer lock (otherwise the daemon or the next sync indexes it, and the output says so).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Literal, TextIO

from memoryd.cli.agents import choose
from memoryd.cli.exits import EXIT_ERROR, EXIT_OK
from memoryd.cli.link import live_daemon, tool
from memoryd.cli.output import dump
from memoryd.config import AgentConfig, Config

Target = Literal["daily", "long-term"]


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    if not text.strip():
        sys.stderr.write("memoryd remember: nothing to save (give the text, or '-' and the text on stdin)\n")
        return EXIT_ERROR
    target: Target = "long-term" if args.long_term else "daily"
    live = live_daemon(args, cfg)
    if live is not None:
        arguments: dict[str, Any] = {"text": text, "target": target}
        if args.heading is not None:
            arguments["heading"] = args.heading
        saved = tool(live, args.agent, "memory_write", arguments)
    else:
        saved = _in_process(args, choose(args, cfg), text, target)
    if args.json:
        out.write(dump(saved) + "\n")
        return EXIT_OK
    out.write(f"saved: {saved['citation']}\n")
    if not saved.get("indexed"):
        sys.stderr.write(f"memoryd remember: saved, not indexed yet: {saved.get('indexError')}\n")
    return EXIT_OK


def _in_process(args: argparse.Namespace, agent: AgentConfig, text: str, target: Target) -> dict[str, Any]:
    from memoryd.cli.local import run_engine
    from memoryd.errors import MemorydError
    from memoryd.index.engine import IndexEngine
    from memoryd.index.saving import SaveReport, save
    from memoryd.store.lock import WriterLockBusyError

    async def body(engine: IndexEngine) -> dict[str, Any]:
        written, heading = await save(agent, text, target=target, heading=args.heading)
        error = None
        try:
            engine.take_writer_lock()
            await engine.sync("write", memory_files=(written.abs_path,))
        except WriterLockBusyError:
            error = "another process is writing the index; it indexes the entry at its next sync"
        except MemorydError as exc:
            error = str(exc)
        return SaveReport(written, target, heading, indexed=error is None, index_error=error).to_dict()

    return run_engine(args, agent, body, writer=False, embed=True)
