"""Which agent a command speaks for: one rule for every command, through the daemon or in-process.

* `--agent ID` names it (an unknown id is an error listing the agents there are);
* `--workspace PATH` is its own ad-hoc agent (`--agent`, else `main`);
* otherwise the only enabled agent; with several, the command fails and says how to choose:
  "several agents: main, work — pass --agent". Nothing is picked silently.

Whose agents: the daemon's when the command talks to one (it says which it serves, `memoryd/agents`,
and refuses to bind an unknown one, `memoryd/bind`), since it may run with another configuration
than this shell's (`memoryd serve --config …`); this process's configuration only in-process.

`status` (and `config show`) without `--agent` cover every enabled agent instead.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from memoryd.config import DEFAULT_AGENT, AgentConfig, Config
from memoryd.errors import NotFoundError


def enabled(cfg: Config) -> list[AgentConfig]:
    """The agents the daemon serves (those with `enabled = true`), in configuration order."""
    return [a for a in cfg.agents.values() if a.settings.enabled]


def only(ids: Sequence[str], *, none: str) -> str:
    """The one agent of `ids`; NotFoundError saying how to choose when there are several, or `none`
    when there is none."""
    if len(ids) == 1:
        return ids[0]
    if not ids:
        raise NotFoundError(none)
    raise NotFoundError(f"several agents: {', '.join(ids)} — pass --agent")


def only_served(ids: list[str]) -> str:
    """`only` among the agents a daemon serves (`memoryd.cli.rpc.DaemonClient.open`'s `pick`)."""
    return only(ids, none="the daemon serves no agent; enable one in its configuration, then reload it (SIGHUP)")


def choose(args: argparse.Namespace, cfg: Config) -> AgentConfig:
    """The one agent this command line speaks for in-process (see the module docstring)."""
    if args.workspace is not None:
        return cfg.agents[args.agent or DEFAULT_AGENT]
    if args.agent:
        return cfg.agent(args.agent)
    agents = {a.id: a for a in enabled(cfg)}
    none = "no agent is enabled in the configuration; set enabled = true for one, or pass --agent"
    return agents[only(list(agents), none=none)]


def every(args: argparse.Namespace, cfg: Config) -> list[AgentConfig]:
    """`--agent`'s (or `--workspace`'s) agent when named, else every enabled agent."""
    if args.agent or args.workspace is not None:
        return [choose(args, cfg)]
    return enabled(cfg)
