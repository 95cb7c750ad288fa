"""The embedding provider an agent uses right now, and why it is not the one configured.

The index writes vectors with it and the searcher embeds queries with it, so both hold the same
`ActiveProvider`; the daemon swaps the provider in place (the model finished loading, or a sync
failed over to the fallback provider) and both see the change at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from memoryd.embeddings.base import NO_PROVIDER, EmbeddingProvider, Fingerprint


@dataclass(slots=True)
class ActiveProvider:
    requested: str
    """The provider the settings ask for (`provider`), named in fallbacks."""
    provider: EmbeddingProvider | None = None
    unavailable_reason: str | None = None
    """Why the requested provider is not the one in use (or why there is none)."""
    fallback_from: str | None = None
    """The provider that failed, when its fallback is the one in use."""
    loading: str | None = None
    """The provider being created in the background (the daemon starts before its model is loaded)."""

    @property
    def fingerprint(self) -> Fingerprint:
        return self.provider.fingerprint if self.provider is not None else NO_PROVIDER

    def unready_reason(self) -> str | None:
        """Why queries cannot be embedded right now (no provider, model loading or broken); None when they can."""
        if self.provider is None:
            if self.loading is not None:
                return f"the {self.loading} embedding provider is still loading"
            return self.unavailable_reason or "no embedding provider is configured"
        state = str(getattr(self.provider, "state", "ready"))
        if state in ("loading", "error"):
            return f"the embedding model is {'still loading' if state == 'loading' else 'unavailable'}"
        return None

    def label(self) -> tuple[str, str | None]:
        """(provider, model) as replies and status name them: the provider still loading has no model yet;
        with none at all, OpenClaw's `none` / `fts-only`."""
        if self.provider is None and self.loading is not None:
            return self.loading, None
        fp = self.fingerprint
        return fp.provider, fp.model

    def fallback_info(self) -> dict[str, str] | None:
        """`{from, reason}` when the configured provider is not the one in use (or none is)."""
        if self.provider is None and self.loading is not None:
            return {"from": self.requested, "reason": self.unready_reason() or "loading"}
        reason = self.unavailable_reason
        if self.fallback_from is not None and reason:
            return {"from": self.fallback_from, "reason": reason}
        if self.provider is None and reason:
            return {"from": self.requested, "reason": reason}
        return None

    def report(self) -> dict[str, object]:
        """The provider's part of status: what embeds, what was asked for, and why they differ."""
        provider, model = self.label()
        return {
            "provider": provider,
            "model": model,
            "requestedProvider": self.requested,
            "fallback": self.fallback_info(),
            "embedding": {"provider": provider, "model": model},
            "searchMode": "hybrid" if self.provider is not None else "keyword",
            "providerUnavailableReason": self.unavailable_reason if self.loading is None else self.unready_reason(),
        }
