"""Where each host keeps its MCP configuration, on Linux and macOS.

* Claude Code: `~/.claude.json`, top-level `mcpServers` (its "user" scope: every project);
* Claude Desktop: `~/Library/Application Support/Claude/claude_desktop_config.json` on macOS,
  `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` (`~/.config/...`) on Linux;
* Cursor: `~/.cursor/mcp.json` (global);
* Codex CLI: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`, table `[mcp_servers.<name>]`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from memoryd.setup.entries import Host


def config_file(host: Host, *, env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """The file `host` reads its MCP servers from."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    if host == "claude-code":
        return home / ".claude.json"
    if host == "cursor":
        return home / ".cursor" / "mcp.json"
    if host == "codex":
        codex_home = env.get("CODEX_HOME", "").strip()
        return (Path(codex_home).expanduser() if codex_home else home / ".codex") / "config.toml"
    if (platform or sys.platform) == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    return (Path(xdg) if xdg else home / ".config") / "Claude" / "claude_desktop_config.json"
