"""The CLI and the MCP shim ask the daemon they talk to which agents there are (issue 23, item 3).

The daemon runs as a service unit runs it, `memoryd serve --config C --socket S`, with agents `a`
and `b`; the shell's own configuration is the default one (agent `main` only). Before, every client
checked `--agent a` against that local configuration and failed with "unknown agent 'a'; configured
agents: main" before sending a byte. The daemon's agents decide now: `memoryd/agents` and the bind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import orjson
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import write
from tests.integration.daemon_fixture import Daemon

pytestmark = pytest.mark.integration

AGENTS = """
[defaults]
provider = "none"
[agents.a]
workspace = "{root}/a"
"""
AGENT_B = """
[agents.b]
workspace = "{root}/b"
"""
SEVERAL = "several agents: a, b — pass --agent"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    write(tmp_path / "a" / "MEMORY.md", "# A\n\nAgent a keeps bees on the roof.\n")
    write(tmp_path / "b" / "MEMORY.md", "# B\n\nAgent b grows chili peppers.\n")
    config = write(tmp_path / "service" / "memoryd.toml", (AGENTS + AGENT_B).format(root=tmp_path))
    (tmp_path / "sock").mkdir(mode=0o700)
    sock = tmp_path / "sock" / "memoryd.sock"
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    d = Daemon(tmp_path, config, tmp_path / "service-state", sock, env, serve_args=("--socket", str(sock)))
    d.start()
    yield d
    d.close()


def cli(d: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a shell runs it: its own (default) configuration and state directory, `--socket S`."""
    cmd = [sys.executable, "-m", "memoryd", *args, "--socket", str(d.socket)]
    return subprocess.run(cmd, capture_output=True, text=True, env=d.env, timeout=120, check=False)


def ok(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_every_command_speaks_for_the_daemons_agents(daemon: Daemon) -> None:
    found = orjson.loads(ok(cli(daemon, "search", "bees roof", "--agent", "a", "--json")))
    assert [r["path"] for r in found["results"]] == ["MEMORY.md"]
    assert "chili peppers" in ok(cli(daemon, "get", "MEMORY.md", "--agent", "b"))
    statuses = orjson.loads(ok(cli(daemon, "status", "--json")))  # no --agent: every agent the daemon serves
    assert [s["agent"] for s in statuses] == ["a", "b"]
    assert orjson.loads(ok(cli(daemon, "status", "--agent", "b", "--json")))["agent"] == "b"
    saved = orjson.loads(ok(cli(daemon, "remember", "The hive inspection is on Fridays.", "--agent", "a", "--json")))
    assert saved["indexed"] is True
    again = orjson.loads(ok(cli(daemon, "search", "hive inspection Fridays", "--agent", "a", "--json")))
    assert saved["path"] in [r["path"] for r in again["results"]]
    for command in ("sync", "index"):
        report = orjson.loads(ok(cli(daemon, command, "--agent", "b", "--json")))
        assert report["unchanged"] == 1
    shell_state = Path(daemon.env["XDG_STATE_HOME"]) / "memoryd"
    assert not (shell_state / "agents").exists()  # nothing ran in-process beside the daemon


def test_the_same_rules_with_the_daemons_agents(daemon: Daemon) -> None:
    for argv in (["search", "bees"], ["get", "MEMORY.md"], ["remember", "x"], ["sync"], ["index"]):
        out = cli(daemon, *argv)
        assert (out.returncode, out.stderr, out.stdout) == (1, f"memoryd {argv[0]}: {SEVERAL}\n", ""), argv
    unknown = cli(daemon, "search", "bees", "--agent", "main")  # the shell's agent, not the daemon's
    assert unknown.returncode == 1
    assert unknown.stderr == "memoryd search: unknown agent 'main'; this daemon serves: a, b\n"


def test_after_a_reload_the_daemons_only_agent_is_the_default(daemon: Daemon) -> None:
    daemon.config.write_text(AGENTS.format(root=daemon.root))  # b removed: a is the daemon's only agent
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_for_line("configuration applied")
    found = orjson.loads(ok(cli(daemon, "search", "bees roof", "--json")))
    assert [r["path"] for r in found["results"]] == ["MEMORY.md"]
    assert orjson.loads(ok(cli(daemon, "status", "--json")))["agent"] == "a"
    gone = cli(daemon, "get", "MEMORY.md", "--agent", "b")
    assert gone.returncode == 1 and gone.stderr == "memoryd get: unknown agent 'b'; this daemon serves: a\n"


@pytest.mark.anyio
async def test_the_mcp_shim_binds_the_daemons_agent(daemon: Daemon) -> None:
    """The SDK's stdio_client with its default environment (no XDG variables), as a host starts it."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memoryd", "mcp", "--socket", str(daemon.socket), "--agent", "b"]
    )
    with tempfile.TemporaryFile("w+") as errlog, anyio.fail_after(90):
        async with Client(stdio_client(params, errlog=errlog)) as client:
            found = await client.call_tool("memory_search", {"query": "chili peppers"})
            status = await client.call_tool("status", {})
    assert not found.is_error and found.structured_content is not None
    assert [r["path"] for r in found.structured_content["results"]] == ["MEMORY.md"]
    assert status.structured_content is not None and status.structured_content["agent"] == "b"
    with anyio.fail_after(60):
        unbound = await anyio.run_process(
            [sys.executable, "-m", "memoryd", "mcp", "--socket", str(daemon.socket)],
            stdin=subprocess.DEVNULL,
            env=daemon.env,
            check=False,
        )
    assert (unbound.returncode, unbound.stderr.decode()) == (1, f"memoryd mcp: {SEVERAL}\n")
