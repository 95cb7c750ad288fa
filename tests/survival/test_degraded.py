"""One unreadable folder degrades one agent, never the daemon: the others serve on, and it recovers.

Root ignores permission bits, so every daemon and CLI here runs without the DAC-override
capabilities (`setpriv`, as in test_faults): chmod 000 then means "unreadable", as it does for the
ordinary user memoryd runs as. Recovery is watched through `status` (which never starts a sync),
so what brings the agent back is the daemon's own root poll, not a search.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from memoryd.server.client import call_tool
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon, search, search_response
from tests.privileges import NO_DAC
from tests.survival.conftest import DaemonFactory

pytestmark = pytest.mark.integration

CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch_debounce_ms = 100
[agents.good]
workspace = "{root}/good"
[agents.bad]
workspace = "{root}/home/bad"
extra_paths = ["{root}/shelf/extra"]
"""
DEADLINE_S = 30.0


def agent_status(daemon: Daemon, agent: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        with anyio.fail_after(DEADLINE_S):
            result = await call_tool(daemon.socket, agent, "status", {})
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    return anyio.run(run)


def find(daemon: Daemon, agent: str, text: str) -> list[str]:
    async def run() -> list[str]:
        with anyio.fail_after(DEADLINE_S):
            return await search(daemon.socket, agent, text)

    return anyio.run(run)


def freshness(daemon: Daemon, agent: str, text: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        with anyio.fail_after(DEADLINE_S):
            found: dict[str, Any] = (await search_response(daemon.socket, agent, text))["freshness"]
            return found

    return anyio.run(run)


def until(check: Callable[[], bool], what: str) -> None:
    """Poll `check` (status or search calls) until it holds; fail after DEADLINE_S."""

    async def run() -> None:
        with anyio.fail_after(DEADLINE_S):
            while True:
                if await anyio.to_thread.run_sync(check):
                    return
                await anyio.sleep(0.1)  # polling the daemon's answers under a deadline

    try:
        anyio.run(run)
    except TimeoutError:
        raise AssertionError(f"never: {what}") from None


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    write(root / "good" / "MEMORY.md", "The good agent keeps a walrus diary.\n")
    write(root / "home" / "bad" / "MEMORY.md", "The bad agent keeps bees.\n")
    write(root / "home" / "bad" / "memory" / "heron.md", "A heron nests by the mill pond.\n")
    write(root / "shelf" / "extra" / "otter.md", "The otter borrowed a canoe.\n")
    return root


@contextmanager
def unreadable(path: Path, mode: int = 0) -> Iterator[None]:
    """`path` at `mode` (no read bit) for the block, then as it was."""
    before = path.stat().st_mode & 0o7777
    path.chmod(mode)
    try:
        yield
    finally:
        path.chmod(before)


WRITE_AND_SEARCH = 0o300

PLACES = {
    "workspace": ("home/bad", "workspace", "memory/new.md"),
    "workspace's parent": ("home", "workspace", "memory/new.md"),
    "memory folder": ("home/bad/memory", "memory", "memory/new.md"),
    "extra path": ("shelf/extra", "extraPath", "../../shelf/extra/new.md"),
    "extra path's parent": ("shelf", "extraPath", "../../shelf/extra/new.md"),
}

PLACES_REPORTED = {
    "workspace": "home/bad",
    "workspace's parent": "home/bad",
    "memory folder": "home/bad/memory",
    "extra path": "shelf/extra",
    "extra path's parent": "shelf/extra",
}
"""The root each case reports: the agent's own root, even when a folder above it is what is closed."""


def new_note(root: Path, place: str) -> Path:
    return (
        root / "home" / "bad" / "memory" / "new.md"
        if place.endswith("memory/new.md")
        else root / "shelf" / "extra" / "new.md"
    )


FAST_PLACES = ("workspace's parent", "extra path's parent")
"""The fast suite runs these two (each once killed the daemon); `make stress` runs every place."""


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in FAST_PLACES else pytest.mark.slow) for n in PLACES])
def test_an_unreadable_root_at_start_up_degrades_one_agent_which_recovers_by_itself(
    make_daemon: DaemonFactory, root: Path, name: str
) -> None:
    target, role, note_path = PLACES[name]
    daemon = make_daemon(CONFIG.format(root=root), wrapper=NO_DAC)
    daemon.start()
    daemon.wait_for_line("sync done")
    daemon.wait_for_line("sync done")
    daemon.stop()
    write(new_note(root, note_path), "A kingfisher dives at dawn.\n")
    with unreadable(root / target):
        daemon.start()
        daemon.wait_for_line("sync done")
        daemon.wait_for_line("sync done")
        assert daemon.alive
        assert find(daemon, "good", "walrus diary") == ["MEMORY.md"]
        degraded = agent_status(daemon, "bad")["degraded"]
        assert [(d["role"], d["reason"]) for d in degraded] == [(role, "Permission denied")]
        assert degraded[0]["path"] == str(root / PLACES_REPORTED[name])
        # Its rows are kept, and every answer says what it cannot read.
        kept = ["memory/heron.md"] if role != "extraPath" else ["../../shelf/extra/otter.md"]
        text = "heron mill pond" if role != "extraPath" else "otter canoe"
        assert find(daemon, "bad", text) == kept
        assert [d["role"] for d in freshness(daemon, "bad", text)["degraded"]] == [role]
        assert agent_status(daemon, "good")["degraded"] == []
    # Readable again: the daemon notices by itself (status never starts a sync).
    until(lambda: agent_status(daemon, "bad")["files"] == 4, "the new note was indexed after the recovery")
    assert find(daemon, "bad", "kingfisher dawn") == [note_path]
    assert freshness(daemon, "bad", "kingfisher")["degraded"] == []
    assert agent_status(daemon, "bad")["degraded"] == []
    assert daemon.alive
    assert "Traceback" not in daemon.log_text()


