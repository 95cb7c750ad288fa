"""`memoryd --help` and the socket path must stay light: they never import the daemon's machinery.

Asserted on the modules a real subprocess imported (`-X importtime` lists every one on stderr),
never on seconds: the timing targets live in `make bench` (bench/cli_bench.py).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from memoryd.cli import build_parser
from tests.cli.conftest import cli_runner
from tests.integration.daemon_fixture import Daemon

HEAVY = (
    "memoryd.daemon",
    "memoryd.server",
    "memoryd.index",
    "memoryd.store",
    "memoryd.search",
    "memoryd.embeddings",
    "memoryd.sources",  # redaction rules: the daemon redacts, the CLI only prints what it sends
    "memoryd.logging",
    "memoryd.progress",
    "mcp",
    "mcp_types",
    "pydantic",
    "numpy",
    "onnxruntime",
    "onnx",
    "tokenizers",
    "apsw",
    "sqlite_vec",
    "structlog",
    "httpx",
    "watchfiles",
    "anyio",
)


def imported(importtime_stderr: str) -> set[str]:
    """The module names `python -X importtime` reported."""
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip())
    names.discard("package")  # the header line
    return names


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_the_importtime_parser_sees_heavy_modules() -> None:
    """The check below can fail: the same parsing finds numpy when a process does import it."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import numpy"], capture_output=True, text=True, check=True
    )
    assert "numpy" in heavy(imported(out.stderr))


@pytest.mark.parametrize("argv", [["--help"], ["search", "--help"], ["--version"]])
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memoryd", *argv], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(("usage: memoryd", "memoryd "))
    modules = imported(out.stderr)
    assert "memoryd.cli" in modules
    assert heavy(modules) == []
    assert "memoryd.config" not in modules  # --help does not even read the configuration


def test_the_console_script_imports_the_same_light_module() -> None:
    script = Path(sys.executable).parent / "memoryd"
    if not script.exists():
        pytest.skip(f"no console script next to {sys.executable} (not an installed venv)")
    out = subprocess.run(
        [sys.executable, "-X", "importtime", str(script), "--help"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert heavy(imported(out.stderr)) == []


@pytest.mark.integration
def test_commands_through_the_daemon_import_nothing_heavy(daemon: Daemon) -> None:
    run = cli_runner(daemon, "-X", "importtime")
    searched = run("search", "bees roof", "--agent", "alpha", "--json")
    assert searched.returncode == 0, searched.stderr
    assert [r["path"] for r in orjson.loads(searched.stdout)["results"]] == ["MEMORY.md"]
    status = run("status", "--agent", "alpha", "--json")
    assert status.returncode == 0, status.stderr
    assert orjson.loads(status.stdout)["daemon"] is not None  # answered by the daemon, not in-process
    got = run("get", "MEMORY.md", "--agent", "beta", "--from", "3", "--lines", "1")
    assert got.stdout == "The beta agent grows chili peppers.\n"
    synced = run("sync", "--agent", "beta", "--json")
    assert synced.returncode == 0, synced.stderr
    assert orjson.loads(synced.stdout)["reason"] == "cli"
    for done in (searched, status, got, synced):
        assert heavy(imported(done.stderr)) == [], done.args


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {choice.dest: choice.help for choice in sub._choices_actions}


def test_the_light_parser_lists_every_command_with_the_same_help() -> None:
    assert _subcommands(build_parser(with_eval=False)) == _subcommands(build_parser())


def test_eval_gets_its_full_parser_when_it_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "eval", "--help"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert "SET PATH" in out.stdout and "--ablate" in out.stdout
