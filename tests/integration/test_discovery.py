"""Issue 11 items 1-2, through real processes only: one daemon per user, found from any environment,
and errors that carry their cause.

Before: a CLI run without XDG_RUNTIME_DIR (an MCP host's shim, cron, `sudo -u`, ssh) looked in
/tmp/memoryd-<uid>, missed the daemon a shell had started and worked beside it in-process (or, as
`memoryd mcp`, started a second daemon on the same state directory); and an agent's failure was
reported as "unhandled errors in a TaskGroup (1 sub-exception)".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.client import Client

from memoryd.server.client import unix_client
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon, search

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

MEMORYD = (sys.executable, "-m", "memoryd")

CONFIG = """
[defaults]
provider = "none"
[agents.alpha]
workspace = "{root}/alpha"
"""

HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""
"""Holds a lock file until stdin closes: another process writing the agent's index."""


@pytest.fixture
def shell_daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon started from a shell: XDG_RUNTIME_DIR set, socket in $XDG_RUNTIME_DIR/memoryd."""
    write(tmp_path / "alpha" / "MEMORY.md", "# Alpha\n\nThe alpha agent keeps bees on the roof.\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    (tmp_path / "rt").mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    env.pop("MEMORYD_CRASH_AT", None)
    d = Daemon(tmp_path, config, tmp_path / "state", tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    yield d
    d.stop()
    for stray in memoryd_serves(d.state):  # a second daemon (what the shim started before the fix)
        os.kill(stray, signal.SIGKILL)


def memoryd_serves(state: Path) -> list[int]:
    """Pids of `memoryd serve` processes whose command line names `state`."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if b"memoryd" in argv[:3] and b"serve" in argv and str(state).encode() in argv:
            pids.append(int(entry.name))
    return sorted(pids)


