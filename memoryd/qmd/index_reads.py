"""Reading QMD's own index (`<qmd cache>/index.sqlite`) read-only: where a document lives, how many there are.

Blocking (run in a worker thread); QMD may be writing, so a busy or missing index reads as empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import apsw

from memoryd.qmd.collections import ManagedCollection


def _open(index_path: Path) -> apsw.Connection | None:
    if not index_path.exists():
        return None
    try:
        conn = apsw.Connection(str(index_path), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return None
    conn.setbusytimeout(1000)
    return conn


def lookup(index_path: Path, docid: str) -> list[tuple[str, str]]:
    """Where QMD's index says a document lives (for hits that name no file): (collection, path) pairs."""
    conn = _open(index_path)
    if conn is None:
        return []
    try:
        rows = conn.execute(
            "SELECT collection, path FROM documents WHERE hash LIKE ? AND active = 1", (f"{docid}%",)
        ).fetchall()
    except apsw.Error:
        return []
    finally:
        conn.close()
    return [(str(c), str(p)) for c, p in rows]


def document_counts(index_path: Path) -> tuple[dict[str, int], str | None]:
    """Active documents per collection, and why they could not be read (None when they could)."""
    conn = _open(index_path)
    if conn is None:
        return {}, None
    try:
        rows = conn.execute("SELECT collection, COUNT(*) FROM documents WHERE active = 1 GROUP BY collection")
        return {str(name): int(count) for name, count in rows}, None
    except apsw.Error as exc:
        return {}, f"reading QMD's index failed: {exc}"
    finally:
        conn.close()


def source_counts(collections: Sequence[ManagedCollection], counts: Mapping[str, int]) -> dict[str, object]:
    """Status' `files`, `chunks`, `sources` and `sourceCounts` from the documents per collection (one
    QMD document is one file and, as status counts it, one chunk)."""
    by_source: dict[str, int] = {}
    for c in collections:
        by_source[c.source] = by_source.get(c.source, 0) + counts.get(c.name, 0)
    total = sum(by_source.values())
    return {
        "files": total,
        "chunks": total,
        "sources": sorted(by_source),
        "sourceCounts": [{"source": s, "files": n, "chunks": n} for s, n in sorted(by_source.items())],
    }
