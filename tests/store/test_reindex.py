"""The temp-DB rebuild and swap: the old index stays until the new one is complete."""

from __future__ import annotations

from pathlib import Path

from memoryd.config import build
from memoryd.embeddings.base import Fingerprint
from memoryd.store.index import IndexMeta
from memoryd.store.reindex import Rebuild, cleanup_leftovers
from tests.store.test_index import fts_count, open_store, put

SETTINGS = build({}).agent(None).settings
META = IndexMeta("fts-only", "none", "k", ("memory",), "s", 400, 80, "unicode61")


def test_swap_replaces_the_live_database_and_carries_the_cache(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    live = open_store(db)
    put(live, "memory/old.md", ["oldword"])
    import numpy as np

    with live.transaction():
        live.cache_store(Fingerprint("local", "m"), [("h", np.ones(2, dtype=np.float32))])
    rebuild = Rebuild(db, SETTINGS)
    tmp = rebuild.open()
    assert tmp.cache_count() == 1
    put(tmp, "memory/new.md", ["newword"])
    rebuild.finish(META)
    live.conn.close()
    rebuild.swap_in()
    swapped = open_store(db)
    assert fts_count(swapped, "newword") == 1
    assert fts_count(swapped, "oldword") == 0
    assert swapped.read_meta() == META
    assert list(tmp_path.glob("index.sqlite.tmp-*")) == []


def test_abort_keeps_the_old_index_and_removes_the_temporary_one(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    live = open_store(db)
    put(live, "memory/old.md", ["oldword"])
    rebuild = Rebuild(db, SETTINGS)
    put(rebuild.open(), "memory/new.md", ["newword"])
    rebuild.abort()
    assert fts_count(live, "oldword") == 1
    assert list(tmp_path.glob("index.sqlite.tmp-*")) == []


def test_leftovers_of_an_interrupted_rebuild_are_cleaned(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    (tmp_path / "index.sqlite.tmp-abc").write_bytes(b"partial")
    (tmp_path / "index.sqlite.tmp-abc-journal").write_bytes(b"x")
    (tmp_path / "unrelated.sqlite.tmp-abc").write_bytes(b"keep")
    assert len(cleanup_leftovers(db)) == 2
    assert (tmp_path / "unrelated.sqlite.tmp-abc").exists()