def cli_without_xdg(d: Daemon, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in d.env.items() if k != "XDG_RUNTIME_DIR"}
    return subprocess.run(
        [*MEMORYD, *argv, "--config", str(d.config), "--state-dir", str(d.state)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_cli_without_xdg_runtime_dir_talks_to_the_daemon_a_shell_started(shell_daemon: Daemon) -> None:
    status = cli_without_xdg(shell_daemon, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["daemon"]["agents"] == ["alpha"]  # in-process status has "daemon": null
    found = cli_without_xdg(shell_daemon, "search", "bees on the roof", "--json")
    assert found.returncode == 0, found.stderr
    assert [r["path"] for r in json.loads(found.stdout)["results"]] == ["MEMORY.md"]
    assert memoryd_serves(shell_daemon.state) == [shell_daemon.pid]


def test_a_second_serve_from_another_environment_exits_at_once_naming_the_first(shell_daemon: Daemon) -> None:
    """Without XDG_RUNTIME_DIR a second daemon chose another socket, so the socket's lock never met
    the first: it ran beside it, missed every writer lock and restarted its agents forever."""
    second = cli_without_xdg(shell_daemon, "serve")
    assert second.returncode == 3, second.stderr
    since = json.loads((shell_daemon.state / "daemon.json").read_text())["startedAt"]
    assert second.stderr.strip() == (
        f"memoryd serve: another memoryd daemon already serves {shell_daemon.state}: pid {shell_daemon.pid}, "
        f"socket {shell_daemon.socket} (since {since}); "
        "clients reach it from any environment, nothing to start"
    )
    assert memoryd_serves(shell_daemon.state) == [shell_daemon.pid]


def test_the_shim_without_xdg_runtime_dir_uses_the_daemon_and_starts_no_second_one(shell_daemon: Daemon) -> None:
    env = {k: v for k, v in shell_daemon.env.items() if k != "XDG_RUNTIME_DIR"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "memory_search", "arguments": {"query": "bees"}},
    }
    lines = [initialize, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call]
    shim = subprocess.run(
        [
            *MEMORYD,
            "mcp",
            "--agent",
            "alpha",
            "--config",
            str(shell_daemon.config),
            "--state-dir",
            str(shell_daemon.state),
        ],
        input="".join(json.dumps(m) + "\n" for m in lines),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shim.returncode == 0, shim.stderr
    replies = {m["id"]: m for m in map(json.loads, shim.stdout.splitlines())}
    result = replies[2]["result"]
    assert result["isError"] is False, result
    assert [r["path"] for r in result["structuredContent"]["results"]] == ["MEMORY.md"]
    assert memoryd_serves(shell_daemon.state) == [shell_daemon.pid]
    assert not (shell_daemon.state / "daemon.log").exists()  # it never tried to start one


async def test_an_agent_that_cannot_start_says_why_in_tool_errors_status_and_the_log(tmp_path: Path) -> None:
    write(tmp_path / "alpha" / "MEMORY.md", "# Alpha\n\nThe alpha agent keeps bees on the roof.\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    lock = tmp_path / "state" / "agents" / "alpha" / "index.sqlite.lock"
    lock.parent.mkdir(parents=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    d = Daemon(tmp_path, config, tmp_path / "state", tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    with subprocess.Popen(  # noqa: ASYNC220 - a helper process, started once before the daemon
        [sys.executable, "-c", HOLD, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as writer:
        assert writer.stdout is not None and writer.stdout.readline() == "held\n"
        try:
            d.start()  # ready: the socket serves while the agent restarts
            failure = d.wait_for_line("agent index failed")
            async with Client(unix_client(d.socket, "alpha")) as client:
                searched = await client.call_tool("memory_search", {"query": "bees"})
                status = await client.call_tool("status", {})
        finally:
            assert writer.stdin is not None
            writer.stdin.close()
        cause = "is being written by another memoryd process"
        for result in (searched, status):
            assert result.is_error
            text = " ".join(getattr(c, "text", "") for c in result.content)
            assert f"agent 'alpha' is restarting after an error: {lock.parent} {cause}" in text, text
            assert "TaskGroup" not in text
        assert cause in failure and "TaskGroup" not in failure
        try:
            d.wait_for_line("sync done", timeout=60)  # restarted with backoff once the other writer is gone
            assert await search(d.socket, "alpha", "bees") == ["MEMORY.md"]
        finally:
            d.stop()


def test_the_state_directory_is_private_even_when_it_existed_open(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o755)  # what memoryd made before this fix
    write(tmp_path / "alpha" / "MEMORY.md", "# Alpha\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    d = Daemon(tmp_path, config, state, tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    try:
        assert os.stat(state).st_mode & 0o777 == 0o700
        assert "made it private" in d.log_text()
    finally:
        d.stop()
    fresh = tmp_path / "fresh-state"
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "index", "--config", str(config), "--state-dir", str(fresh)],
        env={**env, "XDG_RUNTIME_DIR": str(tmp_path / "rt2")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert os.stat(fresh).st_mode & 0o777 == 0o700  # in-process too


def test_every_folder_the_daemon_creates_is_private(tmp_path: Path) -> None:
    """State, runtime and default-workspace folders, missing parents included, are made 0700 under a
    umask of 022 (`mkdir(parents=True)` made `agents/` 0755), and so is the `memory/` a first save creates."""
    made = tmp_path / "made"
    config = write(
        tmp_path / "config.toml",
        f'[defaults]\nprovider = "none"\n[agents.main]\n[agents.saver]\nworkspace = "{tmp_path}/saver"\n',
    )
    (tmp_path / "saver").mkdir()
    env = {**os.environ, "XDG_RUNTIME_DIR": str(made / "rt" / "deep"), "XDG_DATA_HOME": str(made / "data" / "deep")}
    old_umask = os.umask(0o022)
    try:
        d = Daemon(tmp_path, config, made / "state" / "deep", made / "rt" / "deep" / "memoryd" / "memoryd.sock", env)
        d.start()
    finally:
        os.umask(old_umask)
    try:
        d.wait_for_line("sync done", since_start=True)
        where = ("--config", str(config), "--socket", str(d.socket), "--state-dir", str(d.state))
        saved = subprocess.run(
            [sys.executable, "-m", "memoryd", "remember", "A first save makes memory/.", "--agent", "saver", *where],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert saved.returncode == 0, saved.stderr
    finally:
        d.stop()
    folders = [p for p in [made, *made.rglob("*"), tmp_path / "saver" / "memory"] if p.is_dir()]
    assert made / "state" / "deep" / "agents" / "main" in folders
    assert made / "data" / "deep" / "memoryd" / "workspaces" / "main" / "memory" in folders
    open_folders = {str(p.relative_to(tmp_path)): oct(p.stat().st_mode & 0o777) for p in folders}
    assert {k: v for k, v in open_folders.items() if v != "0o700"} == {}
