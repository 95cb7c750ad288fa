"""Choosing an agent's embedding provider (spec §3.12), with memoryd's defaults.

`auto` tries the local model first — it ships with memoryd, needs no key and sends nothing
anywhere — then the remote providers whose API key is configured. An explicit provider that
cannot be created falls back to `fallback` when one is set. When nothing is usable the agent
runs keyword-only, and the reason is kept for status and for every search reply.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio
import structlog

from memoryd.config import AgentConfig, MemorySearchSettings
from memoryd.embeddings.base import EmbeddingProvider
from memoryd.embeddings.gemini import GeminiProvider
from memoryd.embeddings.local import LoadState, LocalEmbeddingProvider
from memoryd.embeddings.mistral import MistralProvider
from memoryd.embeddings.ollama import OllamaProvider
from memoryd.embeddings.openai import OpenAIProvider
from memoryd.embeddings.remote import RemoteEmbeddingProvider, RemoteSettings
from memoryd.embeddings.voyage import VoyageProvider
from memoryd.errors import EmbeddingError, MemorydError

log = structlog.get_logger(__name__)

REMOTE: Mapping[str, type[RemoteEmbeddingProvider]] = {
    "openai": OpenAIProvider,
    "gemini": GeminiProvider,
    "voyage": VoyageProvider,
    "mistral": MistralProvider,
    "ollama": OllamaProvider,
}
AUTO_ORDER = ("local", "openai", "gemini", "voyage", "mistral")
"""Ollama is never picked automatically (as upstream): it needs a server the user chose to run."""


def first_candidate(settings: MemorySearchSettings) -> str | None:
    """The provider `select_provider` tries first (what is loading while it runs); None for `none`."""
    if settings.provider == "none":
        return None
    return AUTO_ORDER[0] if settings.provider == "auto" else settings.provider


@dataclass(frozen=True, slots=True)
class Selection:
    provider: EmbeddingProvider | None
    reason: str | None = None
    """Why there is no provider, or why the fallback is in use."""
    fallback_from: str | None = None


async def create_provider(
    name: str,
    settings: MemorySearchSettings,
    *,
    cache_dir: Path,
    explicit_model: bool,
    env: Mapping[str, str] | None = None,
) -> EmbeddingProvider:
    """Create (and for the local model, load) one provider; raises EmbeddingError/ConfigError."""
    if name == "local":
        local = settings.local
        provider = LocalEmbeddingProvider(
            _user_path(local.model_cache_dir) or cache_dir / "models",
            model_path=_user_path(local.model_path),
            threads=local.threads,
            windows=local.long_inputs == "windows",
        )
        if await provider.load() is not LoadState.READY:
            raise provider.error or EmbeddingError("the local model did not load")
        return provider
    cls = REMOTE.get(name)
    if cls is None:
        raise EmbeddingError(f"unknown embedding provider {name!r}")
    r = settings.remote
    remote = RemoteSettings(
        base_url=r.base_url,
        api_key=r.api_key,
        headers=dict(r.headers),
        timeout_s=r.timeout_s,
        model=settings.model if explicit_model else "",
        output_dimensionality=settings.output_dimensionality,
    )
    return cls(remote, env=env)


def _user_path(text: str) -> Path | None:
    """`~` expanded without touching the file system (os.path.expanduser reads only the environment)."""
    return Path(os.path.expanduser(text)) if text else None


async def select_provider(
    settings: MemorySearchSettings, *, cache_dir: Path, env: Mapping[str, str] | None = None
) -> Selection:
    requested = settings.provider
    if requested == "none":
        return Selection(None, "provider = none: keyword-only by configuration")
    if requested == "auto":
        reasons: list[str] = []
        for name in AUTO_ORDER:
            try:
                provider = await create_provider(name, settings, cache_dir=cache_dir, explicit_model=False, env=env)
            except MemorydError as exc:
                reasons.append(f"{name}: {exc}")
                continue
            log.info("embedding provider selected", provider=name, model=provider.model)
            return Selection(provider)
        return Selection(None, "no embedding provider available (" + "; ".join(reasons) + ")")
    try:
        return Selection(await create_provider(requested, settings, cache_dir=cache_dir, explicit_model=True, env=env))
    except MemorydError as exc:
        fallback = settings.fallback
        if fallback in ("none", requested):
            return Selection(None, f"{requested}: {exc}")
        try:
            provider = await create_provider(fallback, settings, cache_dir=cache_dir, explicit_model=False, env=env)
        except MemorydError as exc2:
            return Selection(None, f"{requested}: {exc}; fallback {fallback}: {exc2}")
        log.warning("embedding provider unavailable; using the fallback", provider=requested, fallback=fallback)
        return Selection(provider, f"{requested}: {exc}", fallback_from=requested)


class ProviderPool:
    """One provider instance per distinct provider configuration, shared by every agent that uses it.

    Agents with the same local model share one loaded model (and its single inference slot)
    instead of loading it once each; remote providers share one HTTP client and rate limit.
    """

    def __init__(self, *, cache_dir: Path, env: Mapping[str, str] | None = None) -> None:
        self._cache_dir = cache_dir
        self._env = env
        self._selections: dict[str, Selection] = {}
        self._fallbacks: dict[str, EmbeddingProvider] = {}
        self._lock = anyio.Lock()  # agents start together: one of them loads a shared model, the others wait

    @staticmethod
    def _key(settings: MemorySearchSettings, name: str) -> str:
        return repr(
            (name, settings.model, settings.fallback, settings.output_dimensionality, settings.remote, settings.local)
        )

    async def select(self, agent: AgentConfig) -> Selection:
        key = self._key(agent.settings, agent.settings.provider)
        async with self._lock:
            if key not in self._selections:
                self._selections[key] = await select_provider(agent.settings, cache_dir=self._cache_dir, env=self._env)
            return self._selections[key]

    async def fallback(self, agent: AgentConfig, name: str) -> EmbeddingProvider:
        key = self._key(agent.settings, name)
        async with self._lock:
            if key not in self._fallbacks:
                self._fallbacks[key] = await create_provider(
                    name, agent.settings, cache_dir=self._cache_dir, explicit_model=False, env=self._env
                )
            return self._fallbacks[key]

    async def aclose(self) -> None:
        providers = [s.provider for s in self._selections.values() if s.provider is not None]
        for provider in {id(p): p for p in [*providers, *self._fallbacks.values()]}.values():
            await provider.aclose()
        self._selections.clear()
        self._fallbacks.clear()
