"""Where API keys come from: the configured value, else the first of the provider's environment
variables that is set (shared by the embedding providers and the rerankers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def api_key(configured: str, env: Mapping[str, str], names: Sequence[str]) -> str:
    """The configured key, else the first non-empty variable of `names` in `env`, else ""."""
    return configured.strip() or next((env[n].strip() for n in names if env.get(n, "").strip()), "")
