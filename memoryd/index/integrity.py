"""A damaged index: found, said, rebuilt from the sources — never deleted, never silently served as healthy.

Damage is found four ways: the file cannot be opened at all (moved aside at once: there is nothing to
serve); SQLite's `PRAGMA quick_check` in the background after the agent starts (it reads every page:
~8 s for a 300 MB index on a loaded 2-core machine, too slow to hold start-up for, so the agent serves
while it runs), and again in idle time when the file changed (`memoryd.index.checkup`;
`store.quick_check = false` turns both off); any read that meets SQLITE_CORRUPT or
SQLITE_NOTADB (a search, status, the stat pass: the reader pool reports it); and any sync, which
checks the file's header first (one pread) and reports what its writes meet.

Once found, the next sync rebuilds everything from the sources into a temporary database while
searches go on answering from what is still readable (a search that meets the damage is told the
index is being rebuilt); at the swap the damaged file is moved aside (`index.sqlite.corrupt-<time>`),
never deleted. Status shows all of it (`corruption`, `integrityCheck`), and every search reply's
`freshness.degraded` names the index while it is being rebuilt.

Why the old checks let damage through: opening ran one `SELECT COUNT(*) FROM files`, which reads
only that table's pages, so pages of chunks or of the FTS index overwritten while the daemon was
stopped went unseen; and at run time a corrupt read was an error for that one search, with nothing
to start a rebuild, while syncs only met the pages they wrote.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Literal

import apsw
import structlog

from memoryd.config import AgentConfig
from memoryd.index.state import IndexState
from memoryd.isotime import iso
from memoryd.store.db import header_problem, quick_check
from memoryd.store.index import now_ms
from memoryd.store.readers import ReaderPool

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class Corruption:
    """The damage found last, and what became of it."""

    found_by: str  # "opening it", "the integrity check", "a read", "a sync"
    error: str
    detected_at_ms: int
    rebuilt_at_ms: int | None = None
    moved_to: str | None = None

    @property
    def pending(self) -> bool:
        """Found and not rebuilt yet."""
        return self.rebuilt_at_ms is None

    def to_dict(self) -> dict[str, object]:
        return {
            "foundBy": self.found_by,
            "error": self.error,
            "detectedAt": iso(self.detected_at_ms),
            "rebuilding": self.pending,
            "rebuiltAt": None if self.rebuilt_at_ms is None else iso(self.rebuilt_at_ms),
            "movedTo": self.moved_to,
        }


Trigger = Literal["start", "idle"]


@dataclass(frozen=True, slots=True)
class IntegrityCheck:
    at_ms: int
    duration_ms: int
    result: str  # "ok", or what quick_check found
    trigger: Trigger = "start"  # as the agent started, or in idle time (memoryd.index.checkup)

    def to_dict(self) -> dict[str, object]:
        return {"at": iso(self.at_ms), "durationMs": self.duration_ms, "result": self.result, "trigger": self.trigger}


class Integrity:
    """One agent's view of its database's health. `note` may be called from any thread (it only assigns)."""

    def __init__(self, agent: AgentConfig, readers: ReaderPool, state: IndexState) -> None:
        self.agent = agent
        self._state = state
        self.corruption: Corruption | None = None
        self.last_check: IntegrityCheck | None = None
        self._checking: apsw.Connection | None = None
        self._readers = readers
        readers.on_corrupt = lambda exc: self.note("a read", str(exc))

    @property
    def pending(self) -> bool:
        return self.corruption is not None and self.corruption.pending

    def note(self, found_by: str, error: str, *, moved_to: str | None = None) -> None:
        """Damage was found; the first report of a pending damage is the one kept."""
        if self.pending:
            return
        self.corruption = Corruption(found_by, error, now_ms(), moved_to=moved_to)
        self._state.damaged_index = {
            "path": str(self.agent.db_path),
            "role": "index",
            "reason": "damaged; being rebuilt from the sources",
        }
        self._state.dirty = True
        log.error(
            "index database is damaged; rebuilding it from the sources",
            agent=self.agent.id,
            found_by=found_by,
            error=error,
        )

    def rebuilt(self, moved_to: str | None) -> None:
        if self.corruption is not None and self.corruption.pending:
            self.corruption.rebuilt_at_ms = now_ms()
            self.corruption.moved_to = moved_to or self.corruption.moved_to
            self._state.damaged_index = None
            log.info("index rebuilt after damage", agent=self.agent.id, moved_to=self.corruption.moved_to)

    def check_header(self) -> None:
        """The cheap check every sync makes first (blocking: one pread)."""
        problem = header_problem(self.agent.db_path)
        if problem is not None:
            self.note("a sync", problem)

    def run_quick_check(self, trigger: Trigger = "start", stop: threading.Event | None = None) -> IntegrityCheck | None:
        """SQLite's quick_check over a pooled reader (blocking: seconds on a large index). None when it was
        stopped (`stop` set, then `interrupt`: a sync started, or the agent stops): nothing is recorded."""
        started = time.monotonic()
        try:
            with self._readers.reader(fresh=True) as (conn, _vec):
                self._checking = conn
                try:
                    problem = None if stop is not None and stop.is_set() else quick_check(conn)
                finally:
                    self._checking = None
        except apsw.InterruptError:
            problem = None
        if problem is None and stop is not None and stop.is_set():
            log.info("integrity check yielded", agent=self.agent.id, trigger=trigger)
            return None
        duration_ms = int((time.monotonic() - started) * 1000)
        self.last_check = IntegrityCheck(now_ms(), duration_ms, problem or "ok", trigger)
        if problem is not None:
            self.note("the integrity check", problem)
        log.info(
            "integrity check done",
            agent=self.agent.id,
            ms=self.last_check.duration_ms,
            result=self.last_check.result,
            trigger=trigger,
        )
        return self.last_check

    def interrupt(self) -> None:
        """Stop a running quick_check at once (the agent is stopping: SIGTERM never waits for it)."""
        conn = self._checking
        if conn is not None:
            conn.interrupt()

    def message(self) -> str:
        """What a search that met the damage is told."""
        c = self.corruption
        when = f" at {iso(c.detected_at_ms)}" if c is not None else ""
        return (
            f"the index of agent {self.agent.id!r} was found damaged{when} and is being rebuilt from the sources "
            "(the damaged file is kept, moved aside); search again in a moment"
        )

    def report(self) -> dict[str, object]:
        return {
            "corruption": None if self.corruption is None else self.corruption.to_dict(),
            "integrityCheck": None if self.last_check is None else self.last_check.to_dict(),
        }


def set_aside_suffix() -> str:
    """The suffix a damaged database is renamed with (`index.sqlite.corrupt-<unix time>`)."""
    return f"corrupt-{int(time.time())}"
