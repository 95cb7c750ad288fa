"""What an agent's index should be built from, and whether the one on disk still is (spec §3.9).

The index metadata records the model, provider, chunking, sources and tokenizer it was built with.
Only what changes the vectors or the rows of a file already indexed rebuilds from scratch: the model,
provider, chunking, tokenizer, multimodal and transcript settings (issue 24, item 2). Which sources and
extra paths the index covers does not: a source gained (`sessions` gaining `codex`, a new extra path) is
new files for a delta sync to add, a source lost is rows for it to prune; the sync then records the
sources in the metadata (`refreshed_meta`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

import orjson

from memoryd.config import AgentConfig, MultimodalSettings
from memoryd.embeddings.base import Fingerprint
from memoryd.store.index import IndexMeta, now_ms


def effective_sources(agent: AgentConfig, indexed: Sequence[str] | None = None) -> tuple[str, ...]:
    """The configured sources that exist: no sessions without a session root that is a folder.

    A session root that cannot be inspected now (a folder above it is unreadable) changes nothing:
    sessions count as they do in `indexed` (the sources the index was built with), or as present
    when that is not known — an unreadable folder must never look like a deleted one.
    """
    configured = agent.settings.sources
    out = [s for s in ("memory", "sessions") if s in configured]
    if "sessions" in out:
        found = [_is_dir(root.path) for root in agent.session_roots]
        present = True if any(found) else None if None in found else False
        if present is None:
            present = indexed is None or "sessions" in indexed
        if not present:
            out.remove("sessions")
    return tuple(out)


def _is_dir(path: Path) -> bool | None:
    """Whether `path` is a folder; None when it cannot be inspected now."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return None


def scope_report(agent: AgentConfig) -> dict[str, object]:
    """The scope's part of status: where the agent's sources are and which of them are indexed."""
    return {
        "workspaceDir": str(agent.workspace),
        "sessionsDir": str(agent.sessions_dir),
        "sessionRoots": [root.to_dict() for root in agent.session_roots],
        "sources": list(effective_sources(agent)),
        "extraPaths": [str(p) for p in agent.extra_paths],
        "multimodal": {
            "enabled": agent.settings.multimodal.active,
            "modalities": list(agent.settings.multimodal.kinds),
            "maxFileBytes": agent.settings.multimodal.max_file_bytes,
        },
    }


def multimodal_scope(mm: MultimodalSettings) -> dict[str, object]:
    """What of the multimodal settings decides which files the index holds (OpenClaw's scope hash part).

    Off, it is the same whatever the other keys say (so neither a size limit nor kinds of a disabled
    feature rebuild the index), and the same as before multimodal memory existed, so upgrading rebuilds nothing.
    """
    if not mm.active:
        return {"enabled": False, "modalities": [], "maxFileBytes": 0}
    return {"enabled": True, "modalities": sorted(mm.kinds), "maxFileBytes": mm.max_file_bytes}


def scope_hash(agent: AgentConfig, *, legacy: bool = False) -> str:
    """What decides the rows of a file: multimodal settings (a change rebuilds the index); memoryd's transcript
    switches join only when set, so an index built before they existed is not rebuilt. `legacy`: the hash as
    memoryd wrote it before extra paths left it (they are a delta now): an index written so with today's extra
    paths is not rebuilt either."""
    data: dict[str, object] = {"multimodal": multimodal_scope(agent.settings.multimodal)}
    if legacy:
        data = {"extraPaths": sorted(p.as_posix() for p in agent.extra_paths), **data}
    else:
        data["scope"] = 2
    if agent.settings.transcripts.subagents:
        data["transcripts"] = {"subagents": True}
    return hashlib.sha256(orjson.dumps(data)).hexdigest()


def sources_gained(meta: IndexMeta | None, sources: Sequence[str]) -> bool:
    """The index is to cover a source it was not built with (its first index is due, as a delta)."""
    return meta is not None and bool(set(sources) - set(meta.sources))


def refreshed_meta(agent: AgentConfig, meta: IndexMeta, indexed: Sequence[str]) -> IndexMeta | None:
    """`meta` with the sources a delta sync just indexed (`indexed`) and today's scope hash; None when the
    metadata already says so. Everything that would have rebuilt the index is as it was (else no delta)."""
    sources = tuple(sorted(indexed))
    current = scope_hash(agent)
    if tuple(sorted(meta.sources)) == sources and meta.scope_hash == current:
        return None
    return dataclasses.replace(meta, sources=sources, scope_hash=current)


def desired_meta(
    agent: AgentConfig, fp: Fingerprint, vector_dims: int | None, *, indexed: Sequence[str] | None = None
) -> IndexMeta:
    settings = agent.settings
    return IndexMeta(
        model=fp.model,
        provider=fp.provider,
        provider_key=fp.provider_key,
        sources=effective_sources(agent, indexed),
        scope_hash=scope_hash(agent),
        chunk_tokens=settings.chunking.tokens,
        chunk_overlap=settings.chunking.overlap,
        fts_tokenizer=settings.store.fts.tokenizer,
        vector_dims=vector_dims,
        built_at=now_ms(),
        chunk_transcripts=settings.chunking.transcripts,
    )


def full_reindex_reasons(
    agent: AgentConfig, fp: Fingerprint, meta: IndexMeta | None, *, vectors_expected: bool
) -> list[str]:
    """Why the index must be rebuilt from scratch; empty when a delta sync will do.

    `vectors_expected`: a provider is in use and sqlite-vec is loaded, so an index without vector
    dimensions was built without vectors and must be rebuilt with them.
    """
    if meta is None:
        return ["no index metadata"]
    want = desired_meta(agent, fp, None, indexed=meta.sources)
    checks = [
        (meta.model != want.model, f"model {meta.model} -> {want.model}"),
        (meta.provider != want.provider, f"provider {meta.provider} -> {want.provider}"),
        (meta.provider_key != want.provider_key, "provider settings changed"),
        (
            meta.scope_hash not in (want.scope_hash, scope_hash(agent, legacy=True)),
            "multimodal or transcript settings changed",
        ),
        (meta.chunk_tokens != want.chunk_tokens, "chunk size changed"),
        (meta.chunk_overlap != want.chunk_overlap, "chunk overlap changed"),
        (
            meta.chunk_transcripts != want.chunk_transcripts,
            f"transcript chunking {meta.chunk_transcripts} -> {want.chunk_transcripts}",
        ),
        (
            meta.fts_tokenizer != want.fts_tokenizer,
            f"tokenizer {meta.fts_tokenizer} -> {want.fts_tokenizer}",
        ),
        (vectors_expected and meta.vector_dims is None, "vectors missing"),
    ]
    return [why for changed, why in checks if changed]