def test_a_folder_made_unreadable_at_run_time_degrades_then_recovers(make_daemon: DaemonFactory, root: Path) -> None:
    write(root / "home" / "bad" / "memory" / "sub" / "deep.md", "The quarry bell rings at noon.\n")
    daemon = make_daemon(CONFIG.format(root=root), wrapper=NO_DAC)
    daemon.start()
    daemon.wait_for_line("sync done")
    daemon.wait_for_line("sync done")
    for target, role in (
        (root / "home" / "bad" / "memory", "memory"),
        (root / "home" / "bad" / "memory" / "sub", "folder"),
    ):

        def named(role: str = role) -> bool:
            return [d["role"] for d in freshness(daemon, "bad", "quarry bell")["degraded"]] == [role]

        def recovered(role: str = role) -> bool:
            return find(daemon, "bad", f"puffin{role}") != []

        # Write and search only: nobody can list (or watch) the folder, but the test, an ordinary user
        # perhaps, can still add a note to it while it is unreadable.
        with unreadable(target, WRITE_AND_SEARCH):
            until(named, f"search replies name the unreadable {role}")
            assert find(daemon, "bad", "quarry bell") == ["memory/sub/deep.md"]
            assert find(daemon, "good", "walrus diary") == ["MEMORY.md"]
            write(target / f"while-{role}.md", f"Written while unreadable: puffin{role}.\n")
        until(recovered, f"the {role} recovered by itself")
        assert freshness(daemon, "bad", "quarry bell")["degraded"] == []
    assert daemon.alive
    assert "Traceback" not in daemon.log_text()


def test_the_cli_reports_an_unreadable_extra_path_in_process(tmp_path: Path, root: Path) -> None:
    config = write(tmp_path / "config.toml", CONFIG.format(root=root))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}

    def memoryd(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [*NO_DAC, sys.executable, "-m", "memoryd", *args, "--config", str(config), "--agent", "bad"]
        argv += ["--state-dir", str(tmp_path / "state")]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)

    assert memoryd("index").returncode == 0
    with unreadable(root / "shelf"):
        done = memoryd("index")
        shown = memoryd("status")
        found = memoryd("search", "otter canoe")
    extra = str(root / "shelf" / "extra")
    assert done.returncode == 0, done.stderr
    assert extra in done.stdout and "Permission denied" in done.stdout
    assert extra in shown.stdout and "Permission denied" in shown.stdout
    assert "otter.md" in found.stdout  # the rows are kept
    assert extra in found.stderr and "Permission denied" in found.stderr
