"""The settings tree: OpenClaw's `memorySearch` in snake_case, with its defaults (spec §1, §4.4).

Plain frozen dataclasses, nothing else: reading a file into them is `memoryd.config.typed`, their
ranges and clamps are `memoryd.config.normalise`, and the agents and the daemon are `memoryd.config.load`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memoryd.compat import Compat
from memoryd.media import DEFAULT_MAX_FILE_BYTES, Modality, normalise_modalities
from memoryd.qmd.settings import QmdSettings

Source = Literal["memory", "sessions"]
FtsTokenizer = Literal["unicode61", "trigram", "porter"]
TranscriptChunking = Literal["lines", "exchange"]
ProviderName = Literal["auto", "none", "local", "openai", "gemini", "voyage", "mistral", "ollama"]
FallbackName = Literal["none", "local", "openai", "gemini", "voyage", "mistral", "ollama"]
Fusion = Literal["anchored", "weighted", "rrf"]
Backend = Literal["builtin", "qmd"]
RerankProvider = Literal["none", "cohere", "voyage", "jina", "tei"]
ModalityName = Literal["image", "audio", "all"]


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
    fusion: Fusion = "anchored"
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
    min_score: float = 0.10
    """Drop results below this score. Equal fusion weights halve a one-leg match: 0.10 keeps a cosine of
    0.2 alone; whether the memory holds anything about the question at all is `min_evidence`'s call."""
    min_evidence: float = 0.12
    """A hybrid search answers nothing unless its best candidate's evidence reaches this: vector_weight x
    cosine + text_weight x keyword score x coverage (the idf-weighted share of the question's words the
    chunk holds). One common word in common is no evidence; a paraphrase with a cosine of 0.24 is."""
    keyword_strategy: Literal["relaxed", "openclaw"] = "relaxed"
    date_boost: float = 0.2
    """Results from the period a query names ("in May 2024", "last week") score this much more (0 = off)."""
    hybrid: HybridSettings = field(default_factory=HybridSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)


@dataclass(frozen=True, slots=True)
class ChunkingSettings:
    tokens: int = 400
    overlap: int = 80
    transcripts: TranscriptChunking = "lines"
    """How transcripts are cut: `lines` packs message lines as a note's lines are packed; `exchange`
    keeps each user message with the answer it got (a long answer in windows, each carrying the
    question) and writes the messages' dates into the chunk's text. A change rebuilds the index."""


@dataclass(frozen=True, slots=True)
class SessionSyncSettings:
    delta_bytes: int = 100_000
    delta_messages: int = 50
    post_compaction_force: bool = True
    debounce_ms: int = 5000


@dataclass(frozen=True, slots=True)
class TranscriptSettings:
    """How session transcripts are read (memoryd's own; OpenClaw has no sub-agents to skip)."""

    subagents: bool = False
    """Index sub-agent turns too: Claude Code's sidechain records (`isSidechain`, the `subagents/`
    files) and Codex rollouts of a sub-agent thread. Off: only the conversation the user had."""
    retain: bool = True
    """Keep a transcript's redacted text (memoryd.index.retention) so it stays searchable and readable
    after the file is deleted (Claude Code deletes sessions after 30 days). Notes are never retained."""
    retain_days: int = 0
    """Drop a deleted transcript whose last message is older than this many days; 0 keeps it forever."""


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
    long_inputs: Literal["windows", "truncate"] = "windows"
    """A chunk longer than the model reads (MiniLM: 256 tokens; a 400-token chunk is ~450): `windows`
    embeds all of it in overlapping windows pooled into one vector, `truncate` only its start."""


@dataclass(frozen=True, slots=True)
class FtsSettings:
    tokenizer: FtsTokenizer = "unicode61"


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
    quick_check: bool = True
    """Run SQLite's quick_check over the index in the background each time the agent starts (O(size):
    ~8 s for 300 MB); damage it finds is rebuilt from the sources (memoryd.index.integrity)."""
    quick_check_interval_minutes: float = 30.0
    """Then again in idle time, at most this often and only when the file changed since the last check
    (memoryd.index.checkup); 0: only at start."""


