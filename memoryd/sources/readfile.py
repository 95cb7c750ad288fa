"""`memory_get`: read lines of a memory file, and nothing else (spec §4.1, made stricter).

Allowed: a `.md` file inside the workspace that is a memory path (MEMORY.md, memory.md,
DREAMS.md, memory/**), inside an extra directory, or equal to an extra `.md` file. Refused, with
the reason: empty paths, NUL bytes, anything that normalises outside those roots, a symlink in
any component below the root (upstream checks only the last one; #80331), non-regular files and
other extensions, files over the markdown size cap, hard links (unless allowed). The file is opened
by `memoryd.sources.safefile` one component at a time from the root, each folder with
O_DIRECTORY|O_NOFOLLOW relative to the one before (openat), so a folder swapped for a symlink
between a check and the open cannot lead outside: no symlink is ever followed below the root, and
every check is made on the opened descriptor.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memoryd.config.settings import DEFAULT_MAX_MARKDOWN_BYTES
from memoryd.errors import AccessDeniedError, NotFoundError, SourceError
from memoryd.media import media_kind
from memoryd.sources.discovery import is_memory_path
from memoryd.sources.safefile import open_checked


@dataclass(frozen=True, slots=True)
class FileSlice:
    path: str
    text: str
    from_line: int
    lines: int
    total_lines: int
    line_numbers: tuple[int, ...] | None = None  # a transcript's: the JSONL line of each text line
    format: str | None = None  # a transcript's format (claude-code, codex, openclaw, …)
    retained: bool = False  # a transcript deleted from disk, read from the retention store

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
        if self.retained:
            out["retained"] = True
        return out


def _inside(child: str, root: str) -> bool:
    return child == root or child.startswith(root.rstrip(os.sep) + os.sep)


def resolve_allowed(raw: str, workspace: Path, extra_paths: Sequence[Path]) -> tuple[Path, Path, str]:
    """Return (absolute path, the root it is under, the path to report) or raise AccessDeniedError."""
    if not raw or not raw.strip():
        raise AccessDeniedError("path required")
    if "\x00" in raw:
        raise AccessDeniedError("path contains a NUL byte")
    text = raw.strip().replace("\\", "/")
    candidate = Path(text) if os.path.isabs(text) else workspace / text
    normal = Path(os.path.normpath(candidate))
    kind = media_kind(normal.name)
    if kind is not None:
        raise AccessDeniedError(
            f"{raw}: an {kind} file has no text to read; memory_get reads markdown (.md) memory files only "
            "(its search result, path and caption, is all the index holds of it)"
        )
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
    max_bytes: int = DEFAULT_MAX_MARKDOWN_BYTES,
    allow_hard_links: bool = False,
) -> FileSlice:
    """Read `lines` lines starting at `from_line` (1-based) of an allowed memory file.

    The file is streamed (only the asked lines are kept); one over `max_bytes` is refused before any
    byte of it is read, as indexing refuses it (files.max_markdown_bytes).
    """
    target, root, shown = resolve_allowed(raw, workspace, extra_paths)
    start = max(1, from_line or 1)
    count = max(1, lines) if lines else None
    try:
        with open_checked(target, max_bytes=max_bytes, allow_hard_links=allow_hard_links, root=root, shown=shown) as f:
            picked, total = f.line_slice(start, count)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise NotFoundError(f"{shown}: no such memory file") from None
    except OSError as exc:
        raise SourceError(f"cannot read {shown}: {exc.strerror or exc}") from None
    text = "\n".join(line.decode("utf-8", errors="replace") for line in picked)
    return FileSlice(path=shown, text=text, from_line=start, lines=len(picked), total_lines=total)
