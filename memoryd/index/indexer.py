"""One sync pass over an agent's sources: discovery -> prepare -> embed -> write, or a full rebuild.

A delta sync prepares, embeds and writes changed files in batches into the live database, then
prunes rows of files that vanished. When the index was built with other settings (spec §3.9) or a
rebuild is forced, everything is built into a temporary database that is swapped in atomically
(spec §3.10): a crash at any point leaves the old index intact.

It runs over 400 lines because one pass's order (list, prepare, keep vanished transcripts, embed what the
cache holds, write, retain, prune, then the vector backlog) reads in one place; each step's work lives in its
own module (discover, sync, embedding, retention, backlog). Splitting the backlog driver out is next.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import anyio.to_thread
import structlog

from memoryd.config import AgentConfig
from memoryd.embeddings.active import ActiveProvider
from memoryd.embeddings.base import Vectors, media_embedder
from memoryd.embeddings.batch import BatchEmbedder
from memoryd.embeddings.limits import input_limit_bytes
from memoryd.errors import CorruptDatabaseError, EmbeddingError
from memoryd.faults import crash_point
from memoryd.index import batching, plan
from memoryd.index.backlog import embed_backlog, pending_count
from memoryd.index.database import AgentDatabase
from memoryd.index.discover import (
    Unlisted,
    discover,
    discover_newest_first,
    refuse_to_lose_rows,
    targeted_memory,
    targeted_sessions,
    under,
)
from memoryd.index.embedding import embed_prepared
from memoryd.index.media_embedding import embed_media
from memoryd.index.retention import Retention
from memoryd.index.roots import degraded_places, track, unlisted_paths
from memoryd.index.state import IndexState, Progress, ProgressFn
from memoryd.index.sync import (
    TRANSIENT_REASONS,
    MediaOptions,
    Outcome,
    Prepared,
    SyncCounts,
    media_skipped,
    prepare_many,
    write_prepared,
)
from memoryd.index.tracker import Tracker
from memoryd.sources.discovery import SourceFile
from memoryd.sources.transcripts import UNKNOWN
from memoryd.store import schema
from memoryd.store.index import IndexMeta, IndexStore
from memoryd.store.reindex import Rebuild

log = structlog.get_logger(__name__)

RESTORE_FILES = 32
"""Retained transcripts restored per batch: their sizes are not known before each is read, so fewer than a
listing's batch (`batching`), whose bound in bytes keeps a batch of large transcripts from filling memory."""


