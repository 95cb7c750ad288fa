"""Config changes take effect through the real daemon: an edited file is reloaded by the daemon's own poll
(an editor's rename included), a broken edit keeps the old configuration, and `memoryd reload` asks for
it over the socket (`memoryd/reload`) and prints what changed or why nothing did."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from memoryd.cli.rpc import DaemonClient
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon, search

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CONFIG = """
[defaults]
provider = "none"
[agents.main]
workspace = "{root}/main"
"""
SECOND = """
[agents.second]
workspace = "{root}/second"
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    write(tmp_path / "main" / "MEMORY.md", "# Main\n\nThe heron nests by the weir.\n")
    write(tmp_path / "second" / "MEMORY.md", "# Second\n\nThe otter sleeps under the bridge.\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    env.pop("MEMORYD_CRASH_AT", None)
    d = Daemon(tmp_path, config, tmp_path / "state", tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    yield d
    d.close()


def replace(path: Path, text: str) -> None:
    """Save as editors do: a new file renamed over the old one (a new inode)."""
    tmp = path.with_name(path.name + ".swp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def cli(daemon: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args, "--config", str(daemon.config), "--state-dir", str(daemon.state)],
        capture_output=True,
        text=True,
        env=daemon.env,
        timeout=60,
        check=False,
    )


async def test_an_edited_config_file_is_served_without_a_signal(daemon: Daemon, tmp_path: Path) -> None:
    replace(daemon.config, CONFIG.format(root=tmp_path) + SECOND.format(root=tmp_path))
    line = daemon.wait_for_line("config reloaded")
    assert "config file changed" in line
    assert DaemonClient.served_agents(daemon.socket) == ["main", "second"]
    with anyio.fail_after(30):
        assert await search(daemon.socket, "second", "otter bridge", wait_ms=5000) == ["MEMORY.md"]


async def test_a_broken_edit_keeps_the_old_configuration(daemon: Daemon, tmp_path: Path) -> None:
    replace(daemon.config, CONFIG.format(root=tmp_path) + "[agents.second\nworkspace = 1\n")
    line = daemon.wait_for_line("config reload failed")
    assert "keeping the current configuration" in line
    assert DaemonClient.served_agents(daemon.socket) == ["main"]
    with anyio.fail_after(30):
        assert await search(daemon.socket, "main", "heron weir", wait_ms=5000) == ["MEMORY.md"]
    replace(daemon.config, CONFIG.format(root=tmp_path) + SECOND.format(root=tmp_path))  # fixed: applied
    daemon.wait_for_line("config reloaded")
    assert DaemonClient.served_agents(daemon.socket) == ["main", "second"]


def test_memoryd_reload_says_what_changed_and_what_failed(daemon: Daemon, tmp_path: Path) -> None:
    same = cli(daemon, "reload")
    assert same.returncode == 0, same.stderr
    assert "nothing changed" in same.stdout and "now serves main" in same.stdout
    # Written in place with the same size and mtime the poll may not tell apart: the command needs no poll.
    daemon.config.write_text(CONFIG.format(root=tmp_path) + SECOND.format(root=tmp_path), encoding="utf-8")
    added = cli(daemon, "reload")
    assert added.returncode == 0, added.stderr
    assert "now serves main, second" in added.stdout, added.stdout
    daemon.config.write_text("[agents.main\n", encoding="utf-8")
    broken = cli(daemon, "reload")  # the command reads the file too: it names the error, the daemon keeps going
    assert broken.returncode == 2 and "not valid TOML" in broken.stderr
    with DaemonClient.open(daemon.socket, None) as client:  # the method itself, unbound connection
        report = client.request("memoryd/reload", {"reason": "test"})
    assert report["ok"] is False and "not valid TOML" in report["error"]
    assert report["reason"] == "test"
    assert DaemonClient.served_agents(daemon.socket) == ["main", "second"]


def test_memoryd_reload_without_a_daemon_says_so(tmp_path: Path) -> None:
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "reload", "--config", str(config), "--state-dir", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "no daemon running; it will read the configuration at start" in done.stdout
