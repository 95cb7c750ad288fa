"""Which files an agent's index should hold right now, and which places could not be looked at.

A directory that exists but cannot be listed, or a file that cannot be read, is not a deletion:
its indexed rows are kept (never pruned, never dropped by a rebuild) until it can be read again.
Blocking code (directory walks): the engine runs it in worker threads.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from memoryd.config import AgentConfig
from memoryd.errors import SourceError
from memoryd.sources.discovery import SourceFile, index_path, list_memory_files, list_session_files
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
        hidden = []
        files.extend(list_session_files(agent.sessions_dir, unlisted=hidden))
        unlisted.extend(("sessions", "sessions") for _ in hidden)
    return files, unlisted


def targeted_sessions(agent: AgentConfig, sources: Sequence[str], session_files: Sequence[Path]) -> list[SourceFile]:
    """The named transcripts that are in the agent's sessions directory (a session-delta sync)."""
    if not session_files or "sessions" not in sources:
        return []
    root = os.path.realpath(agent.sessions_dir)
    wanted = {os.path.realpath(p) for p in session_files}
    return [
        f
        for f in list_session_files(agent.sessions_dir)
        if os.path.realpath(f.abs_path) in wanted and os.path.dirname(os.path.realpath(f.abs_path)) == root
    ]


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
