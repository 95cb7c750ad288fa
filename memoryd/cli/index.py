"""`memoryd index` / `memoryd sync`: bring the index up to date, through the daemon or in-process."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from memoryd.cli.agents import choose
from memoryd.cli.exits import EXIT_OK
from memoryd.cli.link import live_daemon, request_sync, tool
from memoryd.cli.output import dump
from memoryd.config import AgentConfig, Config


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    live = live_daemon(args, cfg)
    if live is not None:
        from memoryd.cli.progress_line import ProgressLine, watch_while

        line = ProgressLine(f"indexing {args.agent or 'memory'}")
        stop = watch_while(lambda: _progress(tool(live, args.agent, "status", {})), line)
        try:
            report = request_sync(live, args.agent, force=args.force)
        finally:
            stop.set()
            line.done()
    else:
        report = _in_process(args, choose(args, cfg))
    if args.json:
        out.write(dump(report) + "\n")
        return EXIT_OK
    out.write(format_report(report))
    return EXIT_OK


def _in_process(args: argparse.Namespace, agent: AgentConfig) -> dict[str, Any]:
    from memoryd.cli.local import run_engine
    from memoryd.cli.progress_line import ProgressLine, watch_while
    from memoryd.index.engine import IndexEngine

    line = ProgressLine(f"indexing {agent.id}")

    async def body(engine: IndexEngine) -> dict[str, Any]:
        stop = watch_while(engine.state.tracker.report, line)  # the tracker is read, never written, off the loop
        try:
            result = await engine.sync("cli", force=args.force)
        finally:
            stop.set()
            line.done()
        return result.to_dict()

    return run_engine(args, agent, body, writer=True, embed=True)


def _progress(status: dict[str, Any]) -> dict[str, Any] | None:
    block = status.get("progress")
    return block if isinstance(block, dict) else None


def format_report(report: dict[str, Any]) -> str:
    """The sync report as a line a person reads, plus one line per file or folder it could not read."""
    kind = "full rebuild" if report.get("full") else "delta sync"
    lines = [
        f"{kind}: {report.get('indexed')} files indexed, {report.get('unchanged')} unchanged, "
        f"{report.get('deleted')} removed, {report.get('chunks')} chunks written in {report.get('durationMs')} ms"
    ]
    unreadable = report.get("unreadable")
    for path in unreadable if isinstance(unreadable, list) else []:
        lines.append(f"  unreadable (old rows kept): {path}")
    degraded = report.get("degraded")
    for place in degraded if isinstance(degraded, list) else []:
        lines.append(f"  cannot read {place.get('path')} ({place.get('role')}: {place.get('reason')}); old rows kept")
    return "\n".join(lines) + "\n"
