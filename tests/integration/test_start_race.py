"""Several `memoryd serve` started at once on one state directory (issue 23, item 5).

Exactly one serves; every other exits with `record.EXIT_ALREADY_RUNNING` and one line, having taken
the state directory's lock before anything slow. Before, each imported the daemon's machinery (the
index, the store, the embedding runtime: seconds under load) before it tried the lock, and four
started together stayed alive, none answering, for over 12 s. Asserted on what the losers did (the
modules `-X importtime` lists), never on seconds: `make bench` (bench/start_bench.py) times it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.runtime.record import EXIT_ALREADY_RUNNING
from tests.cli.test_imports import imported
from tests.conftest import write
from tests.integration.daemon_fixture import READY_LINE, LogPump

pytestmark = pytest.mark.integration

CONFIG = """
[defaults]
provider = "none"
[agents.main]
workspace = "{root}/ws"
"""

SLOW = (
    *("memoryd.daemon", "memoryd.index", "memoryd.store", "memoryd.search", "memoryd.embeddings", "memoryd.server"),
    *("mcp", "pydantic", "numpy", "apsw", "onnxruntime", "anyio"),
)
"""What a daemon loads before it serves; a loser of the lock must not have loaded any of it."""


def test_four_daemons_started_at_once_one_serves_three_exit_at_once(tmp_path: Path) -> None:
    write(tmp_path / "ws" / "MEMORY.md", "# Notes\n\nThe kettle is descaled monthly.\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    command = [sys.executable, "-X", "importtime", "-m", "memoryd", "serve", "--config", str(config)]
    command += ["--state-dir", str(tmp_path / "state"), "--log-level", "info"]
    procs = [
        subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    pumps = [LogPump(p.stderr) for p in procs if p.stderr is not None]
    try:
        codes: dict[int, int] = {}
        ready = [i for i, pump in enumerate(pumps) if pump.wait_for(READY_LINE, 0, 120) is not None]
        assert len(ready) == 1, "".join(line for pump in pumps for line in pump.lines if "import time" not in line)
        winner = procs[ready[0]]
        for proc in procs:
            if proc is not winner:
                codes[proc.pid] = proc.wait(timeout=120)
        assert winner.poll() is None
        assert sorted(codes.values()) == [EXIT_ALREADY_RUNNING] * 3
        for proc, pump in zip(procs, pumps, strict=True):
            if proc is winner:
                continue
            pump.close()
            said = [line for line in pump.lines if not line.startswith("import time:")]
            assert len(said) == 1, said  # one line: no log, no traceback
            assert said[0].startswith("memoryd serve: another memoryd daemon"), said
            assert f"pid {winner.pid}" in said[0], said
            modules = imported("".join(pump.lines))
            assert "memoryd.runtime.claim" in modules
            loaded = sorted(m for m in modules if any(m == s or m.startswith(s + ".") for s in SLOW))
            assert loaded == [], f"the loser loaded {loaded[:5]}… before it knew it lost"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=60)
        for pump in pumps:
            pump.close()
