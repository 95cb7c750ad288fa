"""Which QMD collections an agent has (spec §4.5) and keeping QMD's own list in step with them.

The plan is pure: default memory collections (the root notes and `memory/`), custom folders from
`qmd.paths`, the agent's `extra_paths` and `qmd.extra_collections`, then the exported-sessions
collection. Names get the agent's id as suffix so agents never share one by accident, are cut down
to `[a-z0-9-]` and de-duplicated with `-2`, `-3`, … An extra collection with an explicit name whose
folder lies outside the workspace keeps that name: it is meant to be shared.

`CollectionManager.ensure` then makes QMD's index (private to the agent) hold exactly these
collections: missing ones are added, ones bound to another folder or pattern are re-created,
unknown ones are removed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
import anyio.to_thread
import structlog

from memoryd.qmd.errors import QmdCommandError, QmdError
from memoryd.qmd.parse import (
    ListedCollection,
    is_already_exists,
    is_missing_collection,
    is_unsupported_option,
    parse_collection_list,
    parse_collection_show,
)
from memoryd.qmd.runner import QmdRunner
from memoryd.qmd.settings import QmdPath, QmdSettings

log = structlog.get_logger(__name__)

CollectionKind = Literal["memory", "custom", "sessions"]
DEFAULT_PATTERN = "**/*.md"
_NOT_NAME = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class ManagedCollection:
    name: str
    path: Path
    pattern: str
    kind: CollectionKind

    @property
    def source(self) -> Literal["memory", "sessions"]:
        """The memoryd source its results belong to: custom folders are memory, like extra paths."""
        return "sessions" if self.kind == "sessions" else "memory"


def sanitise_name(text: str, empty: str = "collection") -> str:
    """Lower case; every run of other characters (dashes too) becomes one `-`; no `-` at either end."""
    cleaned = _NOT_NAME.sub("-", text.lower()).strip("-")
    return cleaned or empty


def _unique(base: str, taken: set[str]) -> str:
    name = sanitise_name(base)
    candidate, n = name, 2
    while candidate in taken:
        candidate = f"{name}-{n}"
        n += 1
    taken.add(candidate)
    return candidate


def _resolve(raw: str, workspace: Path) -> Path:
    p = Path(raw.strip()).expanduser()
    return Path(os.path.normpath(p if p.is_absolute() else workspace / p))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def plan_collections(
    agent_id: str,
    workspace: Path,
    qmd: QmdSettings,
    *,
    extra_paths: Sequence[Path] = (),
    sessions_export_dir: Path | None = None,
) -> tuple[ManagedCollection, ...]:
    """Every collection the agent's QMD index should hold, in search order."""
    agent = sanitise_name(agent_id, empty="agent")
    taken: set[str] = set()
    out: list[ManagedCollection] = []
    if qmd.include_default_memory:
        for base, path, pattern in (
            ("memory-root", workspace, "MEMORY.md"),
            ("memory-alt", workspace, "memory.md"),
            ("memory-dir", workspace / "memory", DEFAULT_PATTERN),
        ):
            out.append(ManagedCollection(_unique(f"{base}-{agent}", taken), path, pattern, "memory"))
    customs: list[tuple[QmdPath, bool]] = [(p, False) for p in qmd.paths]
    customs.extend((QmdPath(path=str(p)), False) for p in extra_paths)
    customs.extend((p, True) for p in qmd.extra_collections)
    for index, (entry, shareable) in enumerate(customs, 1):
        if not entry.path.strip():
            continue
        path = _resolve(entry.path, workspace)
        pattern = entry.pattern.strip() or DEFAULT_PATTERN
        if path.suffix.lower() == ".md" and not entry.name.strip() and pattern == DEFAULT_PATTERN:
            path, pattern = path.parent, path.name  # an extra file, not a folder
        name = entry.name.strip()
        shared = bool(name) and shareable and not _inside(path, workspace)
        base = name if shared else f"{name or f'custom-{index}'}-{agent}"
        out.append(ManagedCollection(_unique(base, taken), path, pattern, "custom"))
    if sessions_export_dir is not None:
        out.append(
            ManagedCollection(_unique(f"sessions-{agent}", taken), sessions_export_dir, DEFAULT_PATTERN, "sessions")
        )
    return tuple(out)


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def _same_path(listed: str, wanted: Path) -> bool:
    return os.path.normpath(listed) == os.path.normpath(wanted)


