"""What a crash may leave behind, checked offline against the versions of every source file.

After `kill -9` (or a torn WAL) the index must open, pass `PRAGMA integrity_check` and FTS5's own
integrity check, and every file's rows must be exactly the chunks of one version the file had:
the one before the interrupted sync or the one after (a rebuild must be all one or all the other).
The checks run on a copy of the database, so nothing here can checkpoint or repair the original.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from memoryd.config import ChunkingSettings
from memoryd.index.sync import NO_VECTORS, Outcome, prepare
from memoryd.sources.discovery import SourceFile, SourceKind

Key = tuple[str, str]  # (source, path)
ChunkKey = tuple[int, int, str]  # (start_line, end_line, chunk hash)

LIVE_NAMES = frozenset(
    {
        *("index.sqlite", "index.sqlite-wal", "index.sqlite-shm", "index.sqlite.lock"),
        *("index.retained.sqlite", "index.retained.sqlite-wal", "index.retained.sqlite-shm"),  # transcripts kept
    }
)


@dataclass(frozen=True, slots=True)
class Version:
    """One state a file may be indexed in: its content hash and the chunks it must have."""

    label: str
    file_hash: str
    chunks: frozenset[ChunkKey]


@dataclass(slots=True)
class Report:
    problems: list[str] = field(default_factory=list)
    matched: dict[Key, set[str]] = field(default_factory=dict)
    """For each indexed file, the labels of the versions its rows match."""

    def fail(self, message: str) -> None:
        self.problems.append(message)


def expected_version(key: Key, data: bytes, label: str, chunking: ChunkingSettings, scratch: Path) -> Version:
    """The version `data` would be indexed as, computed by the daemon's own `prepare`."""
    source, path = key
    disk = scratch / ("t.jsonl" if source == "sessions" else "t.md")
    disk.write_bytes(data)
    kind: SourceKind = "sessions" if source == "sessions" else "memory"
    prepared = prepare(SourceFile(kind, path, disk), None, chunking, full=True)
    assert prepared.outcome is Outcome.CHANGED
    chunks = frozenset((c.start_line, c.end_line, c.hash) for c in prepared.chunks)
    return Version(label, prepared.hash, chunks)


def versions_of(
    contents: Mapping[Key, Sequence[tuple[str, bytes | None]]], chunking: ChunkingSettings
) -> dict[Key, list[Version | None]]:
    """Allowed versions per file from (label, bytes or None for "absent") pairs."""
    out: dict[Key, list[Version | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for key, options in contents.items():
            out[key] = [
                None if data is None else expected_version(key, data, label, chunking, Path(tmp))
                for label, data in options
            ]
    return out


def _copy_database(db: Path, into: Path) -> Path:
    copy = into / db.name
    for ext in ("", "-wal"):
        src = Path(f"{db}{ext}")
        if src.exists():
            shutil.copyfile(src, Path(f"{copy}{ext}"))
    return copy


def check_database(db: Path, allowed: Mapping[Key, Sequence[Version | None]]) -> Report:
    """Open a copy of `db` and compare every file's rows with its allowed versions."""
    report = Report()
    with tempfile.TemporaryDirectory() as tmp:
        copy = _copy_database(db, Path(tmp))
        try:
            conn = apsw.Connection(str(copy))
        except apsw.Error as exc:
            report.fail(f"cannot open: {exc}")
            return report
        try:
            _check(conn, allowed, report)
        except apsw.Error as exc:
            report.fail(f"query failed: {type(exc).__name__}: {exc}")
        finally:
            conn.close()
    return report


def _check(conn: apsw.Connection, allowed: Mapping[Key, Sequence[Version | None]], report: Report) -> None:
    integrity = conn.execute("PRAGMA integrity_check").fetchall()
    if integrity != [("ok",)]:
        report.fail(f"integrity_check: {integrity[:5]}")
        return
    for table in ("chunks_fts", "chunks_cjk"):
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
            try:
                conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', 0)")
            except apsw.Error as exc:
                report.fail(f"{table} integrity-check: {exc}")
    files = {(str(s), str(p)): str(h) for s, p, h in conn.execute("SELECT source, path, hash FROM files")}
    chunks: dict[Key, set[ChunkKey]] = {}
    for s, p, start, end, h in conn.execute("SELECT source, path, start_line, end_line, hash FROM chunks"):
        chunks.setdefault((str(s), str(p)), set()).add((int(start), int(end), str(h)))
    chunk_rows = {int(n) for (n,) in conn.execute("SELECT n FROM chunks")}
    fts_rows = {int(n) for (n,) in conn.execute("SELECT rowid FROM chunks_fts")}
    if chunk_rows != fts_rows:
        report.fail(
            f"FTS rows differ from chunks: {len(fts_rows - chunk_rows)} orphaned, {len(chunk_rows - fts_rows)} missing"
        )
    for key in sorted(set(chunks) - set(files)):
        report.fail(f"{key}: chunks without a files row")
    for key in sorted(set(files) | set(allowed)):
        options = allowed.get(key)
        if options is None:
            report.fail(f"{key}: indexed but never existed")
            continue
        stored = files.get(key)
        if stored is None:
            if None not in options:
                report.fail(f"{key}: missing from the index")
            continue
        file_hash = stored.removeprefix(NO_VECTORS)
        rows = frozenset(chunks.get(key, set()))
        labels = {v.label for v in options if v is not None and v.file_hash == file_hash and v.chunks == rows}
        if not labels:
            same_hash = [v.label for v in options if v is not None and v.file_hash == file_hash]
            why = f"rows differ from version {same_hash[0]}" if same_hash else "hash matches no version"
            report.fail(f"{key}: {why} ({len(rows)} chunks)")
            continue
        report.matched[key] = labels


def leftovers(agent_dir: Path) -> list[str]:
    """Files beside the live database that should not be there (temporary or moved-aside databases)."""
    if not agent_dir.exists():
        return []
    return sorted(p.name for p in agent_dir.iterdir() if p.name not in LIVE_NAMES)
