"""`memory_get`: read lines of a memory file, and nothing else (spec §4.1, made stricter).

Allowed: a `.md` file inside the workspace that is a memory path (MEMORY.md, memory.md,
DREAMS.md, memory/**), inside an extra directory, or equal to an extra `.md` file. Refused, with
the reason: empty paths, NUL bytes, anything that normalises outside those roots, a symlink in
any component below the root (upstream checks only the last one; #80331), non-regular files and
other extensions. The final open uses O_NOFOLLOW so a swap to a symlink after the checks fails too.
"""

from __future__ import annotations

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

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "text": self.text,
            "from": self.from_line,
            "lines": self.lines,
            "totalLines": self.total_lines,
        }


def _inside(child: str, root: str) -> bool:
    return child == root or child.startswith(root.rstrip(os.sep) + os.sep)


def _no_symlinks_below(root: Path, target: Path) -> None:
    """Refuse if any component from `root` (exclusive) down to `target` is a symlink."""
    current = root
    for part in target.relative_to(root).parts:
        current = current / part
        try:
            mode = current.lstat().st_mode
        except FileNotFoundError:
            raise NotFoundError(f"{target.name}: no such memory file") from None
        except OSError as exc:
            raise SourceError(f"cannot inspect {current}: {exc.strerror}") from exc
        if stat.S_ISLNK(mode):
            raise AccessDeniedError(f"{current} is a symlink; memory_get does not follow symlinks")


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
        raise AccessDeniedError(f"{raw}: only markdown (.md) memory files can be read")
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
    _no_symlinks_below(root, target)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise NotFoundError(f"{shown}: no such memory file") from None
    except OSError as exc:
        raise SourceError(f"cannot read {shown}: {exc.strerror}") from exc
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
