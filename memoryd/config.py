"""Typed, frozen settings: defaults = OpenClaw's (spec §1), overridden by a TOML file, env and flags.

File layout (`$XDG_CONFIG_HOME/memoryd/config.toml`, or `--config` / `MEMORYD_CONFIG`):

    [daemon]                 # daemon-wide: socket, logging
    [defaults]               # the memorySearch tree (snake_case) applied to every agent
    [agents.<id>]            # workspace, sessions_dir, and any key of the tree, merged key by key

Every value is checked against its declared type; an error names the dotted key and the bad value.
Numeric settings are clamped exactly as OpenClaw's resolver clamps them.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from memoryd import paths
from memoryd.compat import Compat, apply_compat
from memoryd.errors import ConfigError, NotFoundError
from memoryd.qmd.settings import QmdSettings, normalise_qmd

Source = Literal["memory", "sessions"]
FtsTokenizer = Literal["unicode61", "trigram", "porter"]
ProviderName = Literal["auto", "none", "local", "openai", "gemini", "voyage", "mistral", "ollama"]
FallbackName = Literal["none", "local", "openai", "gemini", "voyage", "mistral", "ollama"]
Fusion = Literal["weighted", "rrf"]
Backend = Literal["builtin", "qmd"]
RerankProvider = Literal["none", "cohere", "voyage", "jina", "tei"]

DEFAULT_AGENT = "main"
AGENT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class MmrSettings:
    enabled: bool = False
    lambda_: float = 0.7


@dataclass(frozen=True, slots=True)
class TemporalDecaySettings:
    enabled: bool = False
    half_life_days: int = 30


@dataclass(frozen=True, slots=True)
class HybridSettings:
    enabled: bool = True
    vector_weight: float = 0.5
    text_weight: float = 0.5
    candidate_multiplier: int = 4
    fusion: Fusion = "weighted"
    rrf_k: int = 60
    text_score: Literal["coverage", "bm25"] = "coverage"
    mmr: MmrSettings = field(default_factory=MmrSettings)
    temporal_decay: TemporalDecaySettings = field(default_factory=TemporalDecaySettings)


@dataclass(frozen=True, slots=True)
class RerankSettings:
    """The optional rerank stage: a cross-encoder behind an HTTP API, never allowed to block a search.

    `provider = "none"` turns it off. The best `top_n` results of the fused ranking are sent; an answer
    later than `timeout_ms` (or any error) leaves the fused ranking as it was, and the reply says why.
    `weight` blends the reranker's relevance into the fused score (0 = ignore it, 1 = its order alone).
    """

    provider: RerankProvider = "none"
    model: str = ""
    base_url: str = ""
    api_key: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    top_n: int = 20
    timeout_ms: int = 1500
    weight: float = 0.5


@dataclass(frozen=True, slots=True)
class QuerySettings:
    max_results: int = 6
    min_score: float = 0.35
    keyword_strategy: Literal["relaxed", "openclaw"] = "relaxed"
    date_boost: float = 0.2
    """Results from the period a query names ("in May 2024", "last week") score this much more (0 = off)."""
    hybrid: HybridSettings = field(default_factory=HybridSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)


@dataclass(frozen=True, slots=True)
class ChunkingSettings:
    tokens: int = 400
    overlap: int = 80


@dataclass(frozen=True, slots=True)
class SessionSyncSettings:
    delta_bytes: int = 100_000
    delta_messages: int = 50
    post_compaction_force: bool = True
    debounce_ms: int = 5000


@dataclass(frozen=True, slots=True)
class SyncSettings:
    on_session_start: bool = True
    on_search: bool = True
    watch: bool = True
    watch_debounce_ms: int = 1500
    watch_max_wait_ms: int = 5000
    """However often files keep changing, a watched change waits at most this long (from its first
    event) before a sync starts; at least `watch_debounce_ms`."""
    interval_minutes: int = 0
    embedding_retry_ms: int = 30_000
    """After a sync left files without vectors (provider down), sync again this much later, doubling
    up to EMBEDDING_RETRY_MAX_MS, until they are embedded (0 = wait for the next change)."""
    sessions: SessionSyncSettings = field(default_factory=SessionSyncSettings)


@dataclass(frozen=True, slots=True)
class BatchSettings:
    enabled: bool = False
    wait: bool = True
    concurrency: int = 2
    poll_interval_ms: int = 2000
    timeout_minutes: int = 60


@dataclass(frozen=True, slots=True)
class RemoteSettings:
    base_url: str = ""
    api_key: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 60.0
    batch: BatchSettings = field(default_factory=BatchSettings)


@dataclass(frozen=True, slots=True)
class LocalSettings:
    model_path: str = ""
    model_cache_dir: str = ""
    threads: int = 0


@dataclass(frozen=True, slots=True)
class FtsSettings:
    tokenizer: FtsTokenizer = "porter"


@dataclass(frozen=True, slots=True)
class VectorSettings:
    enabled: bool = True
    extension_path: str = ""


@dataclass(frozen=True, slots=True)
class StoreSettings:
    driver: Literal["sqlite"] = "sqlite"
    path: str = ""
    fts: FtsSettings = field(default_factory=FtsSettings)
    vector: VectorSettings = field(default_factory=VectorSettings)


@dataclass(frozen=True, slots=True)
class CacheSettings:
    enabled: bool = True
    max_entries: int = 0  # 0 = no cap (OpenClaw's code default)


@dataclass(frozen=True, slots=True)
class MemorySearchSettings:
    """OpenClaw's `memorySearch` tree in snake_case, with its defaults (spec §1, §4.4)."""

    enabled: bool = True
    sources: tuple[Source, ...] = ("memory", "sessions")
    extra_paths: tuple[str, ...] = ()
    provider: ProviderName = "auto"
    model: str = ""
    fallback: FallbackName = "none"
    output_dimensionality: int = 0
    remote: RemoteSettings = field(default_factory=RemoteSettings)
    local: LocalSettings = field(default_factory=LocalSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    sync: SyncSettings = field(default_factory=SyncSettings)
    query: QuerySettings = field(default_factory=QuerySettings)
    cache: CacheSettings = field(default_factory=CacheSettings)
    citations: Literal["auto", "on", "off"] = "auto"
    compat: Compat = "none"
    """`openclaw`: search exactly as OpenClaw's builtin manager (the profile in memoryd/compat.py)."""
    backend: Backend = "builtin"
    qmd: QmdSettings = field(default_factory=QmdSettings)


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """One agent: where its memory lives and how it is searched."""

    id: str
    workspace: Path
    sessions_dir: Path
    settings: MemorySearchSettings
    db_path: Path

    @property
    def extra_paths(self) -> tuple[Path, ...]:
        """Extra paths resolved against the workspace, de-duplicated in order (spec §3.1 step 4)."""
        seen: dict[Path, None] = {}
        for raw in self.settings.extra_paths:
            text = raw.strip()
            if text:
                p = Path(text).expanduser()
                seen.setdefault(p if p.is_absolute() else self.workspace / p, None)
        return tuple(seen)


@dataclass(frozen=True, slots=True)
class DaemonSettings:
    socket_path: str = ""
    log_level: str = "info"
    log_format: Literal["console", "json"] = "console"
    log_file: str = ""
    max_line_bytes: int = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Config:
    daemon: DaemonSettings
    defaults: MemorySearchSettings
    agents: dict[str, AgentConfig]
    state_dir: Path
    source_file: Path | None

    def agent(self, agent_id: str | None) -> AgentConfig:
        """The named agent; with no name, the only agent (or `main`)."""
        if agent_id is None:
            if len(self.agents) == 1:
                return next(iter(self.agents.values()))
            if DEFAULT_AGENT in self.agents:
                return self.agents[DEFAULT_AGENT]
            raise NotFoundError(f"several agents are configured; name one of: {', '.join(sorted(self.agents))}")
        try:
            return self.agents[agent_id]
        except KeyError:
            known = ", ".join(sorted(self.agents)) or "(none)"
            raise NotFoundError(f"unknown agent {agent_id!r}; configured agents: {known}") from None

    @property
    def socket(self) -> Path:
        return Path(self.daemon.socket_path).expanduser() if self.daemon.socket_path else paths.socket_path()


# --------------------------------------------------------------------------- building from mappings

T = TypeVar("T")


def _type_name(tp: object) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin in (tuple, list):
        return f"list of {_type_name(typing.get_args(tp)[0])}"
    if origin is dict:
        return "table of strings"
    return getattr(tp, "__name__", str(tp))


def _coerce(value: object, tp: Any, key: str) -> object:
    """Check `value` against the declared type `tp`; return the typed value or raise ConfigError."""
    origin = typing.get_origin(tp)
    bad = ConfigError(key, f"expected {_type_name(tp)}, got {value!r}")
    if origin is Literal:
        if value not in typing.get_args(tp):
            raise bad
        return value
    if origin in (tuple, list):
        if not isinstance(value, list | tuple):
            raise bad
        (item_tp, *_rest) = typing.get_args(tp)
        items = [_coerce(v, item_tp, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(dict.fromkeys(items)) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise bad
        return dict(value)
    if origin in (types.UnionType, typing.Union):
        for option in typing.get_args(tp):
            try:
                return _coerce(value, option, key)
            except ConfigError:
                continue
        raise bad
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, Mapping):
            raise bad
        return merge(tp(), value, key)
    if tp is bool:
        if not isinstance(value, bool):
            raise bad
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise bad
        return value
    raise ConfigError(key, f"unsupported setting type {tp!r}")


def _field_key(f: dataclasses.Field[object]) -> str:
    return f.name.rstrip("_")  # `lambda_` is spelled `lambda` in the file


def merge(base: T, data: Mapping[str, object], prefix: str) -> T:
    """Overlay `data` onto the dataclass instance `base`, key by key, recursively; unknown keys are errors."""
    hints = typing.get_type_hints(type(base))
    fields = {_field_key(f): f for f in dataclasses.fields(base)}  # type: ignore[arg-type]
    changes: dict[str, object] = {}
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else key
        f = fields.get(key)
        if f is None:
            raise ConfigError(dotted, f"unknown key (known: {', '.join(sorted(fields))})")
        tp = hints[f.name]
        current = getattr(base, f.name)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, Mapping):
                raise ConfigError(dotted, f"expected a table, got {value!r}")
            changes[f.name] = merge(current, value, dotted)
        else:
            changes[f.name] = _coerce(value, tp, dotted)
    return dataclasses.replace(base, **changes)  # type: ignore[type-var]


def _clamp(value: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, value))


