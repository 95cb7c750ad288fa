"""The light bridge (`memoryd mcp`) keeps the daemon's drain time (its sessions are covered by test_stdio)."""

from __future__ import annotations

from memoryd.server import bridge, connection


def test_the_bridge_drains_as_long_as_the_daemon() -> None:
    assert bridge.DRAIN_SECONDS == connection.DRAIN_SECONDS
