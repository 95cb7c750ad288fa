"""One file watcher for every agent: watchfiles over the memory roots, changes routed to actors.

What is watched recursively: each agent's `memory/` directory, its extra directories (and the
folders holding extra files) and its session roots (`sessions_dir` and the `sessions` presets' folders;
a transcript anywhere below one is routed as transcript growth). Workspaces themselves are not watched
recursively (a workspace may be a large tree): the root notes (`MEMORY.md`, `memory.md`) and the
appearance or removal of any root are checked by a cheap stat poll every `poll_s` seconds, which
also restarts the watcher on a new root set — so folders and extra paths created after start are
picked up. When the OS watcher fails (inotify limits, EMFILE) the watcher falls back to polling
and every actor's status says so. A workspace note that changed and is there to read is handed to
its actor by name (a sync of that file alone); any other change asks for a delta sync of the tree.

A root that exists but cannot be read (EACCES) is left out of the watch and probed by the same
poll; it is part of the root set, so the watch restarts and the agent syncs (and recovers) as
soon as it is readable again — and as soon as a readable root becomes unreadable. Whatever goes
wrong in here is logged and retried with backoff: the daemon never stops because the watcher did.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import structlog
import watchfiles
from anyio.abc import TaskStatus

from memoryd.errors import describe
from memoryd.index.actor import AgentIndex
from memoryd.index.roots import place_error, still_unreadable, unreadable_roots
from memoryd.media import classify
from memoryd.sources.discovery import ROOT_NOTES, memory_file_at
from memoryd.sources.session_roots import IGNORED_DIRS, root_of, transcript_index_path

log = structlog.get_logger(__name__)

POLL_S = 2.0
WATCH_DEBOUNCE_MS = 100
POLLING_DELAY_MS = 500
RETRY_MAX_S = 60.0
"""The longest pause before the watcher tries again after an unexpected error (it doubles from POLL_S)."""
STOP_CHECK_MS = 250
"""How often the watch thread looks at its stop event. watchfiles' default (5 s) made every shutdown
and every watcher restart wait up to five seconds for the thread to notice."""


@dataclass(frozen=True, slots=True)
class _Roots:
    recursive: tuple[str, ...]
    notes: tuple[str, ...]
    unreadable: tuple[str, ...] = ()
    """Roots and folders that exist but cannot be read now: when one recovers, the set changes."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _ignored(path: str, root: str) -> bool:
    rel = os.path.relpath(path, root)
    return any(part.lower() in IGNORED_DIRS for part in Path(rel).parts)


def _is_folder_change(path: str, root: str) -> bool:
    """A folder (not ignored) below a session root was created, removed or renamed: it may hold transcripts."""
    if _ignored(path, root):
        return False
    return "." not in os.path.basename(path) or os.path.isdir(path)


