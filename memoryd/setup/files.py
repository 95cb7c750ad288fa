"""Rewriting a host's (or memoryd's) configuration file safely: a backup first, then an atomic replace.

`update(path, edit)` reads the file (missing: empty), lets `edit` compute the new text, and when it
differs: copies the old file to `<name>.backup-<YYYYmmddTHHMMSS>` beside it (same mode), writes the new
text to a temporary file in the same folder, fsyncs it and renames it over the old one, keeping its
mode. A symlinked file (dotfiles) is written through to its target, so the link survives. If the file
changed while the new text was computed (the host saved it meanwhile) the edit is redone on the new
content, so nothing the host wrote is lost to a stale copy.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memoryd.errors import ConfigError

ROUNDS = 3


@dataclass(frozen=True, slots=True)
class Change:
    """What `update` did to one file."""

    path: Path
    backup: Path | None
    created: bool
    changed: bool


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError as exc:
        raise ConfigError(str(path), f"not UTF-8 text ({exc.reason}); left untouched") from None
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read it: {exc.strerror}") from None


def update(path: Path, edit: Callable[[str], str], *, now: datetime | None = None) -> Change:
    """Apply `edit` to the file's text and write the result (see the module docstring)."""
    target = Path(os.path.realpath(path))
    for _ in range(ROUNDS):
        before = _identity(target)
        old = _read(target)
        new = edit(old)
        if new == old and before is not None:
            return Change(path, None, created=False, changed=False)
        if _identity(target) != before:
            continue  # saved by someone else meanwhile: edit what is there now
        backup = _backup(target, now or datetime.now()) if before is not None else None
        _replace(target, new, before is None)
        return Change(path, backup, created=before is None, changed=True)
    raise ConfigError(str(path), "kept changing while it was updated; try again when the program using it is idle")


def _backup(path: Path, now: datetime) -> Path:
    backup = path.with_name(f"{path.name}.backup-{now:%Y%m%dT%H%M%S}")
    n = 1
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}.backup-{now:%Y%m%dT%H%M%S}-{n}")
    try:
        shutil.copy2(path, backup)
    except OSError as exc:
        raise ConfigError(str(path), f"cannot back it up to {backup}: {exc.strerror}; left untouched") from None
    return backup


def _replace(path: Path, text: str, created: bool) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o600 if created else path.stat().st_mode & 0o7777
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise ConfigError(str(path), f"cannot write it: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise ConfigError(str(path), f"cannot write it: {exc.strerror}") from None
    with contextlib.suppress(OSError):
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
