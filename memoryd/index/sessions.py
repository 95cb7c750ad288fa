"""Session-transcript growth counted against thresholds (spec §3.8).

A transcript that grows a little is not worth a sync; one that grew by `delta_bytes` bytes or
`delta_messages` lines is. Blocking (it stats and reads files): call from a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from memoryd.sources.safefile import RefusedFileError, open_checked

READ_BUFFER = 64 * 1024


@dataclass(slots=True)
class _Counters:
    last_size: int = 0
    pending_bytes: int = 0
    pending_messages: int = 0


def _count_newlines(path: Path, start: int, end: int) -> int:
    """Newlines in bytes [start, end) of the transcript, read through the safe reader (a FIFO or a symlink
    swapped in is refused, never waited on or followed) one block at a time."""
    count = 0
    with open_checked(path, max_bytes=sys.maxsize, allow_hard_links=True) as f:
        offset = start
        while offset < end:
            block = f.read_range(offset, min(end, offset + READ_BUFFER))
            if not block:
                break
            count += block.count(b"\n")
            offset += len(block)
    return count


class SessionDeltaTracker:
    def __init__(self, delta_bytes: int, delta_messages: int) -> None:
        self.delta_bytes = delta_bytes
        self.delta_messages = delta_messages
        self._files: dict[str, _Counters] = {}

    def baseline(self, path: Path) -> None:
        """The file is indexed as it is now: count growth from here."""
        try:
            size = path.stat().st_size
        except OSError:
            self._files.pop(str(path), None)
            return
        self._files[str(path)] = _Counters(last_size=size)

    def observe(self, path: Path) -> bool:
        """Account for the file's growth since last seen; True when it crossed a threshold."""
        key = str(path)
        state = self._files.setdefault(key, _Counters())
        try:
            size = os.stat(path).st_size
        except OSError:
            self._files.pop(key, None)
            return False
        if size > state.last_size:
            start, grew = state.last_size, size - state.last_size
        elif size < state.last_size:
            start, grew = 0, size  # rewritten: count the whole file
        else:
            start, grew = size, 0
        state.pending_bytes += grew
        counting = self.delta_messages > 0 and (self.delta_bytes <= 0 or state.pending_bytes < self.delta_bytes)
        if grew and counting:
            with contextlib.suppress(OSError, RefusedFileError):
                state.pending_messages += _count_newlines(path, start, size)
        state.last_size = size
        by_bytes = state.pending_bytes >= self.delta_bytes if self.delta_bytes > 0 else state.pending_bytes > 0
        by_lines = (
            state.pending_messages >= self.delta_messages if self.delta_messages > 0 else state.pending_messages > 0
        )
        if not (by_bytes or by_lines):
            return False
        state.pending_bytes = max(0, state.pending_bytes - self.delta_bytes) if self.delta_bytes > 0 else 0
        state.pending_messages = max(0, state.pending_messages - self.delta_messages) if self.delta_messages > 0 else 0
        return True


class TranscriptFeed:
    """Transcripts that grew and are not indexed yet, with the time of each one's last event.

    While a transcript keeps growing, the delta thresholds decide when it is synced (spec §3.8);
    once it has been quiet for `quiet_s` (no event), whatever growth is left is synced too, so a
    short conversation never waits for an unrelated sync. Until then it counts as pending. Times
    are the event loop's clock (`anyio.current_time()`); no I/O here.
    """

    def __init__(self, quiet_s: float) -> None:
        self.quiet_s = quiet_s
        self._last_event: dict[Path, float] = {}

    def __len__(self) -> int:
        return len(self._last_event)

    def paths(self) -> set[Path]:
        return set(self._last_event)

    def event(self, path: Path, now: float) -> None:
        self._last_event[path] = now

    def seen_before(self, moment: float) -> bool:
        """Whether a transcript that grew before `moment` is still waiting."""
        return any(at <= moment for at in self._last_event.values())

    def next_check(self) -> float | None:
        """When the transcript that went quiet first may be quiet for long enough (None: nothing waits)."""
        if not self._last_event:
            return None
        return min(self._last_event.values()) + self.quiet_s

    def snapshot(self) -> dict[Path, float]:
        return dict(self._last_event)

    def quiet(self, snapshot: dict[Path, float], now: float) -> list[Path]:
        return sorted(p for p, at in snapshot.items() if now - at >= self.quiet_s)

    def settle(self, snapshot: dict[Path, float], quiet: list[Path]) -> None:
        """The quiet transcripts of `snapshot` were looked at (and synced if they had grown): forget them,
        unless a new event came meanwhile."""
        for path in quiet:
            if self._last_event.get(path) == snapshot.get(path):
                del self._last_event[path]

    def indexed(self, paths: tuple[Path, ...] | None, *, since: float) -> None:
        """A sync that began at `since` indexed `paths` (None: every transcript): events before it are covered."""
        for path, at in list(self._last_event.items()):
            if at <= since and (paths is None or path in paths):
                del self._last_event[path]
