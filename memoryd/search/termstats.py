"""Term statistics of a connection, kept while its database is unchanged.

Every keyword search asks how many chunks hold each of the question's words (a capped count: up to
~0.2 ms for a common word at 100k chunks) and how many chunks there are. An agent searches on every
turn, the database does not change between syncs, and words recur; so the counts are kept per
connection and dropped as soon as anything was committed since: by another connection (`PRAGMA
data_version`, ~1 us) or by this one (`total_changes`). A count served from here is the count the
query would have returned.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import apsw

MAX_TERMS = 8192
"""Counts kept per connection; past it they are all dropped (a search asks a few dozen)."""


@dataclass(slots=True)
class _Stats:
    version: tuple[int, int]
    counts: dict[tuple[str, str, int], int] = field(default_factory=dict)


_BY_CONNECTION: weakref.WeakKeyDictionary[apsw.Connection, _Stats] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _version(conn: apsw.Connection) -> tuple[int, int]:
    row = conn.execute("PRAGMA data_version").fetchone()
    return (int(row[0]) if row else 0, conn.total_changes())


def stats(conn: apsw.Connection) -> _Stats:
    """The connection's statistics, emptied first when the database changed since they were read."""
    version = _version(conn)
    with _LOCK:
        current = _BY_CONNECTION.get(conn)
        if current is None or current.version != version or len(current.counts) > MAX_TERMS:
            current = _Stats(version)
            _BY_CONNECTION[conn] = current
        return current


def cached(held: _Stats, key: tuple[str, str, int], count: Callable[[], int]) -> int:
    """`count()` once per key while the database is unchanged."""
    found = held.counts.get(key)
    if found is None:
        found = held.counts[key] = count()
    return found
