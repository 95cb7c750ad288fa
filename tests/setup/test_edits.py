"""memoryd setup's file edits: JSON and TOML merges keep everything else, refuse what they cannot edit."""

from __future__ import annotations

import json
import os
import tomllib
from datetime import datetime
from pathlib import Path

import pytest

from memoryd import hosts
from memoryd.errors import ConfigError
from memoryd.setup import files, jsonfile, locations, tomlfile
from memoryd.setup.entries import ServerCommand, codex_table, json_entry, server_command

SERVER = ServerCommand("/opt/memoryd/.venv/bin/memoryd", "main")
ARGS = ["mcp", "--agent", "main"]
HERE = Path("/home/u/config")


def test_the_json_entry_is_added_beside_every_other_key_and_server() -> None:
    old = json.dumps({"theme": "dark", "mcpServers": {"github": {"command": "gh-mcp"}}, "projects": {"/x": {}}})
    new = json.loads(jsonfile.with_server(old, HERE, "memory", json_entry("claude-code", SERVER)))
    assert new == {
        "theme": "dark",
        "mcpServers": {
            "github": {"command": "gh-mcp"},
            "memory": {"type": "stdio", "command": SERVER.command, "args": ARGS},
        },
        "projects": {"/x": {}},
    }
    assert (
        json_entry("cursor", SERVER)
        == json_entry("claude-desktop", SERVER)
        == {
            "command": SERVER.command,
            "args": ["mcp", "--agent", "main"],
        }
    )
    again = jsonfile.with_server(json.dumps(new), HERE, "memory", json_entry("claude-code", SERVER))
    assert again == json.dumps(new)  # already there: the text is not even reformatted


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"mcpServers": []}'])
def test_json_that_is_not_an_object_of_servers_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="left untouched"):
        jsonfile.with_server(text, HERE, "memory", {})


CODEX = """# my codex config
model = "o4"

[mcp_servers.github]
command = "gh"  # keep me

[mcp_servers.memory]
command = "old"
args = []

[mcp_servers.memory.env]
LEVEL = "1"

# the profiles
[profiles.fast]
model = "mini"
"""


def test_the_codex_table_replaces_its_old_lines_and_keeps_comments_and_subtables() -> None:
    body = codex_table(SERVER).split("\n", 1)[1]
    new = tomlfile.set_table(CODEX, HERE, ("mcp_servers", "memory"), body)
    assert "# my codex config" in new and 'command = "gh"  # keep me' in new and "# the profiles" in new
    data = tomllib.loads(new)
    assert data["mcp_servers"]["memory"] == {
        "command": SERVER.command,
        "args": ARGS,
        "startup_timeout_sec": 30,
        "env": {"LEVEL": "1"},
    }
    assert data["mcp_servers"]["github"] == {"command": "gh"}
    assert data["profiles"] == {"fast": {"model": "mini"}}
    assert tomlfile.set_table("", HERE, ("mcp_servers", "memory"), body) == codex_table(SERVER)


@pytest.mark.parametrize(
    "text",
    [
        'mcp_servers = { memory = { command = "x" } }\n',
        'mcp_servers.memory.command = "x"\n',
        '[mcp_servers]\nmemory = { command = "x" }\n',
    ],
)
def test_a_codex_layout_the_text_edit_does_not_cover_is_refused_with_the_table_to_add(text: str) -> None:
    with pytest.raises(ConfigError) as refused:
        tomlfile.set_table(text, HERE, ("mcp_servers", "memory"), codex_table(SERVER).split("\n", 1)[1])
    assert "Add this by hand" in str(refused.value) and "[mcp_servers.memory]" in str(refused.value)


