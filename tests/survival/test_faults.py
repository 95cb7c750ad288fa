"""The real daemon under file-system faults: it keeps answering, loses no rows, and recovers.

Root ignores permission bits, so the daemons whose files are made unreadable run with the
DAC-override capabilities dropped (`setpriv`), exactly like the ordinary user memoryd runs as.
A database is made read-only with `chattr +i` (which stops writes even through open file
descriptors), a full disk is a tiny tmpfs mounted on the state directory, and the inotify watch
limit is lowered inside a user namespace of the daemon's own (`unshare -U`), so no other process on
the machine is affected.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from memoryd.server.client import DaemonRequestError, call_tool, request_sync
from tests.conftest import transcript_line, write
from tests.integration.daemon_fixture import Daemon, search
from tests.privileges import NO_DAC, needs_mount, needs_root
from tests.survival.conftest import DaemonFactory, query
from tests.survival.consistency import leftovers

pytestmark = pytest.mark.integration

CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch_debounce_ms = 100
[agents.main]
workspace = "{ws}"
"""


def status(daemon: Daemon) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        with anyio.fail_after(30):
            result = await call_tool(daemon.socket, None, "status", {})
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    return anyio.run(run)


def sync(daemon: Daemon, *, force: bool = False) -> dict[str, Any]:
    """Ask the daemon to sync now; its report (a failed sync raises DaemonRequestError)."""

    async def run() -> dict[str, Any]:
        with anyio.fail_after(60):
            return await request_sync(daemon.socket, None, force=force, reason="test")

    return anyio.run(run)


def sync_error(daemon: Daemon, *, force: bool = False) -> str:
    """The error of a sync that must fail."""
    with pytest.raises(DaemonRequestError) as failed:
        sync(daemon, force=force)
    return str(failed.value)


def eventually_found(daemon: Daemon, text: str, expected: list[str], deadline_s: float = 20.0) -> None:
    """Search (waitFresh) until `expected` comes back: changes reach the index through the watcher."""

    async def run() -> None:
        with anyio.fail_after(deadline_s):
            while True:
                if await search(daemon.socket, None, text, wait_ms=1000) == expected:
                    return
                await anyio.sleep(0.05)  # a bounded retry of a query, not synchronisation

    anyio.run(run)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe lighthouse keeper feeds the gulls.\n")
    write(ws / "memory" / "keep.md", "Kiwi orchard on the south slope.\n")
    write(ws / "memory" / "sub" / "deep.md", "The quarry bell rings at noon.\n")
    write(ws / "sessions" / "chat.jsonl", transcript_line("user", "Remember the saffron invoice.") + "\n")
    return ws


def test_an_unreadable_file_directory_or_sessions_folder_keeps_its_rows(make_daemon: DaemonFactory, ws: Path) -> None:
    daemon = make_daemon(CONFIG.format(ws=ws), wrapper=NO_DAC)
    daemon.start()
    daemon.wait_for_line("sync done")
    note = ws / "memory" / "keep.md"
    note.write_text("Kiwi plum orchard on the south slope.\n")
    note.chmod(0)
    (ws / "memory" / "sub").chmod(0)
    (ws / "sessions").chmod(0)
    try:
        report = sync(daemon)
        assert report["unreadable"] == ["memory/keep.md"]
        assert report["deleted"] == 0
        assert query(daemon, "kiwi orchard") == ["memory/keep.md"]  # the old rows
        assert query(daemon, "plum") == []
        assert query(daemon, "quarry bell") == ["memory/sub/deep.md"]
        assert query(daemon, "saffron invoice") == ["sessions/chat.jsonl"]
        assert status(daemon)["files"] == 4
        # A full rebuild would drop what it cannot read: it is not swapped in.
        assert "not swapped in" in sync_error(daemon, force=True)
        assert query(daemon, "quarry bell") == ["memory/sub/deep.md"]
        assert status(daemon)["files"] == 4
    finally:
        note.chmod(0o644)
        (ws / "memory" / "sub").chmod(0o755)
        (ws / "sessions").chmod(0o755)
    sync(daemon)
    assert query(daemon, "plum") == ["memory/keep.md"]
    assert daemon.alive


def test_a_note_made_unreadable_keeps_its_rows_through_the_watchers_sync_of_it_alone(
    make_daemon: DaemonFactory, ws: Path
) -> None:
    """The watcher names a changed note and syncs it alone: when it can no longer be read (non-root),
    that sync keeps its rows, as a delta sync of the tree does."""
    daemon = make_daemon(CONFIG.format(ws=ws), wrapper=NO_DAC)
    daemon.start()
    daemon.wait_for_line("sync done")
    note = ws / "memory" / "keep.md"
    edited = ws / "keep.tmp"  # outside memory/: the watcher sees only the rename onto the note
    edited.write_text("Kiwi plum orchard on the north slope now.\n")
    edited.chmod(0)
    os.replace(edited, note)  # a new version nobody can read (chmod alone changes nothing to sync)
    try:
        daemon.wait_for_line("cannot read file; keeping its indexed rows")
        daemon.wait_for_line("sync done")
        last = status(daemon)["lastSync"]
        assert (last["reason"], last["unreadable"], last["unchanged"], last["deleted"]) == (
            "watch",
            ["memory/keep.md"],
            0,  # the note alone: no other file was looked at
            0,
        )
        assert query(daemon, "kiwi orchard") == ["memory/keep.md"]  # the old rows
        assert query(daemon, "plum") == []
    finally:
        note.chmod(0o644)
    eventually_found(daemon, "plum north", ["memory/keep.md"])  # readable again: the next change is indexed
    assert daemon.alive


