"""What every embedding provider offers, and the fingerprint that identifies its vectors.

Vectors from different providers, models, dimensions or endpoints are not comparable, so every
stored vector and every embedding-cache row is keyed by the provider's fingerprint; a change of
fingerprint triggers a full (safe) reindex.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import orjson

Vectors = npt.NDArray[np.float32]
"""A 2-D float32 array, one L2-normalised row per input text."""

EMBEDDING_BATCH_MAX_BYTES = 8000
"""UTF-8 byte budget of one synchronous embedding request (spec §1)."""


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """Identity of a provider's vector space.

    `key_data` holds whatever else changes the vectors (base URL, headers without secrets,
    output dimensionality); `provider_key` hashes it as OpenClaw's computeProviderKey does.
    """

    provider: str
    model: str
    key_data: dict[str, object] = field(default_factory=dict)

    @property
    def provider_key(self) -> str:
        data = self.key_data or {"provider": self.provider, "model": self.model}
        return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()


NO_PROVIDER = Fingerprint(provider="none", model="fts-only", key_data={"provider": "none", "model": "fts-only"})
"""The fingerprint of keyword-only mode."""


@runtime_checkable
class EmbeddingProvider(Protocol):
    """An embedding backend. Implementations must be safe to call from the event loop.

    Blocking work (local inference) runs in a worker thread inside the implementation;
    remote calls use httpx's async client. Returned rows are L2-normalised float32 with
    non-finite values zeroed.
    """

    @property
    def id(self) -> str:
        """Provider id: local, openai, gemini, voyage, mistral, ollama."""
        ...

    @property
    def model(self) -> str: ...

    @property
    def max_input_tokens(self) -> int:
        """Largest input the model accepts, in tokens (spec §1 table)."""
        ...

    @property
    def fingerprint(self) -> Fingerprint: ...

    async def embed_query(self, text: str) -> Vectors:
        """Embed one search query; returns shape (1, dims)."""
        ...

    async def embed_documents(self, texts: list[str]) -> Vectors:
        """Embed document chunks; returns shape (len(texts), dims)."""
        ...

    async def aclose(self) -> None:
        """Release sessions, threads and model memory."""
        ...


@dataclass(frozen=True, slots=True)
class MediaInput:
    """An image or audio file to embed: its caption and its bytes, embedded together as one vector."""

    caption: str
    mime_type: str
    data: bytes


@runtime_checkable
class MediaEmbedder(Protocol):
    """A provider that can also embed images and audio (multimodal memory), when its model can."""

    @property
    def embeds_media(self) -> bool:
        """Whether the configured model takes inline image and audio parts."""
        ...

    async def embed_media(self, items: list[MediaInput]) -> Vectors:
        """One L2-normalised row per item (caption and bytes together), in input order."""
        ...


def media_embedder(provider: object) -> MediaEmbedder | None:
    """`provider` when it can embed images and audio with its model; None otherwise (media files are skipped)."""
    if isinstance(provider, MediaEmbedder) and provider.embeds_media:
        return provider
    return None


def normalize_rows(vectors: npt.ArrayLike) -> Vectors:
    """Zero non-finite values, then L2-normalise every row (rows with norm < 1e-10 stay as they are)."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    arr = np.where(np.isfinite(arr), arr, np.float32(0.0)).astype(np.float32, copy=False)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    safe = np.where(norms < 1e-10, np.float32(1.0), norms)
    return (arr / safe).astype(np.float32, copy=False)
