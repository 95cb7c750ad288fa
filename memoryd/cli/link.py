"""The CLI's link to the daemon: where its socket is, whether it answers, starting it, calling it.

Every command that can go through the daemon asks here first (`live_daemon`); only when nothing
answers does it load the index in-process. Kept small and free of heavy imports: this is the path
hooks and scripts take on every prompt.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memoryd.cli.agents import only_served
from memoryd.cli.rpc import DaemonClient
from memoryd.config import Config
from memoryd.errors import DaemonError
from memoryd.runtime import locate
from memoryd.runtime.locate import find_daemon
from memoryd.runtime.private import ensure_private_dir


def explicit_socket(args: argparse.Namespace, cfg: Config) -> Path | None:
    """A socket the user chose: `--socket`, else `$MEMORYD_SOCKET`, else `daemon.socket_path`."""
    return Path(args.socket).expanduser() if args.socket else cfg.explicit_socket


def live_daemon(args: argparse.Namespace, cfg: Config) -> Path | None:
    """The socket of the daemon to talk to, found from any environment (`memoryd.runtime.locate`:
    the chosen socket, else the record of the daemon holding the state directory, else the
    default), or None to work in-process; ad-hoc `--workspace` agents always run in-process."""
    found = None if args.workspace is not None else find_daemon(cfg.state_dir, explicit_socket(args, cfg))
    if found is None:  # in-process: the databases go into the state directory, private as the daemon keeps it
        ensure_private_dir(cfg.state_dir, what="state directory", tighten=True)
    return found


def start_daemon(args: argparse.Namespace, cfg: Config) -> Path:
    """The socket of the daemon serving this state directory, started in the background (with this
    command's config, state directory and chosen socket) only when no daemon holds it."""
    serve: list[str] = []
    for flag, value in (("--socket", args.socket), ("--config", args.config), ("--state-dir", args.state_dir)):
        if value:  # absolute: the daemon outlives this process and its working directory
            serve += [flag, str(Path(value).expanduser().absolute())]
    return locate.start_daemon(serve, cfg.state_dir, explicit_socket(args, cfg))


def tool(path: Path, agent: str | None, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool on the daemon for `agent` (None: the daemon's only agent, `agents.only_served`); a
    tool error becomes a DaemonError with the daemon's message."""
    with DaemonClient.open(path, agent, pick=only_served) as client:
        result = client.call_tool(name, arguments)
    if result.get("isError"):
        content = result.get("content")
        blocks = content if isinstance(content, list) else []
        text = " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
        raise DaemonError(text or f"{name} failed")
    data = result.get("structuredContent")
    if not isinstance(data, dict):
        raise DaemonError(f"the daemon sent no structured result for {name}")
    return data


def daemon_agents(path: Path, agent: str | None) -> list[str]:
    """`agent` alone when named (the daemon refuses it at the bind if it does not serve it), else every
    agent the daemon serves."""
    return [agent] if agent else DaemonClient.served_agents(path)


def request_sync(path: Path, agent: str | None, *, force: bool, reason: str = "cli") -> dict[str, Any]:
    """Ask the daemon to sync `agent`'s index (None: its only agent) now (`memoryd/sync`); its report."""
    with DaemonClient.open(path, agent, pick=only_served) as client:
        report = client.request("memoryd/sync", {"force": force, "reason": reason})
    report.pop("_meta", None)
    return report
