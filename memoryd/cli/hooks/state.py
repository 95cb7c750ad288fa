"""Per-session memory of what the hooks injected, so a snippet is never injected twice in one session.

One small JSON file per session under `<state dir>/hooks/` (0700; files 0600), named by a hash of the
host and session id (no id or path in a file name). Bounded: at most MAX_SEEN keys per session, and
files untouched for KEEP_DAYS, or beyond the newest MAX_SESSIONS, are pruned when a session's first
file is written. Read-modify-write holds an flock, so two hooks of one session never lose a key.
`last.json` records when each hook last ran and how much it injected (counts, never text), for status.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from memoryd.hookblock import snippet_key
from memoryd.hookruns import FOLDER, LAST_NAME, last_runs
from memoryd.runtime.private import ensure_private_dir

__all__ = ["SessionState", "last_runs", "prune", "record_run", "snippet_key"]

MAX_SEEN = 512
MAX_SESSIONS = 256
KEEP_DAYS = 14
_MODE = 0o600


def folder(state_dir: Path) -> Path:
    return state_dir / FOLDER


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, _MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def _read(fd: int) -> dict[str, object]:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    try:
        data = orjson.loads(b"".join(chunks)) if chunks else {}
    except orjson.JSONDecodeError:
        return {}  # a torn file forgets its keys: at worst a snippet is shown once more
    return data if isinstance(data, dict) else {}


def _write(fd: int, data: dict[str, object]) -> None:
    body = orjson.dumps(data)
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    os.write(fd, body)


class SessionState:
    """What one session has been shown; `seen` is read once, `remember` adds to it under the lock."""

    def __init__(self, state_dir: Path, host: str, session_id: str) -> None:
        self._dir = folder(state_dir)
        name = hashlib.blake2b(f"{host}\0{session_id}".encode(), digest_size=12).hexdigest()
        self.path = self._dir / f"{name}.json"
        self.enabled = bool(session_id)

    def seen(self) -> frozenset[str]:
        if not self.enabled:
            return frozenset()
        try:
            raw = self.path.read_bytes()
            data = orjson.loads(raw)
        except (OSError, orjson.JSONDecodeError):
            return frozenset()
        keys = data.get("seen") if isinstance(data, dict) else None
        return frozenset(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else frozenset()

    def remember(self, keys: Iterable[str]) -> None:
        if not self.enabled:
            return
        ensure_private_dir(self._dir, what="hook state directory", tighten=True)
        fresh = not self.path.exists()
        with _locked(self.path) as fd:
            data = _read(fd)
            old = data.get("seen")
            seen = [k for k in old if isinstance(k, str)] if isinstance(old, list) else []
            seen += [k for k in keys if k not in seen]
            _write(fd, {"seen": seen[-MAX_SEEN:], "updated": int(time.time())})
        if fresh:
            prune(self._dir, keep=self.path)


def prune(directory: Path, *, keep: Path, now: float | None = None) -> int:
    """Remove session files older than KEEP_DAYS and all but the newest MAX_SESSIONS; how many went."""
    now = time.time() if now is None else now
    entries: list[tuple[float, Path]] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if entry.name.endswith(".json") and entry.name != LAST_NAME and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    entries.append((entry.stat(follow_symlinks=False).st_mtime, Path(entry.path)))
    entries.sort(reverse=True)
    removed = 0
    for i, (mtime, path) in enumerate(entries):
        if path != keep and (i >= MAX_SESSIONS or now - mtime > KEEP_DAYS * 86400):
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
    return removed


def record_run(state_dir: Path, host: str, event: str, *, injected: int, chars: int, outcome: str) -> None:
    """Note in `last.json` that `host`'s `event` hook ran now: how many snippets and characters it
    injected and how it ended (`injected`, `nothing`, `captured`, `error`)."""
    directory = folder(state_dir)
    ensure_private_dir(directory, what="hook state directory", tighten=True)
    with _locked(directory / LAST_NAME) as fd:
        data = _read(fd)
        data[f"{host} {event}"] = {"at": int(time.time()), "injected": injected, "chars": chars, "outcome": outcome}
        _write(fd, data)
