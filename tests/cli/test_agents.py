"""One rule for choosing the agent, in every command and on both paths (daemon and in-process).

Without `--agent`: the only enabled agent; with several, a message a person can act on; `status`
covers them all.
"""

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

CONFIG = """
[defaults]
provider = "none"
[agents.main]
workspace = "{root}/main"
[agents.work]
workspace = "{root}/work"
{extra}
"""

SEVERAL = "several agents: main, work — pass --agent"


def _setup(root: Path, extra: str = "") -> Daemon:
    write(root / "main" / "MEMORY.md", "# Main\n\nThe main agent keeps bees on the roof.\n")
    write(root / "work" / "MEMORY.md", "# Work\n\nThe work agent ships the quarterly report.\n")
    config = write(root / "config.toml", CONFIG.format(root=root, extra=extra))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(root / "rt")}
    return Daemon(root, config, root / "state", root / "rt" / "memoryd" / "memoryd.sock", env)


def _cli(d: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "memoryd", *args, "--config", str(d.config), "--state-dir", str(d.state)]
    return subprocess.run(cmd, capture_output=True, text=True, env=d.env, timeout=120, check=False)


@pytest.fixture(params=["daemon", "in-process"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Daemon]:
    d = _setup(tmp_path)
    if request.param == "daemon":
        d.start()
        yield d
        d.stop()
    else:
        yield d  # nothing listens on its socket: every command runs in-process
        assert not d.socket.exists()


@pytest.mark.integration
@pytest.mark.parametrize("argv", [["search", "bees"], ["get", "MEMORY.md"], ["sync"], ["index"]])
def test_several_agents_and_no_agent_flag_is_an_actionable_error(setup: Daemon, argv: list[str]) -> None:
    out = _cli(setup, *argv)
    assert out.returncode == 1, out
    assert out.stderr == f"memoryd {argv[0]}: {SEVERAL}\n"
    assert out.stdout == ""


@pytest.mark.integration
def test_agent_flag_chooses_and_status_covers_every_agent(setup: Daemon) -> None:
    found = _cli(setup, "search", "quarterly report", "--agent", "work", "--json")
    assert found.returncode == 0, found.stderr
    assert [r["path"] for r in orjson.loads(found.stdout)["results"]] == ["MEMORY.md"]
    assert "quarterly" in _cli(setup, "get", "MEMORY.md", "--agent", "work").stdout
    everyone = _cli(setup, "status", "--json")
    assert everyone.returncode == 0, everyone.stderr
    assert [s["agent"] for s in orjson.loads(everyone.stdout)] == ["main", "work"]
    text = _cli(setup, "status").stdout
    assert "agent: main" in text and "agent: work" in text
    one = orjson.loads(_cli(setup, "status", "--agent", "work", "--json").stdout)
    assert one["agent"] == "work"
    unknown = _cli(setup, "search", "bees", "--agent", "nobody")
    assert unknown.returncode == 1 and "main, work" in unknown.stderr


@pytest.mark.integration
def test_the_only_enabled_agent_is_the_default(tmp_path: Path) -> None:
    d = _setup(tmp_path, extra="")
    d.config.write_text(d.config.read_text().replace("[agents.work]", "[agents.work]\nenabled = false"))
    found = _cli(d, "search", "bees", "--json")
    assert found.returncode == 0, found.stderr
    assert [r["path"] for r in orjson.loads(found.stdout)["results"]] == ["MEMORY.md"]
    assert orjson.loads(_cli(d, "status", "--json").stdout)["agent"] == "main"
