"""The daemon with its HTTP face on a free loopback port, and tokens made for each test."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.server.tokens import TokenStore
from tests.conftest import transcript_line, write
from tests.integration.daemon_fixture import Daemon

SECRET = "ghp_" + "Z7q" * 12
"""A GitHub token planted in a transcript: the viewer must show it redacted, as memory_get does."""

CONFIG = """
[daemon]
http = "127.0.0.1:0"
http_timeout_s = 1.0
max_line_bytes = 65536
[defaults]
provider = "none"
[defaults.sync]
watch = false
[agents.alpha]
workspace = "{root}/alpha"
[agents.beta]
workspace = "{root}/beta"
"""


class Http:
    """The daemon with its HTTP URL and a token per purpose."""

    def __init__(self, daemon: Daemon, url: str) -> None:
        self.daemon = daemon
        self.url = url
        self.base = url.removesuffix("/mcp")
        self.store = TokenStore(daemon.state)

    def token(self, *agents: str, read_only: bool = False, expires_s: int | None = None) -> str:
        return self.store.create(agents or ("alpha",), read_only=read_only, expires_s=expires_s)[0]

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "memoryd", *args, "--config", str(self.daemon.config)]
        command += ["--state-dir", str(self.daemon.state)]
        return subprocess.run(command, capture_output=True, text=True, env=self.daemon.env, timeout=60, check=False)


@pytest.fixture
def http(tmp_path: Path) -> Iterator[Http]:
    write(tmp_path / "alpha" / "MEMORY.md", "# Alpha\n\nThe alpha agent keeps bees on the roof.\n")
    write(tmp_path / "alpha" / "memory" / "xss.md", "# Odd\n\nA <script>alert('wasps')</script> & <b>bold</b> note.\n")
    lines = [
        transcript_line("user", f"My token is {SECRET}, keep the hive warm."),
        transcript_line("assistant", "Done."),
    ]
    write(tmp_path / "alpha" / "sessions" / "s1.jsonl", "\n".join(lines) + "\n")
    write(tmp_path / "beta" / "MEMORY.md", "# Beta\n\nThe beta agent grows chili peppers.\n")
    config = write(tmp_path / "config.toml", CONFIG.format(root=tmp_path))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    d = Daemon(tmp_path, config, tmp_path / "state", tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    line = d.wait_for_line("http listening", since_start=True)
    match = re.search(r"url=(http://\S+/mcp)", line)
    assert match, line
    try:
        yield Http(d, match.group(1))
    finally:
        d.close()
