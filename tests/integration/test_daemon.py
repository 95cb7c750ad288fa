"""The real daemon as a subprocess: the SDK's MCP client over its socket and over `memoryd mcp`.

Every wait is an event with a deadline: the daemon's "ready" log line, or a search with
`waitFresh` (the daemon itself waits for pending changes), retried under `anyio.fail_after`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from memoryd.server.client import request_sync, unix_client
from tests.conftest import transcript_line, write
from tests.integration.daemon_fixture import Daemon, eventually, search

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch_debounce_ms = 100
[defaults.sync.sessions]
debounce_ms = 100
delta_messages = 2
[agents.alpha]
workspace = "{root}/alpha"
[agents.beta]
workspace = "{root}/beta"
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    root = tmp_path
    write(root / "alpha" / "MEMORY.md", "# Alpha\n\nThe alpha agent keeps bees on the roof.\n")
    write(root / "beta" / "MEMORY.md", "# Beta\n\nThe beta agent grows chili peppers.\n")
    (root / "alpha" / "sessions").mkdir()
    config = write(root / "config.toml", CONFIG.format(root=root))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(root / "rt")}
    env.pop("MEMORYD_CRASH_AT", None)
    d = Daemon(root, config, root / "state", root / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    yield d
    d.stop()


async def test_search_get_status_through_the_socket(daemon: Daemon) -> None:
    assert (daemon.socket.stat().st_mode & 0o777) == 0o600
    assert (daemon.socket.parent.stat().st_mode & 0o777) == 0o700
    with anyio.fail_after(20):
        assert await search(daemon.socket, "alpha", "bees roof") == ["MEMORY.md"]
        async with Client(unix_client(daemon.socket, "alpha")) as client:
            got = await client.call_tool("memory_get", {"path": "MEMORY.md", "from": 3, "lines": 1})
            status = await client.call_tool("status", {})
            refused = await client.call_tool("memory_get", {"path": "../beta/MEMORY.md"})
    assert got.structured_content == {
        "path": "MEMORY.md",
        "text": "The alpha agent keeps bees on the roof.",
        "from": 3,
        "lines": 1,
        "totalLines": 4,
    }
    assert status.structured_content is not None and status.structured_content["agent"] == "alpha"
    assert refused.is_error


async def test_agents_never_see_each_others_memory(daemon: Daemon) -> None:
    with anyio.fail_after(20):
        assert await search(daemon.socket, "alpha", "chili peppers") == []
        assert await search(daemon.socket, "beta", "chili peppers") == ["MEMORY.md"]
        assert await search(daemon.socket, "beta", "bees") == []


async def test_a_written_file_is_found_within_a_deadline(daemon: Daemon) -> None:
    write(daemon.root / "alpha" / "memory" / "new" / "2026-03-01.md", "Ordered a walnut desk from the carpenter.\n")
    await eventually(daemon.socket, "alpha", "walnut desk", ["memory/new/2026-03-01.md"])


async def test_a_transcript_grown_past_the_thresholds_is_indexed(daemon: Daemon) -> None:
    chat = daemon.root / "alpha" / "sessions" / "chat.jsonl"
    lines = [transcript_line("user", "Where did we park the zeppelin?"), transcript_line("assistant", "Hangar nine.")]
    chat.write_text("\n".join(lines) + "\n")
    await eventually(daemon.socket, "alpha", "zeppelin hangar", ["sessions/chat.jsonl"])


async def test_sync_on_demand_and_forced_rebuild(daemon: Daemon) -> None:
    with anyio.fail_after(30):
        report = await request_sync(daemon.socket, "beta", force=True)
    assert report["full"] is True and report["indexed"] == 1


async def test_sighup_adds_an_agent(daemon: Daemon) -> None:
    write(daemon.root / "gamma" / "MEMORY.md", "Gamma collects vintage typewriters.\n")
    daemon.config.write_text(CONFIG.format(root=daemon.root) + f'[agents.gamma]\nworkspace = "{daemon.root}/gamma"\n')
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_for_line("configuration applied")
    await eventually(daemon.socket, "gamma", "typewriters", ["MEMORY.md"])


def test_a_second_daemon_refuses_to_start(daemon: Daemon) -> None:
    second = subprocess.run(
        [sys.executable, "-m", "memoryd", "serve", "--config", str(daemon.config), "--state-dir", str(daemon.state)],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert second.returncode == 3  # EXIT_ALREADY_RUNNING: the unit's RestartPreventExitStatus= does not restart it
    line = second.stderr.strip()
    assert "\n" not in line, line  # one line, no traceback, nothing logged before it
    assert f"another memoryd daemon already serves {daemon.state}: pid {daemon.pid}, socket {daemon.socket}" in line


async def test_killed_mid_sync_then_restarted_loses_nothing(daemon: Daemon) -> None:
    # The first index must be complete and the notes on disk before the crashing start: then that start's
    # sync is a delta sync of 300 new notes, which always commits a first batch (256 files) and dies there.
    # (Written while it started, the notes raced its sync: a daemon stopped before its first index was
    # whole rebuilt in full at the next start, swallowed them all, and never passed sync:after-batch.)
    line = daemon.wait_for_line("sync done", since_start=True)
    while "agent=alpha" not in line:
        line = daemon.wait_for_line("sync done")
    daemon.stop()
    for i in range(300):  # more than one write batch
        write(daemon.root / "alpha" / "memory" / "bulk" / f"n{i:03d}.md", f"bulk note {i} token{i}\n")
    daemon.start(crash_at="sync:after-batch")
    assert daemon.proc is not None
    assert daemon.proc.wait(timeout=60) == -signal.SIGKILL
    daemon.start()
    await eventually(daemon.socket, "alpha", "token299", ["memory/bulk/n299.md"])
    await eventually(daemon.socket, "alpha", "token0", ["memory/bulk/n000.md"])


def test_sigterm_shuts_down_cleanly_and_removes_the_socket(daemon: Daemon) -> None:
    assert daemon.stop() == 0
    assert not daemon.socket.exists()


async def test_stdio_shims_of_two_agents_through_the_daemon(daemon: Daemon) -> None:
    def shim(agent: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "memoryd",
                "mcp",
                "--agent",
                agent,
                "--config",
                str(daemon.config),
                "--socket",
                str(daemon.socket),
            ],
            env={"XDG_RUNTIME_DIR": daemon.env["XDG_RUNTIME_DIR"], "HOME": daemon.env.get("HOME", "/tmp")},
        )

    with anyio.fail_after(30):
        async with Client(stdio_client(shim("alpha"))) as a, Client(stdio_client(shim("beta"))) as b:
            ra = await a.call_tool("memory_search", {"query": "chili peppers", "minScore": 0})
            rb = await b.call_tool("memory_search", {"query": "chili peppers", "minScore": 0})
            tools = await a.list_tools()
    assert ra.structured_content is not None and ra.structured_content["results"] == []
    assert rb.structured_content is not None and [r["path"] for r in rb.structured_content["results"]] == ["MEMORY.md"]
    assert [t.name for t in tools.tools] == ["memory_search", "memory_get", "status", "memory_write"]


SYSTEMD_LIKE = """
import os, socket, sys
path = sys.argv[1]
os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
os.chmod(path, 0o600)
listener.listen(16)
os.dup2(listener.fileno(), 3)
os.set_inheritable(3, True)  # dup2 onto itself (the socket may already be fd 3) keeps close-on-exec
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1", LISTEN_FDNAMES="memoryd.socket")
os.execv(sys.argv[2], sys.argv[2:])
"""
"""What systemd does for a socket unit: bind and listen, pass the socket as fd 3, name it in LISTEN_*."""


async def test_a_socket_passed_by_systemd_is_served_and_left_in_place(tmp_path: Path) -> None:
    write(tmp_path / "alpha" / "MEMORY.md", "# Alpha\n\nThe alpha agent keeps bees on the roof.\n")
    write(tmp_path / "beta" / "MEMORY.md", "# Beta\n\nThe beta agent grows chili peppers.\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    sock = tmp_path / "rt" / "memoryd" / "memoryd.sock"
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    d = Daemon(tmp_path, config, tmp_path / "state", sock, env, wrapper=(sys.executable, "-c", SYSTEMD_LIKE, str(sock)))
    d.start()
    try:
        assert "activation=systemd" in d.log_text()
        with anyio.fail_after(20):
            assert await search(sock, "alpha", "bees roof") == ["MEMORY.md"]
    finally:
        assert d.stop() == 0
    assert sock.exists()  # the socket file is systemd's: it outlives the daemon
