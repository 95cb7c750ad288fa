"""Safe full reindex (spec §3.10): build a temporary database, then swap it in atomically.

The temporary database is written without a journal (it is disposable until it is swapped in),
switched to WAL mode at the end, closed (so it is a single self-contained file) and fsynced.
The swap is one `rename(2)` over the live file, done while no connection to the live file is
open and its WAL is empty. A crash at any point leaves either the old index or the new one;
leftover temporary files are removed by `cleanup_leftovers` on the next open.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

import apsw
import structlog

from memoryd.config import MemorySearchSettings
from memoryd.errors import StoreError
from memoryd.faults import crash_point
from memoryd.store import schema
from memoryd.store.db import connect, fsync_dir, translated
from memoryd.store.index import IndexMeta, IndexStore

log = structlog.get_logger(__name__)

TMP_MARK = ".tmp-"


def _siblings(path: Path) -> list[Path]:
    return [Path(f"{path}{ext}") for ext in ("", "-wal", "-shm", "-journal")]


def cleanup_leftovers(db_path: Path) -> list[Path]:
    """Delete temporary databases left by an interrupted rebuild. Call only while holding the writer lock."""
    removed: list[Path] = []
    if not db_path.parent.exists():
        return removed
    prefix = db_path.name + TMP_MARK
    for entry in db_path.parent.iterdir():
        if entry.name.startswith(prefix):
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
                removed.append(entry)
    if removed:
        log.info("removed leftovers of an interrupted reindex", files=[p.name for p in removed])
    return removed


class Rebuild:
    """A temporary index being built for `db_path`."""

    def __init__(self, db_path: Path, settings: MemorySearchSettings) -> None:
        self.db_path = db_path
        self.tmp_path = db_path.with_name(f"{db_path.name}{TMP_MARK}{uuid.uuid4().hex[:12]}")
        self.settings = settings
        self.store: IndexStore | None = None

    def open(self) -> IndexStore:
        vector = self.settings.store.vector
        conn, vec = connect(self.tmp_path, journal="off", vec_path=vector.extension_path, vec_enabled=vector.enabled)
        with translated("creating the temporary index"):
            schema.migrate(conn)
            schema.ensure_fts(conn, self.settings.store.fts.tokenizer)
        self.store = IndexStore(conn, vec)
        if self.settings.cache.enabled:
            self._copy_cache(conn)
        return self.store

    def _copy_cache(self, conn: apsw.Connection) -> None:
        """Carry the embedding cache over, so a rebuild re-embeds nothing it has seen (spec §3.10 step 2)."""
        if not self.db_path.exists():
            return
        try:
            conn.execute("ATTACH DATABASE ? AS old", (str(self.db_path),))
        except apsw.Error as exc:
            log.warning("cannot read the old index's embedding cache", error=str(exc))
            return
        try:
            if conn.execute("SELECT 1 FROM old.sqlite_master WHERE name = 'embedding_cache'").fetchone():
                conn.execute("INSERT OR IGNORE INTO embedding_cache SELECT * FROM old.embedding_cache")
        except apsw.Error as exc:
            log.warning("embedding cache not carried over", error=str(exc))
        finally:
            with contextlib.suppress(apsw.Error):
                conn.execute("DETACH DATABASE old")

    def finish(self, meta: IndexMeta) -> None:
        """Write meta, prune the cache, and leave a closed, durable, WAL-mode file."""
        store = self._require()
        with store.transaction():
            store.write_meta(meta)
            store.cache_prune(self.settings.cache.max_entries)
        with translated("finalising the temporary index"):
            store.conn.execute("PRAGMA journal_mode=WAL")
            store.conn.close()
        self.store = None
        fd = os.open(self.tmp_path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def abort(self) -> None:
        if self.store is not None:
            with contextlib.suppress(apsw.Error):
                self.store.conn.close()
            self.store = None
        for p in _siblings(self.tmp_path):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()

    def swap_in(self) -> None:
        """Replace the live database with the finished one. Every connection to it must be closed."""
        wal = Path(f"{self.db_path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            self._checkpoint_live()
        for leftover in (wal, Path(f"{self.db_path}-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        crash_point("reindex:wal-removed")
        os.replace(self.tmp_path, self.db_path)
        fsync_dir(self.db_path.parent)

    def _checkpoint_live(self) -> None:
        """Fold a leftover WAL into the live file so that removing it loses nothing."""
        try:
            conn = apsw.Connection(str(self.db_path))
            try:
                busy, _log, _ckpt = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone() or (1, 0, 0)
            finally:
                conn.close()
        except apsw.Error as exc:
            raise StoreError(f"cannot checkpoint {self.db_path} before swapping: {exc}") from exc
        if busy:
            raise StoreError(f"{self.db_path} is in use by another process; the rebuilt index was not swapped in")

    def _require(self) -> IndexStore:
        if self.store is None:
            raise StoreError("rebuild is not open")
        return self.store
