"""The store: schema, round-trips, FTS rows follow chunk rows, the embedding cache."""

from __future__ import annotations

from pathlib import Path

import apsw
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.embeddings.base import Fingerprint
from memoryd.errors import StoreError
from memoryd.sources.chunking import Chunk, hash_text
from memoryd.store import schema
from memoryd.store.db import connect
from memoryd.store.index import IndexMeta, IndexStore


def open_store(path: Path) -> IndexStore:
    conn, vec = connect(path)
    schema.migrate(conn)
    schema.ensure_fts(conn, "unicode61")
    return IndexStore(conn, vec)


def chunk(text: str, start: int = 1, end: int = 1) -> Chunk:
    return Chunk(start_line=start, end_line=end, text=text, hash=hash_text(text))


def put(store: IndexStore, path: str, texts: list[str], source: str = "memory") -> None:
    with store.transaction():
        store.replace_file(
            source=source,
            path=path,
            file_hash=hash_text("".join(texts)),
            mtime_ns=1,
            size=1,
            bad_lines=0,
            chunks=[chunk(t, i + 1, i + 1) for i, t in enumerate(texts)],
            model="fts-only",
            vectors=None,
        )


def fts_count(store: IndexStore, term: str) -> int:
    row = store.conn.execute("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{term}"',)).fetchone()
    return int(row[0]) if row else 0


@pytest.fixture
def store(tmp_path: Path) -> IndexStore:
    return open_store(tmp_path / "index.sqlite")


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(text=st.text(min_size=1, max_size=2000))
def test_any_text_round_trips_exactly(store: IndexStore, text: str) -> None:
    put(store, "memory/x.md", [text])
    row = store.conn.execute("SELECT text FROM chunks WHERE path = 'memory/x.md'").fetchone()
    assert row is not None and row[0] == text


def test_replacing_a_file_replaces_its_fts_rows(store: IndexStore) -> None:
    put(store, "memory/a.md", ["alpha zebra", "beta"])
    assert fts_count(store, "zebra") == 1
    put(store, "memory/a.md", ["gamma"])
    assert fts_count(store, "zebra") == 0
    assert fts_count(store, "gamma") == 1
    with store.transaction():
        store.delete_files("memory", ["memory/a.md"])
    assert fts_count(store, "gamma") == 0
    assert store.counts() == []


def test_counts_per_source(store: IndexStore) -> None:
    put(store, "memory/a.md", ["one", "two"])
    put(store, "sessions/s.jsonl", ["three"], source="sessions")
    assert [(c.source, c.files, c.chunks) for c in store.counts()] == [("memory", 1, 2), ("sessions", 1, 1)]


def test_a_failed_transaction_leaves_nothing_behind(store: IndexStore) -> None:
    put(store, "memory/a.md", ["kept"])
    with pytest.raises(RuntimeError), store.transaction():
        store.delete_files("memory", ["memory/a.md"])
        raise RuntimeError("boom")
    assert fts_count(store, "kept") == 1


def test_meta_round_trips(store: IndexStore) -> None:
    meta = IndexMeta("m", "p", "k", ("memory", "sessions"), "h", 400, 80, "unicode61", 384, 123)
    with store.transaction():
        store.write_meta(meta)
    assert store.read_meta() == meta


def test_embedding_cache_lookup_store_and_prune(store: IndexStore) -> None:
    fp = Fingerprint("local", "m")
    other = Fingerprint("local", "other-model")
    vecs = {f"h{i}": np.full(4, i, dtype=np.float32) for i in range(5)}
    with store.transaction():
        store.cache_store(fp, list(vecs.items()))
    found = store.cache_lookup(fp, ["h1", "h3", "missing"])
    assert set(found) == {"h1", "h3"}
    assert np.array_equal(found["h3"], vecs["h3"])
    assert store.cache_lookup(other, ["h1"]) == {}
    with store.transaction():
        assert store.cache_prune(2) == 3
    assert store.cache_count() == 2


def test_vectors_are_stored_exactly_in_chunks_and_as_sign_bits_with_no_float_table(store: IndexStore) -> None:
    if not store.vec.available:
        pytest.fail(f"sqlite-vec should load from the installed package: {store.vec.error}")
    store.ensure_vectors(8)
    vectors = np.array([[1, 0, 0, 0, 0, 0, 0, -1], [-1, 1, 0, 0, 0, 0, 0, 1]], dtype=np.float32)
    with store.transaction():
        store.replace_file(
            source="memory",
            path="memory/v.md",
            file_hash="h",
            mtime_ns=1,
            size=1,
            bad_lines=0,
            chunks=[chunk("x", 1, 1), chunk("y", 2, 2)],
            model="m",
            vectors=vectors,
        )
    blobs = [row[0] for row in store.conn.execute("SELECT embedding FROM chunks ORDER BY start_line")]
    assert [np.frombuffer(b, dtype="<f4").tolist() for b in blobs if isinstance(b, bytes)] == vectors.tolist()
    bits = store.conn.execute(
        f"SELECT c.text, v.embedding FROM {schema.VBIT_TABLE} v JOIN chunks c ON c.n = v.rowid ORDER BY c.text"
    ).fetchall()
    assert bits == [("x", bytes([0b00000001])), ("y", bytes([0b10000010]))]
    assert not schema.table_exists(store.conn, schema.LEGACY_VEC_TABLE)
    with store.transaction():
        store.delete_files("memory", ["memory/v.md"])
    assert store.conn.execute(f"SELECT COUNT(*) FROM {schema.VBIT_TABLE}").fetchone() == (0,)


def test_schema_newer_than_the_code_is_refused(tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "future.sqlite"))
    conn.execute(f"PRAGMA user_version={schema.SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        schema.migrate(conn)
