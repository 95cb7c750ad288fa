"""Bearer tokens of the HTTP face: created, listed and revoked by `memoryd token`, checked per request.

A token is `mdt_<id>_<secret>`: `id` (8 hex digits) names it in `token list` and `token revoke`,
`secret` is 32 random bytes. Only sha256(token) is stored — in `<state>/http-tokens.json`, 0600,
replaced atomically — so the file alone lets nobody in. Each token is bound to one or more agents
and is either read-only (no `memory_write`) or read-write, and may expire. The daemon rereads the
file when it changes (stat per check), so a revoke takes effect on the next request, no reload needed.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from memoryd.errors import ConfigError, MemorydError, NotFoundError
from memoryd.isotime import iso
from memoryd.runtime.private import make_private_dirs

TOKENS_FILE = "http-tokens.json"
PREFIX = "mdt_"
_TOKEN_RE = re.compile(r"^mdt_([0-9a-f]{8})_([A-Za-z0-9_-]{43})$")
_DURATION_RE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """What is stored of one token: never the token, only its hash."""

    id: str
    agents: tuple[str, ...]
    read_only: bool
    created_ms: int
    expires_ms: int | None
    digest: str

    def expired(self, now_ms: int | None = None) -> bool:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        return self.expires_ms is not None and now >= self.expires_ms

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "agents": list(self.agents),
            "readOnly": self.read_only,
            "createdAt": self.created_ms,
            "expiresAt": self.expires_ms,
            "sha256": self.digest,
        }

    def describe(self) -> dict[str, object]:
        """For `token list`: everything but the hash."""
        return {
            "id": self.id,
            "agents": list(self.agents),
            "access": "read-only" if self.read_only else "read-write",
            "created": iso(self.created_ms),
            "expires": iso(self.expires_ms) if self.expires_ms else None,
            "expired": self.expired(),
        }


def parse_duration(text: str) -> int:
    """`30m`, `12h`, `7d`, `2w` as seconds (ConfigError otherwise)."""
    match = _DURATION_RE.match(text.strip().lower())
    if not match or int(match.group(1)) <= 0:
        raise ConfigError("--expires", f"{text!r} is not a duration like 30m, 12h, 7d or 2w")
    return int(match.group(1)) * _UNITS[match.group(2)]


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenStore:
    """The token file of one state directory; cheap to ask (rereads only when the file changed)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / TOKENS_FILE
        self._records: dict[str, TokenRecord] = {}
        self._seen: tuple[int, int, int] | None = None

    # ------------------------------------------------------------------ reading

    def records(self) -> list[TokenRecord]:
        self._refresh()
        return list(self._records.values())

    def verify(self, token: str) -> TokenRecord | None:
        """The live record this token is, or None (unknown, malformed, revoked or expired alike)."""
        match = _TOKEN_RE.match(token)
        if match is None:
            return None
        self._refresh()
        record = self._records.get(match.group(1))
        if record is None or not hmac.compare_digest(record.digest, digest(token)):
            return None
        return None if record.expired() else record

    def _refresh(self) -> None:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            self._records, self._seen = {}, None
            return
        except OSError as exc:
            raise MemorydError(f"cannot read {self.path}: {exc.strerror}") from exc
        seen = (info.st_ino, info.st_mtime_ns, info.st_size)
        if seen == self._seen:
            return
        self._records = self._load()
        self._seen = seen

    def _load(self) -> dict[str, TokenRecord]:
        try:
            data = orjson.loads(self.path.read_bytes())
            return {item["id"]: _record(item) for item in data.get("tokens", [])}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise MemorydError(f"{self.path} cannot be read as a token file: {exc}") from exc

    # ------------------------------------------------------------------ changing (the CLI)

    def create(self, agents: Sequence[str], *, read_only: bool, expires_s: int | None) -> tuple[str, TokenRecord]:
        """A new token (returned once, never stored) and its record."""
        records = {r.id: r for r in self.records()}
        token_id = secrets.token_hex(4)
        while token_id in records:
            token_id = secrets.token_hex(4)
        token = f"{PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
        now = int(time.time() * 1000)
        record = TokenRecord(
            id=token_id,
            agents=tuple(dict.fromkeys(agents)),
            read_only=read_only,
            created_ms=now,
            expires_ms=None if expires_s is None else now + expires_s * 1000,
            digest=digest(token),
        )
        records[token_id] = record
        self._save(list(records.values()))
        return token, record

    def revoke(self, token_id: str) -> TokenRecord:
        records = {r.id: r for r in self.records()}
        record = records.pop(token_id.removeprefix(PREFIX).split("_")[0], None)
        if record is None:
            raise NotFoundError(f"no token {token_id!r}; `memoryd token list` shows the ids")
        self._save(list(records.values()))
        return record

    def _save(self, records: list[TokenRecord]) -> None:
        """Write a new file 0600 beside the old one and rename it over: readers see one or the other."""
        make_private_dirs(self.path.parent)
        temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        payload = orjson.dumps({"version": 1, "tokens": [r.to_json() for r in records]}, option=orjson.OPT_INDENT_2)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, self.path)
        self._seen = None


def _record(item: dict[str, object]) -> TokenRecord:
    agents = item["agents"]
    expires = item.get("expiresAt")
    created = item["createdAt"]
    if not isinstance(agents, list) or not isinstance(created, int) or not isinstance(item["sha256"], str):
        raise TypeError("a token entry has the wrong shape")
    return TokenRecord(
        id=str(item["id"]),
        agents=tuple(str(a) for a in agents),
        read_only=bool(item.get("readOnly", True)),
        created_ms=created,
        expires_ms=expires if isinstance(expires, int) else None,
        digest=item["sha256"],
    )