def test_the_memory_folder_deleted_and_recreated_is_followed_by_the_watcher(
    make_daemon: DaemonFactory, ws: Path
) -> None:
    daemon = make_daemon(CONFIG.format(ws=ws))
    daemon.start()
    daemon.wait_for_line("sync done")
    shutil.rmtree(ws / "memory")
    eventually_found(daemon, "kiwi orchard", [])
    write(ws / "memory" / "reborn.md", "A heron nests by the reborn pond.\n")
    eventually_found(daemon, "heron pond", ["memory/reborn.md"])
    write(ws / "memory" / "later" / "again.md", "The second otter arrived later.\n")
    eventually_found(daemon, "otter", ["memory/later/again.md"])
    assert query(daemon, "lighthouse gulls") == ["MEMORY.md"]
    assert daemon.alive


def test_at_the_inotify_watch_limit_the_daemon_polls_and_says_so(make_daemon: DaemonFactory, ws: Path) -> None:
    for i in range(4):
        write(ws / "memory" / f"d{i}" / "n.md", f"folder {i}\n")
    limit = 'echo 2 > /proc/sys/user/max_inotify_watches && exec "$@"'
    daemon = make_daemon(
        CONFIG.format(ws=ws), wrapper=("unshare", "--user", "--map-root-user", "sh", "-c", limit, "sh")
    )
    daemon.start()
    daemon.wait_for_line("falling back to polling", since_start=True)
    watch = status(daemon)["watch"]
    assert watch["mode"] == "polling"
    assert "limit" in watch["error"].lower()
    write(ws / "memory" / "d2" / "polled.md", "The polled walrus.\n")
    eventually_found(daemon, "walrus", ["memory/d2/polled.md"])


def chattr(flag: str, *paths: Path) -> None:
    subprocess.run(["chattr", flag, *[str(p) for p in paths if p.exists()]], check=True)


@needs_root("chattr +i (CAP_LINUX_IMMUTABLE) to make the database read-only under open descriptors")
def test_a_database_made_read_only_keeps_answering_and_recovers(make_daemon: DaemonFactory, ws: Path) -> None:
    daemon = make_daemon(CONFIG.format(ws=ws))
    daemon.start()
    daemon.wait_for_line("sync done")
    db = daemon.state / "agents" / "main" / "index.sqlite"
    frozen = (db, Path(f"{db}-wal"))
    # Under the running daemon: writes through its open connection fail.
    chattr("+i", *frozen)
    try:
        write(ws / "memory" / "new.md", "A walnut desk for the study.\n")
        assert "error" in sync_error(daemon)
        assert query(daemon, "kiwi orchard") == ["memory/keep.md"]
        st = status(daemon)
        assert st["lastSync"]["error"]
        assert st["dirty"] is True
    finally:
        chattr("-i", *frozen)
    assert sync(daemon)["indexed"] == 1
    assert query(daemon, "walnut desk") == ["memory/new.md"]
    # Read-only from the start: SQLite opens it read-only and every write is refused (spec §3.11).
    daemon.stop()
    write(ws / "memory" / "newer.md", "A cedar chest for the hall.\n")
    chattr("+i", db)
    try:
        daemon.start()
        daemon.wait_for_line("sync failed")
        assert query(daemon, "walnut desk") == ["memory/new.md"]
        recovery = status(daemon)["readonlyRecovery"]
        assert recovery["attempts"] >= 1 and recovery["failures"] >= 1
        assert "readonly" in recovery["lastError"]
    finally:
        chattr("-i", db)
    sync(daemon)
    assert query(daemon, "cedar chest") == ["memory/newer.md"]
    assert status(daemon)["readonlyRecovery"]["successes"] >= 1
    assert daemon.alive


@pytest.fixture
def tiny_state(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs for the daemon's state directory (unmounted, lazily if need be, afterwards)."""
    state = tmp_path / "d" / "state"
    state.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(state)], check=True)
    yield state
    subprocess.run(["umount", "-l", str(state)], check=False)


def fill(directory: Path) -> Path:
    """Fill the file system holding `directory` to the last block."""
    filler = directory / "filler"
    # Unbuffered: a buffered writer keeps the tail of a block the disk had no room for and fails again
    # at close, which happens or not depending on how the free space aligns with the block size.
    with filler.open("wb", buffering=0) as fh:
        block = b"\0" * 65536
        try:
            while True:
                fh.write(block)
        except OSError:
            pass
    return filler


@needs_mount("mount a 4 MiB tmpfs (a full disk)")
def test_a_full_disk_fails_writes_cleanly_and_search_keeps_answering(
    make_daemon: DaemonFactory, ws: Path, tiny_state: Path
) -> None:
    daemon = make_daemon(CONFIG.format(ws=ws))
    assert daemon.state == tiny_state
    daemon.start()
    daemon.wait_for_line("sync done")
    filler = fill(tiny_state)
    try:
        for i in range(200):
            write(ws / "memory" / "bulk" / f"b{i:03d}.md", f"Bulk note {i} about granite{i}.\n" * 40)
        assert "full" in sync_error(daemon)
        assert "full" in sync_error(daemon, force=True)
        assert query(daemon, "kiwi orchard") == ["memory/keep.md"]
        assert status(daemon)["dirty"] is True
        assert [p.name for p in tiny_state.rglob("*.tmp-*")] == []
    finally:
        filler.unlink()
    sync(daemon)
    assert query(daemon, "granite117") == ["memory/bulk/b117.md"]
    assert leftovers(daemon.state / "agents" / "main") == []
    assert daemon.alive
