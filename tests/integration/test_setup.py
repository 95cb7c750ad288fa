"""`memoryd setup HOST --write`, then the host's view: start the server exactly as the written entry says.

Each host's file already holds another server; after `--write` it holds both, a backup of the old file
sits beside it, and the entry — run with nothing but HOME and PATH in its environment, as an MCP host
starts it — reaches the user's daemon through the MCP SDK's stdio client: tools/list shows the four
tools and memory_search finds the agent's note.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from memoryd import config as config_mod
from memoryd.setup import locations
from memoryd.setup.entries import HOSTS, Host
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PATH = "/usr/bin:/bin"
CONFIG = """# memoryd, by hand
[defaults]
provider = "none"

[agents.main]
workspace = "{ws}"  # my notes
"""
OTHER_SERVER = {"command": "/usr/bin/true", "args": ["other"]}


@pytest.fixture
def home(tmp_path: Path) -> Iterator[tuple[Path, Daemon]]:
    """A user's home with memoryd's config at its default place and the user's daemon running."""
    home = tmp_path / "home"
    ws = home / "notes"
    write(ws / "MEMORY.md", "# Memory\n\nThe heron nests by the weir.\n")
    config = write(home / ".config" / "memoryd" / "config.toml", CONFIG.format(ws=ws))
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", PATH), "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    daemon = Daemon(
        home, config, home / ".local" / "state" / "memoryd", tmp_path / "rt" / "memoryd" / "memoryd.sock", env
    )
    daemon.start()
    yield home, daemon
    daemon.stop()


def _setup(home: Path, host: Host, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "setup", host, *extra],
        capture_output=True,
        text=True,
        env={"HOME": str(home), "PATH": PATH},
        timeout=60,
        check=False,
    )


def _plant_other_server(host: Host, path: Path) -> str:
    if host == "codex":
        text = '# codex, by hand\nmodel = "o4"\n\n[mcp_servers.other]\ncommand = "/usr/bin/true"\nargs = ["other"]\n'
    else:
        text = json.dumps({"someSetting": True, "mcpServers": {"other": OTHER_SERVER}}, indent=4)
    write(path, text)
    return text


def _entries(host: Host, path: Path) -> dict[str, Any]:
    if host == "codex":
        servers: dict[str, Any] = tomllib.loads(path.read_text())["mcp_servers"]
    else:
        servers = json.loads(path.read_text())["mcpServers"]
    return servers


@pytest.mark.parametrize("host", HOSTS)
async def test_the_written_entry_starts_a_server_that_reaches_the_users_daemon(
    home: tuple[Path, Daemon], host: Host
) -> None:
    user, daemon = home
    path = locations.config_file(host, env={"HOME": str(user)}, platform=sys.platform)
    old = _plant_other_server(host, path)
    printed = _setup(user, host)
    assert printed.returncode == 0, printed.stderr
    assert path.read_text() == old  # printing writes nothing
    written = _setup(user, host, "--write")
    assert written.returncode == 0, written.stderr
    backups = list(path.parent.glob(f"{path.name}.backup-*"))
    assert [b.read_text() for b in backups] == [old]
    servers = _entries(host, path)
    assert servers["other"] == OTHER_SERVER
    entry = servers["memory"]
    assert Path(entry["command"]).is_absolute() and entry["args"][-3:] == ["mcp", "--agent", "main"]
    if host == "codex":
        assert tomllib.loads(path.read_text())["model"] == "o4"
    else:
        assert json.loads(path.read_text())["someSetting"] is True
    assert entry["command"] in printed.stdout  # what it prints is what it writes
    server = StdioServerParameters(command=entry["command"], args=entry["args"], env={"HOME": str(user), "PATH": PATH})
    with anyio.fail_after(60):
        async with Client(stdio_client(server)) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            found = await client.call_tool("memory_search", {"query": "heron weir", "minScore": 0})
    assert tools == ["memory_search", "memory_get", "status", "memory_write"]
    assert [r["path"] for r in found.structured_content["results"]] == ["MEMORY.md"]
    again = _setup(user, host, "--write")
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert len(list(path.parent.glob(f"{path.name}.backup-*"))) == 1
    memoryd_config = (user / ".config" / "memoryd" / "config.toml").read_text()
    if host == "codex":  # its hooks capture Codex's sessions: they become the agent's
        assert tomllib.loads(memoryd_config)["agents"]["main"]["sessions"] == ["codex"]
        return
    if host != "claude-code":
        assert memoryd_config == CONFIG.format(ws=user / "notes")
        return
    assert "# my notes" in memoryd_config  # the user's own lines stay
    assert tomllib.loads(memoryd_config)["agents"]["main"]["sessions"] == ["claude-code"]
    agent = config_mod.load(daemon.config, state_dir=daemon.state).agent("main")
    assert [r.preset for r in agent.session_roots] == ["", "claude-code"]
    # Claude Code's transcripts are now the agent's sessions: the daemon reloads (SIGHUP) and finds one.
    session = user / ".claude" / "projects" / "-home-u-app" / "5f3c0000-0000-4000-8000-000000000001.jsonl"
    record = {"type": "user", "message": {"role": "user", "content": "Ship the kingfisher build on Monday."}}
    write(session, json.dumps(record) + "\n")
    daemon.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
    daemon.wait_for_line("configuration applied")
    with anyio.fail_after(60):
        async with Client(stdio_client(server)) as client:
            while True:
                hits = await client.call_tool("memory_search", {"query": "kingfisher build", "waitFresh": 5000})
                paths = [r["path"] for r in hits.structured_content["results"]]
                if paths:
                    break
                await anyio.sleep(0.1)  # a bounded retry of a query, not synchronisation
    assert paths == [f"claude-code/-home-u-app/{session.name}"]
