"""A one-line progress bar on stderr, drawn only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from memoryd.index.engine import Progress


class ProgressBar:
    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.started = time.monotonic()
        self._last_draw = 0.0

    def __call__(self, p: Progress) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last_draw < 0.1 and p.files_done < p.files_total:
            return
        self._last_draw = now
        frac = p.files_done / p.files_total if p.files_total else 1.0
        width = 28
        filled = int(frac * width)
        elapsed = now - self.started
        eta = (elapsed / frac - elapsed) if frac > 0 else 0.0
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(
            f"\r{self.label} [{bar}] {p.files_done}/{p.files_total} files, {p.chunks} chunks, ETA {eta:4.0f}s "
        )
        self.stream.flush()

    def done(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
