"""Typed, frozen settings: defaults = OpenClaw's (spec §1), overridden by a TOML file, env and flags.

* `settings`  — the memorySearch tree as frozen dataclasses (the defaults);
* `typed`     — TOML tables onto those dataclasses, every value checked against its declared type;
* `normalise` — the `compat` profile and OpenClaw's clamps;
* `load`      — the file: daemon, defaults and agents merged (list keys by their documented rule).

Every error names the dotted key and the bad value. Callers import from `memoryd.config`.
"""

from memoryd.config.load import (
    AGENT_ID_RE,
    AGENT_ONLY_KEYS,
    APPENDED_LISTS,
    DEFAULT_AGENT,
    AgentConfig,
    Config,
    DaemonSettings,
    build,
    load,
    read_file,
)
from memoryd.config.normalise import normalise
from memoryd.config.settings import (
    Backend,
    BatchSettings,
    CacheSettings,
    ChunkingSettings,
    FallbackName,
    FilesSettings,
    FtsSettings,
    FtsTokenizer,
    Fusion,
    HybridSettings,
    LocalSettings,
    MemorySearchSettings,
    MmrSettings,
    ModalityName,
    MultimodalSettings,
    ProviderName,
    QuerySettings,
    RemoteSettings,
    RerankProvider,
    RerankSettings,
    SessionSyncSettings,
    Source,
    StoreSettings,
    SyncSettings,
    TemporalDecaySettings,
    ToolsSettings,
    TranscriptSettings,
    VectorSettings,
)
from memoryd.config.typed import merge, to_dict
from memoryd.hooksettings import HooksSettings

__all__ = [
    "AGENT_ID_RE",
    "AGENT_ONLY_KEYS",
    "APPENDED_LISTS",
    "DEFAULT_AGENT",
    "AgentConfig",
    "Backend",
    "BatchSettings",
    "CacheSettings",
    "ChunkingSettings",
    "Config",
    "DaemonSettings",
    "FallbackName",
    "FilesSettings",
    "FtsSettings",
    "FtsTokenizer",
    "Fusion",
    "HooksSettings",
    "HybridSettings",
    "LocalSettings",
    "MemorySearchSettings",
    "MmrSettings",
    "ModalityName",
    "MultimodalSettings",
    "ProviderName",
    "QuerySettings",
    "RemoteSettings",
    "RerankProvider",
    "RerankSettings",
    "SessionSyncSettings",
    "Source",
    "StoreSettings",
    "SyncSettings",
    "TemporalDecaySettings",
    "ToolsSettings",
    "TranscriptSettings",
    "VectorSettings",
    "build",
    "load",
    "merge",
    "normalise",
    "read_file",
    "to_dict",
]
