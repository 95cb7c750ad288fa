"""`memoryd forget`: delete retained transcripts for good, from the index and the retention store.

"For good" means the bytes: the rows (chunks, FTS terms, the CJK side index, sign-bit vectors, the files
row), the embedding cache entries of their chunks (unless another file still has the same text), and
the retention store's copy, deleted with `secure_delete = ON` (freed pages zeroed), the FTS indexes
merged (`optimize`: no segment keeps a deleted term), then VACUUM and a truncating WAL checkpoint, so
no page of the database files or their WAL holds them. A transcript still on disk is refused: the next
sync would index it again; delete the file first. Blocking: the engine runs it between syncs.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from memoryd.errors import ProtocolError
from memoryd.index.retention import Retention
from memoryd.store import schema
from memoryd.store.db import translated
from memoryd.store.index import IndexStore

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Forget:
    """What to forget: named transcripts, or every retained one (`all`), optionally by when it ended."""

    paths: tuple[str, ...] = ()
    all: bool = False
    before_ms: int | None = None
    after_ms: int | None = None

    def check(self) -> None:
        if not self.paths and not self.all and self.before_ms is None and self.after_ms is None:
            raise ProtocolError("name the transcripts to forget, or --all, --before or --after")
        if self.paths and (self.all or self.before_ms is not None or self.after_ms is not None):
            raise ProtocolError("name transcripts or select by --all/--before/--after, not both")


def parse_when(text: str, what: str) -> int:
    """`--before` / `--after`: an ISO date (midnight UTC) or date and time (UTC unless it says), as ms."""
    try:
        when = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ProtocolError(f"{what} must be a date (YYYY-MM-DD) or an ISO date and time, got {text!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return int(when.timestamp() * 1000)


def forget(retention: Retention, index: IndexStore, what: Forget) -> dict[str, object]:
    """Delete what `what` selects; report what was forgotten, what is still on disk and what is unknown."""
    what.check()
    started = time.monotonic()
    store = retention.store()
    targets: dict[str, str] = {}
    on_disk: list[str] = []
    unknown: list[str] = []
    if what.paths:
        every = store.select()
        by_abs = {os.path.normpath(a): p for p, a in every.items()}
        for raw in what.paths:
            text = raw.strip().replace("\\", "/")
            path = text if text in every else by_abs.get(os.path.normpath(text)) if os.path.isabs(text) else None
            if path is None:
                unknown.append(raw)
            elif os.path.lexists(every[path]):
                on_disk.append(path)
            else:
                targets[path] = every[path]
    else:
        for path, where in store.select(before_ms=what.before_ms, after_ms=what.after_ms).items():
            (on_disk.append(path) if os.path.lexists(where) else targets.__setitem__(path, where))
    chunks = _delete_from_index(index, sorted(targets)) if targets else 0
    if targets:
        with store.transaction():
            store.delete(targets)
        store.scrub()
        retention.refresh()
    report: dict[str, object] = {
        "forgotten": sorted(targets),
        "chunks": chunks,
        "stillOnDisk": sorted(on_disk),
        "unknown": unknown,
        "durationMs": int((time.monotonic() - started) * 1000),
    }
    log.info("transcripts forgotten", agent=retention.agent.id, count=len(targets), chunks=chunks)
    return report


def _delete_from_index(index: IndexStore, paths: Sequence[str]) -> int:
    """Delete the transcripts' rows and cache entries so that no page of the index keeps their text."""
    conn = index.conn
    with translated("forgetting transcripts"):
        conn.execute("PRAGMA secure_delete=ON")
        fts = [t for t in ("chunks_fts", schema.CJK_TABLE) if schema.table_exists(conn, t)]
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS forget_paths(path TEXT PRIMARY KEY)")  # temp_store: memory
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS forget_hashes(hash TEXT PRIMARY KEY)")
        try:
            for table in fts:
                conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('secure-delete', 1)")
            with index.transaction():
                conn.executemany("INSERT OR IGNORE INTO forget_paths(path) VALUES(?)", [(p,) for p in paths])
                conn.execute(
                    "INSERT OR IGNORE INTO forget_hashes(hash) SELECT hash FROM chunks "
                    "WHERE source = 'sessions' AND path IN (SELECT path FROM forget_paths)"
                )
                row = conn.execute(
                    "SELECT COUNT(*) FROM chunks WHERE source = 'sessions' AND path IN (SELECT path FROM forget_paths)"
                ).fetchone()
                index.delete_files("sessions", paths)
                conn.execute(
                    "DELETE FROM embedding_cache WHERE hash IN (SELECT hash FROM forget_hashes) "
                    "AND hash NOT IN (SELECT hash FROM chunks)"
                )
                for table in fts:
                    conn.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")
        finally:
            for table in fts:
                conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('secure-delete', 0)")
            conn.execute("DROP TABLE IF EXISTS temp.forget_paths")
            conn.execute("DROP TABLE IF EXISTS temp.forget_hashes")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA secure_delete=OFF")
    return int(row[0]) if row else 0
