"""What an agent's index is doing right now, for status, every search answer and the CLI's bar (issue 24, item 3).

The indexer moves the tracker through its phases (scanning -> indexing -> swapping, for a rebuild
-> embedding -> idle) and counts as it goes; nothing here does any work. The rate is measured over a
recent window, not since the start, so an estimate follows a machine whose load changes; the
estimate is the work left in the phases still to come at the rates seen (embedding's from the last
run while it has not started: the model's rate is what dominates).
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from memoryd.isotime import iso

WINDOW_S = 20.0
"""How far back the rate looks: long enough to smooth batches, short enough to follow a load change."""
IDLE = "idle"
PHASES = ("idle", "scanning", "indexing", "swapping", "embedding")


@dataclass(slots=True)
class _Rate:
    """Units done over the last WINDOW_S seconds."""

    samples: deque[tuple[float, int]] = field(default_factory=deque)

    def add(self, now: float, done: int) -> None:
        self.samples.append((now, done))
        while len(self.samples) > 2 and now - self.samples[1][0] >= WINDOW_S:
            self.samples.popleft()

    def per_second(self) -> float | None:
        if len(self.samples) < 2:
            return None
        (t0, d0), (t1, d1) = self.samples[0], self.samples[-1]
        return (d1 - d0) / (t1 - t0) if t1 - t0 >= 0.5 and d1 > d0 else None


@dataclass(slots=True)
class Tracker:
    """One agent's current job: its kind, phase and counts; `report()` is status's `progress` block."""

    phase: str = IDLE
    job: str | None = None  # first | rebuild | source (a source gained) | delta | vectors
    started_ms: int = 0
    files_total: int = 0
    files_seen: int = 0
    files_indexed: int = 0
    chunks_indexed: int = 0
    chunks_embedded: int = 0
    without_vectors: int = 0  # chunks keyword-only now, still to embed
    _file_rate: _Rate = field(default_factory=_Rate)
    _embed_rate: _Rate = field(default_factory=_Rate)
    _last_embed_rate: float | None = None  # the previous embedding run's rate: the first estimate of the next

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """One sync: whatever it ends in (done, failed, cancelled), the tracker is idle after it."""
        try:
            yield
        finally:
            self.idle()

    def start(self, job: str, phase: str = "scanning") -> None:
        """A sync or rebuild begins (a narrow sync of named files is not tracked: it takes milliseconds)."""
        self.job, self.phase, self.started_ms = job, phase, time.time_ns() // 1_000_000
        self.files_total = self.files_seen = self.files_indexed = self.chunks_indexed = 0
        self._file_rate = _Rate()

    def listed(self, files: int) -> None:
        self.phase, self.files_total = "indexing", files
        self._file_rate.add(time.monotonic(), 0)

    def batch_written(self, seen: int, indexed: int, chunks: int, without_vectors: int) -> None:
        self.files_seen += seen
        self.files_indexed += indexed
        self.chunks_indexed += chunks
        self.without_vectors += without_vectors
        self._file_rate.add(time.monotonic(), self.files_seen)

    def swapping(self) -> None:
        self.phase = "swapping"

    def embedding(self, backlog: int) -> None:
        """Chunks without vectors are being embedded; `backlog` is how many there are now."""
        if self.phase != "embedding":
            self.phase, self.chunks_embedded = "embedding", 0
            self.job = self.job if self.job is not None else "vectors"
            self._embed_rate = _Rate()
            self._embed_rate.add(time.monotonic(), 0)
        self.without_vectors = backlog

    def embedded(self, chunks: int) -> None:
        self.chunks_embedded += chunks
        self.without_vectors = max(0, self.without_vectors - chunks)
        self._embed_rate.add(time.monotonic(), self.chunks_embedded)

    def idle(self) -> None:
        rate = self._embed_rate.per_second()
        if rate is not None:
            self._last_embed_rate = rate
        self.phase, self.job = IDLE, None

    @property
    def busy(self) -> bool:
        return self.phase != IDLE

    def rate(self) -> float | None:
        """Chunks per second of the current phase (indexing: chunks written; embedding: chunks embedded)."""
        if self.phase == "embedding":
            return self._embed_rate.per_second()
        files_rate = self._file_rate.per_second()
        if files_rate is None or not self.files_seen:
            return None
        return files_rate * self.chunks_indexed / self.files_seen

    def eta_seconds(self) -> float | None:
        """Seconds until the job is done (its vectors included) at the rates seen; None before there is a rate."""
        if self.phase == IDLE:
            return 0.0 if not self.without_vectors else None
        embed_rate = self._embed_rate.per_second() if self.phase == "embedding" else self._last_embed_rate
        if self.phase == "embedding":
            return self.without_vectors / embed_rate if embed_rate else None
        files_rate = self._file_rate.per_second()
        if files_rate is None:
            return None
        left = max(0, self.files_total - self.files_seen) / files_rate
        if self.without_vectors and embed_rate:
            per_file = self.without_vectors / max(1, self.files_seen)
            left += (self.without_vectors + per_file * max(0, self.files_total - self.files_seen)) / embed_rate
        return left

    def report(self) -> dict[str, object]:
        """Status's `progress` block."""
        rate, eta = self.rate(), self.eta_seconds()
        return {
            "phase": self.phase,
            "job": self.job,
            "startedAt": iso(self.started_ms) if self.busy else None,
            "files": {"total": self.files_total, "seen": self.files_seen, "indexed": self.files_indexed},
            "chunks": {
                "indexed": self.chunks_indexed,
                "embedded": self.chunks_embedded,
                "withoutVectors": self.without_vectors,
            },
            "chunksPerSecond": None if rate is None else round(rate, 2),
            "rateWindowSeconds": WINDOW_S,
            "etaSeconds": None if eta is None else round(eta, 1),
        }

    def indexing(self) -> dict[str, object] | None:
        """A search answer's `indexing` block: present while a first index or a rebuild is under way, or while
        chunks wait for vectors (they answer by keyword alone meanwhile); None otherwise."""
        if self.job in (None, "delta") and not self.without_vectors:
            return None
        block = self.report()
        block.pop("rateWindowSeconds")
        return block
