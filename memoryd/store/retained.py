"""The retention store: every indexed transcript's redacted text and line map, in its own SQLite file.

It sits beside the index (`index.sqlite` -> `index.retained.sqlite`) and outlives it: a full rebuild
(model change, corruption, `--force`) swaps the index file but reads deleted transcripts back from here,
so what memoryd remembers never depends on the source file still being on disk. A row holds what
`parse_transcript` made of the file (already redacted: the raw JSONL is never kept), enough to chunk it
again exactly as the file would be, and to answer `memory_get` with its original JSONL line numbers.

The connection runs with `secure_delete = ON`: a forgotten transcript's freed pages are zeroed, and
`scrub` (VACUUM, then a truncating WAL checkpoint) leaves no copy in the file or its WAL.
"""

from __future__ import annotations

import array
import contextlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from memoryd.sources.transcripts import Transcript
from memoryd.store.db import connect, immediate_transaction, translated

SCHEMA = """
CREATE TABLE IF NOT EXISTS retained(
    path TEXT PRIMARY KEY,
    abs_path TEXT NOT NULL,
    hash TEXT NOT NULL,
    format TEXT NOT NULL,
    content TEXT NOT NULL,
    line_map BLOB NOT NULL,
    timestamps BLOB NOT NULL,
    malformed INTEGER NOT NULL,
    dreaming INTEGER NOT NULL,
    total_lines INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    last_ms INTEGER NOT NULL,
    captured_at INTEGER NOT NULL,
    gone_at INTEGER
);
CREATE INDEX IF NOT EXISTS idx_retained_last ON retained(last_ms);
"""
COLUMNS = (  # every column, in the order `from_row` reads them
    "path, abs_path, hash, format, content, line_map, timestamps, malformed, dreaming, total_lines, size, "
    "mtime_ns, last_ms, captured_at, gone_at"
)


def retained_path(db_path: Path) -> Path:
    """Where an index's retention store lives: beside it, `<stem>.retained.sqlite`."""
    return db_path.with_name(f"{db_path.stem}.retained.sqlite")


@dataclass(frozen=True, slots=True)
class Retained:
    """One transcript as the store keeps it: its index path, where it was on disk, what it said."""

    path: str
    abs_path: str
    transcript: Transcript
    total_lines: int
    size: int
    mtime_ns: int
    captured_at: int = 0
    gone_at: int | None = None

    @property
    def last_ms(self) -> int:
        """When its last message was said (its file's mtime when no record carries a time)."""
        return max(self.transcript.timestamps_ms, default=0) or self.mtime_ns // 1_000_000


def _ints(values: Sequence[int]) -> bytes:
    return array.array("q", values).tobytes()


def _unints(blob: bytes) -> tuple[int, ...]:
    out = array.array("q")
    out.frombytes(blob)
    return tuple(out)


def _row(r: Retained) -> tuple[object, ...]:
    t = r.transcript
    return (
        r.path,
        r.abs_path,
        t.hash,
        t.format,
        t.content,
        _ints(t.line_map),
        _ints(t.timestamps_ms),
        t.malformed_lines,
        int(t.dreaming),
        r.total_lines,
        r.size,
        r.mtime_ns,
        r.last_ms,
        r.captured_at,
        r.gone_at,
    )


def from_row(row: Sequence[Any]) -> Retained:
    path, abs_path, digest, fmt, content, lines, stamps, malformed, dreaming, total, size, mtime, _last, at, gone = row
    transcript = Transcript(
        content=str(content),
        line_map=_unints(bytes(lines)),
        timestamps_ms=_unints(bytes(stamps)),
        hash=str(digest),
        malformed_lines=int(malformed),
        dreaming=bool(dreaming),
        format=str(fmt),
    )
    gone_at = None if gone is None else int(gone)
    return Retained(str(path), str(abs_path), transcript, int(total), int(size), int(mtime), int(at), gone_at)


class RetentionStore:
    """One agent's retained transcripts on one connection (the writer's; readers open their own)."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, path: Path, *, readonly: bool = False) -> RetentionStore:
        conn, _vec = connect(path, readonly=readonly, vec_enabled=False)
        with translated(f"opening {path}"):
            conn.execute("PRAGMA secure_delete=ON")
            if not readonly:
                conn.execute(SCHEMA)
        return cls(conn)

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with immediate_transaction(self.conn, "the retention store"):
            yield

    def put(self, entries: Iterable[Retained]) -> None:
        """Insert or replace transcripts as read now (present on disk: `gone_at` cleared)."""
        marks = ",".join("?" * 15)
        with translated("retaining transcripts"):
            self.conn.executemany(f"INSERT OR REPLACE INTO retained({COLUMNS}) VALUES({marks})", map(_row, entries))

    def known(self) -> dict[str, str]:
        """Every retained transcript's index path and hash."""
        with translated("reading the retention store"):
            return {str(p): str(h) for p, h in self.conn.execute("SELECT path, hash FROM retained")}

    def gone(self) -> dict[str, str]:
        """The retained transcripts whose file is gone, and where each was."""
        with translated("reading the retention store"):
            rows = self.conn.execute("SELECT path, abs_path FROM retained WHERE gone_at IS NOT NULL")
            return {str(p): str(a) for p, a in rows}

    def mark_gone(self, paths: Iterable[str], at_ms: int) -> None:
        with translated("marking transcripts deleted"):
            self.conn.executemany(
                "UPDATE retained SET gone_at = ? WHERE path = ? AND gone_at IS NULL", [(at_ms, p) for p in paths]
            )

    def get(self, path: str) -> Retained | None:
        with translated("reading the retention store"):
            row = self.conn.execute(f"SELECT {COLUMNS} FROM retained WHERE path = ?", (path,)).fetchone()
        return None if row is None else from_row(row)

    def entries(self, paths: Iterable[str]) -> Iterator[Retained]:
        for path in paths:
            found = self.get(path)
            if found is not None:
                yield found

    def select(self, *, before_ms: int | None = None, after_ms: int | None = None) -> dict[str, str]:
        """Index path -> where it was, of transcripts whose last message is before / at or after the bounds."""
        sql, args = "SELECT path, abs_path FROM retained WHERE 1", list[int]()
        if before_ms is not None:
            sql, args = sql + " AND last_ms < ?", [*args, before_ms]
        if after_ms is not None:
            sql, args = sql + " AND last_ms >= ?", [*args, after_ms]
        with translated("reading the retention store"):
            return {str(p): str(a) for p, a in self.conn.execute(sql, args)}

    def expired(self, cutoff_ms: int) -> list[str]:
        """Deleted transcripts whose last message is older than `cutoff_ms`."""
        with translated("reading the retention store"):
            rows = self.conn.execute(
                "SELECT path FROM retained WHERE gone_at IS NOT NULL AND last_ms < ?", (cutoff_ms,)
            )
            return [str(p) for (p,) in rows]

    def delete(self, paths: Iterable[str]) -> int:
        total = 0
        with translated("deleting retained transcripts"):
            for path in paths:
                self.conn.execute("DELETE FROM retained WHERE path = ?", (path,))
                total += self.conn.changes()
        return total

    def scrub(self) -> None:
        """Rewrite the file without free pages and empty the WAL: nothing deleted survives on disk."""
        with translated("vacuuming the retention store"):
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
