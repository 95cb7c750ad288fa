"""`memoryd mcp` through the daemon stays light: hosts wait for it to answer `initialize` (the MCP
Inspector gives up after 15 s), and before it imported the daemon, the MCP SDK and numpy (8 s at
load 9 on 2 cores; 1.2 s to the first reply now). Asserted on the modules imported, not on time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cli.test_imports import heavy, imported
from tests.integration.daemon_fixture import Daemon

pytestmark = pytest.mark.integration

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "memory_search", "arguments": {"query": "bees"}},
}


def test_the_shim_imports_only_the_bridge(daemon: Daemon) -> None:
    session = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}, CALL]
    where = ["--config", str(daemon.config), "--state-dir", str(daemon.state)]
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memoryd", "mcp", "--agent", "alpha", *where],
        input="".join(json.dumps(m) + "\n" for m in session),
        capture_output=True,
        text=True,
        env=daemon.env,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    replies = {m["id"]: m for m in map(json.loads, out.stdout.splitlines())}
    assert [r["path"] for r in replies[2]["result"]["structuredContent"]["results"]] == ["MEMORY.md"]
    modules = imported(out.stderr)
    assert "memoryd.server.bridge" in modules
    assert [m for m in heavy(modules) if m != "anyio" and not m.startswith("anyio.")] == [
        "memoryd.server",  # the package (its __init__ is a docstring)
        "memoryd.server.bridge",
        "memoryd.server.sockets",
    ]
