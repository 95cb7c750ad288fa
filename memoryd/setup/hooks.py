"""The hook entries `memoryd setup claude-code|codex --write` merges into the host's hook settings.

Both hosts read the same shape: `{"hooks": {"<Event>": [{"matcher"?: …, "hooks": [{"type": "command",
"command": …, "timeout": <seconds>}]}]}}` — Claude Code in `~/.claude/settings.json` (or
`$CLAUDE_CONFIG_DIR/settings.json`; https://code.claude.com/docs/en/hooks), Codex in
`$CODEX_HOME/hooks.json`, else `~/.codex/hooks.json` (https://developers.openai.com/codex/hooks). The
command is absolute (GUI hosts have no shell PATH). memoryd's own entries are recognised by their
command (`… hook <host> <Event>`) and replaced in place; every other hook, group and key is kept, and
an unchanged file is not rewritten.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from memoryd.errors import ConfigError
from memoryd.setup.entries import ServerCommand

HookHost = Literal["claude-code", "codex"]
HookSet = Literal["none", "recall", "all"]
HOOK_SETS: tuple[HookSet, ...] = ("none", "recall", "all")
EVENTS: dict[HookHost, dict[HookSet, tuple[str, ...]]] = {
    # Claude Code ends a session with SessionEnd: capture there, not after every turn (Stop).
    "claude-code": {
        "none": (),
        "recall": ("UserPromptSubmit",),
        "all": ("SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"),
    },
    # Codex has no SessionEnd: Stop (the end of a turn) is where a session is captured.
    "codex": {
        "none": (),
        "recall": ("UserPromptSubmit",),
        "all": ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop"),
    },
}
TIMEOUT_S = {"UserPromptSubmit": 10, "SessionStart": 10, "PreCompact": 30, "SessionEnd": 30, "Stop": 30}
"""The host's own deadline per hook (seconds); memoryd's `hooks.timeout_ms` is far shorter."""


def settings_file(host: HookHost, env: Mapping[str, str] | None = None) -> Path:
    """Where `host` reads the user's hooks."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    if host == "claude-code":
        base = env.get("CLAUDE_CONFIG_DIR", "").strip()
        return (Path(base).expanduser() if base else home / ".claude") / "settings.json"
    base = env.get("CODEX_HOME", "").strip()
    return (Path(base).expanduser() if base else home / ".codex") / "hooks.json"


def command(server: ServerCommand, host: HookHost, event: str) -> str:
    """The shell command the host runs: `[VAR=… ]/abs/memoryd hook HOST EVENT [--agent ID]`."""
    words = [server.command]
    if not server.command.endswith("/memoryd"):  # an interpreter, not the console script
        words += ["-m", "memoryd"]
    words += ["hook", host, event, "--agent", server.agent]
    prefix = [f"{k}={shlex.quote(v)}" for k, v in sorted(server.env.items())]
    return " ".join([*prefix, *(shlex.quote(w) for w in words)])


def _ours(entry: object, host: HookHost, event: str) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    words = entry["command"].split()
    return any(words[i : i + 3] == ["hook", host, event] for i in range(len(words))) and "memoryd" in entry["command"]


def with_hooks(text: str, path: Path, host: HookHost, server: ServerCommand, which: HookSet) -> str:
    """`text` (the host's hook settings, JSON, or empty) with memoryd's hooks for `which` and no others
    of memoryd's; everything else kept as it was."""
    try:
        document = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise ConfigError(str(path), f"not valid JSON ({exc}); fix it or move it aside (left untouched)") from None
    if not isinstance(document, dict):
        raise ConfigError(str(path), "the top level is not a JSON object; left untouched")
    before = json.dumps(document, sort_keys=True)
    hooks = document.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(str(path), "hooks is not an object; left untouched")
    wanted = EVENTS[host][which]
    for event in {*EVENTS[host]["all"], *wanted}:
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise ConfigError(str(path), f"hooks.{event} is not a list; left untouched")
        entry: dict[str, Any] = {
            "type": "command",
            "command": command(server, host, event),
            "timeout": TIMEOUT_S[event],
        }
        placed = False
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(_ours(h, host, event) for h in inner):
                kept.append(group)
                continue
            rest = [h for h in inner if not _ours(h, host, event)]
            if event in wanted and not placed:
                rest.append(entry)
                placed = True
            if rest:
                kept.append({**group, "hooks": rest})
        if event in wanted and not placed:
            kept.append({"hooks": [entry]})
        if kept:
            hooks[event] = kept
        else:
            hooks.pop(event, None)
    if not hooks:
        document.pop("hooks")
    if json.dumps(document, sort_keys=True) == before:
        return text
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
