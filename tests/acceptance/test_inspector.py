"""The official MCP Inspector's CLI mode (npm `@modelcontextprotocol/inspector`) against `memoryd mcp`.

It starts the server with its SDK's default environment, as desktop hosts do. `make test` installs
it into .inspector/ with its own Node (`make inspector`, scripts/install-inspector.sh); when npm
could not install it, these checks are skipped, saying so, and nothing else is.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.host import MEMORYD, UserHome

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
INSPECTOR = REPO / ".inspector" / "node_modules" / ".bin" / "mcp-inspector"


def inspect(user: UserHome, method: str, tool: str | None = None, **arguments: Any) -> tuple[int, dict[str, Any]]:
    """One Inspector run (`--cli --format json`): its exit status and the JSON it printed."""
    if not INSPECTOR.exists():
        pytest.skip(f"the MCP Inspector is not installed at {INSPECTOR} (make inspector could not install it)")
    env = user.host_env()
    env["PATH"] = f"{INSPECTOR.parent}:{env.get('PATH', '/usr/bin:/bin')}"  # its own Node >= 22 first
    call = ["--tool-name", tool, "--tool-args-json", json.dumps(arguments)] if tool else []
    server = ["--", str(MEMORYD), "mcp", "--agent", "main"]
    out = subprocess.run(
        [str(INSPECTOR), "--cli", "--format", "json", "--connect-timeout", "90000", "--method", method, *call, *server],
        env=env,
        cwd=user.home,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    printed = out.stdout.strip() or out.stderr.strip()
    assert printed, f"the Inspector printed nothing (exit {out.returncode}): {out.stderr}"
    result: dict[str, Any] = json.loads(printed.splitlines()[0])
    return out.returncode, result


def test_the_inspector_lists_and_calls_every_tool(user: UserHome) -> None:
    code, listed = inspect(user, "tools/list")
    assert code == 0, listed
    tools = {t["name"]: t for t in listed["result"]["tools"]}
    assert list(tools) == ["memory_search", "memory_get", "status", "memory_write"]
    assert all(t["inputSchema"]["type"] == "object" and t["outputSchema"]["type"] == "object" for t in tools.values())

    code, found = inspect(user, "tools/call", "memory_search", query="PostgreSQL billing migration", waitFresh=10000)
    assert code == 0, found
    hits = found["result"]["structuredContent"]["results"]
    assert [(h["path"], h["startLine"], h["citation"]) for h in hits][:1] == [
        ("memory/2026-01-05.md", 1, "memory/2026-01-05.md#L1-L5")
    ]
    assert "PostgreSQL 17" in hits[0]["snippet"]

    code, got = inspect(user, "tools/call", "memory_get", path="memory/2026-01-05.md", **{"from": 3, "lines": 1})
    assert code == 0, got
    assert got["result"]["structuredContent"]["text"] == "We chose PostgreSQL 17 for the billing migration."
    assert got["result"]["isError"] is False

    code, refused = inspect(user, "tools/call", "memory_get", path="../../.ssh/id_ed25519")
    assert code != 0  # the Inspector fails a run whose tool answered isError
    assert refused["result"]["isError"] is True
    assert "../../.ssh/id_ed25519" in refused["result"]["content"][0]["text"]

    code, status = inspect(user, "tools/call", "status")
    assert code == 0, status
    assert status["result"]["structuredContent"]["files"] == 2
    assert status["result"]["structuredContent"]["daemon"]["agents"] == ["main"]

    code, wrote = inspect(
        user, "tools/call", "memory_write", text="Decided: the billing webhooks retry three times, then page on-call."
    )
    assert code == 0, wrote
    saved = wrote["result"]["structuredContent"]
    assert (
        saved["indexed"] is True and saved["citation"] == f"{saved['path']}#L{saved['startLine']}-L{saved['endLine']}"
    )
    code, found = inspect(user, "tools/call", "memory_search", query="billing webhooks retry on-call")
    assert code == 0, found
    assert saved["path"] in [h["path"] for h in found["result"]["structuredContent"]["results"]]

    record = user.record()
    assert user.daemons() == [record["pid"]]  # seven Inspector sessions, one daemon (the first one started it)
    assert user.processes("mcp") == []
