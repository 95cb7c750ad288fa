"""`memoryd reload`: the running daemon reads its configuration again (`memoryd/reload`, as SIGHUP).

Also what `setup --write` calls after editing memoryd's config, so the daemon serves the new entry at
once. Without a daemon there is nothing to reload: the next start reads the file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from memoryd.cli.exits import EXIT_ERROR, EXIT_OK
from memoryd.cli.link import live_daemon
from memoryd.cli.output import dump
from memoryd.cli.rpc import DaemonClient
from memoryd.config import Config

RELOAD_METHOD = "memoryd/reload"
NO_DAEMON = "no daemon running; it will read the configuration at start"


def request_reload(path: Path, reason: str) -> dict[str, Any]:
    """Ask the daemon at `path` to reload; its report (`ok`, `error`, the agents added/removed/…)."""
    with DaemonClient.open(path, None) as client:
        report = client.request(RELOAD_METHOD, {"reason": reason})
    report.pop("_meta", None)
    return report


def describe(report: dict[str, Any]) -> str:
    """One line a person reads: what the reload changed, or why it kept the old configuration."""
    if not report.get("ok"):
        return f"the daemon kept its configuration: {report.get('error')}"
    parts = [f"{word} {', '.join(report[key])}" for key, word in _WORDS if report.get(key)]
    agents = ", ".join(report.get("agents") or []) or "no agents"
    done = "; ".join(parts) if parts else "nothing changed"
    return f"the running daemon reloaded {report.get('config')} ({done}) and now serves {agents}"


_WORDS = (("added", "added"), ("removed", "removed"), ("restarted", "restarted"), ("kept", "could not switch"))


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    live = live_daemon(args, cfg)
    if live is None:
        out.write(NO_DAEMON + "\n")
        return EXIT_OK
    report = request_reload(live, "cli")
    out.write(dump(report) + "\n" if args.json else describe(report) + "\n")
    return EXIT_OK if report.get("ok") else EXIT_ERROR