class Indexer:
    """Keeps `database` true to the agent's sources; records what it did in `state`."""

    def __init__(
        self,
        agent: AgentConfig,
        database: AgentDatabase,
        provider: ActiveProvider,
        state: IndexState,
        batch: BatchEmbedder | None,
    ) -> None:
        self.agent = agent
        self.settings = agent.settings
        self._database = database
        self._active = provider
        self._state = state
        self.batch = batch
        self._warned: set[str] = set()  # unrecognised transcripts already logged (a rebuild knows no old format)
        self.retention = Retention(agent)
        self.tracker: Tracker = state.tracker
        self.keyword_first = True
        """Write chunks without the vectors the cache lacks, embed them after (`embed_backlog`)."""

    def full_reindex_reasons(self, meta: IndexMeta | None) -> list[str]:
        """Why the index must be rebuilt from scratch (spec §3.9); empty when a delta sync will do."""
        expected = self._active.provider is not None and self._database.vec.available
        if expected and meta is not None and meta.vector_dims is None:
            # Chunks waiting for their vectors (an index swapped in before them) are embedded, not rebuilt.
            expected = not pending_count(self._database.store, self._active.fingerprint.model)
        return plan.full_reindex_reasons(self.agent, self._active.fingerprint, meta, vectors_expected=expected)

    async def run(
        self,
        reason: str,
        force: bool,
        session_files: Sequence[Path],
        progress: ProgressFn | None,
        memory_files: Sequence[Path] = (),
    ) -> tuple[bool, SyncCounts]:
        """One pass: the named transcripts and notes only, a delta sync, or a full rebuild; (full?, counts)."""
        store = self._database.store
        sources = plan.effective_sources(self.agent)

        def decide() -> tuple[list[SourceFile], list[str]]:
            targeted = targeted_sessions(self.agent, sources, session_files)
            targeted += targeted_memory(self.agent, sources, memory_files)
            reasons = ["forced"] if force and not targeted else self.full_reindex_reasons(store.read_meta())
            return targeted, reasons

        targeted, reasons = await anyio.to_thread.run_sync(decide)
        if reasons == ["no index metadata"] and await anyio.to_thread.run_sync(self._claim_empty, store):
            # A first index has nothing to keep safe: it is built in place, newest files first, so the session
            # just had is searchable in seconds; killed half-way, the next start's delta sync carries on.
            log.info("first index", agent=self.agent.id, reason=reason)
            self.tracker.start("first")
            return True, await self._delta(store, sources, progress, newest_first=True)
        if reasons:
            log.info("full reindex", agent=self.agent.id, reason=reason, why=reasons)
            self.tracker.start("rebuild")
            counts, _moved = await self._full_reindex(progress)
            self._state.skipped = dict(counts.skipped)
            return True, counts
        if targeted:
            counts = await self._index(store, targeted, prune=(), full=False, progress=progress)
            self._state.dirty_sessions.difference_update(f.path for f in targeted)
            self._state.dirty_notes.difference_update(f.abs_path for f in targeted)
            for f in targeted:
                self._state.skipped.pop(f.path, None)
            self._state.skipped.update(counts.skipped)
            return False, counts
        gained = plan.sources_gained(await anyio.to_thread.run_sync(store.read_meta), sources)
        self.tracker.start("source" if gained else "delta")  # a source gained is its first index: newest first
        return False, await self._delta(store, sources, progress, newest_first=gained)

    async def _delta(
        self, store: IndexStore, sources: Sequence[str], progress: ProgressFn | None, *, newest_first: bool = False
    ) -> SyncCounts:
        """Every file of `sources` into the live index (a first index: newest first); vanished files pruned."""
        listing = discover_newest_first if newest_first else discover
        files, unlisted = await anyio.to_thread.run_sync(listing, self.agent, sources)
        await anyio.to_thread.run_sync(self._note_unreadable, unlisted)
        self.tracker.listed(len(files))
        counts = await self._index(store, files, prune=sources, keep=unlisted, full=False, progress=progress)
        counts.deleted += await anyio.to_thread.run_sync(self._settle_sources, store, sources)
        counts.transient = counts.transient or self._listing_was_short_of_resources()
        self._state.skipped = dict(counts.skipped)  # a refused file is never UNCHANGED: every sync lists them all
        self._state.dirty = False
        self._state.dirty_sessions.clear()
        self._state.dirty_notes.clear()
        return counts

    def _settle_sources(self, store: IndexStore, sources: Sequence[str]) -> int:
        """After a delta sync of `sources`: prune every row of a source no longer indexed and record the sources
        in the metadata (a source gained or lost is a delta, issue 24 item 2); the files pruned."""
        gone = [s for s in ("memory", "sessions") if s not in sources]
        meta = store.read_meta()
        fresh = None if meta is None else plan.refreshed_meta(self.agent, meta, sources)
        stale = {s: list(store.file_states(s)) for s in gone}
        if "sessions" in gone and self.retention.active:  # the sessions folder vanished, not the setting
            kept = self.retention.vanished((), self.retention.known(), lambda _path: False)
            stale["sessions"] = [path for path in stale["sessions"] if path not in kept]
        if fresh is None and not any(stale.values()):
            return 0
        with store.transaction():
            deleted = sum(store.delete_files(s, paths) for s, paths in stale.items() if paths)
            if fresh is not None:
                log.info("index sources updated", agent=self.agent.id, sources=list(fresh.sources))
                store.write_meta(fresh)
        return deleted

    def _claim_empty(self, store: IndexStore) -> bool:
        """An index without metadata that holds nothing: record what it is built with now; False if it holds rows."""
        if not store.is_empty():
            return False
        with store.transaction():
            store.write_meta(plan.desired_meta(self.agent, self._active.fingerprint, None))
        return True

    def _listing_was_short_of_resources(self) -> bool:
        """A folder could not be listed for want of descriptors or memory, not of permission: retry soon."""
        return any(place.reason in TRANSIENT_REASONS for place in self._state.degraded)

    def _note_unreadable(self, unlisted: Sequence[Unlisted]) -> None:
        """What could not be listed marks the agent degraded (status and every search say so)."""
        places = degraded_places(self.agent, unlisted_paths(self.agent, unlisted))
        self._state.degraded = track(self.agent.id, self._state.degraded, places)

    async def _index(
        self,
        store: IndexStore,
        files: Sequence[SourceFile],
        *,
        prune: Sequence[str],
        full: bool,
        progress: ProgressFn | None,
        keep: Sequence[Unlisted] = (),
    ) -> SyncCounts:
        """Prepare, embed and write `files` in batches; then prune rows of vanished files in `prune` sources
        (never of files under `keep`: places that could not be listed, whose files may well exist)."""
        states = {}
        for source in ("memory", "sessions"):
            for path, st in (await anyio.to_thread.run_sync(store.file_states, source)).items():
                states[f"{source}\x00{path}"] = st
        total = SyncCounts()
        chunking = self.settings.chunking
        rules = self.settings.files
        model = self._active.fingerprint.model
        provider = self._active.provider
        limit = None if provider is None else input_limit_bytes(provider.id, provider.model)
        media = MediaOptions(self.settings.multimodal.max_file_bytes, embeddable=media_embedder(provider) is not None)
        retention = self.retention
        known = await anyio.to_thread.run_sync(retention.known)
        for part in await anyio.to_thread.run_sync(batching.of_files, files):
            batch = files[part.start : part.stop]
            batch_states = {
                f.path: states[f"{f.source}\x00{f.path}"] for f in batch if f"{f.source}\x00{f.path}" in states
            }
            prepared = await anyio.to_thread.run_sync(
                functools.partial(
                    prepare_many,
                    batch,
                    batch_states,
                    chunking,
                    full=full,
                    max_input_bytes=limit,
                    rules=rules,
                    media=media,
                    subagents=self.settings.transcripts.subagents,
                )
            )
            self._warn_unrecognised(prepared)
            prepared = await anyio.to_thread.run_sync(retention.keep_vanished, prepared, known)
            counts = await self._embed_and_write(store, prepared, model)
            total.add(counts)
            retain = functools.partial(retention.record, prepared, known, rules, self.settings.transcripts.subagents)
            await anyio.to_thread.run_sync(retain)
            if full or counts.indexed or counts.deleted:
                crash_point("reindex:building" if full else "sync:after-batch")
            if progress is not None:
                progress(Progress("index", part.stop, len(files), total.chunks))
        gone: frozenset[str] = frozenset()
        if prune or full:  # a listing pass: retained transcripts it did not find are served from the store
            listed = (f.path for f in files if f.source == "sessions")
            held = functools.partial(under, "sessions", places=keep)
            gone = await anyio.to_thread.run_sync(retention.vanished, listed, known, held)
            if expired := await anyio.to_thread.run_sync(retention.expired):
                total.deleted += await anyio.to_thread.run_sync(self._expire, store, expired)
                gone = retention.gone
        if prune:
            seen = {f"{f.source}\x00{f.path}" for f in files}
            stale: dict[str, list[str]] = {}
            for key in states:
                source, path = key.split("\x00", 1)
                if key not in seen and not under(source, path, keep) and not (source == "sessions" and path in gone):
                    stale.setdefault(source, []).append(path)
            for source in ("memory", "sessions"):
                paths = stale.get(source, [])
                if source in prune and paths:

                    def delete(s: str = source, ps: list[str] = paths) -> int:
                        with store.transaction():
                            return store.delete_files(s, ps)

                    total.deleted += await anyio.to_thread.run_sync(delete)
        if gone:
            indexed = {k.split("\x00", 1)[1] for k in states if k.startswith("sessions\x00")}
            total.add(await self._restore(store, retention.restorable(indexed), model, limit))
        return total

    def _expire(self, store: IndexStore, paths: list[str]) -> int:
        """Drop deleted transcripts older than `transcripts.retain_days`, from the index and the store."""
        with store.transaction():
            count = store.delete_files("sessions", paths)
        self.retention.drop(paths)
        log.info("retained transcripts expired", agent=self.agent.id, count=count, days=self.retention.days)
        return count

    async def _embed_and_write(self, store: IndexStore, prepared: list[Prepared], model: str) -> SyncCounts:
        """Embed a batch of prepared files (with the cache's vectors only, keyword first) and write it, counted
        for progress; keyword-only (embedded next sync) when embedding fails."""
        vectors: list[Vectors | None] | None = None
        try:
            prepared, vectors = await self._embed(store, prepared)
        except EmbeddingError as exc:
            # Keep the index usable: write these chunks for keyword search now, embed them next sync.
            log.warning("embedding failed; indexing keyword-only for now", agent=self.agent.id, error=str(exc))
            self._state.embedding_error = str(exc)
            write = functools.partial(write_prepared, store, prepared, model, None, missing_vectors=True)
        else:
            if self._active.provider is not None:
                self._state.embedding_error = None
            write = functools.partial(write_prepared, store, prepared, model, vectors)
        counts = await anyio.to_thread.run_sync(write)
        self._track(prepared, vectors, counts)
        return counts

    async def _restore(self, store: IndexStore, paths: Sequence[str], model: str, limit: int | None) -> SyncCounts:
        """Index deleted transcripts from the retention store (a rebuild's new database lacks their rows)."""
        total = SyncCounts()
        for start in range(0, len(paths), RESTORE_FILES):
            part = paths[start : start + RESTORE_FILES]
            prepare = functools.partial(self.retention.prepare_restored, part, self.settings.chunking, limit)
            total.add(await self._embed_and_write(store, await anyio.to_thread.run_sync(prepare), model))
        if paths:
            log.info("deleted transcripts restored from the retention store", agent=self.agent.id, count=len(paths))
        return total

    def _warn_unrecognised(self, prepared: Sequence[Prepared]) -> None:
        """Log, once per file, a transcript no adapter understands (it is indexed as empty: say why)."""
        for item in prepared:
            if item.format != UNKNOWN or item.previous_format == UNKNOWN or item.file.path in self._warned:
                continue
            self._warned.add(item.file.path)
            log.warning(
                "transcript in no format memoryd reads (OpenClaw, Claude Code, Codex): indexed as empty",
                agent=self.agent.id,
                path=item.file.path,
                malformed_lines=item.bad_lines,
            )

    async def _embed(
        self, store: IndexStore, prepared: list[Prepared]
    ) -> tuple[list[Prepared], list[Vectors | None] | None]:
        """Vectors for each prepared file's chunks (None without a provider), and the prepared files as
        they are to be written: a media file the provider refused is skipped, one that changed meanwhile
        is left for the next sync."""
        provider = self._active.provider
        if provider is None:
            return prepared, None
        cache = self.settings.cache.enabled
        vectors = await embed_prepared(
            provider, store, prepared, cache=cache, batch=self.batch, cache_only=self.keyword_first
        )
        dims = next((int(v.shape[-1]) for v in vectors if v is not None), None)
        mm = self.settings.multimodal
        media = await embed_media(
            provider,
            store,
            prepared,
            cache=cache,
            dims=dims,
            rules=self.settings.files,
            max_file_bytes=mm.max_file_bytes,
        )
        out = list(prepared)
        for i, row in media.vectors.items():
            vectors[i] = row
        for i, why in media.dropped.items():
            out[i] = media_skipped(out[i], "rejected") if why == "rejected" else Prepared(out[i].file, Outcome.VANISHED)
        return out, vectors

    def _track(
        self, prepared: Sequence[Prepared], vectors: Sequence[Vectors | None] | None, counts: SyncCounts
    ) -> None:
        """Count one written batch: files seen and indexed, chunks written, and those left without a vector."""
        waiting = 0
        if self._active.provider is not None:
            for i, item in enumerate(prepared):
                if item.outcome is Outcome.CHANGED and item.media is None and (vectors is None or vectors[i] is None):
                    waiting += len(item.chunks)
        self.tracker.batch_written(len(prepared), counts.indexed, counts.chunks, waiting)

    async def embed_backlog(self, interrupted: Callable[[], bool]) -> int:
        """Embed the chunks written without vectors (keyword first), newest first, until done or `interrupted()`;
        returns how many are left. An embedding failure is recorded as a sync's is (status, the fallback switch)."""
        provider = self._active.provider
        if provider is None:
            return 0
        store = self._database.store
        try:
            cache = self.settings.cache.enabled
            left = await embed_backlog(
                provider, store, self.tracker, cache=cache, batch=self.batch, interrupted=interrupted
            )
        except EmbeddingError as exc:
            log.warning("embedding failed; chunks stay keyword-only for now", agent=self.agent.id, error=str(exc))
            self._state.embedding_error = str(exc)
            return await anyio.to_thread.run_sync(pending_count, store, provider.fingerprint.model)
        if not left:
            await anyio.to_thread.run_sync(self._note_dims, store)
        return left

    def _note_dims(self, store: IndexStore) -> None:
        """An index swapped in before its vectors records their dimension once it holds them."""
        meta = store.read_meta()
        if meta is None or meta.vector_dims is not None:
            return
        dims = _vector_dims(store)
        if dims is not None:
            with store.transaction():
                store.write_meta(dataclasses.replace(meta, vector_dims=dims))

    async def rebuild_damaged(self, progress: ProgressFn | None, set_aside: str) -> tuple[SyncCounts, Path | None]:
        """Rebuild from the sources while searches read what is left of the damaged file; at the swap the
        damaged file is moved aside under `set_aside` (never deleted). Returns the counts and where it went."""
        counts, moved = await self._full_reindex(progress, set_aside=set_aside)
        self._state.skipped = dict(counts.skipped)
        return counts, moved

    async def _full_reindex(
        self, progress: ProgressFn | None, *, set_aside: str | None = None
    ) -> tuple[SyncCounts, Path | None]:
        """Spec §3.10: build everything into a temporary database, then swap it in atomically."""
        rebuild = Rebuild(self.agent.db_path, self.settings)
        try:
            tmp_store = await anyio.to_thread.run_sync(rebuild.open)
            sources = plan.effective_sources(self.agent)
            files, unlisted = await anyio.to_thread.run_sync(discover_newest_first, self.agent, sources)
            await anyio.to_thread.run_sync(self._note_unreadable, unlisted)
            self.tracker.listed(len(files))
            counts = await self._index(tmp_store, files, prune=(), full=True, progress=progress)
            self.tracker.swapping()
            counts.transient = counts.transient or self._listing_was_short_of_resources()
            live = self._database.store
            try:
                await anyio.to_thread.run_sync(refuse_to_lose_rows, live, counts.unreadable, unlisted)
            except CorruptDatabaseError:
                if set_aside is None:
                    raise
                # The damaged file's rows cannot be read to be kept: it is moved aside whole, not lost.
            dims = await anyio.to_thread.run_sync(_vector_dims, tmp_store)
            meta = plan.desired_meta(self.agent, self._active.fingerprint, dims)
            await anyio.to_thread.run_sync(rebuild.finish, meta)
            crash_point("reindex:before-swap")
            moved = await anyio.to_thread.run_sync(functools.partial(self._database.swap, rebuild, set_aside=set_aside))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(rebuild.abort)
            raise
        self._state.dirty = False
        self._state.dirty_sessions.clear()
        self._state.dirty_notes.clear()
        return counts, moved


def _vector_dims(store: IndexStore) -> int | None:
    if not store.vec.available:
        return None
    return schema.vec_dims(store.conn)
