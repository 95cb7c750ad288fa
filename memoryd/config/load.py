"""The effective configuration: `[daemon]`, `[defaults]` and `[agents.<id>]` of the TOML file, merged.

File layout (`$XDG_CONFIG_HOME/memoryd/config.toml`, or `--config` / `MEMORYD_CONFIG`):

    [daemon]                 # daemon-wide: socket, logging
    [hooks]                  # what `memoryd hook` injects (memoryd.hooksettings)
    [defaults]               # the memorySearch tree (snake_case) applied to every agent
    [agents.<id>]            # workspace, sessions_dir, sessions (transcript presets), and any key
                             # of the tree, merged key by key
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from memoryd import paths
from memoryd.config import ranges
from memoryd.config.normalise import check_multimodal, normalise
from memoryd.config.sessions import SESSIONS_PREFIX, SessionRoot, parse_presets, session_roots
from memoryd.config.settings import MemorySearchSettings
from memoryd.config.typed import merge
from memoryd.errors import ConfigError, NotFoundError
from memoryd.hooksettings import HooksSettings
from memoryd.hooksettings import read as read_hooks
from memoryd.qmd.settings import normalise_qmd

T = TypeVar("T")

DEFAULT_AGENT = "main"
AGENT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """One agent: where its memory lives and how it is searched."""

    id: str
    workspace: Path
    sessions_dir: Path
    settings: MemorySearchSettings
    db_path: Path
    roots: tuple[SessionRoot, ...] = ()
    """Every folder of transcripts: `sessions_dir` first, then the `sessions` presets' (see config.sessions)."""

    @property
    def session_roots(self) -> tuple[SessionRoot, ...]:
        """The transcript roots (just `sessions_dir` unless presets were configured)."""
        return self.roots or (SessionRoot(SESSIONS_PREFIX, self.sessions_dir),)

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
    max_connections: int = 0
    """Clients served at once; 0: the descriptor limit less a reserve (a quarter of it, at least 64)."""
    max_queued_bytes: int = 32 * 1024 * 1024
    """Replies one client has not read yet; past this it is dropped (memoryd.server.backpressure)."""
    http: str = ""
    """`HOST:PORT` of the Streamable HTTP face and viewer (memoryd.server.http); empty: off."""
    http_insecure: bool = False
    """Allow plain HTTP on a non-loopback address (else refused: put a TLS reverse proxy in front)."""
    http_allowed_hosts: tuple[str, ...] = ()
    """Host headers accepted besides the bound address (a reverse proxy's public name): DNS rebinding."""
    http_allowed_origins: tuple[str, ...] = ()
    """Origins accepted besides the bound address's own (`https://memory.example.com`)."""
    http_rate_per_minute: int = 600
    """Requests one token may make per minute (a burst of a tenth of it at once); past it: 429."""
    http_max_concurrent: int = 16
    """Requests one token may have running at once (open event streams aside); past it: 429."""
    http_max_running: int = 2
    """HTTP requests running at once across every token; more wait their turn, so the socket's clients keep
    the rest of the daemon."""
    http_timeout_s: float = 30.0
    """A request whose body has not fully arrived this long after it started gets 408, and a connection that
    has sent no whole request for this long is closed (slow clients)."""


@dataclass(frozen=True, slots=True)
class Config:
    daemon: DaemonSettings
    defaults: MemorySearchSettings
    agents: dict[str, AgentConfig]
    state_dir: Path
    source_file: Path | None
    hooks: HooksSettings = field(default_factory=HooksSettings)

    def agent(self, agent_id: str | None) -> AgentConfig:
        """The named agent; with no name, the only agent (never a guess among several)."""
        if agent_id is None:
            if len(self.agents) == 1:
                return next(iter(self.agents.values()))
            raise NotFoundError(f"several agents are configured; name one of: {', '.join(sorted(self.agents))}")
        try:
            return self.agents[agent_id]
        except KeyError:
            known = ", ".join(sorted(self.agents)) or "(none)"
            raise NotFoundError(f"unknown agent {agent_id!r}; configured agents: {known}") from None

    @property
    def socket(self) -> Path:
        """Where the daemon listens: the configured socket, else the default (`paths.socket_path`)."""
        return self.explicit_socket or paths.socket_path(self.state_dir)

    @property
    def explicit_socket(self) -> Path | None:
        """A socket the user chose: `$MEMORYD_SOCKET` (the environment wins, as for the config file
        and the state directory), else `daemon.socket_path`."""
        if self.daemon.socket_path:
            return paths.explicit_socket() or Path(self.daemon.socket_path).expanduser()
        return paths.explicit_socket()


