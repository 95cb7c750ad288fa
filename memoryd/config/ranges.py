"""The range of every numeric setting, checked where the file sets it, with the key the file spells.

OpenClaw clamps most numbers silently (spec §1: `minScore` into [0, 1], `chunking.tokens` to at
least 1, …); memoryd reports a value outside its range as a config error instead, so a typo
(`min_score = 3`, `max_results = -5`) is found when the daemon starts, not guessed at. README
("Ranges") lists the keys where that differs from OpenClaw. `normalise` keeps OpenClaw's clamps for
settings built in code; for settings read from a file they change nothing.

Keys are paths below the settings root (`MemorySearchSettings`, and `DaemonSettings` for `[daemon]`),
as in the file; a test checks that every numeric field has its range here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

from memoryd.config.settings import MemorySearchSettings
from memoryd.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Range:
    """A closed interval; `lo_open` excludes its lower end. Every float must also be finite."""

    lo: float
    hi: float = math.inf
    lo_open: bool = False

    def contains(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        above = value > self.lo if self.lo_open else value >= self.lo
        return above and value <= self.hi

    def describe(self) -> str:
        if self.hi != math.inf:
            return f"between {_num(self.lo)} and {_num(self.hi)}"
        return f"{'greater than' if self.lo_open else 'at least'} {_num(self.lo)}"

    def check(self, key: str, value: object) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool) and not self.contains(value):
            raise ConfigError(key, f"must be {self.describe()}, got {value!r}")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def at_least(lo: float) -> Range:
    return Range(lo)


def between(lo: float, hi: float) -> Range:
    return Range(lo, hi)


POSITIVE = Range(0, lo_open=True)
FRACTION = between(0, 1)

SETTINGS: dict[str, Range] = {
    "output_dimensionality": at_least(0),  # 0 = the model's own
    "remote.timeout_s": POSITIVE,
    "remote.batch.concurrency": at_least(1),
    "remote.batch.poll_interval_ms": at_least(1),
    "remote.batch.timeout_minutes": at_least(1),
    "local.threads": at_least(0),  # 0 = every core
    "chunking.tokens": at_least(1),
    "chunking.overlap": at_least(0),  # and below chunking.tokens (check_consistency)
    "sync.watch_debounce_ms": at_least(0),
    "sync.watch_max_wait_ms": at_least(0),  # raised to watch_debounce_ms when lower (documented)
    "sync.interval_minutes": at_least(0),  # 0 = off
    "sync.embedding_retry_ms": at_least(0),  # 0 = wait for the next change
    "sync.sessions.delta_bytes": at_least(0),
    "sync.sessions.delta_messages": at_least(0),
    "sync.sessions.debounce_ms": at_least(0),
    "query.max_results": between(1, 100),  # memory_search's maxResults allows 1-100
    "query.min_score": FRACTION,
    "query.min_evidence": FRACTION,
    "query.date_boost": FRACTION,
    "query.hybrid.vector_weight": FRACTION,  # not both 0 (check_consistency)
    "query.hybrid.text_weight": FRACTION,
    "query.hybrid.candidate_multiplier": between(1, 20),
    "query.hybrid.rrf_k": at_least(1),
    "query.hybrid.mmr.lambda": FRACTION,
    "query.hybrid.temporal_decay.half_life_days": at_least(1),
    "query.rerank.top_n": between(1, 100),
    "query.rerank.timeout_ms": at_least(1),
    "query.rerank.weight": FRACTION,
    "cache.max_entries": at_least(0),  # 0 = no cap
    "store.quick_check_interval_minutes": at_least(0),  # 0 = only at start
    "files.max_markdown_bytes": at_least(1),
    "files.max_transcript_bytes": at_least(1),
    "multimodal.max_file_bytes": at_least(1),
    "qmd.sessions.retention_days": at_least(0),  # 0 = keep all
    "transcripts.retain_days": at_least(0),  # 0 = keep forever
    "qmd.update.debounce_ms": at_least(0),
    "qmd.update.command_timeout_ms": at_least(1),
    "qmd.update.update_timeout_ms": at_least(1),
    "qmd.update.embed_timeout_ms": at_least(1),
    "qmd.limits.max_results": at_least(1),
    "qmd.limits.max_snippet_chars": at_least(1),
    "qmd.limits.max_injected_chars": at_least(1),
    "qmd.limits.timeout_ms": at_least(1),
    "qmd.fallback.retry_ms": at_least(1),
    "qmd.fallback.retry_max_ms": at_least(1),  # raised to retry_ms when lower (documented)
}

DAEMON: dict[str, Range] = {
    "max_line_bytes": between(1024, 64 * 1024 * 1024),  # must hold a request; memoryd's clients read up to 64 MiB
    "max_connections": at_least(0),  # 0 = the descriptor limit less a reserve
    "max_queued_bytes": at_least(64 * 1024),  # below this one ordinary reply would drop its client
    "http_rate_per_minute": at_least(1),
    "http_max_concurrent": at_least(1),
    "http_max_running": at_least(1),
    "http_timeout_s": between(0.5, 3600.0),
}


def check_table(settings: object, table: Mapping[str, object], prefix: str, ranges: Mapping[str, Range]) -> None:
    """Check every number `table` (a parsed TOML table, already type-checked into `settings`) sets."""
    _walk(settings, table, prefix, "", ranges)


def _walk(obj: object, table: Mapping[str, object], prefix: str, path: str, ranges: Mapping[str, Range]) -> None:
    names = {f.name.rstrip("_"): f.name for f in dataclasses.fields(obj)}  # type: ignore[arg-type]
    for key, raw in table.items():
        name = names.get(key)
        if name is None:
            continue  # not a setting of this table (agent-only keys); unknown keys were refused by merge
        value = getattr(obj, name)
        here, dotted = f"{path}{key}", f"{prefix}.{key}" if prefix else key
        if dataclasses.is_dataclass(value) and isinstance(raw, Mapping):
            _walk(value, raw, dotted, f"{here}.", ranges)
        elif here in ranges:
            ranges[here].check(dotted, value)


def check_consistency(s: MemorySearchSettings, overrides: Mapping[str, object], prefix: str) -> None:
    """Ranges that depend on another key, on an agent's effective settings; the error names the agent's
    key when its table sets either key, else the `[defaults]` one."""

    def key(*dotted: str) -> str:
        mine = any(_sets(overrides, d) for d in dotted)
        return f"{prefix if mine else 'defaults'}.{dotted[0]}"

    c = s.chunking
    if c.overlap >= c.tokens:
        raise ConfigError(
            key("chunking.overlap", "chunking.tokens"),
            f"must be below chunking.tokens ({c.tokens}), got {c.overlap}",
        )
    h = s.query.hybrid
    if h.vector_weight == 0 and h.text_weight == 0:
        raise ConfigError(
            key("query.hybrid.text_weight", "query.hybrid.vector_weight"),
            "query.hybrid.vector_weight and text_weight cannot both be 0 (fusion would score nothing)",
        )


def _sets(table: Mapping[str, object], dotted: str) -> bool:
    node: object = table
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True
