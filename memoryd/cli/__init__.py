"""The `memoryd` command line. Output goes to stdout; logs and progress go to stderr.

`search`, `get`, `remember`, `status`, `sync` and `index` talk to the running daemon when one answers on
the socket, and work in-process otherwise (taking the index's writer lock while they write).
`--workspace` agents are ad hoc, so they always run in-process.

This module is only the parser and a dispatch table: a command's module is imported when that
command runs, so `memoryd --help` and the socket path (`memoryd.cli.link`, a raw JSON-RPC client)
never load the daemon, the MCP SDK, numpy or SQLite. tests/cli/test_imports.py holds that line.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, TextIO

from memoryd.cli.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from memoryd.cli.parser import build_parser, parse
from memoryd.errors import ConfigError, MemorydError, first_error

if TYPE_CHECKING:
    from memoryd.config import Config

__all__ = ["COMMANDS", "EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]

Handler = Callable[[argparse.Namespace, "Config", TextIO], int]


class Command(NamedTuple):
    """Where a command's handler lives, and whether logging is set up before it runs.

    Commands that may go through the daemon set up logging only when they fall back to running
    in-process (`memoryd.cli.local`): the socket path logs nothing and skips structlog.
    """

    target: str  # "module:function", the module relative to memoryd.cli
    logs_first: bool = True

    def load(self) -> Handler:
        module, _, function = self.target.partition(":")
        handler: Handler = getattr(importlib.import_module(f"memoryd.cli.{module}"), function)
        return handler


COMMANDS: dict[str, Command] = {
    "serve": Command("serve:serve", logs_first=False),  # it configures its own log format and file
    "mcp": Command("mcp:run", logs_first=False),  # the shim stays light: see memoryd.cli.mcp
    "index": Command("index:run", logs_first=False),
    "sync": Command("index:run", logs_first=False),
    "search": Command("search:run", logs_first=False),
    "get": Command("get:run", logs_first=False),
    "remember": Command("remember:run", logs_first=False),
    "hook": Command("hook:run_safely", logs_first=False),  # loads its own config: it never fails its host
    "setup": Command("setup:run"),
    "reload": Command("reload:run", logs_first=False),
    "forget": Command("forget:run", logs_first=False),
    "status": Command("status:run", logs_first=False),
    "config": Command("config_show:run"),
    "token": Command("token:run"),
    "install-service": Command("service:install"),
    "uninstall-service": Command("service:uninstall"),
    "model": Command("model:pull"),
    "eval": Command("evaluation:run"),
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    args = parse(words)
    stdout = out if out is not None else sys.stdout
    command = COMMANDS[args.command]
    if args.command == "hook":  # exits 0 whatever happens (memoryd.cli.hook): never a blocked prompt
        from memoryd.cli.hook import run_safely

        return run_safely(args, stdout)
    try:
        if command.logs_first:
            from memoryd import logging as logs

            logs.configure(args.log_level or "warning")
        from memoryd import config as config_mod

        cfg = config_mod.load(args.config, state_dir=args.state_dir, workspace=args.workspace, agent_id=args.agent)
        return command.load()(args, cfg, stdout)
    except ConfigError as exc:
        sys.stderr.write(f"memoryd: {exc}\n")
        return EXIT_USAGE
    except MemorydError as exc:
        sys.stderr.write(f"memoryd {args.command}: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BaseExceptionGroup as group:  # errors raised inside task groups (socket clients, the daemon)
        inner = first_error(group)
        if isinstance(inner, KeyboardInterrupt):
            return 130
        if not isinstance(inner, MemorydError | ConfigError):
            raise
        sys.stderr.write(f"memoryd {args.command}: {inner}\n")
        return EXIT_USAGE if isinstance(inner, ConfigError) else EXIT_ERROR
