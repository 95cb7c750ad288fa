"""`memoryd eval`: its parser and runner live in `memoryd.eval.cli`; this adapts it to the dispatch table."""

from __future__ import annotations

import argparse
from typing import TextIO

from memoryd.config import Config
from memoryd.eval import cli as eval_cli


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    return eval_cli.run(args, out)
