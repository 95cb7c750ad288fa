"""Memory outlives its source through the real daemon and watcher: a Claude Code transcript deleted from
its folder is still found (`retained: true`) and read at its citation, after a restart and a forced rebuild,
and `memoryd forget` (through the daemon's socket) leaves no byte of it in the state directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from memoryd.server.client import unix_client
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon, search_response

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PLANTED = "xylofrimbleton"
PROJECT = "-home-u-app"
NAME = "5f3c0000-0000-4000-8000-0000000000aa.jsonl"
PATH = f"claude-code/{PROJECT}/{NAME}"
CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch_debounce_ms = 100
[defaults.sync.sessions]
debounce_ms = 100
[agents.main]
workspace = "{root}/ws"
sessions = ["claude-code"]
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    home = tmp_path / "home"
    records = [
        {"type": "user", "timestamp": "2026-01-05T10:00:00Z", "message": {"role": "user", "content": "Hello."}},
        {
            "type": "user",
            "timestamp": "2026-01-05T10:00:05Z",
            "message": {"role": "user", "content": f"Remember the {PLANTED} decision: ship on Monday."},
        },
    ]
    write(home / ".claude" / "projects" / PROJECT / NAME, "".join(json.dumps(r) + "\n" for r in records))
    write(tmp_path / "ws" / "MEMORY.md", "# Memory\n\nThe heron nests by the weir.\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt"), "HOME": str(home)}
    for var in ("MEMORYD_CRASH_AT", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        env.pop(var, None)
    d = Daemon(tmp_path, config, tmp_path / "state", tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    yield d
    d.close()


def transcript(daemon: Daemon) -> Path:
    return daemon.root / "home" / ".claude" / "projects" / PROJECT / NAME


def occurrences(state: Path, needle: str) -> int:
    return sum(p.read_bytes().lower().count(needle.encode()) for p in state.rglob("*") if p.is_file())


def cli(daemon: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args, "--config", str(daemon.config), "--state-dir", str(daemon.state)],
        capture_output=True,
        text=True,
        env=daemon.env,
        timeout=60,
        check=False,
    )


async def hits(daemon: Daemon) -> list[tuple[str, bool]]:
    with anyio.fail_after(30):
        response = await search_response(daemon.socket, "main", PLANTED, wait_ms=5000)
    return [(r["path"], bool(r.get("retained"))) for r in response["results"]]


async def read(daemon: Daemon, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(30):
        async with Client(unix_client(daemon.socket, "main")) as client:
            result = await client.call_tool("memory_get", arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_a_deleted_transcript_is_kept_through_restart_rebuild_and_forgotten_for_good(daemon: Daemon) -> None:
    assert await hits(daemon) == [(PATH, False)]
    refused = cli(daemon, "forget", PATH)
    assert refused.returncode == 1 and "still on disk" in refused.stdout
    transcript(daemon).unlink()
    daemon.wait_for_line("transcripts deleted from disk; kept from the retention store")
    assert await hits(daemon) == [(PATH, True)]
    got = await read(daemon, {"path": PATH, "from": 2, "lines": 1})
    assert got["retained"] is True and got["lineNumbers"] == [2] and PLANTED in got["text"]
    daemon.stop()
    daemon.start()
    assert await hits(daemon) == [(PATH, True)]
    rebuilt = cli(daemon, "sync", "--force")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert await hits(daemon) == [(PATH, True)]
    assert occurrences(daemon.state, PLANTED) > 0
    done = cli(daemon, "forget", PATH, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["forgotten"] == [PATH]
    assert occurrences(daemon.state, PLANTED) == 0  # the index, the retention store, their -wal and -shm
    assert await hits(daemon) == []
    with anyio.fail_after(30):
        heron = await search_response(daemon.socket, "main", "heron weir", wait_ms=5000)
    assert [r["path"] for r in heron["results"]] == ["MEMORY.md"]