def normalise(s: MemorySearchSettings) -> MemorySearchSettings:
    """Apply the `compat` profile, then OpenClaw's clamps (spec §1), so every consumer sees sane values."""
    s = apply_compat(s, MemorySearchSettings())
    tokens = max(1, s.chunking.tokens)
    chunking = ChunkingSettings(tokens=tokens, overlap=int(_clamp(s.chunking.overlap, 0, tokens - 1)))
    h = s.query.hybrid
    vw, tw = _clamp(h.vector_weight, 0, 1), _clamp(h.text_weight, 0, 1)
    total = vw + tw
    vw, tw = (0.7, 0.3) if total == 0 else (vw / total, tw / total)
    lam = h.mmr.lambda_ if math.isfinite(h.mmr.lambda_) else 0.7
    hybrid = dataclasses.replace(
        h,
        vector_weight=vw,
        text_weight=tw,
        candidate_multiplier=int(_clamp(h.candidate_multiplier, 1, 20)),
        rrf_k=max(1, h.rrf_k),
        mmr=MmrSettings(enabled=h.mmr.enabled, lambda_=_clamp(lam, 0, 1)),
        temporal_decay=TemporalDecaySettings(
            enabled=h.temporal_decay.enabled, half_life_days=max(1, h.temporal_decay.half_life_days)
        ),
    )
    rr = s.query.rerank
    rerank = dataclasses.replace(
        rr,
        top_n=int(_clamp(rr.top_n, 1, 100)),
        timeout_ms=max(1, rr.timeout_ms),
        weight=_clamp(rr.weight, 0.0, 1.0) if math.isfinite(rr.weight) else 0.5,
    )
    query = dataclasses.replace(
        s.query,
        max_results=max(1, s.query.max_results),
        min_score=_clamp(s.query.min_score, 0, 1),
        date_boost=_clamp(s.query.date_boost, 0.0, 1.0) if math.isfinite(s.query.date_boost) else 0.2,
        hybrid=hybrid,
        rerank=rerank,
    )
    sessions = s.sync.sessions
    sync = dataclasses.replace(
        s.sync,
        watch_debounce_ms=max(0, s.sync.watch_debounce_ms),
        watch_max_wait_ms=max(0, s.sync.watch_debounce_ms, s.sync.watch_max_wait_ms),
        interval_minutes=max(0, s.sync.interval_minutes),
        embedding_retry_ms=max(0, s.sync.embedding_retry_ms),
        sessions=dataclasses.replace(
            sessions, delta_bytes=max(0, sessions.delta_bytes), delta_messages=max(0, sessions.delta_messages)
        ),
    )
    batch = s.remote.batch
    remote = dataclasses.replace(s.remote, batch=dataclasses.replace(batch, concurrency=max(1, batch.concurrency)))
    cache = CacheSettings(enabled=s.cache.enabled, max_entries=max(0, s.cache.max_entries))
    sources = s.sources or ("memory",)
    return dataclasses.replace(
        s, chunking=chunking, query=query, sync=sync, remote=remote, cache=cache, sources=sources
    )


