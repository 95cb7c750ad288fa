"""`memoryd serve`: the daemon in the foreground (systemd and launchd run this).

The state directory is claimed here, before the daemon's modules are imported (the index, the
store, the embedding runtime: seconds on a loaded machine) and before the model load or the first
sync: a second `memoryd serve`, started beside the first, knows at once that it lost and exits
(`record.EXIT_ALREADY_RUNNING`), instead of spending that time to find out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from memoryd import logging as logs
from memoryd.config import Config
from memoryd.errors import DaemonRunningError
from memoryd.runtime.claim import claim_state_dir
from memoryd.runtime.private import make_private_dirs
from memoryd.runtime.record import EXIT_ALREADY_RUNNING


def serve(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    d = cfg.daemon
    stream: TextIO | None = None
    if d.log_file:
        log_path = Path(d.log_file).expanduser()
        make_private_dirs(log_path.parent)
        stream = log_path.open("a", encoding="utf-8")
    logs.configure(args.log_level or d.log_level, args.log_format or d.log_format, stream)
    try:
        claim = claim_state_dir(cfg.state_dir)
    except DaemonRunningError as exc:  # one line, and a status systemd's RestartPreventExitStatus= knows
        sys.stderr.write(f"memoryd serve: {exc}\n")
        return EXIT_ALREADY_RUNNING
    from memoryd import daemon  # the heavy part, only once this process is the state directory's daemon

    return daemon.run(cfg, config_path=args.config, socket_path=args.socket, claim=claim, http=args.http)
