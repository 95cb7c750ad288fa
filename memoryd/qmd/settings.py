"""The `[qmd]` settings table: OpenClaw's `memory.qmd` keys (spec §4.4) in snake_case, with its defaults.

These are plain frozen values so the config loader can merge a daemon-wide `[defaults.qmd]` and a
per-agent `[agents.<id>.qmd]` key by key, like every other table. `normalise_qmd` applies
OpenClaw's resolver rules (blank command -> `qmd`, non-positive limits and timeouts -> defaults,
durations parsed) and rejects what cannot be read, naming the key.

Left out on purpose: `scope` (memoryd binds a connection to one agent; there are no chat types to
filter) and `mcporter` / `search_tool` (memoryd talks to QMD directly, never through a bridge).
`fallback` is memoryd's own: how soon a failed QMD is tried again.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Literal

from memoryd.errors import ConfigError

SearchMode = Literal["search", "vsearch", "query"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass(frozen=True, slots=True)
class QmdPath:
    """One extra folder for QMD to index: `{path, name?, pattern?}`."""

    path: str = ""
    name: str = ""
    pattern: str = "**/*.md"


@dataclass(frozen=True, slots=True)
class QmdSessionSettings:
    """Export session transcripts as markdown for QMD to index (off by default, as in OpenClaw)."""

    enabled: bool = False
    export_dir: str = ""  # "" = <state>/agents/<id>/qmd/sessions
    retention_days: int = 0  # 0 = keep every transcript


@dataclass(frozen=True, slots=True)
class QmdUpdateSettings:
    interval: str = "5m"  # "0" turns the periodic `qmd update` off
    debounce_ms: int = 15_000
    on_boot: bool = True
    wait_for_boot_sync: bool = False
    embed_interval: str = "60m"
    command_timeout_ms: int = 30_000
    update_timeout_ms: int = 120_000
    embed_timeout_ms: int = 120_000

    @property
    def interval_ms(self) -> int:
        return parse_duration_ms(self.interval)

    @property
    def embed_interval_ms(self) -> int:
        return parse_duration_ms(self.embed_interval)


@dataclass(frozen=True, slots=True)
class QmdLimitsSettings:
    max_results: int = 6
    max_snippet_chars: int = 700
    max_injected_chars: int = 4000
    timeout_ms: int = 4000


@dataclass(frozen=True, slots=True)
class QmdFallbackSettings:
    """memoryd's own: after a QMD failure, wait `retry_ms` (doubling up to `retry_max_ms`) before retrying."""

    retry_ms: int = 60_000
    retry_max_ms: int = 1_800_000


@dataclass(frozen=True, slots=True)
class QmdSettings:
    command: str = "qmd"
    search_mode: SearchMode = "search"
    include_default_memory: bool = True
    paths: tuple[QmdPath, ...] = ()
    extra_collections: tuple[QmdPath, ...] = ()  # OpenClaw's memorySearch.qmd.extraCollections
    sessions: QmdSessionSettings = field(default_factory=QmdSessionSettings)
    update: QmdUpdateSettings = field(default_factory=QmdUpdateSettings)
    limits: QmdLimitsSettings = field(default_factory=QmdLimitsSettings)
    fallback: QmdFallbackSettings = field(default_factory=QmdFallbackSettings)


def parse_duration_ms(text: str) -> int:
    """`"5m"`, `"90s"`, `"1.5h"`, `"500ms"`, `"2d"`; a bare number counts minutes (OpenClaw's default unit)."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 5m, 1h)")
    value = float(match.group(1))
    unit = (match.group(2) or "m").lower()
    ms = value * _UNIT_MS[unit]
    if not math.isfinite(ms):
        raise ValueError(f"not a duration: {text!r}")
    return int(ms)


def _positive(value: int, default: int) -> int:
    return value if value > 0 else default


def normalise_qmd(q: QmdSettings, key: str = "qmd") -> QmdSettings:
    """OpenClaw's resolver rules (backend-config.ts), with unreadable durations reported as errors."""
    defaults_u, defaults_l, defaults_f = QmdUpdateSettings(), QmdLimitsSettings(), QmdFallbackSettings()
    u = q.update
    for name in ("interval", "embed_interval"):
        raw = getattr(u, name)
        if not raw.strip():
            u = dataclasses.replace(u, **{name: getattr(defaults_u, name)})
            continue
        try:
            parse_duration_ms(raw)
        except ValueError as exc:
            raise ConfigError(f"{key}.update.{name}", str(exc)) from None
    update = dataclasses.replace(
        u,
        debounce_ms=max(0, u.debounce_ms),
        command_timeout_ms=_positive(u.command_timeout_ms, defaults_u.command_timeout_ms),
        update_timeout_ms=_positive(u.update_timeout_ms, defaults_u.update_timeout_ms),
        embed_timeout_ms=_positive(u.embed_timeout_ms, defaults_u.embed_timeout_ms),
    )
    lim = q.limits
    limits = QmdLimitsSettings(
        max_results=_positive(lim.max_results, defaults_l.max_results),
        max_snippet_chars=_positive(lim.max_snippet_chars, defaults_l.max_snippet_chars),
        max_injected_chars=_positive(lim.max_injected_chars, defaults_l.max_injected_chars),
        timeout_ms=_positive(lim.timeout_ms, defaults_l.timeout_ms),
    )
    retry = _positive(q.fallback.retry_ms, defaults_f.retry_ms)
    fallback = QmdFallbackSettings(retry_ms=retry, retry_max_ms=max(retry, q.fallback.retry_max_ms))
    sessions = dataclasses.replace(q.sessions, retention_days=max(0, q.sessions.retention_days))
    for table, entries in (("paths", q.paths), ("extra_collections", q.extra_collections)):
        for i, entry in enumerate(entries):
            if not entry.path.strip():
                raise ConfigError(f"{key}.{table}[{i}].path", "a path is required")
    return dataclasses.replace(
        q,
        command=q.command.strip() or "qmd",
        update=update,
        limits=limits,
        fallback=fallback,
        sessions=sessions,
    )
