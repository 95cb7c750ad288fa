"""Where the HTTP face may listen and which Host/Origin values it answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.datastructures import Headers

from memoryd.errors import ConfigError, DaemonError
from memoryd.server.http import HttpSettings, check_exposure, is_loopback, origins_for, parse_address
from memoryd.server.tokens import TokenStore


def test_addresses() -> None:
    assert parse_address("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_address("[::1]:9000") == ("::1", 9000)
    assert parse_address(":0") == ("127.0.0.1", 0)
    for bad in ("8765", "host:", "host:99999", "host:http"):
        with pytest.raises(ConfigError):
            parse_address(bad)
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.9.1", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.2", "::", "example.com"))


def test_loopback_names_and_configured_ones_are_the_only_hosts_and_origins() -> None:
    settings = HttpSettings(
        "127.0.0.1:8765", allowed_hosts=("Memory.Example.com",), allowed_origins=("https://memory.example.com/",)
    )
    origins = origins_for("127.0.0.1", 8765, settings)

    def problem(**headers: str) -> int | None:
        found = origins.problem(Headers(headers))
        return None if found is None else found[0]

    assert problem(host="127.0.0.1:8765") is None
    assert problem(host="localhost:8765", origin="http://localhost:8765") is None
    assert problem(host="memory.example.com", origin="https://memory.example.com") is None
    assert problem(host="evil.example:8765") == 421
    assert problem(host="127.0.0.1:8766") == 421
    assert problem(host="127.0.0.1:8765", origin="http://127.0.0.1.evil.example:8765") == 403
    assert problem(host="127.0.0.1:8765", origin="null") == 403


def test_a_network_address_needs_tokens_and_http_insecure(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    check_exposure("127.0.0.1", HttpSettings("127.0.0.1:1"), store)  # loopback: always
    with pytest.raises(DaemonError, match="no tokens"):
        check_exposure("0.0.0.0", HttpSettings("0.0.0.0:1", insecure=True), store)
    store.create(["main"], read_only=True, expires_s=None)
    with pytest.raises(DaemonError, match="http_insecure"):
        check_exposure("0.0.0.0", HttpSettings("0.0.0.0:1"), store)
    check_exposure("0.0.0.0", HttpSettings("0.0.0.0:1", insecure=True), store)