def _is_dir(path: Path) -> bool:
    """A real folder (not a symlink to one); False when it cannot be inspected."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode)


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


class Watcher:
    def __init__(self, actors: Callable[[], Sequence[AgentIndex]], *, poll_s: float = POLL_S) -> None:
        self._actors = actors
        self._poll_s = poll_s
        self.polling = bool(os.environ.get("MEMORYD_FORCE_POLLING"))
        self.error: str | None = None
        self.failure: str | None = None  # the last unexpected error, until the watcher runs again
        # watchfiles' ignore_permission_denied also swallows "watch limit reached" (the watch then
        # silently misses folders), so it is turned on only after a folder was found unreadable.
        self._skip_unreadable = False
        self._restart = anyio.Event()

    def restart(self) -> None:
        """Re-read the roots now (agents were added or removed)."""
        self._restart.set()

    def _watched(self) -> list[AgentIndex]:
        return [a for a in self._actors() if a.settings.sync.watch]

    def _roots(self) -> _Roots:
        """What to watch now. Never raises: a root that cannot be inspected is `unreadable`, not watched."""
        recursive: set[str] = set()
        notes: set[str] = set()
        unreadable: set[str] = set()
        for actor in self._watched():
            agent = actor.agent
            blocked = [u.path for u in unreadable_roots(agent)]
            # Sub-folders the last sync could not list: probed too, so their recovery is noticed.
            blocked += [u.path for u in still_unreadable(actor.engine.state.degraded)]
            unreadable.update(blocked)

            def usable(path: Path, blocked: list[str] = blocked) -> bool:
                return not any(_inside(str(path), b) for b in blocked)

            if "memory" in agent.settings.sources:
                memory_dir = agent.workspace / "memory"
                if usable(memory_dir) and _is_dir(memory_dir):
                    recursive.add(str(memory_dir))
                notes.update(str(agent.workspace / n) for n in ROOT_NOTES)
                for extra in agent.extra_paths:
                    if not usable(extra):
                        continue
                    if _is_dir(extra):
                        recursive.add(str(extra))
                    elif _is_dir(extra.parent) and place_error(extra.parent) is None:
                        recursive.add(str(extra.parent))
                        notes.add(str(extra))
                    else:
                        notes.add(str(extra))
            if "sessions" in agent.settings.sources:
                recursive.update(str(r.path) for r in agent.session_roots if usable(r.path) and _is_dir(r.path))
        # Drop roots nested in other roots: one recursive watch covers them.
        ordered = sorted(recursive)
        kept = [r for r in ordered if not any(_inside(r, o) and r != o for o in ordered)]
        return _Roots(tuple(kept), tuple(sorted(notes)), tuple(sorted(unreadable)))

    def _set_mode(self) -> None:
        mode = "polling" if self.polling else "inotify"
        for actor in self._actors():
            actor.watch_mode = mode if actor.settings.sync.watch else "off"
            actor.watch_error = self.error or self.failure

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        started = False
        previous: _Roots | None = None
        replaced = False
        delay = self._poll_s
        while True:
            try:
                roots = await anyio.to_thread.run_sync(self._roots)
                if previous is not None and (roots != previous or replaced):
                    # A root appeared, vanished, was replaced or became (un)readable: files may have
                    # changed before the new watch began.
                    for actor in self._watched():
                        actor.files_changed()
                if previous is not None and roots.unreadable != previous.unreadable:
                    log.info("unreadable memory sources changed", unreadable=list(roots.unreadable))
                previous = roots
                replaced = False
                if not roots.unreadable:
                    self._skip_unreadable = False  # nothing is unreadable: a permission error means news again
                self.failure = None
                self._set_mode()
                stop = anyio.Event()
                self._restart = stop
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._poll_roots, roots, stop)
                    if not started:
                        task_status.started()
                        started = True
                    if roots.recursive:
                        replaced = await self._watch(roots, stop)
                    else:
                        await stop.wait()
                    stop.set()
                    tg.cancel_scope.cancel()
                delay = self._poll_s
            except Exception as exc:  # a bug or an unforeseen OS error: never take the daemon down with it
                self.failure = f"watcher failed: {describe(exc)}"
                log.exception("file watcher failed; trying again", error=self.failure, retry_in_s=delay)
                self._set_mode()
                if not started:
                    task_status.started()
                    started = True
                await anyio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
                previous, replaced = None, False
                for actor in self._watched():
                    actor.files_changed()  # events may have been lost: reconcile

    async def _watch(self, roots: _Roots, stop: anyio.Event) -> bool:
        """Watch until `stop`; True when a root itself was removed or replaced (its watch is then dead)."""
        try:
            async for changes in watchfiles.awatch(
                *roots.recursive,
                stop_event=stop,
                debounce=WATCH_DEBOUNCE_MS,
                force_polling=self.polling,
                poll_delay_ms=POLLING_DELAY_MS,
                rust_timeout=STOP_CHECK_MS,
                recursive=True,
                ignore_permission_denied=self._skip_unreadable,
            ):
                await self.route([path for _change, path in changes])
                # Roots are absolute, and so are the paths watchfiles reports under them.
                gone = sorted({p for c, p in changes if c is not watchfiles.Change.modified} & set(roots.recursive))
                if gone:
                    # The watch of a removed folder never reports again, even when a folder of the same
                    # name is created at once (quicker than the root poll could tell): watch afresh.
                    log.info("a watched folder was removed or replaced; watching it again", folders=gone)
                    return True
        except (OSError, RuntimeError) as exc:
            if isinstance(exc, PermissionError) and not self._skip_unreadable:
                log.info("a watched folder cannot be read; watching the others", error=str(exc))
                self._skip_unreadable = True
                return True
            # inotify watch/instance limits, EMFILE: degrade to polling and say so in status.
            if self.polling:
                log.warning(
                    "file watching failed even when polling; relying on interval and search syncs", error=str(exc)
                )
                self.error = str(exc)
                self._set_mode()
                await stop.wait()
                return False
            log.warning("file watcher failed; falling back to polling", error=str(exc))
            self.polling = True
            self.error = str(exc)
            for actor in self._actors():
                actor.files_changed()  # events may have been lost: reconcile
        return False

    async def _poll_roots(self, roots: _Roots, stop: anyio.Event) -> None:
        """Stat the root notes and check whether the root set changed; restart on a new root set."""
        seen = {p: _stat_key(p) for p in roots.notes}
        while not stop.is_set():
            with anyio.move_on_after(self._poll_s):
                await stop.wait()
            if stop.is_set():
                return
            now = await anyio.to_thread.run_sync(lambda: {p: _stat_key(p) for p in roots.notes})
            changed = [p for p in roots.notes if now.get(p) != seen.get(p)]
            seen = now
            if changed:
                await self.route(changed)
            if await anyio.to_thread.run_sync(self._roots) != roots:
                stop.set()  # a root appeared, vanished, or became readable or unreadable
                return

    async def route(self, paths: Iterable[str]) -> None:
        """Hand each changed path to the actors whose sources contain it (the paths are looked at in a
        worker thread: a checkout touching thousands of notes must not stall the searches)."""
        actors = self._watched()
        routes = await anyio.to_thread.run_sync(_plan_routes, actors, list(paths))
        for i, transcript in routes.transcripts:
            actors[i].transcript_updated(transcript)
        for i, n in routes.counts.items():
            actors[i].files_changed(n, () if i in routes.whole else tuple(routes.named.get(i, ())))


@dataclass(slots=True)
class _Routes:
    """Where one batch of changes goes, by the actor's position in the list it was planned for."""

    transcripts: list[tuple[int, Path]] = field(default_factory=list)
    counts: dict[int, int] = field(default_factory=dict)
    named: dict[int, list[Path]] = field(default_factory=dict)
    """Workspace notes there to read: a sync of those files alone."""
    whole: set[int] = field(default_factory=set)
    """Actors with any other change (a file gone or renamed, a folder, an extra path): a delta sync of
    the tree, which is what finds deletions and keeps unreadable files' rows."""


