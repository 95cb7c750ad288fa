"""The installer's file operations: atomic writes, and never replacing or removing a user's edits."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memoryd.runtime.private import PRIVATE_DIR_MODE, make_private_dirs
from memoryd.service.render import ServiceInstallError, is_unedited

FILE_MODE = 0o644

Action = Literal["created", "updated", "unchanged", "removed", "absent"]


@dataclass(frozen=True, slots=True)
class FileChange:
    path: Path
    action: Action


def read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ServiceInstallError(f"cannot read {path}: {exc}") from exc


def place_all(wanted: Mapping[Path, str], *, force: bool) -> tuple[FileChange, ...]:
    """Write every file, after checking that none of them would replace a user's edits."""
    current = {path: read(path) for path in wanted}
    for path, text in wanted.items():
        old = current[path]
        if old is not None and old != text and not force and not is_unedited(old):
            raise ServiceInstallError(f"{path} was changed by hand; refusing to replace it without --force")
    changes: list[FileChange] = []
    for path, text in wanted.items():
        old = current[path]
        if old == text:
            changes.append(FileChange(path, "unchanged"))
            continue
        write(path, text)
        changes.append(FileChange(path, "created" if old is None else "updated"))
    return tuple(changes)


def check_removable(path: Path, *, force: bool) -> None:
    text = read(path)
    if text is not None and not force and not is_unedited(text):
        raise ServiceInstallError(f"{path} was changed by hand; refusing to remove it without --force")


def write(path: Path, text: str) -> None:
    """Replace `path` atomically, mode 0644 whatever the umask."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as exc:
        raise ServiceInstallError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            os.fchmod(handle.fileno(), FILE_MODE)
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise ServiceInstallError(f"cannot write {path}: {exc.strerror or exc}") from exc


def remove(path: Path) -> FileChange:
    try:
        path.unlink()
    except FileNotFoundError:
        return FileChange(path, "absent")
    except OSError as exc:
        raise ServiceInstallError(f"cannot remove {path}: {exc.strerror or exc}") from exc
    return FileChange(path, "removed")


def make_private_dir(path: Path) -> None:
    try:
        make_private_dirs(path)
        os.chmod(path, PRIVATE_DIR_MODE)
    except OSError as exc:
        raise ServiceInstallError(f"cannot create {path}: {exc.strerror or exc}") from exc
