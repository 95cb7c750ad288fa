"""A damaged retention store is found by the agent's integrity check and salvaged, never started anew: it is
the only copy of deleted transcripts. Real SQLite files with real pages overwritten, the real agent actor."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest

from memoryd.errors import StoreError
from memoryd.index import retention as retention_mod
from memoryd.index.actor import AgentIndex
from memoryd.index.engine import IndexEngine
from memoryd.index.retention import Retention
from memoryd.sources.transcripts import Transcript
from memoryd.store import salvage as salvage_mod
from memoryd.store.retained import Retained, RetentionStore, retained_path
from memoryd.store.salvage import salvage
from tests.conftest import AgentFactory, transcript_line, write

PLANTED = "zorblaxquintet"
SESSION = "sessions/2026/01/trip.jsonl"


def _entry(n: int) -> Retained:
    text = f"transcript {n} " + "about the harbour crane and its ledger " * 40
    transcript = Transcript(
        content=text, line_map=(1,), timestamps_ms=(n,), hash=f"h{n}", malformed_lines=0, dreaming=False, format="x"
    )
    return Retained(f"sessions/s{n}.jsonl", f"/gone/s{n}.jsonl", transcript, 1, len(text), n, captured_at=n)


def _pages(db: Path, name: str, pagetype: str | None = None) -> list[int]:
    conn = apsw.Connection(str(db))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        sql, args = "SELECT pageno FROM dbstat WHERE name = ?", [name]
        if pagetype is not None:
            sql, args = sql + " AND pagetype = ?", [*args, pagetype]
        return sorted(int(str(r[0])) for r in conn.execute(sql, args))
    finally:
        conn.close()


def _overwrite(db: Path, pages: list[int]) -> None:
    conn = apsw.Connection(str(db))
    size = int(str(conn.execute("PRAGMA page_size").fetchone()[0]))  # type: ignore[index]
    conn.close()
    with open(db, "r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * size)
            fh.write(os.urandom(size))


def _store_of(path: Path, entries: list[Retained]) -> None:
    store = RetentionStore.open(path)
    with store.transaction():
        store.put(entries)
    store.close()


def test_a_whole_store_is_copied_row_for_row(tmp_path: Path) -> None:
    entries = [_entry(n) for n in range(50)]
    _store_of(tmp_path / "r.sqlite", entries)
    saved = salvage(tmp_path / "r.sqlite", tmp_path / "fresh.sqlite")
    assert (saved.kept, saved.unreadable) == (50, 0)
    fresh = RetentionStore.open(tmp_path / "fresh.sqlite", readonly=True)
    try:
        assert list(fresh.entries(e.path for e in entries)) == entries
    finally:
        fresh.close()


def test_rows_past_a_damaged_page_are_kept_and_only_that_page_is_lost(tmp_path: Path) -> None:
    entries = [_entry(n) for n in range(120)]
    db = tmp_path / "r.sqlite"
    _store_of(db, entries)
    leaves = _pages(db, "retained", "leaf")
    assert len(leaves) >= 5, "the rows must fill several pages for this test to say anything"
    _overwrite(db, [leaves[len(leaves) // 2]])
    saved = salvage(db, tmp_path / "fresh.sqlite")
    assert saved.unreadable >= 1
    assert len(entries) * 3 // 4 <= saved.kept < len(entries)  # one page of rows lost, not the rest after it
    fresh = RetentionStore.open(tmp_path / "fresh.sqlite", readonly=True)
    try:
        kept = list(fresh.entries(e.path for e in entries))
    finally:
        fresh.close()
    assert len(kept) == saved.kept and all(k == entries[int(k.path[10:-6])] for k in kept)
    assert any(k.path == entries[-1].path for k in kept)  # the scan went on past the damage


def _retention_check(actor: AgentIndex) -> dict[str, Any]:
    retention: Any = actor.engine.status()["retention"]
    return dict(retention.get("integrityCheck") or {})


@pytest.mark.anyio
async def test_the_agent_check_finds_a_damaged_store_and_the_deleted_transcript_stays_served(
    tmp_path: Path, make_agent: AgentFactory
) -> None:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe heron nests by the weir.\n")
    lines = [transcript_line("user", f"Book the {PLANTED} ferry to Lisbon."), transcript_line("assistant", "Booked.")]
    write(ws / SESSION, "\n".join(lines) + "\n")
    agent = make_agent(ws)
    engine = IndexEngine(agent)
    await engine.open()
    try:
        await engine.sync("start")
        (ws / SESSION).unlink()
        await engine.sync("deleted")
    finally:
        await engine.aclose()
    store = retained_path(agent.db_path)
    _overwrite(store, _pages(store, "sqlite_autoindex_retained_1"))  # the path index: the rows themselves read

    actor = AgentIndex(agent)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(actor.run)  # its start-up check runs the store's after the index's
            while True:
                checked = actor.checkup.checked
                if "salvaged" in _retention_check(actor):
                    break
                await checked.wait()
            report = _retention_check(actor)
            found = await actor.engine.search(PLANTED, min_score=0)
            got = await anyio.to_thread.run_sync(actor.engine.read_file, SESSION)
            tg.cancel_scope.cancel()
    assert report["result"] != "ok" and report["salvaged"] == 1 and report["unreadable"] == 0
    assert Path(report["movedTo"]).exists()  # the damaged file is kept beside the new one
    assert [(r.path, r.retained) for r in found.results] == [(SESSION, True)]
    assert PLANTED in str(got.to_dict()["text"])


def test_a_store_that_is_no_database_any_more_is_moved_aside_and_a_new_one_used(
    tmp_path: Path, make_agent: AgentFactory
) -> None:
    agent = make_agent(tmp_path / "ws")
    path = retained_path(agent.db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    garbage = os.urandom(8192)
    path.write_bytes(garbage)
    retention = Retention(agent)
    try:
        store = retention.store()
        with store.transaction():
            store.put([_entry(1)])
        assert store.get(_entry(1).path) == _entry(1)
    finally:
        retention.close()
    check = retention.last_check or {}
    assert check["salvaged"] == 0 and check["unreadable"] == 1
    assert Path(str(check["movedTo"])).read_bytes() == garbage  # kept as it was, beside the new store


def test_a_salvage_that_fails_leaves_the_damaged_store_in_place_and_no_half_copy(
    tmp_path: Path, make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = make_agent(tmp_path / "ws")
    path = retained_path(agent.db_path)
    _store_of(path, [_entry(n) for n in range(10)])
    before = path.read_bytes()

    def fail_midway(damaged: Path, fresh: Path) -> salvage_mod.Salvaged:
        _store_of(fresh, [_entry(1)])  # a partial copy, then the disk fills
        raise StoreError("disk full")

    monkeypatch.setattr(retention_mod, "salvage", fail_midway)
    retention = Retention(agent)
    with pytest.raises(StoreError):
        retention.salvage("damaged")
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir() if "retained" in p.name) == [path.name]
