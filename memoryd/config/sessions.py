"""`sessions = ["claude-code", "codex", "openclaw"]`: transcript folders memoryd knows where to find.

Each preset is one session root, found where its tool writes (the tool's own environment variable
first, then its default under the home folder), and named in results by its own prefix:

* `claude-code`: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`; paths `claude-code/<project>/<id>.jsonl`
* `codex`: `$CODEX_HOME/sessions`, else `~/.codex/sessions`; paths `codex/YYYY/MM/DD/rollout-….jsonl`
* `openclaw`: `<state>/agents/<agent id>/sessions` with state `$OPENCLAW_STATE_DIR`, else `~/.openclaw`
  (`~/.clawdbot` when only that exists); paths `openclaw/<id>.jsonl`

`openclaw` reads the OpenClaw agent of the same id; `openclaw:<id>` names another one. Locations are
resolved when the configuration is loaded (a SIGHUP reload looks again). `SessionRoot` lives here,
not in `memoryd.sources`, so that loading the configuration (the CLI's light path) imports no source code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import ConfigError

PRESETS = ("claude-code", "codex", "openclaw")
SESSIONS_PREFIX = "sessions"
"""The prefix of the agent's own `sessions_dir` (what every transcript path was before presets)."""


@dataclass(frozen=True, slots=True)
class SessionRoot:
    """A folder of transcripts and the prefix its files carry in the index: `<prefix>/<path below it>`."""

    prefix: str
    path: Path
    preset: str = ""  # "" for sessions_dir, else the preset that named it (claude-code, codex, openclaw)

    def index_path(self, file: Path | str) -> str:
        """`<prefix>/<file below the root>`, forward slashes."""
        rel = os.path.relpath(os.path.normpath(file), os.path.normpath(self.path))
        return f"{self.prefix}/{Path(rel).as_posix()}"

    def to_dict(self) -> dict[str, str]:
        return {"prefix": self.prefix, "path": str(self.path), "preset": self.preset or "sessions_dir"}


_OPENCLAW_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def _env_dir(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name, "").strip()
    return Path(value).expanduser() if value else None


def _openclaw_state(env: Mapping[str, str]) -> Path:
    explicit = _env_dir(env, "OPENCLAW_STATE_DIR")
    if explicit is not None:
        return explicit
    home = _home(env)
    current, legacy = home / ".openclaw", home / ".clawdbot"
    return legacy if not os.path.exists(current) and os.path.isdir(legacy) else current


def preset_root(
    preset: str, agent_id: str, env: Mapping[str, str] | None = None, *, key: str = "sessions"
) -> SessionRoot:
    """The session root a preset names (raises ConfigError, naming `key`, for an unknown one)."""
    env = os.environ if env is None else env
    name, _, arg = preset.partition(":")
    if name == "claude-code" and not arg:
        base = _env_dir(env, "CLAUDE_CONFIG_DIR") or _home(env) / ".claude"
        return SessionRoot("claude-code", base / "projects", preset)
    if name == "codex" and not arg:
        base = _env_dir(env, "CODEX_HOME") or _home(env) / ".codex"
        return SessionRoot("codex", base / "sessions", preset)
    if name == "openclaw":
        if arg and not _OPENCLAW_AGENT.match(arg):
            raise ConfigError(key, f"{preset!r}: an OpenClaw agent id uses letters, digits, '.', '_' and '-'")
        return SessionRoot("openclaw", _openclaw_state(env) / "agents" / (arg or agent_id) / "sessions", preset)
    raise ConfigError(key, f"unknown transcript preset {preset!r} (known: {', '.join(PRESETS)}, openclaw:<id>)")


def parse_presets(raw: object, key: str) -> tuple[str, ...]:
    """The agent's `sessions` list: preset names, de-duplicated in order, one per prefix."""
    if isinstance(raw, str) or not isinstance(raw, Sequence) or not all(isinstance(p, str) for p in raw):
        raise ConfigError(key, f"expected a list of transcript presets ({', '.join(PRESETS)}), got {raw!r}")
    names = tuple(dict.fromkeys(p.strip() for p in raw if p.strip()))
    prefixes: dict[str, str] = {}
    for name in names:
        prefix = name.partition(":")[0]
        if prefix in prefixes:
            raise ConfigError(key, f"{prefixes[prefix]!r} and {name!r} would share the prefix {prefix!r}/: list one")
        prefixes[prefix] = name
    return names


def session_roots(
    sessions_dir: Path,
    presets: Sequence[str],
    agent_id: str,
    env: Mapping[str, str] | None = None,
    *,
    key: str = "sessions",
) -> tuple[SessionRoot, ...]:
    """`sessions_dir` (prefix `sessions`), then each preset's root; a folder named twice is kept once."""
    roots = [SessionRoot(SESSIONS_PREFIX, sessions_dir)]
    roots.extend(preset_root(p, agent_id, env, key=key) for p in presets)
    seen: set[str] = set()
    out: list[SessionRoot] = []
    for root in roots:
        key = os.path.normpath(os.path.abspath(root.path))
        if key not in seen:
            seen.add(key)
            out.append(root)
    return tuple(out)