def _plan_routes(actors: Sequence[AgentIndex], paths: Sequence[str]) -> _Routes:
    """Blocking (it stats the paths): what each actor must be told about `paths`."""
    routes = _Routes()
    for path in map(os.path.abspath, paths):
        for i, actor in enumerate(actors):
            agent = actor.agent
            if "sessions" in agent.settings.sources and (root := root_of(agent.session_roots, path)) is not None:
                if transcript_index_path(agent.session_roots, path) is not None:
                    routes.transcripts.append((i, Path(path)))
                elif _is_folder_change(path, str(root.path)):
                    routes.counts[i] = routes.counts.get(i, 0) + 1  # a folder of transcripts came, went or moved
                continue
            if "memory" not in agent.settings.sources or not _is_memory_change(path, actor):
                continue
            routes.counts[i] = routes.counts.get(i, 0) + 1
            if memory_file_at(agent.workspace, Path(path)) is not None:
                routes.named.setdefault(i, []).append(Path(path))
            else:
                routes.whole.add(i)
    return routes


def _is_memory_change(path: str, actor: AgentIndex) -> bool:
    """A note, a folder that may hold some, or a media file of an extra path, among `actor`'s memory."""
    agent = actor.agent
    ws = str(agent.workspace)
    if path in {os.path.join(ws, n) for n in ROOT_NOTES}:
        return True
    extras = [str(p) for p in agent.extra_paths]
    name = os.path.basename(path)
    # An image or audio file of an enabled kind in an extra path (multimodal memory).
    if classify(name, agent.settings.multimodal.kinds) is not None:
        return any(_inside(path, root) and not _ignored(path, root) for root in extras)
    for root in [os.path.join(ws, "memory"), *extras]:
        if _inside(path, root) and not _ignored(path, root):
            # A markdown file, or a directory (created, removed or renamed) that may hold some.
            return name.lower().endswith(".md") or "." not in name or os.path.isdir(path)
    return False
