"""Multimodal memory's facts (OpenClaw's `memorySearch.multimodal`): file kinds, captions, capable models.

Images and audio files in an agent's extra paths are indexed, one chunk each, when multimodal memory
is on: the chunk's text is a caption naming the kind and the path ("Image file: vault/cat.png"), and
its vector embeds that caption together with the file's bytes, so a text query can find a picture.
Only a multimodal embedding model can do that; the config refuses multimodal memory with any other.

Pure data and small functions, used by the config (validation), discovery (which files), the
providers (who can embed media) and the search results (what a media result is).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Literal

Modality = Literal["image", "audio"]
MODALITIES: tuple[Modality, ...] = ("image", "audio")
"""OpenClaw's order; `"all"` in `multimodal.modalities` means both."""

EXTENSIONS: Mapping[Modality, tuple[str, ...]] = MappingProxyType(
    {
        "image": (".jpg", ".jpeg", ".png", ".webp", ".gif", ".heic", ".heif"),
        "audio": (".mp3", ".wav", ".ogg", ".opus", ".m4a", ".aac", ".flac"),
    }
)
"""OpenClaw's extensions per kind, matched case-insensitively at the end of the file name."""
_LABELS: Mapping[Modality, str] = MappingProxyType({"image": "Image file", "audio": "Audio file"})

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
"""OpenClaw's `multimodal.maxFileBytes`: larger files are skipped."""

NO_LINES = 0
"""startLine and endLine of a media file's chunk and search results: it has no lines."""

MEDIA_MODELS: Mapping[str, frozenset[str]] = MappingProxyType(
    {"gemini": frozenset({"gemini-embedding-2", "gemini-embedding-2-preview"})}
)
"""Embedding models that take inline image and audio parts, per provider (Gemini Embedding 2)."""
_MODEL_PREFIXES = ("models/", "gemini/", "google/")


def normalise_modalities(selected: Iterable[str]) -> tuple[Modality, ...]:
    """`"all"` expands to every kind; unknown names are dropped; OpenClaw's order, no repeats."""
    chosen = set(selected)
    return tuple(m for m in MODALITIES if m in chosen or "all" in chosen)


def classify(name: str, modalities: Sequence[Modality]) -> Modality | None:
    """The enabled kind whose extension `name` ends with, or None."""
    lower = name.lower()
    for modality in modalities:
        if lower.endswith(EXTENSIONS[modality]):
            return modality
    return None


def media_kind(path: str) -> Modality | None:
    """The kind of a media file's path, whatever is enabled now (search results, memory_get)."""
    return classify(path, MODALITIES)


def caption(modality: Modality, path: str) -> str:
    """The text of a media file's chunk: OpenClaw's `Image file: <path>` / `Audio file: <path>`."""
    return f"{_LABELS[modality]}: {path}"


def bare_model(model: str) -> str:
    """A Gemini model name without the prefixes users write (`models/`, `gemini/`, `google/`)."""
    name = model.strip()
    for prefix in _MODEL_PREFIXES:
        name = name.removeprefix(prefix)
    return name


def embeds_media(provider: str, model: str) -> bool:
    """Whether `model` of `provider` embeds images and audio."""
    return bare_model(model) in MEDIA_MODELS.get(provider, frozenset())


def media_models() -> str:
    """The models that can embed media, for error messages."""
    return "; ".join(
        f'provider = "{p}" with model = ' + " or ".join(f'"{m}"' for m in sorted(ms)) for p, ms in MEDIA_MODELS.items()
    )
