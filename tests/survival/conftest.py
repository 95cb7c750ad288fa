"""Fixtures of the survival suites: real daemons in temporary homes, stopped whatever happens."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import anyio
import pytest

from tests.conftest import write
from tests.integration.daemon_fixture import Daemon, search

DaemonFactory = Callable[..., Daemon]


@pytest.fixture
def make_daemon(tmp_path: Path) -> Iterator[DaemonFactory]:
    """`make_daemon(config_text, wrapper=(...))`: a Daemon (not started) whose state lives under tmp_path."""
    created: list[Daemon] = []

    def make(config: str, *, wrapper: Sequence[str] = (), name: str = "d") -> Daemon:
        home = tmp_path / name
        cfg = write(home / "config.toml", config)
        runtime = home / "rt"
        env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
        daemon = Daemon(home, cfg, home / "state", runtime / "memoryd" / "memoryd.sock", env, wrapper=wrapper)
        created.append(daemon)
        return daemon

    yield make
    for daemon in created:
        daemon.close()


def query(daemon: Daemon, text: str, agent: str | None = None, wait_ms: int = 0) -> list[str]:
    """The paths a memory_search through the daemon's socket returns (from synchronous test code)."""

    async def run() -> list[str]:
        with anyio.fail_after(30):
            return await search(daemon.socket, agent, text, wait_ms)

    return anyio.run(run)


FIGURES = pytest.StashKey[list[str]]()


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> list[str]:
    """Lines of measured figures; shown in the terminal summary under "memoryd survival figures"."""
    return request.config.stash.setdefault(FIGURES, [])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    lines = config.stash.get(FIGURES, [])
    if lines:
        terminalreporter.section("memoryd survival figures")
        for line in lines:
            terminalreporter.write_line(line)
