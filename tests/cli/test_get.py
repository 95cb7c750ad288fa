"""`memoryd get` past the end of a file: the tool answers no lines and the file's totalLines (OpenClaw's
memory_get, not an error), so the command exits 0 and says on stderr how many lines the file has.
It printed an empty line and nothing else. Through the daemon and in-process alike."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.conftest import write
from tests.integration.daemon_fixture import Daemon

pytestmark = pytest.mark.integration


@pytest.fixture(params=["daemon", "in-process"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Daemon]:
    write(tmp_path / "ws" / "MEMORY.md", "# Notes\n\nThe kettle is descaled monthly.\n")
    config = write(tmp_path / "c.toml", f'[defaults]\nprovider = "none"\n[agents.main]\nworkspace = "{tmp_path}/ws"\n')
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    d = Daemon(tmp_path, config, tmp_path / "state", tmp_path / "rt" / "memoryd" / "memoryd.sock", env)
    if request.param == "daemon":
        d.start()
    yield d
    d.close()


def _get(d: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "memoryd", "get", "MEMORY.md", *args, "--config", str(d.config)]
    cmd += ["--state-dir", str(d.state)]
    return subprocess.run(cmd, capture_output=True, text=True, env=d.env, timeout=120, check=False)


def test_a_from_past_the_end_says_how_many_lines_the_file_has(setup: Daemon) -> None:
    past = _get(setup, "--from", "999")
    assert (past.returncode, past.stdout) == (0, "")
    assert past.stderr == "memoryd get: MEMORY.md has 4 lines; --from 999 is past its end\n"
    got = orjson.loads(_get(setup, "--from", "999", "--json").stdout)
    assert (got["text"], got["lines"], got["totalLines"]) == ("", 0, 4)  # the tool's own answer, as it is
    line = _get(setup, "--from", "3", "--lines", "1")
    assert (line.returncode, line.stdout, line.stderr) == (0, "The kettle is descaled monthly.\n", "")