# --------------------------------------------------------------------------- loading

AGENT_ONLY_KEYS = ("workspace", "sessions_dir")

APPENDED_LISTS = ("extra_paths", "qmd.paths", "qmd.extra_collections")
"""List-valued keys an agent adds to instead of replacing: `[defaults]` first, then the agent's, de-duplicated
in order (OpenClaw concatenates `extraPaths` and `qmd.extraCollections`; `memory.qmd.paths` is global there,
so every agent keeps it). Every other list (`sources`) and table of strings
(`remote.headers`, `query.rerank.headers`) is one value: an agent's replaces the defaults' whole."""


def _nested(data: Mapping[str, object], dotted: str) -> bool:
    """Whether the raw override table sets `dotted` (so the agent's list is to be appended)."""
    node: object = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _get(obj: object, dotted: str) -> object:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _with(obj: T, dotted: str, value: object) -> T:
    head, _, rest = dotted.partition(".")
    if not rest:
        return dataclasses.replace(obj, **{head: value})  # type: ignore[type-var]
    return dataclasses.replace(obj, **{head: _with(getattr(obj, head), rest, value)})  # type: ignore[type-var]


def _append_lists(
    defaults: MemorySearchSettings, merged: MemorySearchSettings, overrides: Mapping[str, object]
) -> MemorySearchSettings:
    for dotted in APPENDED_LISTS:
        if _nested(overrides, dotted):
            combined = (*_get(defaults, dotted), *_get(merged, dotted))  # type: ignore[misc]
            if dotted == "extra_paths":
                combined = tuple(p.strip() for p in combined if isinstance(p, str) and p.strip())
            merged = _with(merged, dotted, tuple(dict.fromkeys(combined)))
    return merged


