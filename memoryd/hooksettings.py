"""`[hooks]`: how `memoryd hook <host> <event>` recalls before a prompt and captures at a session's end.

A top-level table of the config file (not per agent): the hook process reads it, while the search
runs on the daemon with the agent's served settings. It lives outside `memoryd.config` so that the
hook, which runs before every prompt, reads its table without building the whole settings tree
(`read_file`); `memoryd.config` checks the same table with the same `read` when it loads the file.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from memoryd import paths
from memoryd.errors import ConfigError

HookScope = Literal["project", "all"]
SessionStartMode = Literal["auto", "on", "off"]


@dataclass(frozen=True, slots=True)
class HooksSettings:
    """What the hooks inject and how long they may take (README: Configuration, `hooks.*`)."""

    max_chars: int = 1500
    """Characters of recalled snippets injected before one prompt, the block's frame included."""
    max_results: int = 5
    """Snippets injected before one prompt, at most."""
    timeout_ms: int = 2000
    """How long a recall or session-start brief waits for the daemon; past it nothing is injected."""
    capture_timeout_ms: int = 15000
    """How long a capture (SessionEnd, Stop, PreCompact) waits for the daemon's sync report."""
    follow_up_words: int = 6
    """A prompt of fewer words is a follow-up: the previous user turn is searched with it."""
    scope: HookScope = "project"
    """`project`: transcripts of other projects are never injected; `all`: they are, after this project's."""
    session_start: SessionStartMode = "auto"
    """The session-start brief: `auto` unless the host already loads the workspace's MEMORY.md itself."""
    session_start_chars: int = 1200
    """Characters of the session-start brief (MEMORY.md's head and the newest daily notes' headings)."""
    flush: bool = False
    """After a compaction, ask the model to save the durable facts with memory_write (hosts that can carry it)."""


RANGES: dict[str, tuple[int, int]] = {
    "max_chars": (200, 10000),  # room for one cited line; Claude Code shows a longer context as a preview
    "max_results": (1, 20),
    "timeout_ms": (50, 60000),  # Claude Code's own default hook timeout is 60 s
    "capture_timeout_ms": (100, 600000),  # past it the hook leaves; the sync goes on in the daemon
    "follow_up_words": (0, 100),  # 0 = never add the previous turn
    "session_start_chars": (0, 20000),  # 0 = no brief
}
_CHOICES: dict[str, tuple[str, ...]] = {"scope": get_args(HookScope), "session_start": get_args(SessionStartMode)}


def read(table: Mapping[str, object]) -> HooksSettings:
    """The `[hooks]` table checked key by key: a ConfigError names `hooks.<key>` and the bad value."""
    defaults = HooksSettings()
    values: dict[str, object] = {}
    known = {f.name for f in dataclasses.fields(defaults)}
    for key, value in table.items():
        where = f"hooks.{key}"
        if key not in known:
            raise ConfigError(where, f"unknown key (known: {', '.join(sorted(known))})")
        default = getattr(defaults, key)
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(where, f"expected bool, got {value!r}")
        elif isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(where, f"expected int, got {value!r}")
            lo, hi = RANGES[key]
            if not lo <= value <= hi:
                raise ConfigError(where, f"must be between {lo} and {hi}, got {value!r}")
        elif value not in _CHOICES[key]:
            raise ConfigError(where, f"expected {' | '.join(repr(c) for c in _CHOICES[key])}, got {value!r}")
        values[key] = value
    return dataclasses.replace(defaults, **values)  # type: ignore[arg-type]


def read_file(config: Path | None) -> tuple[HooksSettings, str]:
    """`[hooks]` and `daemon.socket_path` of the config file memoryd would load (`config`, else
    `$MEMORYD_CONFIG`, else the default; a missing default file is all defaults)."""
    path = config or paths.config_file()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if config is not None:  # as memoryd.config.load: only a file named on the command line must exist
            raise ConfigError(str(path), "config file does not exist") from None
        return HooksSettings(), ""
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(str(path), f"cannot read it: {exc}") from None
    hooks, daemon = data.get("hooks", {}), data.get("daemon", {})
    if not isinstance(hooks, Mapping) or not isinstance(daemon, Mapping):
        raise ConfigError(str(path), "[hooks] and [daemon] must be tables")
    socket = daemon.get("socket_path", "")
    return read(hooks), socket if isinstance(socket, str) else ""
