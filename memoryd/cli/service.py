"""`memoryd install-service` / `uninstall-service`: the systemd user unit or the LaunchAgent."""

from __future__ import annotations

import argparse
from typing import TextIO

from memoryd.cli.exits import EXIT_ERROR, EXIT_OK
from memoryd.config import Config
from memoryd.service.install import InstallResult, install_service, uninstall_service


def install(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    result = install_service(enable=not args.no_enable, force=args.force, socket_activation=args.socket_activation)
    return _print(result, out)


def uninstall(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    return _print(uninstall_service(force=args.force), out)


def _print(result: InstallResult, out: TextIO) -> int:
    for change in result.files:
        out.write(f"{change.action}: {change.path}\n")
    for command in result.commands:
        out.write(f"ran: {' '.join(command.argv)} (exit {command.returncode})\n")
        if not command.ok and command.output:
            out.write(f"  {command.output.strip()}\n")
    for argv in result.pending:
        out.write(f"to do: {' '.join(argv)}\n")
    for note in result.notes:
        out.write(f"note: {note}\n")
    return EXIT_OK if result.ok else EXIT_ERROR
