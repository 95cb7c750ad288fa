"""The token file: hashes only, 0600, verified per token; and the per-token limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.errors import ConfigError, NotFoundError
from memoryd.server.httplimits import TokenLimits
from memoryd.server.tokens import TokenStore, parse_duration


def test_a_token_is_stored_as_its_hash_only_in_a_private_file(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    token, record = store.create(["main"], read_only=True, expires_s=None)
    text = store.path.read_text()
    assert token not in text and token[len("mdt_") + 9 :] not in text  # the secret may begin with "_"
    assert record.digest in text
    assert store.path.stat().st_mode & 0o777 == 0o600
    assert TokenStore(tmp_path).verify(token) == record
    assert TokenStore(tmp_path).verify(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert store.verify("mdt_" + record.id + "_" + "x" * 43) is None
    assert store.verify("") is None


def test_revoked_and_expired_tokens_stop_verifying(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    kept, _ = store.create(["a"], read_only=False, expires_s=None)
    gone, record = store.create(["a", "b"], read_only=False, expires_s=60)
    assert store.verify(gone) is not None
    assert record.agents == ("a", "b") and not record.expired()
    assert record.expired(now_ms=record.created_ms + 60_000)
    other = TokenStore(tmp_path)  # the daemon's copy, reading the file the CLI changes
    assert other.verify(gone) is not None
    store.revoke(record.id)
    assert other.verify(gone) is None
    assert other.verify(kept) is not None
    with pytest.raises(NotFoundError):
        store.revoke(record.id)


def test_durations() -> None:
    assert parse_duration("30m") == 1800
    assert parse_duration("2w") == 14 * 86400
    for bad in ("", "0d", "3y", "-1h", "h"):
        with pytest.raises(ConfigError):
            parse_duration(bad)


def test_limits_are_per_token() -> None:
    limits = TokenLimits(per_minute=20, concurrent=1)  # a burst of 2
    assert limits.admit("a") is None
    refused = limits.admit("a")
    assert refused is not None and "concurrency" in refused
    assert limits.admit("b") is None  # another token has its own
    limits.release("a")
    assert limits.admit("a", counted=False) is None
    rate = limits.admit("a")
    assert rate is not None and "rate limit" in rate
    assert limits.retry_after("a") >= 1
