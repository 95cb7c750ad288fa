"""The index schema, created and upgraded through `PRAGMA user_version` steps.

Tables follow OpenClaw's (spec §2) with three deliberate changes:
* `chunks` has an INTEGER primary key `n`; the FTS5 table is *contentless* (the text lives once,
  in `chunks`) and its rowid is `n`, and so is the rowid of the sqlite-vec table. Half the disk,
  half the insert work, and joins by integer.
* `files` is keyed by (source, path) and remembers `mtime_ns` (a no-change resync skips reading
  files whose size and mtime are unchanged) and `bad_lines` (malformed transcript lines).
* vectors are float32 blobs, not JSON text.
The FTS table depends on the configured tokenizer and the vector table on the model's dimension,
so they are created by `ensure_fts` / `ensure_vbit` rather than by a migration step.

v2 adds `chunks_cjk`, a contentless unicode61 FTS5 side index of CJK n-grams (rowid = chunks.n,
see `memoryd.store.ngrams`), and `ensure_vbit` a sqlite-vec `bit[dims]` table partitioned by source:
the coarse pass of the vector leg (hamming distance is 8-20x faster to scan than float).

v3 drops the float sqlite-vec table `chunks_vec`: the vector leg reads only `chunks_vbit` and the exact
vectors in `chunks.embedding`, so it cost ~1.5 KB per chunk (over a third of the file) and insert time
for nothing. Dropping a vec0 table needs sqlite-vec loaded; without it the drop waits for the next open
that has it (`drop_legacy_vec`). The version bump also keeps an older memoryd, which would refill the
table with new rows only, off a v3 file. The freed pages stay on the freelist (the files have
auto_vacuum=NONE, so `PRAGMA incremental_vacuum` does nothing) and later writes reuse them; no VACUUM on
open, which would rewrite the whole file (about 3 ms per MB, the copy held in RAM with
temp_store=MEMORY) while the daemon starts. A full rebuild (`memoryd index --force`) writes a compact file.

v4 adds `files.format`: which tool wrote a transcript (`openclaw`, `claude-code`, `codex`), `unknown` for
one no adapter understands, "" for a blank one, NULL for memory files — and for transcripts indexed
before formats were told apart, which the next sync reads again (their size and mtime alone do not say
how a newer parser reads them). Status counts files and chunks per format from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import apsw
import structlog

from memoryd.config import FtsTokenizer
from memoryd.errors import StoreError
from memoryd.store.ngrams import side_document

log = structlog.get_logger(__name__)

Step = Callable[[apsw.Connection], None]


def _v1(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS files(
            source TEXT NOT NULL DEFAULT 'memory',
            path TEXT NOT NULL,
            hash TEXT NOT NULL,
            mtime INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL DEFAULT 0,
            size INTEGER NOT NULL,
            bad_lines INTEGER NOT NULL DEFAULT 0,
            indexed_at INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY(source, path)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS chunks(
            n INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            path TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT 'memory',
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            hash TEXT NOT NULL,
            model TEXT NOT NULL,
            text TEXT NOT NULL,
            embedding BLOB,
            ts INTEGER NOT NULL DEFAULT 0,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_chunks_source_path ON chunks(source, path);
        CREATE TABLE IF NOT EXISTS embedding_cache(
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            provider_key TEXT NOT NULL,
            hash TEXT NOT NULL,
            embedding BLOB NOT NULL,
            dims INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY(provider, model, provider_key, hash)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS idx_embedding_cache_updated_at ON embedding_cache(updated_at);
        """
    )


CJK_TABLE = "chunks_cjk"
VBIT_TABLE = "chunks_vbit"
VBIT_SHARDS = 32
"""Partitions of the binary table per source (shard = chunks.n mod VBIT_SHARDS). sqlite-vec's KNN
costs about (rows scanned x k), so asking each shard for k/VBIT_SHARDS neighbours is that many
times cheaper than asking the whole table for k."""


def _v2(conn: apsw.Connection) -> None:
    """The CJK side index, filled from the chunks already stored."""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {CJK_TABLE} USING fts5(text, content='', contentless_delete=1, "
        "tokenize='unicode61 remove_diacritics 2')"
    )
    rows: Iterator[Any] = conn.cursor().execute("SELECT n, text FROM chunks")  # streamed, not loaded at once
    docs = ((int(n), doc) for n, text in rows if (doc := side_document(str(text))))
    conn.executemany(f"INSERT INTO {CJK_TABLE}(rowid, text) VALUES(?, ?)", docs)


LEGACY_VEC_TABLE = "chunks_vec"
"""The float vec0 table of v1-v2, no longer read nor written."""
LEGACY_VEC_DROPPED_AT = 3


def _v3(conn: apsw.Connection) -> None:
    """Drop the float vector table (now, or on a later open that has sqlite-vec loaded)."""
    drop_legacy_vec(conn)


def _v4(conn: apsw.Connection) -> None:
    """Each transcript's format (NULL: not known yet, so the next sync parses it again)."""
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(files)")}
    if "format" not in columns:  # a file whose version was set back by hand may have it already
        conn.execute("ALTER TABLE files ADD COLUMN format TEXT")


