"""CLI start-up, measured as hooks and scripts meet it: a whole process, from exec to exit.

`memoryd --help` and `memoryd search` through a running daemon are each timed against
`python -c pass` in the same run, alternating the two (A B A B ...) so a drift in the machine's
speed moves both: the ratio per pair is the figure that travels between machines, the seconds
are this machine's. Targets (issue 11): --help <= 0.3 s, search <= 0.4 s end to end.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio

from bench import start_bench
from bench.corpus import CorpusSpec, Writer
from bench.daemon_bench import Daemon
from bench.report import table
from memoryd.runtime.record import EXIT_ALREADY_RUNNING


def _wall(argv: list[str], status: int = 0) -> float:
    t0 = time.perf_counter()
    quiet = subprocess.DEVNULL
    done = subprocess.run(argv, stdin=quiet, stdout=quiet, stderr=quiet, check=False)
    if done.returncode != status:
        raise RuntimeError(f"{argv[:4]} exited with {done.returncode}, not {status}")
    return time.perf_counter() - t0


def paired(argv: list[str], runs: int, status: int = 0) -> tuple[float, float, float]:
    """(median wall s of `argv`, median wall s of `python -c pass`, median of the per-pair ratios)."""
    baseline = [sys.executable, "-c", "pass"]
    _wall(argv, status)  # warm the page cache, not counted
    _wall(baseline)
    a, b = [], []
    for _ in range(runs):
        a.append(_wall(argv, status))
        b.append(_wall(baseline))
    return statistics.median(a), statistics.median(b), statistics.median(x / y for x, y in zip(a, b, strict=True))


def _workspace(root: Path) -> Path:
    """50 short notes: the index's size is not what this measures, and the local model embeds them quickly."""
    writer = Writer(CorpusSpec(seed=21))
    for i in range(50):
        note = root / "memory" / f"note-{i:02d}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"# Note {i}\n\nThe report about {writer.query()} was filed.\n", encoding="utf-8")
    return root


def main(out: Path, quick: bool) -> None:
    runs = 5 if quick else 15
    script = Path(sys.executable).parent / "memoryd"
    memoryd = [str(script)] if script.exists() else [sys.executable, "-m", "memoryd"]
    rows = []
    help_s, pass_s, ratio = paired([*memoryd, "--help"], runs)
    rows.append(["memoryd --help", help_s, pass_s, ratio, "<= 0.3 s"])
    ws = _workspace(out / "corpus-cli")
    d = Daemon(out, ws, "local", debounce_ms=1500)
    try:
        anyio.run(d.wait_ready)
        search = [*memoryd, "search", "the report", "--config", str(d.config), "--socket", str(d.socket)]
        search += ["--state-dir", str(d.dir / "state")]
        search_s, pass_s, ratio = paired(search, runs)
        rows.append(["memoryd search (through the daemon, hybrid)", search_s, pass_s, ratio, "<= 0.4 s"])
        second = [*memoryd, "serve", "--config", str(d.config), "--state-dir", str(d.dir / "state")]
        lost_s, pass_s, ratio = paired(second, runs, status=EXIT_ALREADY_RUNNING)
        rows.append(["a second memoryd serve exits 3 (a daemon holds the state)", lost_s, pass_s, ratio, "<= 1 s"])
        race = start_bench.rows(out, d.config, 2 if quick else 5)
    finally:
        d.stop()
    table(
        f"CLI start-up, whole process (median of {runs} runs, paired with python -c pass)",
        ["command", "wall s", "python -c pass s", "ratio", "target"],
        rows,
    )
    table("Daemons started at once on one state directory (local model; from the common start)", ["", "s"], race)
