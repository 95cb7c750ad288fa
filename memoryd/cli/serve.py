"""`memoryd serve`: the daemon in the foreground (systemd and launchd run this)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from memoryd import daemon
from memoryd import logging as logs
from memoryd.config import Config
from memoryd.errors import DaemonRunningError
from memoryd.runtime.record import EXIT_ALREADY_RUNNING


def serve(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    d = cfg.daemon
    stream: TextIO | None = None
    if d.log_file:
        log_path = Path(d.log_file).expanduser()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        stream = log_path.open("a", encoding="utf-8")
    logs.configure(args.log_level or d.log_level, args.log_format or d.log_format, stream)
    try:
        return daemon.run(cfg, config_path=args.config, socket_path=args.socket)
    except DaemonRunningError as exc:  # one line, and a status systemd's RestartPreventExitStatus= knows
        sys.stderr.write(f"memoryd serve: {exc}\n")
        return EXIT_ALREADY_RUNNING
