"""`memoryd setup claude-code|codex --write --hooks …`: memoryd's hooks merged into the host's hook settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memoryd.errors import ConfigError
from memoryd.setup import hooks
from memoryd.setup.entries import ServerCommand

SERVER = ServerCommand("/opt/memoryd/bin/memoryd", "main")
THEIRS: dict[str, Any] = {
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/branch-context.sh"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
    },
    "model": "opus",
}


def test_merge_keeps_every_other_hook_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    text = hooks.with_hooks(json.dumps(THEIRS), path, "claude-code", SERVER, "all")
    doc = json.loads(text)
    assert doc["model"] == "opus"
    assert doc["hooks"]["PreToolUse"] == THEIRS["hooks"]["PreToolUse"]
    submit = doc["hooks"]["UserPromptSubmit"]
    assert submit[0] == THEIRS["hooks"]["UserPromptSubmit"][0]
    assert submit[1]["hooks"] == [
        {
            "type": "command",
            "command": "/opt/memoryd/bin/memoryd hook claude-code UserPromptSubmit --agent main",
            "timeout": 10,
        }
    ]
    assert set(doc["hooks"]) == {"UserPromptSubmit", "PreToolUse", "SessionStart", "PreCompact", "SessionEnd"}
    assert hooks.with_hooks(text, path, "claude-code", SERVER, "all") == text  # unchanged: not rewritten
    moved = hooks.with_hooks(text, path, "claude-code", ServerCommand("/new/bin/memoryd", "main"), "all")
    assert moved.count("hook claude-code UserPromptSubmit") == 1 and "/new/bin/memoryd" in moved
    recall_only = json.loads(hooks.with_hooks(text, path, "claude-code", SERVER, "recall"))
    assert set(recall_only["hooks"]) == {"UserPromptSubmit", "PreToolUse"}
    removed = json.loads(hooks.with_hooks(text, path, "claude-code", SERVER, "none"))
    assert removed == THEIRS


def test_codex_captures_on_stop() -> None:
    doc = json.loads(hooks.with_hooks("", Path("hooks.json"), "codex", SERVER, "all"))
    assert set(doc["hooks"]) == {"SessionStart", "UserPromptSubmit", "PreCompact", "Stop"}
    env = ServerCommand("/opt/memoryd/bin/memoryd", "main", {"MEMORYD_CONFIG": "/my conf/c.toml"})
    assert hooks.command(env, "codex", "Stop").startswith(
        "MEMORYD_CONFIG='/my conf/c.toml' /opt/memoryd/bin/memoryd hook"
    )


@pytest.mark.parametrize("text", ["{not json", "[]", '{"hooks": []}', '{"hooks": {"UserPromptSubmit": {}}}'])
def test_a_file_it_cannot_edit_is_refused(text: str) -> None:
    with pytest.raises(ConfigError):
        hooks.with_hooks(text, Path("settings.json"), "claude-code", SERVER, "all")


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_setup_write_installs_the_hooks(tmp_path: Path, host: str) -> None:
    home = tmp_path / "home"
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "XDG_CONFIG_HOME": str(home / ".config")}
    env["XDG_STATE_HOME"] = str(home / ".state")
    settings = hooks.settings_file(host, env)  # type: ignore[arg-type]
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps(THEIRS))
    cmd = [sys.executable, "-m", "memoryd", "setup", host, "--write"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert first.returncode == 0, first.stderr
    assert f"updated: {settings}" in first.stdout
    doc = json.loads(settings.read_text())
    assert doc["hooks"]["PreToolUse"] == THEIRS["hooks"]["PreToolUse"]
    command = doc["hooks"]["UserPromptSubmit"][1]["hooks"][0]["command"]
    assert command.split()[0].startswith("/") and f"hook {host} UserPromptSubmit" in command
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert f"unchanged: {settings}" in again.stdout
    assert len(list(settings.parent.glob("*.backup-*"))) == 1
