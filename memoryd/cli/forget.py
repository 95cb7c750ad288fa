"""`memoryd forget`: delete retained transcripts for good, through the daemon or in-process.

Through the daemon it is `memoryd/forget` on a connection bound to the agent (the daemon runs it
between syncs, as its own writer); without one the agent's engine does the same here, holding the
index's writer lock.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from memoryd.cli.agents import choose, only_served
from memoryd.cli.exits import EXIT_ERROR, EXIT_OK
from memoryd.cli.link import live_daemon
from memoryd.cli.output import dump
from memoryd.cli.rpc import DaemonClient
from memoryd.config import AgentConfig, Config

FORGET_METHOD = "memoryd/forget"


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    params: dict[str, Any] = {"paths": list(args.paths), "all": args.all}
    for key in ("before", "after"):
        if getattr(args, key) is not None:
            params[key] = getattr(args, key)
    live = live_daemon(args, cfg)
    if live is not None:
        with DaemonClient.open(live, args.agent, pick=only_served) as client:
            report = client.request(FORGET_METHOD, params)
        report.pop("_meta", None)
    else:
        report = _in_process(args, choose(args, cfg), params)
    if args.json:
        out.write(dump(report) + "\n")
    else:
        out.write(format_report(report))
    return EXIT_OK if not report.get("stillOnDisk") and not report.get("unknown") else EXIT_ERROR


def _in_process(args: argparse.Namespace, agent: AgentConfig, params: dict[str, Any]) -> dict[str, Any]:
    from memoryd.cli.local import run_engine
    from memoryd.index.engine import IndexEngine
    from memoryd.index.forget import Forget, parse_when

    what = Forget(
        tuple(params["paths"]),
        bool(params["all"]),
        parse_when(params["before"], "--before") if "before" in params else None,
        parse_when(params["after"], "--after") if "after" in params else None,
    )

    async def body(engine: IndexEngine) -> dict[str, Any]:
        return dict(await engine.forget(what))

    return run_engine(args, agent, body, writer=True)


def format_report(report: dict[str, Any]) -> str:
    forgotten = report.get("forgotten") or []
    lines = [f"forgotten: {len(forgotten)} transcripts, {report.get('chunks')} chunks ({report.get('durationMs')} ms)"]
    lines += [f"  {path}" for path in forgotten]
    for path in report.get("stillOnDisk") or []:
        lines.append(f"  not forgotten, still on disk (the next sync would index it again; delete it first): {path}")
    for path in report.get("unknown") or []:
        lines.append(f"  not a retained transcript of this agent: {path}")
    return "\n".join(lines) + "\n"
