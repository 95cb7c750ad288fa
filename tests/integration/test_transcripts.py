"""Claude Code, Codex and OpenClaw transcripts through the real daemon: found in the presets' folders under
HOME and nested in sessions_dir, searched, read back with memory_get at the lines their citations name,
counted per format in status, and kept fresh by the watcher and by `memoryd/transcriptUpdated`."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from memoryd.server.client import unix_client
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon, search, search_response
from tests.server.wire import raw_client

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

FIXTURES = Path(__file__).parent.parent / "sources" / "transcript_fixtures"
PROJECT = "-home-dana-src-webshop"
CLAUDE = f"claude-code/{PROJECT}/5f3c1a8e-7d42-4b19-9e60-2c8f4d1b7a05.jsonl"
CODEX = "codex/2026/02/11/rollout-2026-02-11T16-40-03-0199f2a4-6b1e-7c30-9d2f-4a8e1b3c5d70.jsonl"
OPENCLAW = "sessions/archive/2026-01/s-8c1f.jsonl"

CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch_debounce_ms = 100
[defaults.sync.sessions]
debounce_ms = 100
[agents.alpha]
workspace = "{root}/alpha"
sessions = ["claude-code", "codex"]
[agents.quiet]
workspace = "{root}/quiet"
sessions = ["claude-code"]
sync = {{ watch = false, on_search = false }}
"""


def place(fixture: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / fixture, target)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    root = tmp_path
    home = root / "home"
    place("claude-code.jsonl", home / ".claude" / "projects" / CLAUDE.removeprefix("claude-code/"))
    place("codex.jsonl", home / ".codex" / "sessions" / CODEX.removeprefix("codex/"))
    place("openclaw.jsonl", root / "alpha" / OPENCLAW)
    place("unrecognised.jsonl", root / "alpha" / "sessions" / "export.jsonl")
    write(root / "alpha" / "MEMORY.md", "# Alpha\n\nNothing about tiles.\n")
    write(root / "quiet" / "MEMORY.md", "# Quiet\n")
    config = write(root / "config.toml", CONFIG.format(root=root))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(root / "rt"), "HOME": str(home)}
    for var in ("MEMORYD_CRASH_AT", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCLAW_STATE_DIR"):
        env.pop(var, None)
    d = Daemon(root, config, root / "state", root / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    yield d
    d.stop()


async def appears(daemon: Daemon, agent: str, query: str, path: str, deadline_s: float = 30.0) -> None:
    """Search without waitFresh (whose stat pass would find the change itself) until `path` is the answer."""
    with anyio.fail_after(deadline_s):
        while True:
            if await search(daemon.socket, agent, query) == [path]:
                return
            await anyio.sleep(0.05)  # a bounded re-query, not synchronisation


async def call(daemon: Daemon, agent: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with Client(unix_client(daemon.socket, agent)) as client:
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@pytest.mark.parametrize(
    ("query", "path", "cited"),
    [
        ("session fixture expires", CLAUDE, "The session fixture expires after 30 seconds"),
        ("tile cache zoom", CODEX, "Why does the tile cache grow without bound when I zoom out?"),
        ("dentist Okafor", OPENCLAW, "I booked Tuesday the 20th at 9:00 with Dr. Okafor."),
    ],
)
async def test_a_session_hit_reads_back_through_memory_get_at_its_citation(
    daemon: Daemon, query: str, path: str, cited: str
) -> None:
    with anyio.fail_after(30):
        response = await search_response(daemon.socket, "alpha", query, wait_ms=5000)
        hit = response["results"][0]
        assert hit["path"] == path and hit["source"] == "sessions"
        start, end = hit["startLine"], hit["endLine"]
        assert hit["citation"] == (f"{path}#L{start}" if start == end else f"{path}#L{start}-L{end}")
        got = await call(
            daemon,
            "alpha",
            "memory_get",
            {"path": hit["path"], "from": start, "lines": end - start + 1},
        )
    assert got["path"] == path
    assert got["text"] == hit["snippet"].split("\n\nSource:")[0]
    assert cited in got["text"]
    assert got["lineNumbers"][0] == start and got["lineNumbers"][-1] == end
    raw = (
        FIXTURES / {CLAUDE: "claude-code.jsonl", CODEX: "codex.jsonl", OPENCLAW: "openclaw.jsonl"}[path]
    ).read_bytes()
    assert got["totalLines"] == raw.count(b"\n") + 1
    assert "{" not in got["text"]  # messages, never the raw JSONL


async def test_status_counts_each_format_and_the_unrecognised_transcript(daemon: Daemon) -> None:
    with anyio.fail_after(30):
        await search(daemon.socket, "alpha", "tiles", wait_ms=5000)
        status = await call(daemon, "alpha", "status", {})
    formats = {f["format"]: (f["files"], f["chunks"]) for f in status["transcriptFormats"]}
    assert formats == {"claude-code": (1, 1), "codex": (1, 1), "openclaw": (1, 1)}
    assert status["unrecognisedTranscripts"] == 1
    assert [r["prefix"] for r in status["sessionRoots"]] == ["sessions", "claude-code", "codex"]
    assert daemon.log_text().count("no format memoryd reads") == 1


async def test_the_watcher_follows_a_nested_claude_code_transcript_as_it_grows(daemon: Daemon) -> None:
    session = daemon.root / "home" / ".claude" / "projects" / PROJECT / "9a8b7c6d-0000-4000-8000-000000000001.jsonl"
    record = {
        "type": "user",
        "isSidechain": False,
        "message": {"role": "user", "content": "Where did we leave the marimba?"},
        "timestamp": "2026-03-03T10:00:00Z",
    }
    session.write_text(json.dumps(record) + "\n")
    path = f"claude-code/{PROJECT}/{session.name}"
    await appears(daemon, "alpha", "marimba", path)  # only the watcher reports it: the search does not wait
    answer = {
        **record,
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "In the rehearsal room, behind the xylophone."}],
        },
    }
    with session.open("a") as fh:
        fh.write(json.dumps(answer) + "\n")
    await appears(daemon, "alpha", "xylophone rehearsal", path)


async def test_transcript_updated_with_a_prefixed_path_syncs_an_agent_without_a_watcher(daemon: Daemon) -> None:
    with anyio.fail_after(30):
        await search(daemon.socket, "quiet", "Quiet", wait_ms=5000)  # the start-up sync is over
    session = (
        daemon.root / "home" / ".claude" / "projects" / "-srv-quiet" / "0d0e0f10-0000-4000-8000-000000000002.jsonl"
    )
    session.parent.mkdir(parents=True)
    session.write_text(
        json.dumps({"type": "user", "message": {"role": "user", "content": "The harpsichord needs tuning on Friday."}})
        + "\n"
    )
    path = f"claude-code/-srv-quiet/{session.name}"
    with anyio.fail_after(30):
        assert await search(daemon.socket, "quiet", "harpsichord") == []
        async with raw_client(daemon.socket) as client:
            await client.send({"jsonrpc": "2.0", "method": "memoryd/bind", "params": {"agent": "quiet"}})
            await client.initialize()
            await client.send({"jsonrpc": "2.0", "method": "memoryd/transcriptUpdated", "params": {"path": path}})
            await client.request(1, "ping")
        await appears(daemon, "quiet", "harpsichord tuning", path)  # no watcher, no search-triggered sync
    assert "transcript_update_ignored" not in daemon.log_text()
