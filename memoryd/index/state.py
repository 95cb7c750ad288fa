"""What an agent's index knows about itself between syncs: freshness, the last sync, recoveries.

The engine updates it as it syncs; the daemon's actor reads it (and marks it dirty) to decide when
to sync; status and every search answer report from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from memoryd.index.roots import Unreadable
from memoryd.index.sync import SyncCounts
from memoryd.index.tracker import Tracker
from memoryd.isotime import iso


@dataclass(frozen=True, slots=True)
class Progress:
    """Reported while a sync runs (the CLI draws a bar from it)."""

    phase: str
    files_done: int
    files_total: int
    chunks: int


ProgressFn = Callable[[Progress], None]


@dataclass(slots=True)
class SyncReport:
    reason: str
    full: bool
    counts: SyncCounts
    duration_ms: int
    at_ms: int
    error: str | None = None
    degraded: list[dict[str, str]] = field(default_factory=list)  # places that could not be read

    def to_dict(self) -> dict[str, object]:
        return {
            "reason": self.reason,
            "full": self.full,
            "indexed": self.counts.indexed,
            "unchanged": self.counts.unchanged,
            "deleted": self.counts.deleted,
            "chunks": self.counts.chunks,
            "unreadable": list(self.counts.unreadable),
            "skipped": skipped_report(self.counts.skipped),
            "durationMs": self.duration_ms,
            "at": iso(self.at_ms),
            "error": self.error,
            "degraded": self.degraded,
        }


@dataclass(slots=True)
class RecoveryStats:
    attempts: int = 0
    successes: int = 0
    failures: int = 0
    last_error: str | None = None


@dataclass(slots=True)
class IndexState:
    dirty: bool = True
    dirty_sessions: set[str] = field(default_factory=set)
    dirty_notes: set[Path] = field(default_factory=set)
    """Notes the watcher named (absolute paths): a sync of those alone makes them clean."""
    pending: int = 0
    indexed_at: int = 0
    last_sync: SyncReport | None = None
    readonly: RecoveryStats = field(default_factory=RecoveryStats)
    corrupt_moved_to: str | None = None
    last_sync_saved: str | None = None
    embedding_error: str | None = None
    provider_state: str = "none"  # none | loading | ready | unavailable
    degraded: list[Unreadable] = field(default_factory=list)  # places the last listing could not read
    skipped: dict[str, tuple[str, str]] = field(default_factory=dict)  # refused files: path -> (reason, message)

    damaged_index: dict[str, str] | None = None  # the index itself while it is rebuilt after damage
    tracker: Tracker = field(default_factory=Tracker)  # what the index is doing now (status's `progress`)

    @property
    def is_dirty(self) -> bool:
        """The index may miss changes: some anywhere, or of named transcripts or notes."""
        return self.dirty or bool(self.dirty_sessions) or bool(self.dirty_notes)

    def degraded_report(self) -> list[dict[str, str]]:
        places = [u.to_dict() for u in self.degraded]
        return [*places, self.damaged_index] if self.damaged_index is not None else places

    def freshness(self) -> dict[str, object]:
        """The `freshness` block of every search answer."""
        return {
            "indexedAt": iso(self.indexed_at),
            "pending": self.pending,
            "dirty": self.is_dirty,
            "degraded": self.degraded_report(),
        }

    def report(self) -> dict[str, object]:
        """The index state's part of status: freshness, the last sync (this process's or the saved one), recoveries."""
        rec = self.readonly
        last = self.last_sync
        return {
            "dirty": self.is_dirty,
            "embedding": {"state": self.provider_state, "lastError": self.embedding_error},
            "readonlyRecovery": {
                "attempts": rec.attempts,
                "successes": rec.successes,
                "failures": rec.failures,
                "lastError": rec.last_error,
            },
            "corruptDatabaseMovedTo": self.corrupt_moved_to,
            "skippedFiles": skipped_report(self.skipped),
            "indexedAt": iso(self.indexed_at),
            "pending": self.pending,
            "lastSync": last.to_dict() if last else _loads(self.last_sync_saved),
            "progress": self.tracker.report(),
        }


def skipped_report(skipped: dict[str, tuple[str, str]]) -> list[dict[str, str]]:
    """Files the read rules refused, for status and sync reports: path, reason (a word), message (for people)."""
    return [{"path": p, "reason": reason, "message": message} for p, (reason, message) in sorted(skipped.items())]


def _loads(text: str | None) -> object:
    if not text:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
