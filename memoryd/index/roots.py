"""Which of an agent's sources exist but cannot be read: the agent is then degraded, not broken.

A workspace, `memory/` folder, extra path, sessions folder or sub-folder that cannot be listed
(EACCES, an I/O error) keeps its indexed rows; status and every search reply's freshness name it
with the reason, and the daemon looks again every few seconds (the watcher's root poll), so the
agent recovers by itself once the folder is readable. Nothing here raises: a probe that fails is
the answer. Blocking (it stats and lists folders): call from a worker thread.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from memoryd.config import AgentConfig
from memoryd.sources.safefile import RefusedFileError, open_checked
from memoryd.sources.session_roots import located

log = structlog.get_logger(__name__)

ROOT_NOTE_PROBE = "MEMORY.md"


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A place the agent's sources include that exists but cannot be read, and why."""

    path: str
    role: str  # workspace | memory | extraPath | sessions | folder
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "role": self.role, "reason": self.reason}

    def describe(self) -> str:
        return f"{self.path} ({self.role}): {self.reason}; its indexed rows are kept"


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def lookup_error(path: Path) -> str | None:
    """Why `path` cannot be looked up (a parent folder is not searchable), or None."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return _reason(exc)
    return None


def folder_error(path: Path) -> str | None:
    """Why the folder at `path` cannot be listed and entered, or None (readable, missing, not a folder).

    Listing needs read permission, and reading what is listed needs search permission: both are tried.
    """
    try:
        with os.scandir(path) as entries:
            next(entries, None)
        os.stat(os.path.join(path, "."))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return _reason(exc)
    return None


def place_error(path: Path) -> str | None:
    """Why `path` (a folder, or a markdown file) cannot be read, or None (readable, or missing)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return _reason(exc)
    if stat.S_ISDIR(mode):
        return folder_error(path)
    if stat.S_ISREG(mode) and path.suffix.lower() == ".md":
        try:
            # Opened the safe way (no wait on a FIFO swapped in, no symlink followed); reading is not needed.
            with open_checked(path, max_bytes=sys.maxsize, allow_hard_links=True):
                return None
        except (FileNotFoundError, NotADirectoryError, RefusedFileError):
            return None  # gone, or refused by the read rules: status lists it as skipped, not as unreadable
        except OSError as exc:
            return _reason(exc)
    return None


def _root_error(role: str, path: Path) -> str | None:
    # A workspace is never listed (only MEMORY.md, memory.md and memory/ in it are used): it must be searchable.
    return lookup_error(path / ROOT_NOTE_PROBE) if role == "workspace" else place_error(path)


def unreadable_roots(agent: AgentConfig) -> list[Unreadable]:
    """The agent's roots (workspace, memory/, each extra path, sessions folder) that cannot be read now."""
    candidates: list[tuple[str, Path]] = []
    sources = agent.settings.sources
    if "memory" in sources:
        candidates.append(("workspace", agent.workspace))
        candidates.append(("memory", agent.workspace / "memory"))
        candidates.extend(("extraPath", extra) for extra in agent.extra_paths)
    if "sessions" in sources:
        candidates.extend(("sessions", root.path) for root in agent.session_roots)
    found: list[Unreadable] = []
    for role, path in candidates:
        if any(_within(str(path), u.path) for u in found):
            continue  # inside a root already found unreadable: that one explains it
        why = _root_error(role, path)
        if why is not None:
            found.append(Unreadable(str(path), role, why))
    return found


def degraded_places(agent: AgentConfig, unlisted: Iterable[Path] = ()) -> list[Unreadable]:
    """The unreadable roots, plus folders a sync could not list (`unlisted`) that no unreadable root explains."""
    found = unreadable_roots(agent)
    for place in dict.fromkeys(unlisted):
        text = str(place)
        if any(_within(text, u.path) for u in found):
            continue
        why = place_error(place)
        if why is not None:
            found.append(Unreadable(text, "folder", why))
    return found


def still_unreadable(places: Sequence[Unreadable]) -> list[Unreadable]:
    """Those of `places` that cannot be read now, with today's reason (the others recovered)."""
    out: list[Unreadable] = []
    for place in places:
        why = _root_error(place.role, Path(place.path))
        if why is not None:
            out.append(Unreadable(place.path, place.role, why))
    return out


def unreadable_now(agent: AgentConfig, known: Sequence[Unreadable]) -> list[Unreadable]:
    """Status's live view: the roots unreadable now, plus the folders a sync found unreadable that still are."""
    found = {u.path: u for u in unreadable_roots(agent)}
    for place in still_unreadable(known):
        found.setdefault(place.path, place)
    return list(found.values())


def unlisted_paths(agent: AgentConfig, unlisted: Iterable[tuple[str, str]]) -> list[Path]:
    """Where on disk the (source, index path) places a listing could not read are."""
    out: list[Path] = []
    for source, path in unlisted:
        if source == "sessions":
            place = located(agent.session_roots, path)
            if place is not None:
                out.append(place)
        else:
            out.append(Path(os.path.normpath(agent.workspace / path)))
    return out


def track(agent_id: str, before: Sequence[Unreadable], now: list[Unreadable]) -> list[Unreadable]:
    """Log what became unreadable or readable again since the last listing (once each); returns `now`."""
    old = {u.path for u in before}
    for place in now:
        if place.path not in old:
            log.warning("cannot read a memory source; serving its indexed rows", agent=agent_id, **place.to_dict())
    for path in sorted(old - {u.path for u in now}):
        log.info("memory source readable again", agent=agent_id, path=path)
    return now
