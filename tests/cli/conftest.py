"""A real daemon with two agents (keyword-only), and the real CLI run against it as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import write
from tests.integration.daemon_fixture import Daemon

CONFIG = """
[defaults]
provider = "none"
[agents.alpha]
workspace = "{root}/alpha"
[agents.beta]
workspace = "{root}/beta"
"""

RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    write(tmp_path / "alpha" / "MEMORY.md", "# Alpha\n\nThe alpha agent keeps bees on the roof.\n")
    write(tmp_path / "beta" / "MEMORY.md", "# Beta\n\nThe beta agent grows chili peppers.\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    d = Daemon(tmp_path, config, tmp_path / "state", tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    yield d
    d.stop()


def cli_runner(daemon: Daemon, *python_flags: str) -> RunCli:
    """Run `python [flags] -m memoryd ARGS --config … --state-dir …` in the daemon's environment."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, *python_flags, "-m", "memoryd", *args]
        cmd += ["--config", str(daemon.config), "--state-dir", str(daemon.state)]
        return subprocess.run(cmd, capture_output=True, text=True, env=daemon.env, timeout=60, check=False)

    return run


@pytest.fixture
def cli(daemon: Daemon) -> RunCli:
    return cli_runner(daemon)
