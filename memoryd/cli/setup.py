"""`memoryd setup HOST [--write]`: the MCP entry for Claude Code, Claude Desktop, Codex or Cursor.

Without `--write` it prints the entry, the file it goes in, and (for Claude Code and Codex) the line
that makes that tool's transcripts this agent's sessions. With `--write` it merges both into place, each
file backed up first (`memoryd.setup.files`); every edit is computed and checked before any file is
touched, so a refusal leaves everything as it was. Then a running daemon is asked to reload
(`memoryd/reload`), so it serves the new sessions source at once, and the output says whether it did.
"""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from memoryd import config as config_mod
from memoryd import paths
from memoryd.cli.agents import choose
from memoryd.cli.exits import EXIT_OK
from memoryd.config import Config
from memoryd.setup import files, jsonfile, locations, tomlfile
from memoryd.setup import hooks as host_hooks
from memoryd.setup.entries import (
    HOST_NAMES,
    SERVER_NAME,
    Host,
    ServerCommand,
    claude_add_command,
    codex_table,
    json_document,
    json_entry,
)
from memoryd.setup.entries import server_command as make_server_command

SESSION_PRESETS: dict[Host, str] = {"claude-code": "claude-code", "codex": "codex"}
"""The hosts whose transcripts memoryd reads, and the `sessions` preset naming them (memoryd.config.sessions)."""


def run(args: argparse.Namespace, cfg: Config, out: TextIO) -> int:
    host: Host = args.host
    agent = choose(args, cfg)
    server = make_server_command(agent.id, config=args.config, state_dir=args.state_dir)
    host_file = locations.config_file(host)
    edits: list[tuple[Path, Callable[[str], str]]] = [(host_file, _host_edit(host, host_file, server))]
    memoryd_file = Path(args.config).expanduser() if args.config else (cfg.source_file or paths.config_file())
    preset = SESSION_PRESETS.get(host)
    if preset is not None:  # the host's transcripts are memory (and what its hooks capture must be indexed)
        edits.append((memoryd_file, _sessions_edit(memoryd_file, agent.id, cfg.state_dir, preset)))
    hook_host: host_hooks.HookHost | None = host if host in ("claude-code", "codex") else None
    if hook_host is not None:
        hooks_file = host_hooks.settings_file(hook_host)
        which: host_hooks.HookSet = args.hooks
        edits.append((hooks_file, lambda text: host_hooks.with_hooks(text, hooks_file, hook_host, server, which)))
    if not args.write:
        out.write(_instructions(host, host_file, server, memoryd_file, agent.id))
        if hook_host is not None and args.hooks != "none":
            document = host_hooks.with_hooks("", hooks_file, hook_host, server, args.hooks)
            out.write(f"\nHooks ({args.hooks}), merged into {hooks_file}:\n\n{document}")
        return EXIT_OK
    for path, edit in edits:  # every edit is checked before any file is written
        edit(_current(path))
    for path, edit in edits:
        change = files.update(path, edit)
        if not change.changed:
            out.write(f"unchanged: {path} (already set up)\n")
        elif change.created:
            out.write(f"created: {path}\n")
        else:
            out.write(f"updated: {path} (backup: {change.backup})\n")
    out.write(f"restart {HOST_NAMES[host]} to load it\n")
    if preset is not None:
        out.write(_reload_daemon(args, cfg, agent.id, preset, memoryd_file) + "\n")
    return EXIT_OK


def _reload_daemon(args: argparse.Namespace, cfg: Config, agent_id: str, preset: str, edited: Path) -> str:
    """Ask the running daemon to read the edited config now; what a person should know about it."""
    from memoryd.cli.link import live_daemon
    from memoryd.cli.reload import NO_DAEMON, describe, request_reload
    from memoryd.errors import MemorydError

    try:
        live = live_daemon(args, cfg)
        if live is None:
            return NO_DAEMON
        report = request_reload(live, f"setup {preset}")
    except MemorydError as exc:
        return f"could not ask the daemon to reload ({exc}); run `memoryd reload` or restart it"
    if not report.get("ok"):
        return describe(report)
    if Path(str(report.get("config"))).absolute() != edited.absolute():
        return f"the running daemon reads {report.get('config')}, not {edited}: add the entry there, or restart it"
    if agent_id not in (report.get("agents") or []):
        return f"the running daemon reloaded but does not serve agent {agent_id!r}: {describe(report)}"
    # The daemon may have noticed the edited file itself a moment before: what it serves is what counts.
    return f"the running daemon now serves {preset} transcripts as the sessions of agent {agent_id!r} (config reloaded)"


def _current(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _host_edit(host: Host, path: Path, server: ServerCommand) -> Callable[[str], str]:
    if host == "codex":
        body = codex_table(server).split("\n", 1)[1]
        return lambda text: tomlfile.set_table(text, path, ("mcp_servers", SERVER_NAME), body)
    entry = json_entry(host, server)
    return lambda text: jsonfile.with_server(text, path, SERVER_NAME, entry)


def _sessions_edit(path: Path, agent_id: str, state_dir: Path, preset: str) -> Callable[[str], str]:
    """Add the host's transcripts to the agent's `sessions`, refusing a result memoryd would not load."""

    def edit(text: str) -> str:
        new = tomlfile.add_to_list(text, path, ("agents", agent_id), "sessions", preset)
        config_mod.build(tomllib.loads(new), state_dir=state_dir, source_file=path)  # raises ConfigError
        return new

    return edit


def _instructions(host: Host, path: Path, server: ServerCommand, memoryd_file: Path, agent_id: str) -> str:
    name = HOST_NAMES[host]
    if host == "codex":
        parts = [f"{name} reads MCP servers from {path}. Add:\n\n{codex_table(server)}"]
    else:
        parts = [f'{name} reads MCP servers from {path} ("mcpServers"). Add:\n\n{json_document(host, server)}']
    if host == "claude-code":
        command = claude_add_command(server).strip()
        parts.append(f"\n(or run: {command})\n")
    preset = SESSION_PRESETS.get(host)
    if preset is not None:
        parts.append(
            f"\nand in memoryd's configuration ({memoryd_file}), so {name}'s transcripts are the "
            f'sessions of agent {agent_id!r}:\n\n[agents.{agent_id}]\nsessions = ["{preset}"]\n'
            "(then `memoryd reload`, or nothing: a running daemon notices the edited file within seconds)\n"
        )
    parts.append(f"\n`memoryd setup {host} --write` does this for you, backing up each file first.\n")
    return "".join(parts)
