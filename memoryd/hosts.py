"""The MCP host entries that start `memoryd mcp`: Claude Code, Claude Desktop, Codex CLI, Cursor.

One place for them: README.md shows `entries()` with the placeholder path, a test parses them out
of README.md and starts the server exactly as each says (tests/acceptance/test_readme_hosts.py),
and `memoryd setup <host>` can print them with the real path. No environment variables are
needed in any entry: the shim finds the daemon from the minimal environment hosts pass (HOME,
LOGNAME, PATH, SHELL, TERM, USER). Standard library only: the CLI imports this on its fast path.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Literal

PLACEHOLDER = "/ABSOLUTE/PATH/TO/memoryd/.venv/bin/memoryd"
"""Stands for the absolute path of the memoryd entry point (`realpath .venv/bin/memoryd`)."""

SERVER_NAME = "memory"
CODEX_STARTUP_TIMEOUT_S = 30
"""Codex waits 10 s for a server by default; a first start also starts the daemon."""

Format = Literal["shell", "json", "toml"]


@dataclass(frozen=True, slots=True)
class HostEntry:
    """One way to register memoryd with one host: where it goes and what to write (or run)."""

    host: str  # claude-code, claude-desktop, codex, cursor
    title: str
    where: str  # the file (or "a shell") it belongs in, as the README says it
    format: Format
    text: str


def arguments(agent: str = "main") -> list[str]:
    return ["mcp", "--agent", agent]


def entries(command: str = PLACEHOLDER, agent: str = "main") -> list[HostEntry]:
    """Every host entry, with `command` as the memoryd executable and bound to `agent`."""
    args = arguments(agent)
    stdio = {"command": command, "args": args}
    mcp_servers = _json({"mcpServers": {SERVER_NAME: stdio}})
    claude_code_project = _json({"mcpServers": {SERVER_NAME: {"type": "stdio", **stdio}}})
    codex = (
        f"[mcp_servers.{SERVER_NAME}]\n"
        f"command = {_toml_string(command)}\n"
        f"args = [{', '.join(_toml_string(a) for a in args)}]\n"
        f"startup_timeout_sec = {CODEX_STARTUP_TIMEOUT_S}\n"
    )
    add = shlex.join(["claude", "mcp", "add", "--scope", "user", SERVER_NAME, "--", command, *args]) + "\n"
    return [
        HostEntry("claude-code", "Claude Code, for every project", "a shell", "shell", add),
        HostEntry(
            "claude-code",
            "Claude Code, for one project",
            "`.mcp.json` at the project's root",
            "json",
            claude_code_project,
        ),
        HostEntry(
            "claude-desktop",
            "Claude Desktop",
            "`~/Library/Application Support/Claude/claude_desktop_config.json` (macOS), "
            "`~/.config/Claude/claude_desktop_config.json` (Linux builds)",
            "json",
            mcp_servers,
        ),
        HostEntry("codex", "Codex CLI", "`~/.codex/config.toml`", "toml", codex),
        HostEntry("cursor", "Cursor", "`~/.cursor/mcp.json` (or `.cursor/mcp.json` in a project)", "json", mcp_servers),
    ]


def _json(value: object) -> str:
    return json.dumps(value, indent=2) + "\n"


def _toml_string(text: str) -> str:
    return json.dumps(text)  # JSON string escapes (\", \\, \uXXXX) are TOML basic-string escapes too
