"""Daemons started at once on one state directory: how soon the losers of its lock know (issue 23, item 5).

A trial starts four `memoryd serve` together on a fresh state directory and records, per process,
when it exited (the three losers, status 3) and when the winner first accepts a connection. The
losers must know within about a second on an idle machine: they take the lock before the daemon's
imports, its model load or its first sync. Before, each imported the daemon first (~1 s idle, 10 s
and more under load) and all four stayed alive, none answering.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from memoryd.runtime.locate import answers
from memoryd.runtime.record import EXIT_ALREADY_RUNNING

_POLL_S = 0.005


def trial(root: Path, config: Path, env: dict[str, str], *, daemons: int = 4) -> tuple[list[float], float]:
    """(seconds until each loser exited, seconds until the winner answered), from the common start."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    sock = root / "run" / "memoryd.sock"
    argv = [sys.executable, "-m", "memoryd", "serve", "--config", str(config), "--state-dir", str(root / "state")]
    argv += ["--socket", str(sock)]
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(daemons)
    ]
    exited: dict[int, float] = {}
    answered = 0.0
    try:
        while len(exited) < daemons - 1 or not answered:
            for p in procs:
                if p.pid not in exited and p.poll() is not None:
                    exited[p.pid] = time.perf_counter() - t0
                    if p.returncode != EXIT_ALREADY_RUNNING:
                        raise RuntimeError(f"memoryd serve exited with {p.returncode}, not {EXIT_ALREADY_RUNNING}")
            if not answered and answers(sock):
                answered = time.perf_counter() - t0
            if time.perf_counter() - t0 > 600:
                raise RuntimeError("the daemons did not settle within 600 s")
            time.sleep(_POLL_S)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=60)
    return sorted(exited.values()), answered


def rows(out: Path, config: Path, trials: int) -> list[list[object]]:
    """Table rows: the losers' exit (median and slowest over every trial) and the winner's first answer;
    the model cache is the other benchmarks' (`<out>/cache`), so nothing is downloaded."""
    env = {**os.environ, "XDG_CACHE_HOME": str(out / "cache")}
    losers: list[float] = []
    winners: list[float] = []
    for i in range(trials):
        lost, won = trial(out / f"start-race-{i}", config, env)
        losers += lost
        winners.append(won)
    return [
        [f"4 x memoryd serve at once: a loser exits 3 (median, {len(losers)} losers)", statistics.median(losers)],
        ["4 x memoryd serve at once: the slowest loser exits 3", max(losers)],
        [f"4 x memoryd serve at once: the winner answers (median of {trials})", statistics.median(winners)],
    ]
