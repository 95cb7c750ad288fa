"""An agent's database as its index sees it: the writer lock, one writer connection, pooled readers.

It also owns the recoveries that replace connections: a corrupt file is moved aside (never
deleted) and a fresh one started; a database that turned read-only is reopened; a rebuilt database
is swapped in while no reader holds the live one. All methods block: run them in worker threads.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from pathlib import Path

import structlog

from memoryd.config import AgentConfig
from memoryd.errors import CorruptDatabaseError, StoreError
from memoryd.faults import crash_point
from memoryd.isotime import iso
from memoryd.media import NO_LINES
from memoryd.sources.transcripts import FORMATS, UNKNOWN
from memoryd.store import schema
from memoryd.store.db import VecState, connect, move_aside, translated
from memoryd.store.index import SKIPPED, FormatCount, IndexMeta, IndexStore
from memoryd.store.lock import WriterLock
from memoryd.store.readers import ReaderPool
from memoryd.store.reindex import Rebuild, cleanup_leftovers

MEDIA_SKIPPED_SHOWN = 20
"""Skipped media files status names one by one (all are counted)."""

log = structlog.get_logger(__name__)


def transcript_report(rows: Sequence[FormatCount]) -> dict[str, object]:
    """Status's transcript counts: files and chunks per format read, and how many no adapter understood."""
    return {
        "transcriptFormats": [
            {"format": r.format, "files": r.files, "chunks": r.chunks} for r in rows if r.format in FORMATS
        ],
        "unrecognisedTranscripts": sum(r.files for r in rows if r.format == UNKNOWN),
    }


class AgentDatabase:
    def __init__(self, agent: AgentConfig, *, hold_writer_lock: bool = True) -> None:
        self.agent = agent
        vector = agent.settings.store.vector
        self.readers = ReaderPool(agent.db_path, vec_path=vector.extension_path, vec_enabled=vector.enabled)
        self._lock = WriterLock(agent.db_path)
        self._hold_lock = hold_writer_lock
        self._store: IndexStore | None = None

    def open(self) -> str | None:
        """Take the writer lock (unless told not to) and connect; where a corrupt file was moved, if one was."""
        if self._hold_lock:
            self._lock.acquire()
        cleanup_leftovers(self.agent.db_path)
        try:
            self._store = self._connect_writer()
        except CorruptDatabaseError as exc:
            return self.recover_corrupt(exc)
        return None

    def take_writer_lock(self) -> None:
        """Become the writer (raises WriterLockBusyError when another process is)."""
        self._lock.acquire()

    @property
    def store(self) -> IndexStore:
        """The writer's store (StoreError when the index is not open)."""
        if self._store is None:
            raise StoreError("the index is not open")
        return self._store

    @property
    def vec(self) -> VecState:
        return self.store.vec

    def _connect_writer(self) -> IndexStore:
        vector = self.agent.settings.store.vector
        conn, vec = connect(self.agent.db_path, vec_path=vector.extension_path, vec_enabled=vector.enabled)
        try:
            with translated(f"opening {self.agent.db_path}"):
                schema.migrate(conn)
                schema.ensure_fts(conn, self.agent.settings.store.fts.tokenizer)
                conn.execute("SELECT COUNT(*) FROM files").fetchone()
        except StoreError:
            conn.close()
            raise
        return IndexStore(conn, vec)

    def _close_writer(self) -> None:
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.conn.close()
            self._store = None

    def recover_corrupt(self, exc: Exception) -> str:
        """Move a damaged database aside (never delete it) and start a fresh one; returns where it went."""
        log.error("index database is corrupt", agent=self.agent.id, error=str(exc))
        self._close_writer()
        self.readers.close()
        moved = move_aside(self.agent.db_path, f"corrupt-{int(time.time())}")
        self._store = self._connect_writer()
        return str(moved)

    def reopen(self) -> None:
        """Close every connection and open the writer again (spec §3.11: a database that turned read-only)."""
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.conn.close()
        self.readers.close()
        self._store = self._connect_writer()

    def swap(self, rebuild: Rebuild, *, set_aside: str | None = None) -> Path | None:
        """Rename a finished rebuild over the live database while no connection holds the live one.

        `set_aside`: the live file is damaged — move it (and its -wal/-shm) aside under this suffix first,
        instead of folding its WAL in; returns where it went.
        """
        moved: Path | None = None
        with self.readers.paused():
            if self._store is not None:
                with contextlib.suppress(Exception):  # a damaged file may fail even to close cleanly
                    self._store.conn.close()
                self._store = None
            try:
                if set_aside is not None:
                    moved = move_aside(self.agent.db_path, set_aside)
                rebuild.swap_in()
                crash_point("reindex:after-swap")
            finally:
                self._store = self._connect_writer()
        return moved

    def close(self) -> None:
        self.readers.close()
        self._close_writer()
        self._lock.release()

    def report(self) -> dict[str, object]:
        """The database's part of status: what it holds, its size, cache, FTS and vector state, how it was built.

        Reads through a pooled reader connection, never the writer's: a sync may be using that one
        in another thread at this very moment.
        """
        try:
            return self._report()
        except CorruptDatabaseError as exc:
            return self._damaged_report(exc)

    def _damaged_report(self, exc: CorruptDatabaseError) -> dict[str, object]:
        """Status of a database that cannot be read: what is known without reading it, and the error."""
        settings = self.agent.settings
        return {
            "files": 0,
            "chunks": 0,
            "dbPath": str(self.agent.db_path),
            "dbSizeBytes": self._size(),
            "databaseError": str(exc),
            "sourceCounts": [],
            "cache": {
                "enabled": settings.cache.enabled,
                "entries": 0,
                "maxEntries": settings.cache.max_entries or None,
            },
            "fts": {"enabled": True, "available": False, "error": str(exc), "tokenizer": settings.store.fts.tokenizer},
            "vector": {
                "enabled": settings.store.vector.enabled,
                "available": False,
                "loadError": str(exc),
                "dims": None,
            },
            "meta": None,
        }

    def _report(self) -> dict[str, object]:
        settings = self.agent.settings
        with self.readers.reader() as (conn, reader_vec):
            store = IndexStore(conn, reader_vec)
            vec = self.vec
            counts = store.counts()
            meta = store.read_meta()
            return {
                "files": sum(c.files for c in counts),
                "chunks": sum(c.chunks for c in counts),
                "dbPath": str(self.agent.db_path),
                "dbSizeBytes": self._size(),
                "sourceCounts": [{"source": c.source, "files": c.files, "chunks": c.chunks} for c in counts],
                "cache": {
                    "enabled": settings.cache.enabled,
                    "entries": store.cache_count(),
                    "maxEntries": settings.cache.max_entries or None,
                },
                "fts": {"enabled": True, "available": True, "error": None, "tokenizer": settings.store.fts.tokenizer},
                "vector": {
                    "enabled": settings.store.vector.enabled,
                    "available": vec.available,
                    "extensionPath": vec.extension_path,
                    "loadError": vec.error,
                    "dims": meta.vector_dims if meta else None,
                },
                "embedding": without_vectors(store, meta),
                "multimodal": media_report(store, active=settings.multimodal.active),
                "malformedTranscriptLines": store.bad_lines(),
                **transcript_report(store.transcript_formats()),
                "meta": None
                if meta is None
                else {
                    "model": meta.model,
                    "provider": meta.provider,
                    "sources": list(meta.sources),
                    "chunkTokens": meta.chunk_tokens,
                    "chunkOverlap": meta.chunk_overlap,
                    "chunkTranscripts": meta.chunk_transcripts,
                    "ftsTokenizer": meta.fts_tokenizer,
                    "builtAt": iso(meta.built_at),
                },
            }

    def _size(self) -> int:
        """Bytes of the database and its WAL (0 when they cannot be inspected)."""
        try:
            return sum(
                Path(f"{self.agent.db_path}{ext}").stat().st_size
                for ext in ("", "-wal")
                if Path(f"{self.agent.db_path}{ext}").exists()
            )
        except OSError:
            return 0