def _agent(agent_id: str, table: Mapping[str, object], defaults: MemorySearchSettings, state_dir: Path) -> AgentConfig:
    if not AGENT_ID_RE.match(agent_id):
        raise ConfigError(f"agents.{agent_id}", "agent ids use letters, digits, '.', '_' and '-' (max 64)")
    prefix = f"agents.{agent_id}"
    overrides = {k: v for k, v in table.items() if k not in AGENT_ONLY_KEYS}
    settings = normalise(_append_lists(defaults, merge(defaults, overrides, prefix), overrides))
    settings = dataclasses.replace(settings, qmd=normalise_qmd(settings.qmd, f"{prefix}.qmd"))
    raw_ws = table.get("workspace")
    if raw_ws is None:
        workspace = paths.data_dir() / "workspaces" / agent_id
    elif isinstance(raw_ws, str) and raw_ws.strip():
        workspace = Path(raw_ws).expanduser()
    else:
        raise ConfigError(f"{prefix}.workspace", f"expected a path, got {raw_ws!r}")
    # os.path.exists never raises: a workspace below an unreadable folder is a degraded agent, not a crash.
    workspace = workspace.resolve() if os.path.exists(workspace) else workspace.absolute()
    raw_sd = table.get("sessions_dir")
    if raw_sd is None:
        sessions_dir = workspace / "sessions"
    elif isinstance(raw_sd, str) and raw_sd.strip():
        sd = Path(raw_sd).expanduser()
        sessions_dir = sd if sd.is_absolute() else workspace / sd
    else:
        raise ConfigError(f"{prefix}.sessions_dir", f"expected a path, got {raw_sd!r}")
    if settings.store.path:
        db_path = Path(settings.store.path.replace("{agentId}", agent_id)).expanduser()
    else:
        db_path = state_dir / "agents" / agent_id / "index.sqlite"
    return AgentConfig(id=agent_id, workspace=workspace, sessions_dir=sessions_dir, settings=settings, db_path=db_path)


