"""The integrity check in idle time (memoryd.index.checkup): a stopped check records nothing, a finished one
says why it ran; the check reads the file as it is now, not pages an earlier read cached."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import apsw
import pytest

from memoryd.index.actor import AgentIndex
from tests.conftest import AgentFactory

pytestmark = pytest.mark.anyio


def _overwrite_chunk_pages(db: Path) -> None:
    conn = apsw.Connection(str(db))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = sorted({int(r[0]) for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'chunks'")} - {1})
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])  # type: ignore[index]
    finally:
        conn.close()
    with open(db, "r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * size)
            fh.write(os.urandom(size))


async def test_a_stopped_check_records_nothing_and_a_finished_one_finds_what_a_cached_read_would_miss(
    workspace: Path, make_agent: AgentFactory
) -> None:
    agent = make_agent(workspace, store={"quick_check": False})
    actor = AgentIndex(agent)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(actor.run)
            await actor.request_sync("test")
            integrity = actor.engine.integrity
            with actor.engine.database.readers.reader() as (conn, _vec):  # every chunk page, cached by a pooled reader
                conn.execute("SELECT sum(length(text)) FROM chunks").fetchall()
            await anyio.to_thread.run_sync(integrity.run_quick_check, "idle")
            _overwrite_chunk_pages(agent.db_path)
            stop = threading.Event()
            stop.set()
            stopped = await anyio.to_thread.run_sync(integrity.run_quick_check, "idle", stop)
            assert stopped is None and integrity.corruption is None  # yielded: nothing said, nothing recorded
            assert integrity.last_check is not None and integrity.last_check.result == "ok"
            done = await anyio.to_thread.run_sync(integrity.run_quick_check, "idle")
            tg.cancel_scope.cancel()
    assert done is not None and done.result != "ok" and done.to_dict()["trigger"] == "idle"
    assert integrity.corruption is not None and integrity.corruption.found_by == "the integrity check"
