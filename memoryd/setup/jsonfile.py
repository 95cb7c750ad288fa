"""Adding an MCP server to a host's JSON configuration (Claude Code, Claude Desktop, Cursor)."""

from __future__ import annotations

import json
from pathlib import Path

from memoryd.errors import ConfigError


def with_server(text: str, path: Path, name: str, entry: dict[str, object]) -> str:
    """`text` (a JSON object, or empty) with `mcpServers.<name>` set to `entry`; every other key kept."""
    if text.strip():
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise ConfigError(str(path), f"not valid JSON ({exc}); fix it or move it aside (left untouched)") from None
    else:
        document = {}
    if not isinstance(document, dict):
        raise ConfigError(str(path), "the top level is not a JSON object; left untouched")
    servers = document.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(str(path), "mcpServers is not an object; left untouched")
    if servers.get(name) == entry:
        return text  # already there: the file is not rewritten
    servers[name] = entry
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
