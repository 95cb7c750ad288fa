"""Typed reads and writes of one agent's index. Callers own transactions (`IndexStore.transaction`)."""

from __future__ import annotations

import contextlib
import hashlib
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass

import apsw
import numpy as np
import orjson

from memoryd.embeddings.base import Fingerprint, Vectors
from memoryd.faults import crash_point
from memoryd.sources.chunking import Chunk
from memoryd.store import schema
from memoryd.store.db import VecState, immediate_transaction, translated
from memoryd.store.ngrams import has_cjk, side_document

META_KEY = "memory_index_meta_v1"
GENERATION_KEY = "generation"
"""Meta key of a random token replaced by every write of chunk rows: in-process caches of the
index (the exact vector fallback's matrix) compare it to know they are stale, even across a swap."""
CACHE_LOOKUP_BATCH = 400
SKIPPED = "skipped:"
"""Prefix of the hash of a file row kept without chunks on purpose (a media file that cannot be indexed
now; the rest names why): not an indexed file, so `counts` leaves it out."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def chunk_id(source: str, path: str, chunk: Chunk, model: str) -> str:
    """Spec §3.5: sha256 of `source:path:start:end:hash:model`."""
    key = f"{source}:{path}:{chunk.start_line}:{chunk.end_line}:{chunk.hash}:{model}"
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class IndexMeta:
    """What the index was built with; any difference from the current settings forces a full rebuild."""

    model: str
    provider: str
    provider_key: str
    sources: tuple[str, ...]
    scope_hash: str
    chunk_tokens: int
    chunk_overlap: int
    fts_tokenizer: str
    vector_dims: int | None = None
    built_at: int = 0
    chunk_transcripts: str = "lines"  # absent from metadata written before transcripts could be cut by exchange

    def to_json(self) -> str:
        return orjson.dumps(asdict(self)).decode()

    @classmethod
    def from_json(cls, text: str) -> IndexMeta | None:
        try:
            raw = orjson.loads(text)
            return cls(
                model=str(raw["model"]),
                provider=str(raw["provider"]),
                provider_key=str(raw.get("provider_key", "")),
                sources=tuple(raw.get("sources") or ("memory",)),
                scope_hash=str(raw.get("scope_hash", "")),
                chunk_tokens=int(raw["chunk_tokens"]),
                chunk_overlap=int(raw["chunk_overlap"]),
                fts_tokenizer=str(raw.get("fts_tokenizer") or "unicode61"),
                vector_dims=int(raw["vector_dims"]) if raw.get("vector_dims") else None,
                built_at=int(raw.get("built_at", 0)),
                chunk_transcripts=str(raw.get("chunk_transcripts") or "lines"),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class FileState:
    hash: str
    mtime_ns: int
    size: int
    format: str | None = None  # a transcript's format; None for memory files and transcripts not parsed since v4


@dataclass(frozen=True, slots=True)
class FormatCount:
    format: str
    files: int
    chunks: int


@dataclass(frozen=True, slots=True)
class SourceCount:
    source: str
    files: int
    chunks: int


def vector_blob(row: np.ndarray) -> bytes:
    return np.asarray(row, dtype="<f4").tobytes()


class IndexStore:
    """One agent's index on one connection. Not thread-safe: one owner at a time."""

    def __init__(self, conn: apsw.Connection, vec: VecState) -> None:
        self.conn = conn
        self.vec = vec

    # ---------------------------------------------------------------- transactions

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT (rollback on any error): the writer takes the lock up front."""
        with immediate_transaction(self.conn, "the index", lambda: crash_point("store:before-commit")):
            yield

    # ---------------------------------------------------------------- meta

    def read_meta(self) -> IndexMeta | None:
        value = self.get_value(META_KEY)
        return IndexMeta.from_json(value) if value is not None else None

    def write_meta(self, meta: IndexMeta) -> None:
        self.set_value(META_KEY, meta.to_json())

    def get_value(self, key: str) -> str | None:
        with translated("reading meta"):
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def set_value(self, key: str, value: str) -> None:
        with translated("writing meta"):
            self.conn.execute(
                "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # ---------------------------------------------------------------- files and chunks

    def file_states(self, source: str) -> dict[str, FileState]:
        with translated("reading file states"):
            rows = self.conn.execute("SELECT path, hash, mtime_ns, size, format FROM files WHERE source = ?", (source,))
            return {str(p): FileState(str(h), int(m), int(s), None if f is None else str(f)) for p, h, m, s, f in rows}

    def ensure_vectors(self, dims: int) -> None:
        """Create the binary vector table for `dims` (filled from the stored vectors when new).

        The exact vectors live in `chunks.embedding` alone; a dimension that is not a multiple of 8
        gets no table (the vector leg then scores exactly in process)."""
        if not self.vec.available:
            return
        with translated("creating the vector table"):
            if dims % 8 == 0 and schema.ensure_vbit(self.conn, dims):
                self.conn.execute(
                    f"INSERT INTO {schema.VBIT_TABLE}(rowid, source, shard, embedding) "
                    "SELECT n, source, n % ?, vec_quantize_binary(embedding) FROM chunks "
                    "WHERE embedding IS NOT NULL AND length(embedding) = ?",
                    (schema.VBIT_SHARDS, dims * 4),
                )

    def generation(self) -> str:
        return self.get_value(GENERATION_KEY) or ""

    def _bump_generation(self) -> None:
        self.set_value(GENERATION_KEY, uuid.uuid4().hex)

    def replace_file(
        self,
        *,
        source: str,
        path: str,
        file_hash: str,
        mtime_ns: int,
        size: int,
        bad_lines: int,
        chunks: Sequence[Chunk],
        model: str,
        vectors: Vectors | None,
        format: str | None = None,
    ) -> int:
        """Replace every row of one file with `chunks` (and their vectors); returns rows written."""
        stamp = now_ms()
        with translated(f"indexing {source}:{path}"):
            self._delete_rows(source, path)
            rows = []
            for i, chunk in enumerate(chunks):
                blob = vector_blob(vectors[i]) if vectors is not None else None
                rows.append(
                    (
                        chunk_id(source, path, chunk, model),
                        path,
                        source,
                        chunk.start_line,
                        chunk.end_line,
                        chunk.hash,
                        model,
                        chunk.text,
                        blob,
                        chunk.ts_ms,
                        stamp,
                    )
                )
            # The same chunk text twice in one file yields the same id: keep the first occurrence.
            self.conn.executemany(
                "INSERT OR IGNORE INTO chunks(id, path, source, start_line, end_line, hash, model, text, "
                "embedding, ts, updated_at) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
            self.conn.execute(
                "INSERT INTO chunks_fts(rowid, text) SELECT n, text FROM chunks WHERE source = ? AND path = ?",
                (source, path),
            )
            if any(has_cjk(chunk.text) for chunk in chunks):
                texts = self.conn.execute("SELECT n, text FROM chunks WHERE source = ? AND path = ?", (source, path))
                docs = [(int(n), doc) for n, text in texts if (doc := side_document(str(text)))]
                self.conn.executemany(f"INSERT INTO {schema.CJK_TABLE}(rowid, text) VALUES(?, ?)", docs)
            if vectors is not None and self.vec.available:
                bits = schema.vbit_dims(self.conn)
                if bits is not None:
                    self.conn.execute(
                        f"INSERT INTO {schema.VBIT_TABLE}(rowid, source, shard, embedding) "
                        "SELECT n, source, n % ?, vec_quantize_binary(embedding) FROM chunks "
                        "WHERE source = ? AND path = ? AND embedding IS NOT NULL AND length(embedding) = ?",
                        (schema.VBIT_SHARDS, source, path, bits * 4),
                    )
            self.conn.execute(
                "INSERT INTO files(source, path, hash, mtime, mtime_ns, size, bad_lines, indexed_at, format) "
                "VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(source, path) DO UPDATE SET hash = excluded.hash, "
                "mtime = excluded.mtime, mtime_ns = excluded.mtime_ns, size = excluded.size, "
                "bad_lines = excluded.bad_lines, indexed_at = excluded.indexed_at, format = excluded.format",
                (source, path, file_hash, mtime_ns // 1_000_000, mtime_ns, size, bad_lines, stamp, format),
            )
            self._bump_generation()
        return len(rows)

    def touch_file(self, source: str, path: str, mtime_ns: int, size: int, format: str | None = None) -> None:
        """Same content, new mtime: remember it so the next resync skips reading the file (and, for a
        transcript, the format it was read as)."""
        with translated(f"updating {source}:{path}"):
            self.conn.execute(
                "UPDATE files SET mtime = ?, mtime_ns = ?, size = ?, format = ? WHERE source = ? AND path = ?",
                (mtime_ns // 1_000_000, mtime_ns, size, format, source, path),
            )

    def delete_files(self, source: str, paths: Iterable[str]) -> int:
        count = 0
        with translated(f"pruning {source} files"):
            for path in paths:
                self._delete_rows(source, path)
                self.conn.execute("DELETE FROM files WHERE source = ? AND path = ?", (source, path))
                count += 1
            if count:
                self._bump_generation()
        return count

    def _delete_rows(self, source: str, path: str) -> None:
        """Delete one file's chunks and every index row derived from them (FTS, CJK side index, vectors)."""
        tables = ["chunks_fts", schema.CJK_TABLE]
        if self.vec.available and schema.table_exists(self.conn, schema.VBIT_TABLE):
            tables.append(schema.VBIT_TABLE)
        for table in tables:
            self.conn.execute(
                f"DELETE FROM {table} WHERE rowid IN (SELECT n FROM chunks WHERE source = ? AND path = ?)",
                (source, path),
            )
        self.conn.execute("DELETE FROM chunks WHERE source = ? AND path = ?", (source, path))

    def counts(self) -> list[SourceCount]:
        with translated("counting"):
            files: dict[str, int] = {
                str(s): int(n)
                for s, n in self.conn.execute(
                    "SELECT source, COUNT(*) FROM files WHERE hash NOT LIKE ? GROUP BY source", (SKIPPED + "%",)
                )
            }
            chunks: dict[str, int] = {
                str(s): int(n) for s, n in self.conn.execute("SELECT source, COUNT(*) FROM chunks GROUP BY source")
            }
        return [SourceCount(s, files.get(s, 0), chunks.get(s, 0)) for s in sorted(set(files) | set(chunks))]

    def transcript_formats(self) -> list[FormatCount]:
        """Transcripts and their chunks per format (NULL, not parsed since v4, left out)."""
        with translated("counting transcript formats"):
            files = {
                str(f): int(n)
                for f, n in self.conn.execute(
                    "SELECT format, COUNT(*) FROM files WHERE source = 'sessions' AND format IS NOT NULL "
                    "GROUP BY format"
                )
            }
            chunks = {
                str(f): int(n)
                for f, n in self.conn.execute(
                    "SELECT f.format, COUNT(*) FROM chunks c JOIN files f ON f.source = c.source AND f.path = c.path "
                    "WHERE c.source = 'sessions' AND f.format IS NOT NULL GROUP BY f.format"
                )
            }
        return [FormatCount(f, files[f], chunks.get(f, 0)) for f in sorted(files)]

    def bad_lines(self) -> int:
        with translated("counting malformed lines"):
            row = self.conn.execute("SELECT COALESCE(SUM(bad_lines), 0) FROM files").fetchone()
        return int(row[0]) if row else 0

    def is_empty(self) -> bool:
        with translated("reading the index"):
            return self.conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is None

    # ---------------------------------------------------------------- embedding cache

    def cache_lookup(self, fp: Fingerprint, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        key = fp.provider_key
        with translated("reading the embedding cache"):
            for start in range(0, len(hashes), CACHE_LOOKUP_BATCH):
                part = list(dict.fromkeys(hashes[start : start + CACHE_LOOKUP_BATCH]))
                marks = ",".join("?" * len(part))
                rows = self.conn.execute(
                    f"SELECT hash, embedding FROM embedding_cache WHERE provider = ? AND model = ? "
                    f"AND provider_key = ? AND hash IN ({marks})",
                    (fp.provider, fp.model, key, *part),
                )
                for h, blob in rows:
                    if blob:
                        found[str(h)] = np.frombuffer(blob, dtype="<f4").copy()
        return found

    def cache_store(self, fp: Fingerprint, items: Iterable[tuple[str, np.ndarray]]) -> None:
        stamp = now_ms()
        key = fp.provider_key
        with translated("writing the embedding cache"):
            self.conn.executemany(
                "INSERT INTO embedding_cache(provider, model, provider_key, hash, embedding, dims, updated_at) "
                "VALUES(?,?,?,?,?,?,?) ON CONFLICT(provider, model, provider_key, hash) DO UPDATE SET "
                "embedding = excluded.embedding, dims = excluded.dims, updated_at = excluded.updated_at",
                [(fp.provider, fp.model, key, h, vector_blob(v), int(v.shape[-1]), stamp) for h, v in items],
            )

    def cache_count(self) -> int:
        with translated("counting the embedding cache"):
            row = self.conn.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()
        return int(row[0]) if row else 0

    def cache_prune(self, max_entries: int) -> int:
        """Keep the newest `max_entries` rows (spec §3.12); 0 means no cap."""
        if max_entries <= 0:
            return 0
        excess = self.cache_count() - max_entries
        if excess <= 0:
            return 0
        with translated("pruning the embedding cache"):
            self.conn.execute(
                "DELETE FROM embedding_cache WHERE (provider, model, provider_key, hash) IN "
                "(SELECT provider, model, provider_key, hash FROM embedding_cache ORDER BY updated_at ASC LIMIT ?)",
                (excess,),
            )
        return excess
