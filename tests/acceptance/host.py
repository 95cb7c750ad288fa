"""A user's machine as MCP hosts meet it: a home directory, a daemon started from a shell, and the
processes of that home, counted and stopped so that no test leaves one behind.

Hosts start `memoryd mcp` with only HOME, LOGNAME, PATH, SHELL, TERM and USER (the MCP SDKs'
default environment): `host_env` is that. A shell has `XDG_RUNTIME_DIR` too: `shell_env`. Every
memoryd process is told apart by its HOME (read from /proc), so concurrent test runs on one
machine never count each other's daemons.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write
from tests.integration.daemon_fixture import LogPump

MEMORYD = Path(sys.executable).with_name("memoryd")
"""The entry point the README tells users to configure: `<checkout>/.venv/bin/memoryd`."""

HOST_ENV_VARS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")

NOTES = {
    "MEMORY.md": "# Memory\n\nThe front door is blue.\nThe spare key is under the fern pot.\n",
    "memory/2026-01-05.md": "# Standup\n\nWe chose PostgreSQL 17 for the billing migration.\nBackups run nightly.\n",
}

CONFIG = """\
[defaults]
provider = "none"

[agents.main]
workspace = "~/notes"
"""


@dataclass
class UserHome:
    """One user's home: config in ~/.config/memoryd, notes in ~/notes, state in ~/.local/state/memoryd."""

    root: Path
    started: list[subprocess.Popen[str]] = field(default_factory=list)
    pumps: list[LogPump] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def state(self) -> Path:
        return self.home / ".local" / "state" / "memoryd"

    @property
    def runtime(self) -> Path:
        return self.root / "rt"

    def host_env(self) -> dict[str, str]:
        """What an MCP host passes to a stdio server: the SDKs' default variables, HOME pointing here."""
        env = {k: os.environ[k] for k in HOST_ENV_VARS if k in os.environ}
        env["HOME"] = str(self.home)
        return env

    def shell_env(self) -> dict[str, str]:
        """A login shell's environment: the host's variables plus `XDG_RUNTIME_DIR`."""
        self.runtime.mkdir(mode=0o700, exist_ok=True)
        return {**self.host_env(), "XDG_RUNTIME_DIR": str(self.runtime)}

    def serve_from_shell(self, *args: str) -> subprocess.Popen[str]:
        """`memoryd serve` as a user starts it in a terminal; returns once it is ready."""
        proc = subprocess.Popen(
            [str(MEMORYD), "serve", "--log-level", "info", *args],
            env=self.shell_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        assert proc.stderr is not None
        pump = LogPump(proc.stderr)
        self.started.append(proc)
        self.pumps.append(pump)
        if pump.wait_for("memoryd ready", 0, 60) is None:
            raise AssertionError(f"memoryd serve (exit {proc.poll()}) did not get ready:\n" + "".join(pump.lines))
        return proc

    def record(self) -> dict[str, Any]:
        """The record of the daemon serving this home, read as PROTOCOL.md documents it: `daemon.json`
        in the state directory, believed only while `daemon.lock` is held (by the pid it names)."""
        fd = os.open(self.state / "daemon.lock", os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = int(os.pread(fd, 32, 0))
            else:
                raise AssertionError(f"no daemon holds {self.state}")
        finally:
            os.close(fd)
        record: dict[str, Any] = json.loads((self.state / "daemon.json").read_bytes())
        assert record["pid"] == holder, (record, holder)
        assert stat.S_IMODE(os.stat(self.state / "daemon.json").st_mode) == 0o600
        return record

    def processes(self, *command: str) -> list[int]:
        """Pids of this home's memoryd processes whose arguments include `command` (e.g. "serve")."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue  # gone meanwhile, or a process we may not read
            words = [a.decode(errors="replace") for a in argv if a]
            if not any(w.endswith("memoryd") for w in words[:3]):  # .venv/bin/memoryd, or python -m memoryd
                continue
            if f"HOME={self.home}".encode() in environ and all(c in words for c in command):
                found.append(int(entry.name))
        return sorted(found)

    def daemons(self) -> list[int]:
        return self.processes("serve")

    def stop_everything(self, timeout_s: float = 30.0) -> list[int]:
        """SIGTERM every memoryd process of this home and wait until each is gone; returns their pids."""
        pids = self.processes()
        for pid in pids:
            with _GoneOk():
                os.kill(pid, signal.SIGTERM)
        for pid in pids:
            wait_gone(pid, timeout_s)
        for proc in self.started:
            proc.wait(timeout=timeout_s)
        for pump in self.pumps:
            pump.close()
        return pids


class _GoneOk:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> bool:
        return kind is ProcessLookupError


def wait_gone(pid: int, timeout_s: float) -> None:
    """Wait for a process that need not be our child to end (its pidfd becomes readable), then kill it."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
        if not ready:
            with _GoneOk():
                os.kill(pid, signal.SIGKILL)
            select.select([fd], [], [], timeout_s)
            raise AssertionError(f"pid {pid} did not stop within {timeout_s:g} s of SIGTERM; killed it")
    finally:
        os.close(fd)


def make_home(root: Path, *, config: str | None = CONFIG) -> UserHome:
    user = UserHome(root)
    user.home.mkdir(parents=True)
    for name, text in NOTES.items():
        write(user.home / "notes" / name, text)
    if config is not None:
        write(user.home / ".config" / "memoryd" / "config.toml", config)
    return user


@pytest.fixture
def user(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[UserHome]:
    """A user's home, with HOME pointing at it in this process (the SDK's default environment reads it).

    On the way out every memoryd process of this home is stopped, and none may be left running.
    """
    home = make_home(tmp_path_factory.mktemp("u"))
    monkeypatch.setenv("HOME", str(home.home))
    yield home
    home.stop_everything()
    assert home.processes() == [], "a memoryd process outlived the test"