STEPS: tuple[Step, ...] = (_v1, _v2, _v3, _v4)
SCHEMA_VERSION = len(STEPS)

TOKENIZE_CLAUSES: dict[FtsTokenizer, str] = {
    "unicode61": "unicode61 remove_diacritics 2",
    "porter": "porter unicode61 remove_diacritics 2",
    "trigram": "trigram case_sensitive 0",
}


def migrate(conn: apsw.Connection) -> None:
    """Bring the schema to SCHEMA_VERSION, each step in its own transaction; at v3 and later, retry the
    drop of the float vector table that an open without sqlite-vec had to leave."""
    (version,) = conn.execute("PRAGMA user_version").fetchone() or (0,)
    if version > SCHEMA_VERSION:
        raise StoreError(f"database schema v{version} is newer than this memoryd (v{SCHEMA_VERSION}); upgrade memoryd")
    for number in range(int(version), SCHEMA_VERSION):
        with conn:
            STEPS[number](conn)
            conn.execute(f"PRAGMA user_version={number + 1}")
    if version >= LEGACY_VEC_DROPPED_AT:
        try:
            with conn:
                drop_legacy_vec(conn)
        except apsw.ReadOnlyError:
            log.info("read-only index: the unused float vector table is left for a writable open")
    try:
        with conn:
            conn.execute(WITHOUT_VECTORS_INDEX)
    except apsw.ReadOnlyError:
        pass  # a read-only open counts chunks without vectors by a scan instead


WITHOUT_VECTORS_INDEX = "CREATE INDEX IF NOT EXISTS idx_chunks_without_vectors ON chunks(model) WHERE embedding IS NULL"
"""Chunks waiting for their vectors (keyword first), found without reading every chunk: a partial index,
empty once every vector is in, so it costs nothing then. Not a schema step: any version can have it."""


def drop_legacy_vec(conn: apsw.Connection) -> bool:
    """Drop `chunks_vec` (and its shadow tables) if it exists and sqlite-vec is loaded; True if dropped.

    Without the vec0 module SQLite cannot drop the table, and deleting its schema rows by hand
    (writable_schema) risks the file: it is left alone, unused, until an open that has the module.
    """
    if not table_exists(conn, LEGACY_VEC_TABLE):
        return False
    if conn.execute("SELECT 1 FROM pragma_module_list WHERE name = 'vec0'").fetchone() is None:
        log.info("sqlite-vec not loaded: the unused float vector table is dropped on a later open")
        return False
    conn.execute(f"DROP TABLE {LEGACY_VEC_TABLE}")
    return True


def table_exists(conn: apsw.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return row is not None


def ensure_fts(conn: apsw.Connection, tokenizer: FtsTokenizer) -> None:
    """Create the contentless FTS5 table for `tokenizer` if it is missing."""
    if table_exists(conn, "chunks_fts"):
        return
    clause = TOKENIZE_CLAUSES[tokenizer]
    conn.execute(
        f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='', contentless_delete=1, tokenize='{clause}')"
    )


def vec_dims(conn: apsw.Connection) -> int | None:
    """The dimension of the stored vectors: the binary table's, else the first stored embedding's; None
    while the index holds neither (a new, keyword-only or still empty rebuilt index).

    The fallback covers dimensions that are not a multiple of 8 (no binary table) and indexes whose
    binary table is not built yet; it reads `sqlite_master` only, plus `chunks` when there is no binary table.
    """
    declared = _declared_dims(conn, VBIT_TABLE, "bit[")
    if declared is not None:
        return declared
    row = conn.execute("SELECT length(embedding) FROM chunks WHERE embedding IS NOT NULL LIMIT 1").fetchone()
    return int(row[0]) // 4 if row is not None and row[0] else None


def vbit_dims(conn: apsw.Connection) -> int | None:
    """The dimension of the existing binary vector table, if any (and if it has the current layout)."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (VBIT_TABLE,)).fetchone()
    if row is None or _vbit_layout(0) not in str(row[0]):
        return None
    return _declared_dims(conn, VBIT_TABLE, "bit[")


def _vbit_layout(dims: int) -> str:
    return f"source text partition key, shard integer partition key, embedding bit[{int(dims) if dims else ''}"


def _declared_dims(conn: apsw.Connection, table: str, marker: str) -> int | None:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    if row is None:
        return None
    sql = str(row[0])
    start = sql.find(marker)
    end = sql.find("]", start)
    return int(sql[start + len(marker) : end]) if start >= 0 and end > start else None


def ensure_vbit(conn: apsw.Connection, dims: int) -> bool:
    """Create the binary (sign-bit) vector table for `dims`, re-creating it if the dimension changed.

    Returns True when the table was (re)created, so the caller fills it from the stored vectors.
    Needs sqlite-vec loaded; `dims` must be a multiple of 8.
    """
    current = vbit_dims(conn)
    if current == dims:
        return False
    if table_exists(conn, VBIT_TABLE):
        conn.execute(f"DROP TABLE {VBIT_TABLE}")
    conn.execute(f"CREATE VIRTUAL TABLE {VBIT_TABLE} USING vec0({_vbit_layout(dims)}])")
    return True