class CollectionManager:
    """Keeps QMD's collection list equal to the plan; every call is bounded by `timeout_s`."""

    def __init__(self, runner: QmdRunner, collections: Sequence[ManagedCollection], *, timeout_s: float) -> None:
        self.runner = runner
        self.collections = tuple(collections)
        self.timeout_s = timeout_s
        self.pattern_flag = "--glob"
        self.problems: dict[str, str] = {}  # collection name -> why it could not be set up

    async def listed(self) -> dict[str, ListedCollection]:
        """QMD's collections; an unreadable listing counts as none (adding then reports the real error)."""
        try:
            out = await self.runner.run(["collection", "list", "--json"], timeout_s=self.timeout_s)
        except QmdCommandError as exc:
            log.warning("qmd collection list failed", error=str(exc))
            return {}
        return parse_collection_list(out.stdout)

    async def _details(self, name: str, listed: ListedCollection) -> ListedCollection:
        if listed.path is not None and listed.pattern is not None:
            return listed
        try:
            out = await self.runner.run(["collection", "show", name], timeout_s=self.timeout_s)
        except QmdCommandError:
            return listed
        shown = parse_collection_show(out.stdout)
        return ListedCollection(shown.path or listed.path, shown.pattern or listed.pattern)

    async def ensure(self) -> None:
        """Add, re-create and remove collections until QMD holds exactly the plan.

        A collection that cannot be added is noted in `problems` and skipped; timeouts and a
        missing binary propagate (QMD is not usable then).
        """
        self.problems = {}
        existing = await self.listed()
        wanted = {c.name for c in self.collections}
        for name in sorted(set(existing) - wanted):
            await self._remove(name)
        for collection in self.collections:
            listed = existing.get(collection.name)
            if listed is not None:
                details = await self._details(collection.name, listed)
                if self._matches(collection, details):
                    continue
                await self._remove(collection.name)
            await self._add_or_note(collection)

    def _matches(self, collection: ManagedCollection, listed: ListedCollection) -> bool:
        if listed.pattern is not None and listed.pattern != collection.pattern:
            return False
        # Without a path to compare, keep it: re-creating could lose a collection if the add then fails.
        return listed.path is None or _same_path(listed.path, collection.path)

    async def rebuild(self) -> None:
        """Remove and re-add every collection (OpenClaw's repair for corrupt collection metadata)."""
        for collection in self.collections:
            await self._remove(collection.name)
            await self._add_or_note(collection)

    async def _add_or_note(self, collection: ManagedCollection) -> None:
        try:
            await self._add(collection)
        except QmdCommandError as exc:
            if is_already_exists(exc.detail):
                await self._remove(collection.name)
                try:
                    await self._add(collection)
                except QmdCommandError as again:
                    self._note(collection, again)
                return
            self._note(collection, exc)

    def _note(self, collection: ManagedCollection, exc: QmdError) -> None:
        self.problems[collection.name] = str(exc)
        log.warning("qmd collection could not be added", collection=collection.name, error=str(exc))

    async def _add(self, collection: ManagedCollection) -> None:
        if _is_glob(collection.pattern):
            try:
                await anyio.to_thread.run_sync(lambda: collection.path.mkdir(parents=True, exist_ok=True))
            except OSError as exc:
                raise QmdCommandError(
                    f"cannot create {collection.path}: {exc.strerror}", returncode=-1, stderr=str(exc)
                ) from None
        flags = [self.pattern_flag] + [f for f in ("--glob", "--mask") if f != self.pattern_flag]
        for i, flag in enumerate(flags):
            args = ["collection", "add", str(collection.path), "--name", collection.name, flag, collection.pattern]
            try:
                await self.runner.run(args, timeout_s=self.timeout_s)
            except QmdCommandError as exc:
                if i + 1 < len(flags) and is_unsupported_option(exc.detail):
                    continue  # older QMD calls the pattern flag --mask
                raise
            self.pattern_flag = flag
            return

    async def _remove(self, name: str) -> None:
        try:
            await self.runner.run(["collection", "remove", name], timeout_s=self.timeout_s)
        except QmdCommandError as exc:
            if not is_missing_collection(exc.detail):
                log.warning("qmd collection remove failed", collection=name, error=str(exc))
