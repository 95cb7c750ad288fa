"""`memoryd config show`: the effective configuration, all agents or `--agent`'s."""

from __future__ import annotations

import argparse
from typing import TextIO

from memoryd import config as config_mod
from memoryd.cli.agents import choose
from memoryd.cli.exits import EXIT_OK
from memoryd.cli.output import dump
from memoryd.config import Config


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    if args.agent or args.workspace:
        out.write(dump(config_mod.to_dict(choose(args, cfg))) + "\n")
        return EXIT_OK
    shown = {
        "source": str(cfg.source_file) if cfg.source_file else None,
        "stateDir": str(cfg.state_dir),
        "socket": str(cfg.socket),
        "daemon": config_mod.to_dict(cfg.daemon),
        "hooks": config_mod.to_dict(cfg.hooks),
        "agents": {k: config_mod.to_dict(a) for k, a in cfg.agents.items()},
    }
    out.write(dump(shown) + "\n")
    return EXIT_OK
