"""What every consumer may rely on: the `compat` profile applied, then OpenClaw's clamps (spec §1), and
multimodal memory refused where the chosen provider cannot embed images and audio."""

from __future__ import annotations

import dataclasses
import math

from memoryd.compat import apply_compat
from memoryd.config.settings import (
    CacheSettings,
    ChunkingSettings,
    FilesSettings,
    MemorySearchSettings,
    MmrSettings,
    MultimodalSettings,
    TemporalDecaySettings,
)
from memoryd.errors import ConfigError
from memoryd.media import embeds_media, media_models


def _clamp(value: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, value))


def normalise(s: MemorySearchSettings) -> MemorySearchSettings:
    """Apply the `compat` profile, then OpenClaw's clamps (spec §1), so every consumer sees sane values."""
    s = apply_compat(s, MemorySearchSettings())
    tokens = max(1, s.chunking.tokens)
    chunking = ChunkingSettings(
        tokens=tokens, overlap=int(_clamp(s.chunking.overlap, 0, tokens - 1)), transcripts=s.chunking.transcripts
    )
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
        min_evidence=_clamp(s.query.min_evidence, 0, 1),
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
    mm = s.multimodal
    multimodal = dataclasses.replace(mm, modalities=mm.kinds)
    files = FilesSettings(
        max_markdown_bytes=max(1, s.files.max_markdown_bytes),
        max_transcript_bytes=max(1, s.files.max_transcript_bytes),
        allow_hard_links=s.files.allow_hard_links,
    )
    return dataclasses.replace(
        s,
        chunking=chunking,
        query=query,
        sync=sync,
        remote=remote,
        cache=cache,
        sources=sources,
        multimodal=multimodal,
        files=files,
    )


def check_multimodal(s: MemorySearchSettings, prefix: str) -> None:
    """Refuse multimodal memory that cannot work (OpenClaw's rules): only a model that embeds images and
    audio can index them, and a fallback provider could not embed them, so none may be set."""
    mm: MultimodalSettings = s.multimodal
    if mm.max_file_bytes < 1:
        raise ConfigError(f"{prefix}.multimodal.max_file_bytes", f"must be at least 1 byte, got {mm.max_file_bytes}")
    if not mm.active:
        return
    if not embeds_media(s.provider, s.model):
        chosen = f'provider = "{s.provider}"' + (f' with model = "{s.model}"' if s.model else " with its default model")
        raise ConfigError(
            f"{prefix}.multimodal.enabled",
            f"images and audio need a multimodal embedding model ({media_models()}); this agent has {chosen}",
        )
    if s.fallback != "none":
        raise ConfigError(
            f"{prefix}.multimodal.enabled",
            f'a fallback provider cannot embed images and audio: set fallback = "none" (got "{s.fallback}")',
        )
