"""`memoryd status`: each agent's index status, from the daemon or read in-process."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

import orjson

from memoryd.cli.agents import every
from memoryd.cli.exits import EXIT_OK
from memoryd.cli.link import live_daemon, tool
from memoryd.cli.output import dump
from memoryd.config import AgentConfig, Config


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    agents = every(args, cfg)
    live = live_daemon(args, cfg)
    if live is not None:
        statuses = [tool(live, a.id, "status", {"deep": args.deep}) for a in agents]
    else:
        statuses = _in_process(args, cfg, agents)
    if args.json:
        out.write(dump(statuses[0] if len(statuses) == 1 else statuses) + "\n")
    else:
        out.write("\n".join(format_status(s) for s in statuses))
    return EXIT_OK


def _in_process(args: argparse.Namespace, cfg: Config, agents: list[AgentConfig]) -> list[dict[str, Any]]:
    from memoryd.cli.backend import with_qmd
    from memoryd.cli.local import run_engine
    from memoryd.index.engine import IndexEngine
    from memoryd.qmd.fallback import FallbackSearcher

    statuses = []
    for agent in agents:

        async def body(engine: IndexEngine, agent: AgentConfig = agent) -> dict[str, Any]:
            async def report(qmd: FallbackSearcher | None) -> dict[str, Any]:
                if qmd is None:
                    st = engine.status()
                else:
                    st = await qmd.status()
                    if args.deep:
                        st["qmdDoctor"] = await qmd.doctor()
                st["daemon"] = None
                return st

            return await with_qmd(agent, engine, cfg.state_dir, report)

        statuses.append(run_engine(args, agent, body, writer=False))
    return statuses


def format_status(st: dict[str, Any]) -> str:
    lines = [f"{k}: {v if not isinstance(v, dict | list) else orjson.dumps(v).decode()}" for k, v in st.items()]
    return "\n".join(lines) + "\n"
