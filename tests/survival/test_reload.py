"""Configuration files that attack the daemon: SIGHUP with bytes that are not UTF-8, tables nested past
Python's recursion limit, a store.path that cannot be created; and the same files at start-up.

A reload must never stop the daemon: the real daemon gets a real SIGHUP, then must still answer with
its old configuration, and say why in its log.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write
from tests.integration.daemon_fixture import Daemon
from tests.privileges import NO_DAC
from tests.survival.conftest import DaemonFactory, query

pytestmark = pytest.mark.integration

CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch_debounce_ms = 100
[agents.main]
workspace = "{ws}"
"""

BAD_FILES: dict[str, bytes] = {
    "invalid UTF-8": b'[daemon]\nlog_level = "info"\n# caf\xe9 \xff\xfe\n',
    "inline tables nested 2,000 deep": ("x = " + "{a = " * 2000 + "1" + "}" * 2000 + "\n").encode(),
    "arrays nested 5,000 deep": ("x = " + "[" * 5000 + "]" * 5000 + "\n").encode(),
}
EXPECTED = {
    "invalid UTF-8": "not valid UTF-8 (byte 33, line 3)",
    "inline tables nested 2,000 deep": "nested too deeply",
    "arrays nested 5,000 deep": "nested too deeply",
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe front door is blue.\n")
    return ws


def hup(daemon: Daemon) -> None:
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGHUP)


def test_a_reload_of_a_file_that_cannot_be_parsed_keeps_the_daemon_and_its_configuration(
    make_daemon: DaemonFactory, ws: Path
) -> None:
    good = CONFIG.format(ws=ws)
    daemon = make_daemon(good)
    daemon.start()
    daemon.wait_for_line("sync done")
    for name, content in BAD_FILES.items():
        daemon.config.write_bytes(content)
        hup(daemon)
        # The daemon's own poll of the file may reload it too, a moment before the signal: either says why.
        line = daemon.wait_for_line(EXPECTED[name])
        assert "config reload failed" in line and "keeping the current configuration" in line, (name, line)
        assert daemon.alive, name
        assert query(daemon, "front door") == ["MEMORY.md"], name
    daemon.config.write_text(good + '[agents.extra]\nworkspace = "' + str(ws) + '"\n')
    hup(daemon)
    daemon.wait_for_line("configuration applied")  # a good file afterwards is applied as ever
    assert "Traceback" not in daemon.log_text()


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_the_same_files_at_start_up_give_the_one_line_config_error(tmp_path: Path, name: str) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(BAD_FILES[name])
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "serve", "--config", str(config), "--state-dir", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and EXPECTED[name] in line and str(config) in line, line


@pytest.mark.parametrize("place", ["under a file", "in a folder without write permission"])
def test_a_reload_whose_store_path_cannot_be_created_keeps_the_working_configuration(
    make_daemon: DaemonFactory, ws: Path, tmp_path: Path, place: str
) -> None:
    good = CONFIG.format(ws=ws)
    daemon = make_daemon(good, wrapper=NO_DAC)  # as root, without the capabilities that bypass permissions
    daemon.start()
    daemon.wait_for_line("sync done")
    if place == "under a file":
        target, reason = (
            write(tmp_path / "a-file", "not a folder\n") / "index.sqlite",
            "a-file exists and is not a folder",
        )
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        target, reason = locked / "sub" / "index.sqlite", "Permission denied"
    daemon.config.write_text(good + f'[agents.main.store]\npath = "{target}"\n')
    hup(daemon)
    line = daemon.wait_for_line("store.path cannot be used")
    assert "keeps its working configuration" in line and reason in line, line
    applied = daemon.wait_for_line("configuration applied")
    assert "kept=['main']" in applied
    assert query(daemon, "front door") == ["MEMORY.md"]
    write(ws / "memory" / "later.md", "A later note about the heron.\n")
    assert query(daemon, "heron", wait_ms=5000) == ["memory/later.md"]  # its index still syncs
    assert "agent index failed" not in daemon.log_text()
    assert daemon.alive
