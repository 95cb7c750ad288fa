"""Which files are an agent's memory (spec §3.1) and its session transcripts (§3.6).

Differences from OpenClaw, on purpose: the watcher's ignore list (`.git`, `node_modules`, …)
applies while indexing too, and results are sorted so every run sees the same order.
Symlinks are skipped (files, directories and extra roots alike), as upstream does.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import structlog

from memoryd.sources.transcripts import is_transcript_name

log = structlog.get_logger(__name__)

SourceKind = Literal["memory", "sessions"]

IGNORED_DIRS = frozenset({".git", "node_modules", ".pnpm-store", ".venv", "venv", ".tox", "__pycache__"})
ROOT_NOTES = ("MEMORY.md", "memory.md")


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to index: its source, the path stored in the index, and where it is on disk."""

    source: SourceKind
    path: str
    abs_path: Path


def index_path(abs_path: Path, workspace: Path) -> str:
    """Path relative to the workspace with forward slashes (extra paths outside it get `../…`)."""
    return Path(os.path.relpath(abs_path, workspace)).as_posix()


def is_ignored(rel_parts: Sequence[str]) -> bool:
    return any(part.lower() in IGNORED_DIRS for part in rel_parts)


def _is_markdown(name: str) -> bool:
    return name.lower().endswith(".md")


def _walk(root: Path) -> Iterator[Path]:
    """Regular `.md` files below `root`, skipping symlinks and ignored directories, sorted."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        log.warning("cannot list directory; skipped", path=str(root), error=exc.strerror)
        return
    for entry in entries:
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name.lower() not in IGNORED_DIRS:
                    yield from _walk(Path(entry.path))
            elif entry.is_file(follow_symlinks=False) and _is_markdown(entry.name):
                yield Path(entry.path)
        except OSError:
            continue


def _regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def list_memory_files(workspace: Path, extra_paths: Sequence[Path] = ()) -> list[SourceFile]:
    """MEMORY.md, memory.md, memory/**/*.md, then the extra paths; de-duplicated by real path."""
    found: list[Path] = [workspace / name for name in ROOT_NOTES if _regular_file(workspace / name)]
    memory_dir = workspace / "memory"
    if memory_dir.is_dir() and not memory_dir.is_symlink():
        found.extend(_walk(memory_dir))
    for extra in extra_paths:
        if extra.is_symlink():
            log.info("extra path is a symlink; skipped", path=str(extra))
            continue
        if extra.is_dir():
            found.extend(_walk(extra))
        elif _regular_file(extra) and _is_markdown(extra.name):
            found.append(extra)
    seen: set[str] = set()
    result: list[SourceFile] = []
    for path in found:
        try:
            real = os.path.realpath(path)
        except OSError:
            continue
        if real in seen:
            continue
        seen.add(real)
        result.append(SourceFile("memory", index_path(path, workspace), path))
    return result


def list_session_files(sessions_dir: Path) -> list[SourceFile]:
    """Transcripts at the top level of the sessions directory, stored as `sessions/<name>`."""
    try:
        entries = sorted(os.scandir(sessions_dir), key=lambda e: e.name)
    except OSError:
        return []
    return [
        SourceFile("sessions", f"sessions/{e.name}", Path(e.path))
        for e in entries
        if is_transcript_name(e.name) and e.is_file(follow_symlinks=False)
    ]


def is_memory_path(rel: str) -> bool:
    """OpenClaw's isMemoryPath: the root notes, DREAMS.md, or anything under memory/."""
    normalised = rel.replace("\\", "/").lstrip("./")
    return normalised in ("MEMORY.md", "memory.md", "DREAMS.md") or normalised.startswith("memory/")