def test_a_session_preset_is_added_to_the_agents_list_once() -> None:
    config = (
        '[defaults]\nprovider = "none"\n\n[agents.main]\nworkspace = "~/notes"  # mine\n\n'
        '[agents.work]\nworkspace = "~/w"\n'
    )
    once = tomlfile.add_to_list(config, HERE, ("agents", "main"), "sessions", "claude-code")
    assert 'workspace = "~/notes"  # mine' in once
    assert tomllib.loads(once)["agents"]["main"]["sessions"] == ["claude-code"]
    assert tomlfile.add_to_list(once, HERE, ("agents", "main"), "sessions", "claude-code") == once
    grown = once.replace('sessions = ["claude-code"]', 'sessions = ["codex"]')
    assert tomllib.loads(tomlfile.add_to_list(grown, HERE, ("agents", "main"), "sessions", "claude-code"))["agents"][
        "main"
    ]["sessions"] == ["codex", "claude-code"]
    fresh = tomlfile.add_to_list("", HERE, ("agents", "main"), "sessions", "claude-code")
    assert fresh == '[agents.main]\nsessions = ["claude-code"]\n'
    with pytest.raises(ConfigError, match="Add this by hand"):
        tomlfile.add_to_list('[agents.main]\nsessions = [\n  "codex",\n]\n', HERE, ("agents", "main"), "sessions", "x")


def test_update_backs_up_writes_through_a_symlink_and_keeps_the_mode(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text('{"theme": "dark"}')
    real.chmod(0o640)
    link = tmp_path / ".claude.json"
    link.symlink_to(real)
    change = files.update(link, lambda text: text.replace("dark", "light"), now=datetime(2026, 12, 1, 9, 30))
    assert link.is_symlink() and real.read_text() == '{"theme": "light"}'
    assert (real.stat().st_mode & 0o777) == 0o640
    assert change.backup == real.with_name("claude.json.backup-20261201T093000")
    assert change.backup.read_text() == '{"theme": "dark"}'
    assert files.update(link, lambda text: text).changed is False
    created = files.update(tmp_path / "new" / "mcp.json", lambda text: text + "{}\n")
    assert created.created and created.backup is None
    assert ((tmp_path / "new" / "mcp.json").stat().st_mode & 0o777) == 0o600


def test_update_redoes_the_edit_when_the_file_changed_while_it_was_computed(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("a")
    seen: list[str] = []

    def edit(text: str) -> str:
        seen.append(text)
        if len(seen) == 1:
            path.write_text("ab")  # the host saved meanwhile
        return text + "+memoryd"

    files.update(path, edit)
    assert seen == ["a", "ab"] and path.read_text() == "ab+memoryd"


def test_host_config_locations_on_linux_and_macos() -> None:
    env = {"HOME": "/home/u"}
    assert locations.config_file("claude-code", env=env) == Path("/home/u/.claude.json")
    assert locations.config_file("cursor", env=env) == Path("/home/u/.cursor/mcp.json")
    assert locations.config_file("codex", env=env) == Path("/home/u/.codex/config.toml")
    assert locations.config_file("codex", env={**env, "CODEX_HOME": "/srv/codex"}) == Path("/srv/codex/config.toml")
    assert locations.config_file("claude-desktop", env=env, platform="linux") == Path(
        "/home/u/.config/Claude/claude_desktop_config.json"
    )
    assert locations.config_file("claude-desktop", env=env, platform="darwin") == Path(
        "/home/u/Library/Application Support/Claude/claude_desktop_config.json"
    )


def test_the_command_is_this_memoryd_by_absolute_path(tmp_path: Path) -> None:
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to("/usr/bin/python3")
    bare = server_command("main", python=venv / "python")
    assert bare == ServerCommand(str(venv / "python"), "main")
    assert json_entry("cursor", bare)["args"] == ["-m", "memoryd", "mcp", "--agent", "main"]
    (venv / "memoryd").write_text("#!/bin/sh\n")
    os.chmod(venv / "memoryd", 0o755)
    cmd = server_command("work", config=Path("cfg.toml"), python=venv / "python")
    assert cmd == ServerCommand(str(venv / "memoryd"), "work", {"MEMORYD_CONFIG": str(Path("cfg.toml").absolute())})
    assert json_entry("claude-desktop", cmd)["env"] == cmd.env
    assert tomllib.loads(codex_table(cmd))["mcp_servers"]["memory"]["env"] == cmd.env


def test_the_entries_are_memoryd_hosts_entries_with_the_real_path() -> None:
    published = {(e.host, e.format): e.text for e in hosts.entries(SERVER.command, "main")}
    for host in ("claude-code", "claude-desktop", "cursor"):
        assert json.loads(published[(host, "json")])["mcpServers"]["memory"] == json_entry(host, SERVER)
    assert codex_table(SERVER) == published[("codex", "toml")]
