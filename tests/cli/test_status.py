"""`memoryd status` text: JSON values throughout (true, false, null), nested objects indented, the same
through the daemon and in-process; `--deep` carries the probe on both paths."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.cli.conftest import RunCli
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon

pytestmark = pytest.mark.integration

LINE = re.compile(r"^(?P<indent>(?:  )*)(?P<key>[A-Za-z][A-Za-z0-9_]*):(?: (?P<value>.*))?$")


def check_text(text: str) -> list[tuple[int, str, str | None]]:
    """Every line is `key: value` or `key:` opening an indented block; values parse as JSON or are bare words."""
    parsed = []
    for line in text.splitlines():
        if not line:
            continue  # between agents
        m = LINE.match(line)
        assert m, f"not a status line: {line!r}"
        value = m.group("value")
        assert value not in ("True", "False", "None"), line  # Python reprs are gone
        if value is not None and (value[:1] in '[{"' or value in ("true", "false", "null")):
            orjson.loads(value)
        parsed.append((len(m.group("indent")) // 2, m.group("key"), value))
    return parsed


def test_through_the_daemon(daemon: Daemon, cli: RunCli) -> None:
    for _agent in ("alpha", "beta"):  # ready is logged before the first syncs end; a sync under way is dirty
        daemon.wait_for_line("sync done")
    out = cli("status", "--agent", "alpha")
    assert out.returncode == 0, out.stderr
    lines = check_text(out.stdout)
    assert (0, "agent", "alpha") in lines and (0, "dirty", "false") in lines
    assert (0, "daemon", None) in lines and any(depth == 1 and key == "uptimeS" for depth, key, _ in lines)
    deep = orjson.loads(cli("status", "--agent", "alpha", "--deep", "--json").stdout)
    assert deep["probe"]["sqliteVec"]["ok"] is True
    assert "probe" not in orjson.loads(cli("status", "--agent", "alpha", "--json").stdout)
    both = check_text(cli("status").stdout)
    assert [v for depth, key, v in both if depth == 0 and key == "agent"] == ["alpha", "beta"]


def test_in_process(tmp_path: Path) -> None:
    write(tmp_path / "ws" / "MEMORY.md", "# Memory\n\nThe door is blue.\n")
    toml = f'[defaults]\nprovider = "none"\n[agents.main]\nworkspace = "{tmp_path / "ws"}"\n'
    config = write(tmp_path / "c.toml", toml)
    base = [sys.executable, "-m", "memoryd", "status", "--config", str(config), "--state-dir", str(tmp_path / "st")]
    base += ["--socket", str(tmp_path / "none.sock")]
    out = subprocess.run(base, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    lines = check_text(out.stdout)
    assert (0, "daemon", "null") in lines and (0, "fallback", "null") in lines
    deep = subprocess.run([*base, "--deep", "--json"], capture_output=True, text=True, timeout=120, check=False)
    probe = orjson.loads(deep.stdout)["probe"]
    assert probe["embedding"]["ok"] is None and probe["sqliteVec"]["ok"] is True


def test_watch_prints_each_agents_progress_until_idle(daemon: Daemon, cli: RunCli) -> None:
    out = cli("status", "--watch")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line.split(":", 1)[0] for line in lines] == ["alpha", "beta"]  # not a terminal: plain lines
    assert all(line.split(": ", 1)[1].startswith("idle") and "\r" not in line for line in lines), lines
