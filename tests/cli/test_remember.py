"""`memoryd remember`: memory_write from the command line, through the daemon and in-process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.cli.test_imports import heavy, imported
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon

pytestmark = pytest.mark.integration

CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch = false
on_search = false
[agents.main]
workspace = "{root}/main"
"""


def _cli(
    d: Daemon, *args: str, stdin: str | None = None, flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, *flags, "-m", "memoryd", *args, "--config", str(d.config), "--state-dir", str(d.state)]
    return subprocess.run(cmd, capture_output=True, text=True, env=d.env, input=stdin, timeout=120, check=False)


@pytest.fixture(params=["daemon", "in-process"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Daemon]:
    write(tmp_path / "main" / "MEMORY.md", "# Memory\n\nThe lighthouse keeper feeds the gulls.\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    d = Daemon(tmp_path, config, tmp_path / "state", tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    if request.param == "daemon":
        d.start()
        yield d
        d.stop()
    else:
        yield d
        assert not d.socket.exists()  # nothing answered: every command ran in-process


def test_remember_saves_from_an_argument_and_from_stdin_and_search_finds_it(setup: Daemon) -> None:
    daily = _cli(setup, "remember", "The osprey nest is on the third pylon.")
    assert daily.returncode == 0, daily.stderr
    assert re.fullmatch(r"saved: memory/\d{4}-\d\d-\d\d\.md#L3-L4\n", daily.stdout)
    piped = _cli(
        setup, "remember", "-", "--long-term", "--heading", "Birds", "--json", stdin="Kestrels hover.\n- twice\n"
    )
    assert piped.returncode == 0, piped.stderr
    reply = orjson.loads(piped.stdout)
    assert (reply["path"], reply["startLine"], reply["endLine"], reply["indexed"]) == ("MEMORY.md", 7, 9, True)
    assert (
        (setup.root / "main" / "MEMORY.md")
        .read_text()
        .endswith("## Birds\n\n" + _stamp(setup) + "Kestrels hover.\n- twice\n")
    )
    found = _cli(setup, "search", "osprey pylon", "--json", "--no-sync")
    assert [r["path"] for r in orjson.loads(found.stdout)["results"]] == [daily.stdout.split()[1].split("#")[0]]


def _stamp(d: Daemon) -> str:
    line = (d.root / "main" / "MEMORY.md").read_text().split("\n")[-4]
    assert re.fullmatch(r"_\d{4}-\d\d-\d\d \d\d:\d\d [+-]\d\d:\d\d_", line)
    return line + "\n"


def test_remember_refuses_a_secret_and_empty_text_with_a_clear_error(setup: Daemon) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    refused = _cli(setup, "remember", f"my token {secret}")
    assert refused.returncode == 1
    assert "github-token" in refused.stderr and secret not in refused.stderr + refused.stdout
    empty = _cli(setup, "remember", "-", stdin="  \n")
    assert empty.returncode == 1 and "nothing to save" in empty.stderr
    assert not (setup.root / "main" / "memory").exists()


def test_remember_through_the_daemon_imports_nothing_heavy(tmp_path: Path) -> None:
    write(tmp_path / "main" / "MEMORY.md", "# Memory\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    d = Daemon(tmp_path, config, tmp_path / "state", tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    try:
        done = _cli(d, "remember", "Light on the socket path.", flags=("-X", "importtime"))
    finally:
        d.stop()
    assert done.returncode == 0, done.stderr
    assert heavy(imported(done.stderr)) == []
