"""Which files an agent's index should hold right now, and which places could not be looked at.

A directory that exists but cannot be listed, or a file that cannot be read, is not a deletion:
its indexed rows are kept (never pruned, never dropped by a rebuild) until it can be read again.
Blocking code (directory walks): the engine runs it in worker threads.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from memoryd.config import AgentConfig
from memoryd.errors import AccessDeniedError, SourceError
from memoryd.sources.discovery import (
    SourceFile,
    index_path,
    list_all_session_files,
    list_memory_files,
    memory_file_at,
)
from memoryd.sources.session_roots import SessionRoot, root_of, split_index_path, transcript_index_path
from memoryd.store.index import IndexStore

Unlisted = tuple[str, str]
"""(source, index path) of a file or directory that exists but could not be inspected or listed."""


def discover(agent: AgentConfig, sources: Sequence[str]) -> tuple[list[SourceFile], list[Unlisted]]:
    """The files to index, and the places that exist but could not be listed (their rows are kept)."""
    files: list[SourceFile] = []
    unlisted: list[Unlisted] = []
    if "memory" in sources:
        hidden: list[Path] = []
        media = agent.settings.multimodal.kinds  # none unless multimodal memory is on
        files.extend(list_memory_files(agent.workspace, agent.extra_paths, unlisted=hidden, media=media))
        unlisted.extend(("memory", index_path(p, agent.workspace)) for p in hidden)
    if "sessions" in sources:
        folders: list[tuple[SessionRoot, Path]] = []
        files.extend(list_all_session_files(agent.session_roots, unlisted=folders))
        unlisted.extend(
            ("sessions", root.prefix if place == root.path else root.index_path(place)) for root, place in folders
        )
    return files, unlisted


def _reached_directly(root: SessionRoot, path: Path) -> bool:
    """No symlink between the root and the file: discovery walks no link, so neither does a targeted sync."""
    try:
        real, base = os.path.realpath(path), os.path.realpath(root.path)
    except OSError:
        return False
    return os.path.relpath(real, base) == os.path.relpath(os.path.normpath(path), os.path.normpath(root.path))


def session_file(agent: AgentConfig, path: Path) -> SourceFile | None:
    """The transcript at `path` as discovery would list it; None when it is not one of the agent's
    (outside every session root, an ignored folder, a symlink, not a regular file, not a transcript name)."""
    absolute = Path(os.path.abspath(path))
    root = root_of(agent.session_roots, absolute)
    rel = transcript_index_path(agent.session_roots, absolute)
    if root is None or rel is None:
        return None
    try:
        if not stat.S_ISREG(os.lstat(absolute).st_mode) or not _reached_directly(root, absolute):
            return None
    except OSError:
        return None
    return SourceFile("sessions", rel, absolute)


def targeted_sessions(agent: AgentConfig, sources: Sequence[str], session_files: Sequence[Path]) -> list[SourceFile]:
    """The named transcripts that are in one of the agent's session roots (a session-delta sync)."""
    if not session_files or "sessions" not in sources:
        return []
    found: dict[str, SourceFile] = {}
    for path in session_files:
        file = session_file(agent, path)
        if file is not None:
            found.setdefault(file.path, file)
    return list(found.values())


def targeted_memory(agent: AgentConfig, sources: Sequence[str], memory_files: Sequence[Path]) -> list[SourceFile]:
    """The named notes that are the agent's memory files (a write's targeted sync), de-duplicated."""
    if not memory_files or "memory" not in sources:
        return []
    found = (memory_file_at(agent.workspace, Path(p)) for p in dict.fromkeys(memory_files))
    return [f for f in found if f is not None]


def under(source: str, path: str, places: Sequence[Unlisted]) -> bool:
    """`path` of `source` is one of `places` or inside one."""
    return any(source == s and (path == p or path.startswith(p + "/")) for s, p in places)


def refuse_to_lose_rows(store: IndexStore, unreadable: Sequence[str], unlisted: Sequence[Unlisted]) -> None:
    """Raise SourceError if a rebuild would drop indexed files only because they could not be read."""
    cannot_read = set(unreadable)
    at_risk = sorted(
        path
        for source in ("memory", "sessions")
        for path in store.file_states(source)
        if path in cannot_read or under(source, path, unlisted)
    )
    if at_risk:
        more = " …" if len(at_risk) > 5 else ""
        raise SourceError(
            f"cannot read {', '.join(at_risk[:5])}{more}: the rebuilt index was not swapped in, so their "
            "indexed rows are kept; fix the permissions (or delete them) and sync again"
        )


def transcript_event_path(agent: AgentConfig, raw: str) -> Path:
    """Where a transcript a client says grew (`memoryd/transcriptUpdated`) is; AccessDeniedError when it is
    not a transcript in one of the agent's session roots.

    Accepted: an absolute path (also through a symlink to a root, as the client may have resolved it),
    an index path (`sessions/x.jsonl`, `claude-code/<project>/<id>.jsonl`), or a path relative to the workspace.
    """
    roots = agent.session_roots
    p = Path(raw).expanduser()
    if not p.is_absolute():
        found = split_index_path(roots, p.as_posix())
        p = found[0].path / found[1] if found is not None else agent.workspace / p
    p = Path(os.path.normpath(p))
    if transcript_index_path(roots, p) is not None:
        return p
    real = os.path.realpath(p)
    for root in roots:
        base = os.path.realpath(root.path)
        if real.startswith(base.rstrip(os.sep) + os.sep):
            candidate = Path(os.path.normpath(root.path / os.path.relpath(real, base)))
            if transcript_index_path(roots, candidate) is not None:
                return candidate
    folders = ", ".join(str(r.path) for r in roots)
    raise AccessDeniedError(f"{raw} is not a transcript in agent {agent.id!r}'s session folders ({folders})")


def discover_newest_first(agent: AgentConfig, sources: Sequence[str]) -> tuple[list[SourceFile], list[Unlisted]]:
    """`discover`, the most recently changed files first: what a user asks about first is indexed first."""
    files, unlisted = discover(agent, sources)

    def mtime(f: SourceFile) -> int:
        try:
            return os.lstat(f.abs_path).st_mtime_ns
        except OSError:
            return 0

    return sorted(files, key=mtime, reverse=True), unlisted
