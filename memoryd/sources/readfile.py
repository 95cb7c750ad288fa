"""`memory_get`: read lines of a memory file, and nothing else (spec §4.1, made stricter).

Allowed: a `.md` file inside the workspace that is a memory path (MEMORY.md, memory.md,
DREAMS.md, memory/**), inside an extra directory, or equal to an extra `.md` file. Refused, with
the reason: empty paths, NUL bytes, anything that normalises outside those roots, a symlink in
any component below the root (upstream checks only the last one; #80331), non-regular files and
other extensions. The file is opened one component at a time from the root, each folder with
O_DIRECTORY|O_NOFOLLOW relative to the one before (openat), so a folder swapped for a symlink
between a check and the open cannot lead outside: no symlink is ever followed below the root.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import AccessDeniedError, NotFoundError, SourceError
from memoryd.sources.discovery import is_memory_path


@dataclass(frozen=True, slots=True)
class FileSlice:
    path: str
    text: str
    from_line: int
    lines: int
    total_lines: int
    line_numbers: tuple[int, ...] | None = None  # a transcript's: the JSONL line of each text line
    format: str | None = None  # a transcript's format (claude-code, codex, openclaw, …)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "path": self.path,
            "text": self.text,
            "from": self.from_line,
            "lines": self.lines,
            "totalLines": self.total_lines,
        }
        if self.line_numbers is not None:
            out["lineNumbers"] = list(self.line_numbers)
            out["format"] = self.format
        return out


def _inside(child: str, root: str) -> bool:
    return child == root or child.startswith(root.rstrip(os.sep) + os.sep)


_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _refusal(at: Path, exc: OSError, shown: str) -> Exception:
    """The error for a component that could not be opened without following a link."""
    if isinstance(exc, FileNotFoundError):
        return NotFoundError(f"{shown}: no such memory file")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(at.lstat().st_mode):
                return AccessDeniedError(f"{at} is a symlink; memory_get does not follow symlinks")
        if exc.errno == errno.ENOTDIR:
            return NotFoundError(f"{shown}: no such memory file")
        return AccessDeniedError(f"{at} is a symlink; memory_get does not follow symlinks")
    return SourceError(f"cannot read {shown}: {exc.strerror}")


def _open_below(root: Path, target: Path, shown: str) -> int:
    """Open `target` for reading, walking from `root` without following any symlink on the way."""
    try:
        fd = os.open(root, _DIRECTORY_FLAGS & ~os.O_NOFOLLOW)
    except OSError as exc:
        raise _refusal(root, exc, shown) from None
    at = root
    try:
        parts = target.relative_to(root).parts
        for part in parts[:-1]:
            at = at / part
            try:
                next_fd = os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _refusal(at, exc, shown) from None
            os.close(fd)
            fd = next_fd
        at = at / parts[-1]
        try:
            return os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            raise _refusal(at, exc, shown) from None
    finally:
        os.close(fd)


def resolve_allowed(raw: str, workspace: Path, extra_paths: Sequence[Path]) -> tuple[Path, Path, str]:
    """Return (absolute path, the root it is under, the path to report) or raise AccessDeniedError."""
    if not raw or not raw.strip():
        raise AccessDeniedError("path required")
    if "\x00" in raw:
        raise AccessDeniedError("path contains a NUL byte")
    text = raw.strip().replace("\\", "/")
    candidate = Path(text) if os.path.isabs(text) else workspace / text
    normal = Path(os.path.normpath(candidate))
    if not normal.name.lower().endswith(".md"):
        raise AccessDeniedError(
            f"{raw}: only markdown (.md) memory files and session transcripts (as memory_search cites them) can be read"
        )
    ws = os.path.normpath(workspace)
    if _inside(str(normal), ws):
        rel = Path(os.path.relpath(normal, ws)).as_posix()
        if is_memory_path(rel):
            return normal, Path(ws), rel
    for extra in extra_paths:
        root = Path(os.path.normpath(extra))
        if root.is_symlink():
            continue
        if root.is_dir() and _inside(str(normal), str(root)) and normal != root:
            return normal, root, Path(os.path.relpath(normal, ws)).as_posix()
        if normal == root and root.name.lower().endswith(".md"):
            return normal, root.parent, Path(os.path.relpath(normal, ws)).as_posix()
    raise AccessDeniedError(
        f"{raw}: not a memory file of this agent (allowed: MEMORY.md, memory.md, DREAMS.md, memory/**/*.md "
        "and the configured extra paths)"
    )


def read_memory_file(
    raw: str,
    workspace: Path,
    extra_paths: Sequence[Path],
    *,
    from_line: int | None = None,
    lines: int | None = None,
) -> FileSlice:
    """Read `lines` lines starting at `from_line` (1-based) of an allowed memory file."""
    target, root, shown = resolve_allowed(raw, workspace, extra_paths)
    fd = _open_below(root, target, shown)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise AccessDeniedError(f"{shown} is not a regular file")
    with os.fdopen(fd, "rb") as fh:
        data = fh.read()
    all_lines = data.decode("utf-8", errors="replace").split("\n")
    total = len(all_lines)
    start = max(1, from_line or 1)
    count = max(1, lines) if lines else total
    picked = all_lines[start - 1 : start - 1 + count]
    return FileSlice(path=shown, text="\n".join(picked), from_line=start, lines=len(picked), total_lines=total)
