"""Where an agent's transcripts live: one or more session roots, each named in results by its prefix.

A root is a folder walked recursively (the memory walk's ignore rules, no symlinks). A transcript's
index path is `<prefix>/<path below the root>` with forward slashes: `sessions/<file>` for the
agent's `sessions_dir` (as before), `claude-code/…`, `codex/…`, `openclaw/…` for the presets. The
prefix is one path segment, so a path names its root unambiguously, and the two directions here
(file -> index path, index path -> file) agree with what discovery stores.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from memoryd.config.sessions import SESSIONS_PREFIX, SessionRoot
from memoryd.sources.transcripts import is_transcript_name

__all__ = [
    "IGNORED_DIRS",
    "SESSIONS_PREFIX",
    "SessionRoot",
    "is_ignored",
    "located",
    "root_of",
    "split_index_path",
    "transcript_index_path",
]

IGNORED_DIRS = frozenset({".git", "node_modules", ".pnpm-store", ".venv", "venv", ".tox", "__pycache__"})


def is_ignored(rel_parts: Sequence[str]) -> bool:
    return any(part.lower() in IGNORED_DIRS for part in rel_parts)


def _inside(child: str, root: str) -> bool:
    return child == root or child.startswith(root.rstrip(os.sep) + os.sep)


def root_of(roots: Sequence[SessionRoot], file: Path | str) -> SessionRoot | None:
    """The first root that holds `file` (by its normalised absolute path), as discovery assigns it."""
    normal = os.path.normpath(os.path.abspath(file))
    for root in roots:
        base = os.path.normpath(os.path.abspath(root.path))
        if normal != base and _inside(normal, base):
            return root
    return None


def transcript_index_path(roots: Sequence[SessionRoot], file: Path | str) -> str | None:
    """The index path of a transcript file in one of `roots`; None when it is not one (outside every
    root, in an ignored folder, or not named like a transcript)."""
    root = root_of(roots, file)
    if root is None or not is_transcript_name(os.path.basename(file)):
        return None
    path = root.index_path(file)
    if is_ignored(path.split("/")[1:-1]):
        return None
    return path


def split_index_path(roots: Sequence[SessionRoot], path: str) -> tuple[SessionRoot, str] | None:
    """(root, the part below it) for an index path `<prefix>/<rest>`; None when no root has that prefix."""
    prefix, sep, rest = path.partition("/")
    if not sep or not rest:
        return None
    for root in roots:
        if root.prefix == prefix:
            return root, rest
    return None


def located(roots: Sequence[SessionRoot], path: str) -> Path | None:
    """Where on disk the index path `path` (a transcript or a folder below a root) is; None if no root has it."""
    found = split_index_path(roots, path)
    if found is None:
        for root in roots:
            if path == root.prefix:
                return root.path
        return None
    root, rest = found
    return Path(os.path.normpath(root.path / rest))