def read_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read: {exc.strerror}") from exc


def build(
    data: Mapping[str, Any],
    *,
    state_dir: Path | None = None,
    source_file: Path | None = None,
    workspace: Path | None = None,
    agent_id: str | None = None,
) -> Config:
    """Build the effective config from a parsed TOML mapping plus the CLI's ad-hoc flags.

    `workspace` (the CLI's `--workspace`) adds or replaces an agent rooted there, with
    transcripts from `<workspace>/sessions`.
    """
    unknown = set(data) - {"daemon", "defaults", "agents"}
    if unknown:
        raise ConfigError(sorted(unknown)[0], "unknown top-level table (known: daemon, defaults, agents)")
    daemon = merge(DaemonSettings(), _table(data, "daemon"), "daemon")
    defaults = merge(MemorySearchSettings(), _table(data, "defaults"), "defaults")
    defaults = dataclasses.replace(defaults, qmd=normalise_qmd(defaults.qmd, "defaults.qmd"))
    state = (state_dir or paths.state_dir()).expanduser().absolute()
    agents_table = _table(data, "agents")
    agents: dict[str, AgentConfig] = {}
    for aid, table in agents_table.items():
        if not isinstance(table, Mapping):
            raise ConfigError(f"agents.{aid}", f"expected a table, got {table!r}")
        agents[aid] = _agent(aid, table, defaults, state)
    if workspace is not None:
        aid = agent_id or DEFAULT_AGENT
        base = dict(agents_table.get(aid, {})) if isinstance(agents_table.get(aid), Mapping) else {}
        base["workspace"] = str(workspace)
        base.pop("sessions_dir", None)
        agents[aid] = _agent(aid, base, defaults, state)
    if not agents:
        agents[DEFAULT_AGENT] = _agent(DEFAULT_AGENT, {}, defaults, state)
    return Config(daemon=daemon, defaults=defaults, agents=agents, state_dir=state, source_file=source_file)


def _table(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise ConfigError(key, f"expected a table, got {value!r}")
    return value


def load(
    config_path: Path | None = None,
    *,
    state_dir: Path | None = None,
    workspace: Path | None = None,
    agent_id: str | None = None,
) -> Config:
    """Load the config file (a missing default file means all defaults) and apply the CLI flags."""
    path = config_path or paths.config_file()
    explicit = config_path is not None
    data: dict[str, Any] = {}
    if path.exists():
        data = read_file(path)
    elif explicit:
        raise ConfigError(str(path), "config file does not exist")
    return build(
        data,
        state_dir=state_dir,
        source_file=path if path.exists() else None,
        workspace=workspace,
        agent_id=agent_id,
    )


def to_dict(obj: object) -> object:
    """A JSON-ready view of any settings object (for `memoryd config show`)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {_field_key(f): to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, tuple | list):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj
