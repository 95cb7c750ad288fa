"""Copy what can still be read of a damaged retention store into a fresh one.

The index is rebuilt from the sources when it is damaged; the retention store cannot be: for a transcript
deleted from disk it is the only copy. So a damaged store is not started anew and emptied but salvaged: its
rows are read by rowid (the table's own b-tree, not the `path` index, which may be the damaged part), a
row at a time past damage, and each one that reads and decodes whole is written to a new file. The damaged
file itself is moved aside by the caller, never deleted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw
import structlog

from memoryd.errors import StoreError
from memoryd.store.db import connect
from memoryd.store.retained import COLUMNS, Retained, RetentionStore, from_row

log = structlog.get_logger(__name__)

PAGE_ROWS = 64
PROBE_PAST_DAMAGE = 100_000
"""How far past the last good rowid single rows are tried when even the table's largest rowid cannot be read
(rowids grow by one per transcript written; a store rewrites a transcript's row each time it changes)."""


@dataclass(frozen=True, slots=True)
class Salvaged:
    kept: int
    unreadable: int
    """Rows (or runs of rows) that could not be read or decoded: lost with the damage."""


def salvage(damaged: Path, fresh: Path) -> Salvaged:
    """Every readable row of `damaged` written to a new store at `fresh` (which must not exist yet)."""
    out = RetentionStore.open(fresh)
    try:
        conn, _vec = connect(damaged, readonly=True, vec_enabled=False)
    except StoreError as exc:  # not even a database any more: nothing of it can be read
        out.close()
        log.warning("retention store unreadable; nothing salvaged", damaged=str(damaged), error=str(exc))
        return Salvaged(0, 1)
    kept = unreadable = 0
    try:
        with out.transaction():
            for entry in _readable(conn):
                if entry is None:
                    unreadable += 1
                    continue
                out.put([entry])
                kept += 1
    finally:
        out.close()
        conn.close()
    log.warning("retention store salvaged", damaged=str(damaged), kept=kept, unreadable=unreadable)
    return Salvaged(kept, unreadable)


def _readable(conn: apsw.Connection) -> Iterator[Retained | None]:
    """The rows in rowid order; None for each read that failed (a run of pages, or one row that would not
    decode). A page-at-a-time scan while it reads; past damage, one rowid at a time up to the largest."""
    last = 0
    while True:
        try:
            rows = conn.execute(
                f"SELECT rowid, {COLUMNS} FROM retained WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, PAGE_ROWS)
            ).fetchall()
        except apsw.Error:
            break
        if not rows:
            return
        for row in rows:
            last = int(str(row[0]))
            yield _decoded(row[1:])
    yield None
    top = _largest_rowid(conn, last)
    for rowid in range(last + 1, top + 1):
        try:
            found = conn.execute(f"SELECT {COLUMNS} FROM retained WHERE rowid = ?", (rowid,)).fetchone()
        except apsw.Error:
            continue
        if found is not None:
            yield _decoded(tuple(found))


def _largest_rowid(conn: apsw.Connection, last: int) -> int:
    try:
        row = conn.execute("SELECT max(rowid) FROM retained").fetchone()
    except apsw.Error:
        return last + PROBE_PAST_DAMAGE
    return int(str(row[0])) if row and row[0] is not None else last


def _decoded(row: tuple[object, ...]) -> Retained | None:
    try:
        return from_row(row)
    except (TypeError, ValueError):
        return None
