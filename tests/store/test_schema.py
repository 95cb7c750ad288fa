"""The schema: v3 drops the float vector table (now or on a later open), and the stored dimension survives it."""

from __future__ import annotations

from pathlib import Path

import apsw
import numpy as np
import pytest

from memoryd.sources.chunking import Chunk, hash_text
from memoryd.store import schema
from memoryd.store.db import connect
from memoryd.store.index import IndexStore

DIMS = 16


def store_at(path: Path, *, vec: bool = True) -> IndexStore:
    conn, state = connect(path, vec_enabled=vec)
    schema.migrate(conn)
    schema.ensure_fts(conn, "unicode61")
    return IndexStore(conn, state)


def put(store: IndexStore, path: str, rows: np.ndarray) -> None:
    texts = [f"{path} chunk {i}" for i in range(len(rows))]
    with store.transaction():
        store.replace_file(
            source="memory",
            path=path,
            file_hash=hash_text(path),
            mtime_ns=1,
            size=1,
            bad_lines=0,
            chunks=[Chunk(start_line=i + 1, end_line=i + 1, text=t, hash=hash_text(t)) for i, t in enumerate(texts)],
            model="m",
            vectors=rows,
        )


def unit_rows(count: int, dims: int = DIMS, seed: int = 1) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, dims)).astype(np.float32)
    unit: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


def v2_index(path: Path) -> None:
    """A file as memoryd v2 left it: chunks with vectors, the binary table, and the float table beside them."""
    conn, vec = connect(path)
    assert vec.available, vec.error
    for step in schema.STEPS[:2]:
        step(conn)
    conn.execute("ALTER TABLE files ADD COLUMN format TEXT")  # today's writes name it: dropped below
    conn.execute("PRAGMA user_version=2")
    schema.ensure_fts(conn, "unicode61")
    store = IndexStore(conn, vec)
    store.ensure_vectors(DIMS)
    put(store, "memory/a.md", unit_rows(5))
    conn.execute("ALTER TABLE files DROP COLUMN format")
    conn.execute(
        f"CREATE VIRTUAL TABLE {schema.LEGACY_VEC_TABLE} USING vec0(embedding float[{DIMS}] distance_metric=cosine)"
    )
    conn.execute(f"INSERT INTO {schema.LEGACY_VEC_TABLE}(rowid, embedding) SELECT n, embedding FROM chunks")
    conn.close()


def vec_tables(conn: apsw.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'chunks_vec%' ORDER BY name")
    return [str(name) for (name,) in rows]


def user_version(conn: apsw.Connection) -> int:
    (version,) = conn.execute("PRAGMA user_version").fetchone() or (0,)
    return int(version)


def test_a_new_index_never_gets_a_float_vector_table(tmp_path: Path) -> None:
    store = store_at(tmp_path / "new.sqlite")
    try:
        store.ensure_vectors(DIMS)
        put(store, "memory/a.md", unit_rows(3))
        assert vec_tables(store.conn) == []
        assert user_version(store.conn) == schema.SCHEMA_VERSION == 4
    finally:
        store.conn.close()


def test_opening_a_v2_index_with_sqlite_vec_drops_the_float_table_and_keeps_the_vectors(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    v2_index(path)
    store = store_at(path)
    try:
        assert vec_tables(store.conn) == []
        assert user_version(store.conn) == schema.SCHEMA_VERSION
        assert schema.vec_dims(store.conn) == DIMS
        assert store.conn.execute(f"SELECT COUNT(*) FROM {schema.VBIT_TABLE}").fetchone() == (5,)
        assert store.conn.execute("SELECT COUNT(*) FROM chunks WHERE embedding IS NOT NULL").fetchone() == (5,)
        assert store.conn.execute("PRAGMA freelist_count").fetchone() != (0,)  # freed pages, reused by writes
        assert store.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        store.conn.close()


def test_without_sqlite_vec_the_float_table_waits_for_an_open_that_has_it(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    v2_index(path)
    plain = store_at(path, vec=False)
    try:
        assert not plain.vec.available
        assert user_version(plain.conn) == schema.SCHEMA_VERSION
        assert schema.LEGACY_VEC_TABLE in vec_tables(plain.conn)
        assert schema.vec_dims(plain.conn) == DIMS
        put(plain, "memory/a.md", unit_rows(2, seed=2))  # writes never touch the table it cannot load
        put(plain, "memory/b.md", unit_rows(1, seed=3))
    finally:
        plain.conn.close()
    store = store_at(path)
    try:
        assert vec_tables(store.conn) == []
        assert user_version(store.conn) == schema.SCHEMA_VERSION
        assert store.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        store.conn.close()


def test_a_read_only_open_leaves_the_float_table_for_a_writable_one(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    v2_index(path)
    plain = store_at(path, vec=False)  # migrated to v3 without sqlite-vec: the table is still there
    plain.conn.close()
    conn, vec = connect(path, readonly=True)
    try:
        assert vec.available
        schema.migrate(conn)
        assert schema.LEGACY_VEC_TABLE in vec_tables(conn)
    finally:
        conn.close()


def test_the_stored_dimension_is_the_binary_tables_else_the_stored_vectors(tmp_path: Path) -> None:
    store = store_at(tmp_path / "dims.sqlite")
    try:
        assert schema.vec_dims(store.conn) is None
        store.ensure_vectors(DIMS)
        assert schema.vec_dims(store.conn) == DIMS  # declared before any row is written
    finally:
        store.conn.close()
    odd = store_at(tmp_path / "odd.sqlite")  # 12 is no multiple of 8: no binary table at all
    try:
        odd.ensure_vectors(12)
        assert schema.vec_dims(odd.conn) is None
        put(odd, "memory/a.md", unit_rows(2, dims=12))
        assert not schema.table_exists(odd.conn, schema.VBIT_TABLE)
        assert schema.vec_dims(odd.conn) == 12
    finally:
        odd.conn.close()


@pytest.mark.parametrize("vec", [True, False])
def test_an_index_without_vectors_has_no_dimension(tmp_path: Path, vec: bool) -> None:
    store = store_at(tmp_path / "plain.sqlite", vec=vec)
    try:
        with store.transaction():
            store.replace_file(
                source="memory",
                path="memory/k.md",
                file_hash="h",
                mtime_ns=1,
                size=1,
                bad_lines=0,
                chunks=[Chunk(start_line=1, end_line=1, text="keyword only", hash=hash_text("keyword only"))],
                model="fts-only",
                vectors=None,
            )
        assert schema.vec_dims(store.conn) is None
    finally:
        store.conn.close()
