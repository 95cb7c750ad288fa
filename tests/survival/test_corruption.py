"""A damaged index.sqlite, found and rebuilt: pages overwritten while the daemon is stopped (found by the
background quick_check, or by the searches that meet them), and the header overwritten while it runs.

The pages are chosen with SQLite's own `dbstat` table (those of the chunks and of the FTS index), and
overwritten with random bytes in the real file. The damaged file must be moved aside, never deleted.
"""

from __future__ import annotations

import os
import random
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest

from memoryd.server.client import call_tool, request_sync
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon
from tests.survival.conftest import DaemonFactory

pytestmark = pytest.mark.integration

NOTES = 120
CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch_debounce_ms = 100
[defaults.store]
quick_check = {quick_check}
[agents.main]
workspace = "{ws}"
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    rng = random.Random(3)
    words = [f"w{i}" for i in range(2000)]
    for n in range(NOTES):
        write(ws / "memory" / f"n{n:03d}.md", f"# Note {n}\n\n{' '.join(rng.choices(words, k=300))} token{n}\n")
    return ws


def parse_iso(text: str) -> int:
    """Milliseconds since the epoch of an ISO time as the daemon writes them (`...Z`)."""
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def pages_of(db: Path, tables: tuple[str, ...]) -> tuple[list[int], int]:
    """Page numbers (1-based) holding `tables`, and the page size, read with SQLite's dbstat."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        marks = ",".join("?" for _ in tables)
        pages = [int(r[0]) for r in conn.execute(f"SELECT pageno FROM dbstat WHERE name IN ({marks})", tables)]
        row = conn.execute("PRAGMA page_size").fetchone()
        assert row is not None
        size = int(row[0])
    finally:
        conn.close()
    return sorted(set(pages) - {1}), size


def overwrite(db: Path, pages: list[int], page_size: int) -> None:
    with open(db, "r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * page_size)
            fh.write(os.urandom(page_size))


def tool(daemon: Daemon, name: str, arguments: dict[str, Any]) -> tuple[bool, str, Any]:
    async def run() -> tuple[bool, str, Any]:
        with anyio.fail_after(60):
            result = await call_tool(daemon.socket, None, name, arguments)
        return (
            bool(result.is_error),
            " ".join(getattr(c, "text", "") for c in result.content),
            result.structured_content,
        )

    return anyio.run(run)


def all_tokens_found(daemon: Daemon) -> list[str]:
    """The tokens whose search failed or missed (every note holds its own token)."""
    missed = []
    for n in range(0, NOTES, 6):
        failed, _text, found = tool(daemon, "memory_search", {"query": f"token{n}", "minScore": 0})
        if failed or f"memory/n{n:03d}.md" not in [r["path"] for r in found["results"]]:
            missed.append(f"token{n}")
    return missed


def stopped_with_damage(make_daemon: DaemonFactory, ws: Path, *, quick_check: bool, tables: tuple[str, ...]) -> Daemon:
    daemon = make_daemon(CONFIG.format(ws=ws, quick_check="true" if quick_check else "false"))
    daemon.start()
    daemon.wait_for_line("sync done")
    assert daemon.stop() == 0
    db = daemon.state / "agents" / "main" / "index.sqlite"
    pages, size = pages_of(db, tables)
    overwrite(db, pages if len(pages) < 12 else random.Random(5).sample(pages, 12), size)
    return daemon


def test_pages_overwritten_while_stopped_are_found_at_start_moved_aside_and_rebuilt(
    make_daemon: DaemonFactory, ws: Path, figures: list[str]
) -> None:
    daemon = stopped_with_damage(make_daemon, ws, quick_check=True, tables=("chunks", "chunks_fts_data"))
    db = daemon.state / "agents" / "main" / "index.sqlite"
    damaged_bytes = db.read_bytes()
    damaged_inode = db.stat().st_ino
    daemon.start()
    ready = daemon.wait_for_line("listening", since_start=True)
    daemon.wait_for_line("index rebuilt after damage")
    _failed, _text, status = tool(daemon, "status", {})
    corruption = status["corruption"]
    assert corruption["foundBy"] == "the integrity check" and corruption["rebuilding"] is False
    assert status["integrityCheck"]["result"] != "ok"
    moved = Path(corruption["movedTo"])
    # Kept, never deleted: the damaged file itself was moved aside. The start-up sync may have written a
    # page or two into it (a checkpoint) before the background check finished: compare blocks, not bytes.
    assert moved.stat().st_ino == damaged_inode
    kept = moved.read_bytes()
    block = 4096
    same = sum(kept[i : i + block] == damaged_bytes[i : i + block] for i in range(0, len(damaged_bytes), block))
    assert same >= len(damaged_bytes) // block // 2, (same, len(damaged_bytes) // block)
    assert status["files"] == NOTES and status["degraded"] == []
    assert all_tokens_found(daemon) == []
    started = parse_iso(ready.split()[0])
    detect_ms = parse_iso(corruption["detectedAt"]) - started
    rebuilt_ms = parse_iso(corruption["rebuiltAt"]) - started
    figures.append(
        f"12 pages overwritten while stopped: found by quick_check {detect_ms} ms after the socket "
        f"listened (check {status['integrityCheck']['durationMs']} ms), rebuilt {rebuilt_ms} ms after, "
        "all searches answer"
    )


def test_searches_that_meet_damage_say_the_index_is_rebuilding_and_start_the_rebuild(
    make_daemon: DaemonFactory, ws: Path
) -> None:
    """quick_check off: the first search meets the damaged FTS pages, is told why, and starts the rebuild."""
    daemon = stopped_with_damage(make_daemon, ws, quick_check=False, tables=("chunks_fts_data",))
    daemon.start()
    daemon.wait_for_line("sync done")
    failed, text, _ = tool(daemon, "memory_search", {"query": "token0", "minScore": 0})
    assert failed, text
    assert "was found damaged" in text and "being rebuilt from the sources" in text, text
    daemon.wait_for_line("index rebuilt after damage")
    _failed, _text, status = tool(daemon, "status", {})
    assert status["corruption"]["foundBy"] == "a read" and Path(status["corruption"]["movedTo"]).exists()
    assert all_tokens_found(daemon) == []


def test_a_header_overwritten_while_running_is_found_by_the_next_sync_and_rebuilt(
    make_daemon: DaemonFactory, ws: Path
) -> None:
    daemon = make_daemon(CONFIG.format(ws=ws, quick_check="true"))
    daemon.start()
    daemon.wait_for_line("sync done")
    db = daemon.state / "agents" / "main" / "index.sqlite"
    overwrite(db, [1], 4096)

    async def sync() -> dict[str, Any]:
        with anyio.fail_after(60):
            return await request_sync(daemon.socket, None, force=False, reason="test")

    report = anyio.run(sync)
    assert report["full"] is True and report["indexed"] == NOTES and report["error"] is None
    _failed, _text, status = tool(daemon, "status", {})
    assert status["corruption"]["foundBy"] == "a sync"
    assert "SQLite header" in status["corruption"]["error"]
    assert Path(status["corruption"]["movedTo"]).exists()
    assert all_tokens_found(daemon) == []
    assert daemon.alive


def test_pages_no_search_reads_overwritten_while_running_are_found_in_idle_time_and_rebuilt(
    make_daemon: DaemonFactory, ws: Path, figures: list[str]
) -> None:
    """Issue 23, item 4: six pages of the chunks table overwritten under a running daemon. Nothing reads
    them (no search, no sync: nothing changed in the notes); the idle-time check finds them and the index
    is rebuilt without a restart."""
    every_so_often = "quick_check = true\nquick_check_interval_minutes = 0.01\n"  # at most every 0.6 s
    daemon = make_daemon(CONFIG.format(ws=ws, quick_check="true").replace("quick_check = true\n", every_so_often))
    daemon.start()
    daemon.wait_for_line("sync done")
    db = daemon.state / "agents" / "main" / "index.sqlite"
    conn = apsw.Connection(str(db))  # every page into the file itself, so the overwrite is what SQLite reads
    try:
        busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone() or (1, 0, 0)
    finally:
        conn.close()
    assert busy == 0
    pages, size = pages_of(db, ("chunks",))
    overwrite(db, random.Random(7).sample(pages, 6), size)
    damaged_at = daemon.wait_for_line("index database is damaged", timeout=120)
    assert "the integrity check" in damaged_at, damaged_at
    daemon.wait_for_line("index rebuilt after damage", timeout=120)
    _failed, _text, status = tool(daemon, "status", {})
    corruption = status["corruption"]
    assert corruption["foundBy"] == "the integrity check" and corruption["rebuilding"] is False
    assert Path(corruption["movedTo"]).exists()
    assert status["integrityCheck"]["trigger"] == "idle"
    assert status["files"] == NOTES and status["degraded"] == []
    assert all_tokens_found(daemon) == []
    assert daemon.alive
    figures.append(
        f"6 chunk pages overwritten while running, read by nothing: found by the idle-time check "
        f"(interval 0.6 s) at {corruption['detectedAt']}, rebuilt at {corruption['rebuiltAt']}"
    )
