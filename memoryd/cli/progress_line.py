"""The CLI's progress display, drawn from status's `progress` block (issue 24, item 3); no index import.

Hand-rolled rather than `rich` or `tqdm`: one line redrawn with `\\r` is all it needs, and the CLI's
start-up time matters more than colours. On a terminal it is a bar redrawn in place; elsewhere (a pipe,
a log) it is a plain line whenever the phase changes and at most every `PLAIN_EVERY_S` seconds between.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import TextIO

Block = Mapping[str, object]
PLAIN_EVERY_S = 10.0
WIDTH = 28


def _int(block: Block, outer: str, inner: str) -> int:
    part = block.get(outer)
    value = part.get(inner) if isinstance(part, Mapping) else None
    return value if isinstance(value, int) else 0


def describe(block: Block, *, bar: bool) -> str:
    """One line for a `progress` block: phase, a bar (of files, or of chunks while embedding), rate, ETA."""
    phase = str(block.get("phase") or "idle")
    if phase == "embedding":
        done = _int(block, "chunks", "embedded")
        total = done + _int(block, "chunks", "withoutVectors")
        what = f"{done}/{total} chunks embedded"
    else:
        done, total = _int(block, "files", "seen"), _int(block, "files", "total")
        what = f"{done}/{total} files, {_int(block, 'chunks', 'indexed')} chunks"
    frac = done / total if total else (1.0 if phase == "idle" else 0.0)
    drawn = ""
    if bar:
        filled = int(min(1.0, frac) * WIDTH)
        drawn = "[" + "#" * filled + "-" * (WIDTH - filled) + "] "
    rate, eta = block.get("chunksPerSecond"), block.get("etaSeconds")
    tail = f", {rate} chunks/s" if isinstance(rate, (int, float)) else ""
    tail += f", ETA {eta:.0f}s" if isinstance(eta, (int, float)) and phase != "idle" else ""
    return f"{phase:<9} {drawn}{what}{tail}"


class ProgressLine:
    """Draws `progress` blocks on `stream`: in place on a terminal, as plain lines otherwise."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self._last_phase: str | None = None
        self._last_plain = 0.0
        self._drawn = False

    def show(self, block: Block) -> None:
        text = f"{self.label}: {describe(block, bar=self.tty)}"
        phase = str(block.get("phase"))
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r" + text + " \x1b[K")
            self._drawn = True
        elif phase != self._last_phase or now - self._last_plain >= PLAIN_EVERY_S:
            self.stream.write(text + "\n")
            self._last_plain = now
        self._last_phase = phase
        self.stream.flush()

    def done(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def watch_while(fetch: Callable[[], Block | None], line: ProgressLine, interval_s: float = 0.5) -> threading.Event:
    """Show `fetch()`'s block every `interval_s` in a daemon thread until the returned event is set."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval_s):
            try:
                block = fetch()
            except Exception:  # a status call failing must never break the command it decorates
                return
            if block is not None and block.get("phase") != "idle":
                line.show(block)

    threading.Thread(target=loop, name="memoryd-progress", daemon=True).start()
    return stop
