"""Which agent a command speaks for: one rule for every command, through the daemon or in-process.

* `--agent ID` names it (an unknown id is an error listing the configured ones);
* `--workspace PATH` is its own ad-hoc agent (`--agent`, else `main`);
* otherwise the only enabled agent; with several, the command fails and says how to choose:
  "several agents: main, work — pass --agent". Nothing is picked silently.

`status` (and `config show`) without `--agent` cover every enabled agent instead.
"""

from __future__ import annotations

import argparse

from memoryd.config import DEFAULT_AGENT, AgentConfig, Config
from memoryd.errors import NotFoundError


def enabled(cfg: Config) -> list[AgentConfig]:
    """The agents the daemon serves (those with `enabled = true`), in configuration order."""
    return [a for a in cfg.agents.values() if a.settings.enabled]


def choose(args: argparse.Namespace, cfg: Config) -> AgentConfig:
    """The one agent this command line speaks for (see the module docstring)."""
    if args.workspace is not None:
        return cfg.agents[args.agent or DEFAULT_AGENT]
    if args.agent:
        return cfg.agent(args.agent)
    agents = enabled(cfg)
    if len(agents) == 1:
        return agents[0]
    if not agents:
        raise NotFoundError("no agent is enabled in the configuration; set enabled = true for one, or pass --agent")
    raise NotFoundError(f"several agents: {', '.join(a.id for a in agents)} — pass --agent")


def every(args: argparse.Namespace, cfg: Config) -> list[AgentConfig]:
    """`--agent`'s (or `--workspace`'s) agent when named, else every enabled agent."""
    if args.agent or args.workspace is not None:
        return [choose(args, cfg)]
    return enabled(cfg)
