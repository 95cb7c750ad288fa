"""The stat pass: which sources differ from what the index holds, without reading any file.

A search that asks to wait for freshness runs it first, so a write made a moment before the
search (before the watcher reported it, or with no watcher at all) is indexed before it answers.
It compares size and mtime (ns) with the index's file states, as a delta sync does: a rewrite
that keeps both (same size, within the file system's timestamp granularity) is the one change
neither notices. Blocking: call from a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path

from memoryd.config import AgentConfig
from memoryd.index import plan
from memoryd.index.discover import Unlisted, discover, targeted_sessions, under
from memoryd.sources.discovery import SourceFile
from memoryd.store.index import FileState, IndexStore
from memoryd.store.readers import ReaderPool

Key = tuple[str, str]  # (source, index path)


def drifted(
    files: Iterable[SourceFile],
    states: Mapping[Key, FileState],
    *,
    gone_from: Collection[str],
    keep: Callable[[str, str], bool],
) -> list[str]:
    """Index paths of `files` that are new or changed on disk, then of indexed files of the `gone_from`
    sources that were not listed (deleted) unless `keep(source, path)` (a folder that could not be listed)."""
    out: list[str] = []
    listed: set[Key] = set()
    for f in files:
        key = (f.source, f.path)
        listed.add(key)
        state = states.get(key)
        try:
            st = os.stat(f.abs_path)
        except FileNotFoundError:
            if state is not None:
                out.append(f.path)  # deleted since it was listed
            continue
        except OSError:
            continue  # exists but cannot be inspected: a sync keeps its rows, so it is not a change
        if state is None or state.size != st.st_size or state.mtime_ns != st.st_mtime_ns:
            out.append(f.path)
    out.extend(
        path
        for source, path in states
        if source in gone_from and (source, path) not in listed and not keep(source, path)
    )
    return out


def drifted_paths(
    agent: AgentConfig, readers: ReaderPool, session_files: Sequence[Path] = (), retained: Collection[str] = ()
) -> list[str]:
    """`drifted` over the agent's sources as discovery lists them (only `session_files`, when given),
    against the index as a pooled read connection sees it. `retained`: transcripts deleted from disk and
    kept on purpose (memoryd.index.retention), which are not a change."""
    sources = plan.effective_sources(agent)
    unlisted: list[Unlisted] = []
    gone_from: tuple[str, ...] = ()
    if session_files:
        files = targeted_sessions(agent, sources, session_files)
    else:
        files, unlisted = discover(agent, sources)
        gone_from = sources
    with readers.reader() as (conn, vec):
        store = IndexStore(conn, vec)
        states = {(s, path): st for s in ("memory", "sessions") for path, st in store.file_states(s).items()}
    return drifted(
        files,
        states,
        gone_from=gone_from,
        keep=lambda source, path: (source == "sessions" and path in retained) or under(source, path, unlisted),
    )
