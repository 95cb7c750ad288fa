"""What an MCP host runs to reach memoryd: `<absolute memoryd> mcp --agent ID`, per host's format.

The command is the absolute path of the memoryd that runs `setup` (the venv's console script), so
the entry works from a host's minimal environment (no PATH lookup, no activated venv). A non-default
`--config` or `--state-dir` is passed along, so the host's memoryd reads the same configuration and
finds the same daemon.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Host = Literal["claude-code", "claude-desktop", "codex", "cursor"]
HOSTS: tuple[Host, ...] = ("claude-code", "claude-desktop", "codex", "cursor")
SERVER_NAME = "memory"
"""The name the entry is registered under in every host (its tools show as memory_search, ...)."""
HOST_NAMES: dict[Host, str] = {
    "claude-code": "Claude Code",
    "claude-desktop": "Claude Desktop",
    "codex": "Codex CLI",
    "cursor": "Cursor",
}


@dataclass(frozen=True, slots=True)
class ServerCommand:
    """The process a host starts: an absolute executable and its arguments."""

    command: str
    args: tuple[str, ...]


def memoryd_executable(python: Path | None = None) -> tuple[str, tuple[str, ...]]:
    """The absolute memoryd to run: the console script beside this interpreter, else `python -m memoryd`.

    The interpreter's path is kept as it is (not resolved): a venv's python is a symlink whose target
    would run without the venv's packages.
    """
    interpreter = Path(python or sys.executable).absolute()
    script = interpreter.parent / "memoryd"
    if script.is_file():
        return str(script), ()
    return str(interpreter), ("-m", "memoryd")


def server_command(
    agent_id: str, *, config: Path | None = None, state_dir: Path | None = None, python: Path | None = None
) -> ServerCommand:
    """`memoryd mcp --agent ID` (plus `--config` / `--state-dir` when they are not the defaults)."""
    command, prefix = memoryd_executable(python)
    args = [*prefix, "mcp", "--agent", agent_id]
    if config is not None:
        args += ["--config", str(config.expanduser().absolute())]
    if state_dir is not None:
        args += ["--state-dir", str(state_dir.expanduser().absolute())]
    return ServerCommand(command, tuple(args))


def json_entry(host: Host, server: ServerCommand) -> dict[str, object]:
    """The `mcpServers.<name>` value of a JSON host (Claude Code names the transport and takes an env)."""
    entry: dict[str, object] = {"command": server.command, "args": list(server.args)}
    if host == "claude-code":
        return {"type": "stdio", **entry, "env": {}}
    return entry


def codex_table(server: ServerCommand) -> str:
    """Codex's `[mcp_servers.<name>]` table, as TOML text (strings written as JSON strings: valid TOML)."""
    args = ", ".join(json.dumps(a) for a in server.args)
    return f"[mcp_servers.{SERVER_NAME}]\ncommand = {json.dumps(server.command)}\nargs = [{args}]\n"


def json_document(host: Host, server: ServerCommand) -> str:
    """The entry as a host's JSON file would hold it alone (what `setup` prints)."""
    return json.dumps({"mcpServers": {SERVER_NAME: json_entry(host, server)}}, indent=2) + "\n"
