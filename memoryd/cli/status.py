"""`memoryd status`: each agent's index status, from the daemon or read in-process."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, TextIO

import orjson

from memoryd.cli.agents import every
from memoryd.cli.exits import EXIT_OK
from memoryd.cli.link import daemon_agents, live_daemon, tool
from memoryd.cli.output import dump
from memoryd.config import AgentConfig, Config


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    live = live_daemon(args, cfg)
    if getattr(args, "watch", False):
        return _watch(args, cfg, live, out)
    if live is not None:
        statuses = [tool(live, a, "status", {"deep": args.deep}) for a in daemon_agents(live, args.agent)]
    else:
        statuses = _in_process(args, cfg, every(args, cfg))
    if runs := hook_runs(cfg):
        for st in statuses:
            st["hooks"] = runs
    if args.json:
        out.write(dump(statuses[0] if len(statuses) == 1 else statuses) + "\n")
    else:
        out.write("\n".join(format_status(s) for s in statuses))
    return EXIT_OK


def hook_runs(cfg: Config) -> dict[str, Any]:
    """When each host's hook last ran and what it injected (`<state dir>/hooks/last.json`: counts, never
    text), its time as ISO 8601; empty when no hook ran on this machine."""
    from memoryd.hookruns import recent_runs

    return dict(recent_runs(cfg.state_dir))


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
                if args.deep:  # as the daemon's: an embedding round trip and each vector store queried
                    st.update(await engine.searcher.probe())
                st["daemon"] = None
                return st

            return await with_qmd(agent, engine, cfg.state_dir, report)

        statuses.append(run_engine(args, agent, body, writer=False, embed=args.deep))
    return statuses


WATCH_EVERY_S = 1.0


def _watch(args: argparse.Namespace, cfg: Config, live: Path | None, out: TextIO) -> int:
    """`status --watch`: one progress line per agent, redrawn (a terminal) or printed as it changes, until
    every agent is idle with no chunk waiting for a vector; without a daemon, once (nothing indexes)."""
    from memoryd.cli.progress_line import ProgressLine

    agents = daemon_agents(live, args.agent) if live is not None else [a.id for a in every(args, cfg)]
    lines = {agent: ProgressLine(agent, out) for agent in agents}
    while True:
        busy = False
        for agent in agents:
            st = tool(live, agent, "status", {}) if live is not None else {}
            found = st.get("progress")
            block: dict[str, Any] = found if isinstance(found, dict) else {"phase": "idle"}
            chunks = block.get("chunks")
            waiting = chunks.get("withoutVectors") if isinstance(chunks, dict) else 0
            busy = busy or block.get("phase") != "idle" or bool(waiting)
            lines[agent].show(block)
            if len(agents) > 1 or not busy:
                lines[agent].done()
        if not busy or live is None:
            return EXIT_OK
        time.sleep(WATCH_EVERY_S)


def format_status(st: dict[str, Any]) -> str:
    """One `key: value` line per field, nested objects indented below their key; every value spelled as in
    JSON (true, false, null, numbers, lists) except strings, printed bare. `--json` is for programs."""
    return "".join(_lines(st, ""))


def _lines(obj: dict[str, Any], indent: str) -> list[str]:
    out = []
    for key, value in obj.items():
        if isinstance(value, dict) and value:
            out.append(f"{indent}{key}:\n")
            out.extend(_lines(value, indent + "  "))
        else:
            out.append(f"{indent}{key}: {_scalar(value)}\n")
    return out


def _scalar(value: object) -> str:
    if isinstance(value, str):
        return value if value and value.strip() == value else orjson.dumps(value).decode()
    return orjson.dumps(value).decode()