def without_vectors(store: IndexStore, meta: IndexMeta | None) -> dict[str, int]:
    """Files and chunks searchable by keyword only for now: written before their vectors (keyword first) or
    when embedding them failed; the sync's vector pass, or the next sync, embeds them. An index built
    without a provider holds no vectors by design: none of its files is counted."""
    model = meta.model if meta is not None and meta.provider not in ("", "none") else None
    with translated("counting files without vectors"):
        novec = "SELECT source, path FROM files WHERE hash LIKE 'novec:%'"
        if model is None:
            files = store.conn.execute(f"SELECT COUNT(*) FROM ({novec})").fetchone()
            chunks = None
        else:
            pending = "FROM chunks WHERE embedding IS NULL AND model = ? AND start_line != ?"
            files = store.conn.execute(
                f"SELECT COUNT(*) FROM (SELECT source, path {pending} UNION {novec})", (model, NO_LINES)
            ).fetchone()
            chunks = store.conn.execute(f"SELECT COUNT(*) {pending}", (model, NO_LINES)).fetchone()
    return {
        "filesWithoutVectors": int(files[0]) if files else 0,
        "chunksWithoutVectors": int(chunks[0]) if chunks else 0,
    }


def media_report(store: IndexStore, *, active: bool) -> dict[str, object]:
    """Media files in the index (multimodal memory), and those it holds without a chunk, per reason.

    A media file's chunk is the only one with no lines (counted only while multimodal memory is on: it
    reads every chunk row); a skipped one is a file row whose hash names why.
    """
    with translated("counting media files"):
        row = None
        if active:
            row = store.conn.execute(
                "SELECT COUNT(DISTINCT path) FROM chunks WHERE source = 'memory' AND start_line = ?", (NO_LINES,)
            ).fetchone()
        rows = store.conn.execute(
            "SELECT path, hash FROM files WHERE hash LIKE ? ORDER BY path", (SKIPPED + "%",)
        ).fetchall()
    skipped = [(str(path), str(h).removeprefix(SKIPPED)) for path, h in rows]
    reasons: dict[str, int] = {}
    for _, reason in skipped:
        reasons[reason] = reasons.get(reason, 0) + 1
    return {
        "indexed": int(row[0]) if row else 0,
        "skipped": {
            "count": len(skipped),
            "byReason": reasons,
            "files": [{"path": p, "reason": r} for p, r in skipped[:MEDIA_SKIPPED_SHOWN]],
        },
    }
