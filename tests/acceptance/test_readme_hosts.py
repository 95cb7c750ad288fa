"""The MCP host entries README.md publishes work as written: each is parsed out of the README (JSON,
TOML, the `claude mcp add` line), the placeholder replaced by this checkout's entry point, and the
server started exactly as the entry says — the MCP SDK's client, the host's minimal environment."""

from __future__ import annotations

import json
import re
import shlex
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from memoryd.hosts import PLACEHOLDER, entries
from tests.acceptance.host import MEMORYD, UserHome

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
SECTION = README.split("### Connect an MCP host", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
"""The host entries' subsection only (the hooks and the HTTP face follow it with blocks of their own)."""
BLOCKS = re.findall(r"```(sh|json|toml)\n(.*?)```", SECTION, flags=re.DOTALL)


def servers_of(kind: str, text: str) -> dict[str, dict[str, Any]]:
    """name -> {command, args, env?} as the host would read the block."""
    if kind == "json":
        parsed: dict[str, dict[str, Any]] = json.loads(text)["mcpServers"]
        return parsed
    if kind == "toml":
        return dict(tomllib.loads(text)["mcp_servers"])
    words = shlex.split(text)
    assert words[:3] == ["claude", "mcp", "add"], words
    name = [w for w in words[3 : words.index("--")] if not w.startswith("-") and w != "user"][-1]
    command, *args = words[words.index("--") + 1 :]
    return {name: {"command": command, "args": args}}


def test_the_readme_shows_every_entry_of_memoryd_hosts_verbatim() -> None:
    shown = [text for _, text in BLOCKS]
    assert shown == [e.text for e in entries()]
    assert {e.host for e in entries()} == {"claude-code", "claude-desktop", "codex", "cursor"}


async def test_every_published_entry_starts_a_working_server(user: UserHome) -> None:
    assert len(BLOCKS) == 5
    for kind, text in BLOCKS:
        servers = servers_of(kind, text)
        assert list(servers) == ["memory"], (kind, text)
        entry = servers["memory"]
        assert entry["command"] == PLACEHOLDER
        params = StdioServerParameters(
            command=str(MEMORYD), args=entry["args"], env=entry.get("env")
        )  # env None: the SDK's default environment, with HOME pointing at the user's home
        with tempfile.TemporaryFile("w+") as errlog, anyio.fail_after(90):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                found = await client.call_tool("memory_search", {"query": "spare key fern", "waitFresh": 10000})
        assert not found.is_error, (kind, found.content)
        assert [r["path"] for r in found.structured_content["results"]] == ["MEMORY.md"], kind
    assert user.daemons() == [user.record()["pid"]]  # five hosts' sessions, one daemon
    assert user.processes("mcp") == []