@dataclass(frozen=True, slots=True)
class CacheSettings:
    enabled: bool = True
    max_entries: int = 0  # 0 = no cap (OpenClaw's code default)


DEFAULT_MAX_MARKDOWN_BYTES = 10 * 1024 * 1024
"""`files.max_markdown_bytes`' default: a larger note is neither indexed nor served by memory_get."""

DEFAULT_MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024
"""`files.max_transcript_bytes`' default: long agent sessions with tool output reach tens of MB; a
transcript past this is skipped (status says so) rather than read into memory whole."""


@dataclass(frozen=True, slots=True)
class FilesSettings:
    """What memoryd reads of one source file (memoryd.sources.safefile applies it on the open descriptor).

    A file over its cap, a non-regular file or (by default) a hard link is skipped by indexing, refused
    by memory_get, and listed with the reason in status (`skippedFiles`).
    """

    max_markdown_bytes: int = DEFAULT_MAX_MARKDOWN_BYTES
    max_transcript_bytes: int = DEFAULT_MAX_TRANSCRIPT_BYTES
    allow_hard_links: bool = False
    """A hard link in memory/ may name a file anywhere on the file system (~/.ssh/id_ed25519, say) and
    nothing about the path shows it: such files are refused unless this is true."""


@dataclass(frozen=True, slots=True)
class ToolsSettings:
    """Which optional MCP tools the agent serves (search, get and status always are)."""

    write: bool = True
    """`memory_write`: append-only saves to the daily note or MEMORY.md."""


@dataclass(frozen=True, slots=True)
class MultimodalSettings:
    """OpenClaw's `multimodal`: images and audio in `extra_paths`, embedded by a multimodal model.

    After loading, `modalities` holds the kinds in use: `"all"` expanded, and none while disabled.
    """

    enabled: bool = False
    modalities: tuple[ModalityName, ...] = ("all",)
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES

    @property
    def kinds(self) -> tuple[Modality, ...]:
        """The kinds of media files indexed: none while disabled, both for `"all"`."""
        return normalise_modalities(self.modalities) if self.enabled else ()

    @property
    def active(self) -> bool:
        """Enabled with at least one kind: media files are indexed (OpenClaw's isMemoryMultimodalEnabled)."""
        return bool(self.kinds)


@dataclass(frozen=True, slots=True)
class MemorySearchSettings:
    """OpenClaw's `memorySearch` tree in snake_case, with its defaults (spec §1, §4.4)."""

    enabled: bool = True
    sources: tuple[Source, ...] = ("memory", "sessions")
    extra_paths: tuple[str, ...] = ()
    multimodal: MultimodalSettings = field(default_factory=MultimodalSettings)
    provider: ProviderName = "auto"
    model: str = ""
    fallback: FallbackName = "none"
    output_dimensionality: int = 0
    remote: RemoteSettings = field(default_factory=RemoteSettings)
    local: LocalSettings = field(default_factory=LocalSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    sync: SyncSettings = field(default_factory=SyncSettings)
    transcripts: TranscriptSettings = field(default_factory=TranscriptSettings)
    query: QuerySettings = field(default_factory=QuerySettings)
    cache: CacheSettings = field(default_factory=CacheSettings)
    files: FilesSettings = field(default_factory=FilesSettings)
    citations: Literal["auto", "on", "off"] = "auto"
    tools: ToolsSettings = field(default_factory=ToolsSettings)
    compat: Compat = "none"
    """`openclaw`: search exactly as OpenClaw's builtin manager (the profile in memoryd/compat.py)."""
    backend: Backend = "builtin"
    qmd: QmdSettings = field(default_factory=QmdSettings)