AGENT_ONLY_KEYS = ("workspace", "sessions_dir", "sessions")

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
    merged = merge(defaults, overrides, prefix)
    ranges.check_table(merged, overrides, prefix, ranges.SETTINGS)
    ranges.check_consistency(merged, overrides, prefix)
    settings = normalise(_append_lists(defaults, merged, overrides))
    settings = dataclasses.replace(settings, qmd=normalise_qmd(settings.qmd, f"{prefix}.qmd"))
    check_multimodal(settings, prefix)
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
    presets = parse_presets(table.get("sessions", []), f"{prefix}.sessions")
    roots = session_roots(sessions_dir, presets, agent_id, key=f"{prefix}.sessions")
    if settings.store.path:
        db_path = Path(settings.store.path.replace("{agentId}", agent_id)).expanduser()
    else:
        db_path = state_dir / "agents" / agent_id / "index.sqlite"
    return AgentConfig(
        id=agent_id, workspace=workspace, sessions_dir=sessions_dir, settings=settings, db_path=db_path, roots=roots
    )


MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""A config file is a few kilobytes; anything this large is not one (and is not read into memory)."""


def read_file(path: Path) -> dict[str, Any]:
    """The parsed TOML file; every way it can fail to be read is a ConfigError naming the file and why.

    That covers what tomllib does not turn into TOMLDecodeError: bytes that are not UTF-8 (its
    UnicodeDecodeError used to escape start-up as a traceback and kill the daemon on SIGHUP) and values
    nested so deep that parsing them recurses past Python's limit (RecursionError, likewise).
    """
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read: {exc.strerror or exc}") from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(str(path), f"larger than {MAX_CONFIG_BYTES:,} bytes: not a memoryd config file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            str(path), f"not valid UTF-8 (byte {exc.start}, line {line}): a TOML file must be UTF-8"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"not valid TOML: {exc}") from exc
    except RecursionError:
        raise ConfigError(str(path), "nested too deeply to read (arrays or inline tables inside one another)") from None


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
    unknown = set(data) - {"daemon", "defaults", "agents", "hooks"}
    if unknown:
        raise ConfigError(sorted(unknown)[0], "unknown top-level table (known: daemon, defaults, agents, hooks)")
    daemon = merge(DaemonSettings(), _table(data, "daemon"), "daemon")
    ranges.check_table(daemon, _table(data, "daemon"), "daemon", ranges.DAEMON)
    hooks = read_hooks(_table(data, "hooks"))
    defaults = merge(MemorySearchSettings(), _table(data, "defaults"), "defaults")
    ranges.check_table(defaults, _table(data, "defaults"), "defaults", ranges.SETTINGS)
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
        base.pop("sessions", None)
        agents[aid] = _agent(aid, base, defaults, state)
    if not agents:
        agents[DEFAULT_AGENT] = _agent(DEFAULT_AGENT, {}, defaults, state)
    return Config(
        daemon=daemon, defaults=defaults, agents=agents, state_dir=state, source_file=source_file, hooks=hooks
    )


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
    try:
        return build(
            data,
            state_dir=state_dir,
            source_file=path if path.exists() else None,
            workspace=workspace,
            agent_id=agent_id,
        )
    except RecursionError:
        raise ConfigError(str(path), "nested too deeply to read (tables inside one another)") from None
