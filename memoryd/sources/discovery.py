"""Which files are an agent's memory (spec §3.1) and its session transcripts (§3.6).

Differences from OpenClaw, on purpose: the watcher's ignore list (`.git`, `node_modules`, …)
applies while indexing too, and results are sorted so every run sees the same order.
Symlinks are skipped (files, directories and extra roots alike), as upstream does.
With multimodal memory on, images and audio files of the enabled kinds are listed too, from the
extra paths only (never from `memory/`, as upstream), each with its kind. Transcripts are found in
every session root, recursively (OpenClaw reads the top level of one folder), under the same rules;
a file reachable from two roots is listed once, under the first.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import structlog

from memoryd.media import Modality, classify
from memoryd.sources.session_roots import IGNORED_DIRS, SessionRoot, is_ignored
from memoryd.sources.transcripts import is_transcript_name

log = structlog.get_logger(__name__)

SourceKind = Literal["memory", "sessions"]

ROOT_NOTES = ("MEMORY.md", "memory.md")


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to index: its source, the path stored in the index, and where it is on disk.

    `root` is the folder it was found under (the workspace, an extra folder, the sessions folder):
    readers open it from there without following any symlink (`memoryd.sources.safefile`), so a
    folder swapped for a symlink after discovery cannot lead outside. None: only the file itself
    is opened without following a symlink.
    """

    source: SourceKind
    path: str
    abs_path: Path
    root: Path | None = None
    modality: Modality | None = None
    """The kind of an image or audio file (multimodal memory); None for markdown and transcripts."""


def index_path(abs_path: Path, workspace: Path) -> str:
    """Path relative to the workspace with forward slashes (extra paths outside it get `../…`)."""
    return Path(os.path.relpath(abs_path, workspace)).as_posix()


def _is_markdown(name: str) -> bool:
    return name.lower().endswith(".md")


def _walk(
    root: Path,
    unlisted: list[Path] | None = None,
    media: Sequence[Modality] = (),
    accept: Callable[[str], bool] | None = None,
) -> Iterator[Path]:
    """Regular files below `root` — `.md` ones and media files of the `media` kinds, or those whose name
    `accept`s when given (transcripts) — skipping symlinks and ignored directories, sorted.

    A directory that exists but cannot be listed is added to `unlisted`: its files are not
    gone, and the caller must not treat them as deleted.
    """
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except FileNotFoundError:
        return
    except OSError as exc:
        log.warning("cannot list directory; its files keep their rows", path=str(root), error=exc.strerror)
        if unlisted is not None:
            unlisted.append(root)
        return
    for entry in entries:
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name.lower() not in IGNORED_DIRS:
                    yield from _walk(Path(entry.path), unlisted, media, accept)
            elif entry.is_file(follow_symlinks=False) and (
                accept(entry.name)
                if accept is not None
                else _is_markdown(entry.name) or classify(entry.name, media) is not None
            ):
                yield Path(entry.path)
        except OSError:
            continue


class _RealPaths:
    """Real paths of discovered files, for de-duplication, resolving each root once.

    A discovered file is reached from its root without a symlink (the walk follows none, root notes
    and extra files are lstat-ed regular files), so its real path is the root's plus the rest.
    `os.path.realpath` per file lstat-ed every ancestor: ~10 system calls a file, each of which
    gave up the GIL, so a sync beside busy searches waited on it thousands of times.
    """

    def __init__(self) -> None:
        self._roots: dict[Path, str | None] = {}

    def __call__(self, path: Path, root: Path) -> str | None:
        if root not in self._roots:
            try:
                self._roots[root] = os.path.realpath(root)
            except OSError:
                self._roots[root] = None
        real_root = self._roots[root]
        if real_root is None:
            return None
        return os.path.join(real_root, os.path.relpath(path, root))


def _mode(path: Path, unlisted: list[Path] | None) -> int | None:
    """`lstat` mode of `path`; None when it does not exist, or cannot be inspected (then noted in `unlisted`)."""
    try:
        return path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        if unlisted is not None:
            unlisted.append(path)
        return None


def _regular_file(path: Path, unlisted: list[Path] | None = None) -> bool:
    mode = _mode(path, unlisted)
    return mode is not None and stat.S_ISREG(mode)


