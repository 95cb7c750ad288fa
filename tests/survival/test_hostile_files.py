"""Files that attack the reader: a sparse 2 GB note, FIFOs and symlinks swapped in after discovery, hard links.

The swaps after discovery are made deterministic in process (the files discovery listed, then the swap,
then the real `prepare` that reads them); the daemon runs the same swaps racing its syncs, and must
still stop on SIGTERM and keep outside content out of the index. Memory is measured from the daemon's
own /proc/<pid>/status (VmHWM, its peak resident set).
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from memoryd.config import ChunkingSettings
from memoryd.index.sync import Outcome, prepare
from memoryd.server.client import call_tool, request_sync
from memoryd.sources.discovery import list_memory_files
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon
from tests.survival.conftest import DaemonFactory, query

pytestmark = pytest.mark.integration

CANARY = f"canary{uuid.uuid4().hex[:12]}"
CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch_debounce_ms = 100
[agents.main]
workspace = "{ws}"
{extra}
"""


def in_thread_with_deadline(fn: Any, timeout: float = 20.0) -> Any:
    """Run `fn` in a thread; fail (instead of hanging the suite) if it blocks past `timeout`."""
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(fn())
        except Exception as exc:  # the caller asserts on it
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "the read blocked"
    return result[0]


def proc_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {key} line")


def tool(daemon: Daemon, name: str, arguments: dict[str, Any]) -> tuple[bool, str, Any]:
    async def run() -> tuple[bool, str, Any]:
        with anyio.fail_after(60):
            result = await call_tool(daemon.socket, None, name, arguments)
        text = " ".join(getattr(c, "text", "") for c in result.content)
        return bool(result.is_error), text, result.structured_content

    return anyio.run(run)


def sync(daemon: Daemon) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        with anyio.fail_after(60):
            return await request_sync(daemon.socket, None, force=False, reason="test")

    return anyio.run(run)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe front door is blue.\n")
    write(ws / "memory" / "sub" / "x.md", "an ordinary note about herons\n")
    write(tmp_path / "outside" / "x.md", f"{CANARY}\n")
    return ws


def test_swaps_after_discovery_are_refused_on_the_opened_descriptor(ws: Path, tmp_path: Path) -> None:
    """Discovery lists regular files; then each is swapped (FIFO, symlink, folder symlink) before it is read."""
    chunking = ChunkingSettings()
    outside = tmp_path / "outside"
    for swap in ("fifo", "symlink", "folder-symlink"):
        listed = {f.path: f for f in list_memory_files(ws)}
        target = listed["memory/sub/x.md"]
        if swap == "fifo":
            target.abs_path.unlink()
            os.mkfifo(target.abs_path)
        elif swap == "symlink":
            target.abs_path.unlink()
            target.abs_path.symlink_to(outside / "x.md")
        else:
            os.rename(ws / "memory" / "sub", ws / "memory" / "parked")
            (ws / "memory" / "sub").symlink_to(outside, target_is_directory=True)
        prepared = in_thread_with_deadline(lambda t=target: prepare(t, None, chunking, full=True))
        assert not isinstance(prepared, BaseException), prepared
        assert prepared.outcome is Outcome.SKIPPED, (swap, prepared.outcome)
        assert not any(CANARY in c.text for c in prepared.chunks)
        if swap == "folder-symlink":
            (ws / "memory" / "sub").unlink()
            os.rename(ws / "memory" / "parked", ws / "memory" / "sub")
        else:
            target.abs_path.unlink()
            write(target.abs_path, "an ordinary note about herons\n")


def test_a_sparse_two_gigabyte_note_is_skipped_and_memory_get_refuses_it_without_loading_it(
    make_daemon: DaemonFactory, ws: Path, figures: list[str]
) -> None:
    with open(ws / "memory" / "x.md", "wb") as fh:
        fh.truncate(2 * 1024**3)
    daemon = make_daemon(CONFIG.format(ws=ws, extra=""))
    daemon.start()
    daemon.wait_for_line("sync done")
    failed, text, _ = tool(daemon, "memory_get", {"path": "memory/x.md", "lines": 1})
    assert failed and "over the 10,485,760-byte limit" in text and "files.max_markdown_bytes" in text
    failed, _, status = tool(daemon, "status", {})
    assert not failed
    assert [(s["path"], s["reason"]) for s in status["skippedFiles"]] == [("memory/x.md", "too-large")]
    assert "files.max_markdown_bytes" in status["skippedFiles"][0]["message"]
    assert query(daemon, "front door") == ["MEMORY.md"]
    peak_mib = proc_kib(daemon.pid, "VmHWM") // 1024
    figures.append(f"2 GB sparse x.md: daemon peak RSS {peak_mib} MiB after indexing it and memory_get {{lines: 1}}")
    assert peak_mib < 1024  # before: 6.7 GB while indexing, SIGSEGV at 4.2 GB on memory_get
    assert daemon.alive


def test_fifos_and_symlinks_swapped_in_during_syncs_never_hang_a_sync_nor_reach_the_index(
    make_daemon: DaemonFactory, ws: Path, tmp_path: Path, figures: list[str]
) -> None:
    """A thread flips memory/sub/x.md between a regular file, a FIFO and a symlink to a canary while
    the client forces syncs; every sync returns, the canary is never searchable, SIGTERM stops the daemon."""
    daemon = make_daemon(CONFIG.format(ws=ws, extra=""))
    daemon.start()
    daemon.wait_for_line("sync done")
    note = ws / "memory" / "sub" / "x.md"
    stop = threading.Event()
    flips = 0

    def flip() -> None:
        nonlocal flips
        while not stop.is_set():
            for make in ("fifo", "symlink", "file"):
                tmp = note.with_name(f".x-{make}")
                if make == "fifo":
                    os.mkfifo(tmp)
                elif make == "symlink":
                    tmp.symlink_to(tmp_path / "outside" / "x.md")
                else:
                    tmp.write_text(f"an ordinary note about herons {flips}\n")
                os.replace(tmp, note)
                flips += 1

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        reports = [sync(daemon) for _ in range(40)]
    finally:
        stop.set()
        flipper.join()
    assert all(r["error"] is None for r in reports)
    skipped = sum(1 for r in reports for s in r["skipped"] if s["path"] == "memory/sub/x.md")
    figures.append(f"x.md flipped {flips} times (file/FIFO/symlink) during 40 syncs: {skipped} reads refused, 0 hung")
    assert query(daemon, CANARY) == []
    assert daemon.stop() == 0  # SIGTERM, within the fixture's 30 s


def test_a_hard_link_to_a_file_outside_is_not_indexed_unless_allowed(
    make_daemon: DaemonFactory, ws: Path, tmp_path: Path
) -> None:
    os.link(tmp_path / "outside" / "x.md", ws / "memory" / "hard.md")
    daemon = make_daemon(CONFIG.format(ws=ws, extra=""))
    daemon.start()
    daemon.wait_for_line("sync done")
    assert query(daemon, CANARY) == []
    _, _, status = tool(daemon, "status", {})
    assert [(s["path"], s["reason"]) for s in status["skippedFiles"]] == [("memory/hard.md", "hard-link")]
    failed, text, _ = tool(daemon, "memory_get", {"path": "memory/hard.md"})
    assert failed and CANARY not in text
    daemon.stop()
    allowed = make_daemon(CONFIG.format(ws=ws, extra="[agents.main.files]\nallow_hard_links = true"), name="allowed")
    allowed.start()
    allowed.wait_for_line("sync done")
    assert query(allowed, CANARY) == ["memory/hard.md"]
