"""What a host runs to reach memoryd, taken from `memoryd.hosts` (README's entries) with the real path.

`memoryd.hosts.entries(command, agent)` is the one source of truth for the entries: `setup` fills in
the absolute path of the memoryd that runs it (the venv's console script, so the entry works from a
host's minimal environment: no PATH lookup, no activated venv) and the agent, and parses the very text
README shows. Only a non-default `--config` / `--state-dir` adds to it: an `env` with
`MEMORYD_CONFIG` / `MEMORYD_STATE_DIR`, as README tells users to do by hand.
"""

from __future__ import annotations

import json
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memoryd import hosts

Host = Literal["claude-code", "claude-desktop", "codex", "cursor"]
HOSTS: tuple[Host, ...] = ("claude-code", "claude-desktop", "codex", "cursor")
SERVER_NAME = hosts.SERVER_NAME
HOST_NAMES: dict[Host, str] = {
    "claude-code": "Claude Code",
    "claude-desktop": "Claude Desktop",
    "codex": "Codex CLI",
    "cursor": "Cursor",
}


@dataclass(frozen=True, slots=True)
class ServerCommand:
    """The memoryd a host starts, the agent it binds, and any environment it needs."""

    command: str
    agent: str
    env: dict[str, str] = field(default_factory=dict)


def memoryd_executable(python: Path | None = None) -> str:
    """The absolute memoryd to run: the console script beside this interpreter.

    The interpreter's path is not resolved: a venv's python is a symlink whose target would run
    without the venv's packages. Without a console script (not an installed venv) the interpreter
    itself is returned and `-m memoryd` must precede the arguments (`server_args` adds it).
    """
    interpreter = Path(python or sys.executable).absolute()
    script = interpreter.parent / "memoryd"
    return str(script) if script.is_file() else str(interpreter)


def server_command(
    agent_id: str, *, config: Path | None = None, state_dir: Path | None = None, python: Path | None = None
) -> ServerCommand:
    env: dict[str, str] = {}
    if config is not None:
        env["MEMORYD_CONFIG"] = str(config.expanduser().absolute())
    if state_dir is not None:
        env["MEMORYD_STATE_DIR"] = str(state_dir.expanduser().absolute())
    return ServerCommand(memoryd_executable(python), agent_id, env)


def _published(host: Host, fmt: str, server: ServerCommand) -> str:
    return next(e.text for e in hosts.entries(server.command, server.agent) if e.host == host and e.format == fmt)


def _with_module(entry: dict[str, Any], server: ServerCommand) -> dict[str, Any]:
    if not server.command.endswith("/memoryd"):  # an interpreter: python -m memoryd mcp ...
        entry["args"] = ["-m", "memoryd", *entry["args"]]
    if server.env:
        entry["env"] = dict(server.env)
    return entry


def json_entry(host: Host, server: ServerCommand) -> dict[str, Any]:
    """The `mcpServers.memory` value of a JSON host, as README's entry for it (Claude Code: its stdio form)."""
    text = _published(host, "json", server)
    entry: dict[str, Any] = json.loads(text)["mcpServers"][SERVER_NAME]
    return _with_module(entry, server)


def codex_table(server: ServerCommand) -> str:
    """Codex's `[mcp_servers.memory]` table as README shows it (plus `env` when one is needed)."""
    text = _published("codex", "toml", server)
    entry = _with_module(dict(tomllib.loads(text)["mcp_servers"][SERVER_NAME]), server)
    if entry == tomllib.loads(text)["mcp_servers"][SERVER_NAME]:
        return text
    lines = [f"[mcp_servers.{SERVER_NAME}]"]
    for key, value in entry.items():
        if isinstance(value, dict):
            pairs = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items())
            lines.append(f"{key} = {{ {pairs} }}")
        elif isinstance(value, list):
            lines.append(f"{key} = [{', '.join(json.dumps(v) for v in value)}]")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def claude_add_command(server: ServerCommand) -> str:
    """README's `claude mcp add --scope user …` line with the real path."""
    return _published("claude-code", "shell", server)


def json_document(host: Host, server: ServerCommand) -> str:
    """The entry as the host's JSON file would hold it alone (what `setup` prints)."""
    return json.dumps({"mcpServers": {SERVER_NAME: json_entry(host, server)}}, indent=2) + "\n"
