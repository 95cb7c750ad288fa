"""Timestamps as status, freshness and sync reports print them: ISO-8601, UTC, milliseconds, `Z`."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(ms: int | None) -> str | None:
    """`2024-05-01T12:00:00.000Z` for epoch milliseconds; None for None or 0 (never happened)."""
    if not ms:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
