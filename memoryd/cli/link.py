"""The CLI's link to the daemon: where its socket is, whether it answers, starting it, calling it.

Every command that can go through the daemon asks here first (`live_daemon`); only when nothing
answers does it load the index in-process. Kept small and free of heavy imports: this is the path
hooks and scripts take on every prompt.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memoryd import paths
from memoryd.cli.rpc import DaemonClient
from memoryd.config import Config
from memoryd.errors import DaemonError


def socket_path(args: argparse.Namespace, cfg: Config) -> Path:
    """The socket to use: `--socket`, else the configured or default one."""
    return Path(args.socket).expanduser() if args.socket else cfg.socket


def live_daemon(args: argparse.Namespace, cfg: Config) -> Path | None:
    """The daemon's socket if a daemon answers there; ad-hoc `--workspace` agents always run in-process."""
    if args.workspace is not None:
        return None
    path = socket_path(args, cfg)
    return path if daemon_answers(path) else None


def daemon_answers(path: Path) -> bool:
    """Whether something accepts connections on the socket at `path`."""
    if not path.exists():
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def start_daemon(args: argparse.Namespace, path: Path, timeout_s: float = 20.0) -> None:
    """Start `memoryd serve` in the background and wait until it answers on its socket."""
    cmd = [sys.executable, "-m", "memoryd", "serve", "--socket", str(path)]
    if args.config:
        cmd += ["--config", str(args.config)]
    if args.state_dir:
        cmd += ["--state-dir", str(args.state_dir)]
    log_path = (args.state_dir or paths.state_dir()) / "daemon.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log_file:
        subprocess.Popen(  # noqa: S603 - our own interpreter and module
            cmd, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, start_new_session=True
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if daemon_answers(path):
            return
        time.sleep(0.05)
    raise DaemonError(f"started memoryd serve but it did not answer on {path} within {timeout_s:.0f} s; see {log_path}")


def tool(path: Path, agent: str | None, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool on the daemon; a tool error becomes a DaemonError with the daemon's message."""
    with DaemonClient.open(path, agent) as client:
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


def request_sync(path: Path, agent: str | None, *, force: bool, reason: str = "cli") -> dict[str, Any]:
    """Ask the daemon to sync `agent`'s index now (`memoryd/sync`) and return its report."""
    with DaemonClient.open(path, agent) as client:
        report = client.request("memoryd/sync", {"force": force, "reason": reason})
    report.pop("_meta", None)
    return report