def list_memory_files(
    workspace: Path,
    extra_paths: Sequence[Path] = (),
    *,
    unlisted: list[Path] | None = None,
    media: Sequence[Modality] = (),
) -> list[SourceFile]:
    """MEMORY.md, memory.md, memory/**/*.md, then the extra paths; de-duplicated by real path.

    `media`: the kinds of image and audio files also taken from the extra paths (multimodal memory).
    Paths that exist but cannot be inspected or listed (permissions, I/O errors) are appended to
    `unlisted`, so that a sync keeps the rows of the files it could not see.
    """
    found: list[tuple[Path, Path]] = [
        (workspace / name, workspace) for name in ROOT_NOTES if _regular_file(workspace / name, unlisted)
    ]
    memory_dir = workspace / "memory"
    mode = _mode(memory_dir, unlisted)
    if mode is not None and stat.S_ISDIR(mode):
        found.extend((p, workspace) for p in _walk(memory_dir, unlisted))
    for extra in extra_paths:
        mode = _mode(extra, unlisted)
        if mode is None:
            continue
        if stat.S_ISLNK(mode):
            log.info("extra path is a symlink; skipped", path=str(extra))
            continue
        if stat.S_ISDIR(mode):
            found.extend((p, extra) for p in _walk(extra, unlisted, media))
        elif stat.S_ISREG(mode) and (_is_markdown(extra.name) or classify(extra.name, media) is not None):
            found.append((extra, extra.parent))
    seen: set[str] = set()
    result: list[SourceFile] = []
    real_of = _RealPaths()
    for path, root in found:
        real = real_of(path, root)
        if real is None:
            continue
        if real in seen:
            continue
        seen.add(real)
        kind = None if _is_markdown(path.name) else classify(path.name, media)
        result.append(SourceFile("memory", index_path(path, workspace), path, root, kind))
    return result


def memory_file_at(workspace: Path, path: Path) -> SourceFile | None:
    """`path` as `list_memory_files` lists it — a root note or a markdown file below `memory/`, no symlink
    and no ignored folder on the way — or None; without walking the tree (a write's targeted sync)."""
    try:
        rel = Path(os.path.relpath(path, workspace))
    except ValueError:
        return None
    parts = rel.parts
    if not parts or parts[0] == ".." or not _is_markdown(rel.name):
        return None
    if len(parts) == 1:
        if rel.name not in ROOT_NOTES:
            return None
    elif parts[0] != "memory" or is_ignored(parts[1:-1]):
        return None
    at = workspace
    for part in parts[:-1]:
        at = at / part
        mode = _mode(at, None)
        if mode is None or not stat.S_ISDIR(mode):
            return None
    if not _regular_file(path):
        return None
    return SourceFile("memory", rel.as_posix(), path, workspace)


def list_session_files(root: SessionRoot, *, unlisted: list[Path] | None = None) -> list[SourceFile]:
    """Transcripts anywhere below the root (not through symlinks or ignored folders), stored as
    `<prefix>/<path below the root>`: `sessions/<name>` for those at the top of `sessions_dir`.

    Folders that exist but cannot be listed (the root itself included) are appended to `unlisted`.
    """
    try:
        mode = os.stat(root.path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        log.warning("cannot look at a sessions folder; its transcripts keep their rows", error=exc.strerror)
        if unlisted is not None:
            unlisted.append(root.path)
        return []
    if not stat.S_ISDIR(mode):
        return []
    return [
        SourceFile("sessions", root.index_path(path), path, root.path)
        for path in _walk(root.path, unlisted, accept=is_transcript_name)
    ]


def list_all_session_files(
    roots: Sequence[SessionRoot], *, unlisted: list[tuple[SessionRoot, Path]] | None = None
) -> list[SourceFile]:
    """The transcripts of every root, each file once (by real path: the first root that reaches it)."""
    seen: set[str] = set()
    out: list[SourceFile] = []
    real_of = _RealPaths()
    for root in roots:
        hidden: list[Path] = []
        for file in list_session_files(root, unlisted=hidden):
            real = real_of(file.abs_path, root.path)
            if real is None:
                continue
            if real not in seen:
                seen.add(real)
                out.append(file)
        if unlisted is not None:
            unlisted.extend((root, place) for place in hidden)
    return out


MEMORY_PATH_NOTES = ("MEMORY.md", "memory.md", "DREAMS.md")


def is_memory_path(rel: str) -> bool:
    """OpenClaw's isMemoryPath, by path components: a root note (MEMORY.md, memory.md, DREAMS.md) or
    anything whose first folder is `memory`. `.` components are dropped; a `..` is never a memory path.

    Upstream strips leading `.` and `/` characters and tests a prefix, so `.memory/x.md`,
    `..memory/x.md` and `.MEMORY.md` passed as memory files; a component test does not let them.
    """
    parts = [part for part in rel.replace("\\", "/").split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return False
    if len(parts) == 1:
        return parts[0] in MEMORY_PATH_NOTES
    return parts[0] == "memory"
