"""Delta sync of one agent's files into an IndexStore (spec §3.7 steps 4–6).

Blocking code: the engine runs it in worker threads. Reading and chunking (`prepare`) is
separate from writing (`write_prepared`) so embedding can happen in between, off the thread.

Rules that differ from OpenClaw on purpose:
* a file whose size and mtime (ns) are unchanged is not read again (a no-change resync of
  10k files takes a stat per file, not a read and a hash);
* an unreadable file keeps its old rows and is never pruned as deleted (basic-memory #1007);
* malformed transcript lines are counted per file (`files.bad_lines`) and shown by status.

A media file (multimodal memory) is one chunk, its caption, with no lines; one that cannot be indexed
now (too large, not what its name says, nothing to embed it, refused by the provider) keeps a file
row without chunks whose hash names the reason, so it is neither read again nor reported as changed
until it changes, and status can count it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

import structlog

from memoryd.config import ChunkingSettings
from memoryd.embeddings.base import Vectors
from memoryd.media import DEFAULT_MAX_FILE_BYTES, NO_LINES, Modality
from memoryd.sources.chunking import Chunk, chunk_markdown, split_for_input_limit
from memoryd.sources.discovery import SourceFile
from memoryd.sources.media import MediaRef, SkipReason, describe
from memoryd.sources.transcripts import chunk_transcript, parse_transcript
from memoryd.store.index import SKIPPED, FileState, IndexStore

log = structlog.get_logger(__name__)


NO_VECTORS = "novec:"
"""Prefix of a stored file hash whose chunks were written without vectors (embedding failed):
such a file never matches its content hash, so the next sync embeds it again."""


class Outcome(Enum):
    UNCHANGED = "unchanged"  # size and mtime match: not even read
    TOUCHED = "touched"  # read, same hash, new mtime
    CHANGED = "changed"  # new or different content: chunks to write
    UNREADABLE = "unreadable"  # exists but cannot be read: old rows kept
    VANISHED = "vanished"  # deleted between listing and reading
    SKIPPED = "skipped"  # a media file not indexed now: a file row without chunks, naming why


@dataclass(slots=True)
class Prepared:
    file: SourceFile
    outcome: Outcome
    hash: str = ""
    mtime_ns: int = 0
    size: int = 0
    bad_lines: int = 0
    chunks: list[Chunk] = field(default_factory=list)
    error: str = ""
    media: MediaRef | None = None
    """A media file to embed with its bytes (re-read at embedding time); None for text."""

    @property
    def skip(self) -> str:
        """Why a media file is not indexed (SKIPPED, or UNCHANGED since it was skipped); "" otherwise."""
        return self.hash.removeprefix(SKIPPED) if self.hash.startswith(SKIPPED) else ""


@dataclass(frozen=True, slots=True)
class MediaOptions:
    """How media files are prepared: their size limit, and whether the provider in use can embed them."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    embeddable: bool = False


def skipped(item: Prepared, reason: SkipReason) -> Prepared:
    """`item` as a media file that is not indexed, for `reason`."""
    return Prepared(item.file, Outcome.SKIPPED, hash=SKIPPED + reason, mtime_ns=item.mtime_ns, size=item.size)


def read_source(path: os.PathLike[str] | str) -> bytes:
    """Read a source file whole (its own function so fault tests can make one file unreadable)."""
    with open(path, "rb") as fh:
        return fh.read()


def prepare(
    file: SourceFile,
    state: FileState | None,
    chunking: ChunkingSettings,
    *,
    full: bool,
    max_input_bytes: int | None = None,
    media: MediaOptions | None = None,
) -> Prepared:
    """Stat, read, hash and chunk one file, deciding whether its rows must change.

    `max_input_bytes`: the embedding provider's input limit (spec §3.4); a chunk over it is split into
    pieces within it (same lines), so a raised `chunking.tokens` never sends the provider an input it
    rejects. None (keyword-only) keeps chunks whole, as OpenClaw does without a provider.
    `media`: how image and audio files are prepared (the defaults skip them: nothing embeds them).
    """
    try:
        st = os.stat(file.abs_path)
    except FileNotFoundError:
        return Prepared(file, Outcome.VANISHED)
    except OSError as exc:
        return Prepared(file, Outcome.UNREADABLE, error=exc.strerror or str(exc))
    unchanged_stat = state is not None and state.size == st.st_size and state.mtime_ns == st.st_mtime_ns
    if not full and state is not None and unchanged_stat and not state.hash.startswith(NO_VECTORS):
        return Prepared(file, Outcome.UNCHANGED, hash=state.hash, mtime_ns=st.st_mtime_ns, size=st.st_size)
    if file.modality is not None:
        return _prepare_media(file, file.modality, state, st, media or MediaOptions(), full=full)
    try:
        data = read_source(file.abs_path)
    except FileNotFoundError:
        return Prepared(file, Outcome.VANISHED)
    except OSError as exc:
        log.warning("cannot read file; keeping its indexed rows", path=file.path, error=exc.strerror)
        return Prepared(file, Outcome.UNREADABLE, error=exc.strerror or str(exc))
    transcript = parse_transcript(data) if file.source == "sessions" else None
    digest = transcript.hash if transcript is not None else hashlib.sha256(data).hexdigest()
    bad = transcript.malformed_lines if transcript is not None else 0
    if not full and state is not None and state.hash == digest:
        return Prepared(file, Outcome.TOUCHED, hash=digest, mtime_ns=st.st_mtime_ns, size=st.st_size, bad_lines=bad)
    if transcript is not None:
        chunks = chunk_transcript(transcript, chunking.tokens, chunking.overlap)
    else:
        chunks = chunk_markdown(data.decode("utf-8", errors="replace"), chunking.tokens, chunking.overlap)
    if max_input_bytes is not None:
        chunks = split_for_input_limit(chunks, max_input_bytes)
    return Prepared(
        file, Outcome.CHANGED, hash=digest, mtime_ns=st.st_mtime_ns, size=len(data), bad_lines=bad, chunks=chunks
    )


def _prepare_media(
    file: SourceFile,
    modality: Modality,
    state: FileState | None,
    st: os.stat_result,
    media: MediaOptions,
    *,
    full: bool,
) -> Prepared:
    """One media file: skipped (no provider, too large, not what its name says) or its caption chunk.

    The bytes are read here to hash and sniff them, then dropped: embedding re-reads the file, so a
    sync holds at most the file being embedded, never a batch of them, in memory.
    """
    seen = Prepared(file, Outcome.CHANGED, mtime_ns=st.st_mtime_ns, size=st.st_size)
    if not media.embeddable:
        return skipped(seen, "no-provider")
    if st.st_size > media.max_file_bytes:
        return skipped(seen, "too-large")
    try:
        data = read_source(file.abs_path)
    except FileNotFoundError:
        return Prepared(file, Outcome.VANISHED)
    except OSError as exc:
        log.warning("cannot read file; keeping its indexed rows", path=file.path, error=exc.strerror)
        return Prepared(file, Outcome.UNREADABLE, error=exc.strerror or str(exc))
    if len(data) > media.max_file_bytes:
        return skipped(seen, "too-large")
    found = describe(file.path, modality, data)
    if isinstance(found, str):
        return skipped(seen, found)
    if not full and state is not None and state.hash == found.hash:
        return Prepared(file, Outcome.TOUCHED, hash=found.hash, mtime_ns=st.st_mtime_ns, size=len(data))
    chunk = Chunk(NO_LINES, NO_LINES, found.caption, found.hash)
    return Prepared(
        file, Outcome.CHANGED, hash=found.hash, mtime_ns=st.st_mtime_ns, size=len(data), chunks=[chunk], media=found
    )


def prepare_many(
    files: Sequence[SourceFile],
    states: dict[str, FileState],
    chunking: ChunkingSettings,
    *,
    full: bool,
    max_input_bytes: int | None = None,
    media: MediaOptions | None = None,
) -> list[Prepared]:
    return [
        prepare(f, states.get(f.path), chunking, full=full, max_input_bytes=max_input_bytes, media=media) for f in files
    ]


@dataclass(slots=True)
class SyncCounts:
    """What one sync did, per outcome."""

    indexed: int = 0
    unchanged: int = 0
    deleted: int = 0
    chunks: int = 0
    unreadable: list[str] = field(default_factory=list)

    def add(self, other: SyncCounts) -> None:
        self.indexed += other.indexed
        self.unchanged += other.unchanged
        self.deleted += other.deleted
        self.chunks += other.chunks
        self.unreadable.extend(other.unreadable)


def write_prepared(
    store: IndexStore,
    items: Sequence[Prepared],
    model: str,
    vectors: Sequence[Vectors | None] | None = None,
    *,
    missing_vectors: bool = False,
) -> SyncCounts:
    """Apply a batch of prepared files in one transaction; `vectors[i]` belongs to `items[i]`.

    `missing_vectors`: embedding failed, the chunks are written for keyword search only and the
    files are marked so the next sync embeds them again.
    """
    counts = SyncCounts()
    with store.transaction():
        for i, item in enumerate(items):
            f = item.file
            if item.outcome is Outcome.UNCHANGED:
                counts.unchanged += 1
            elif item.outcome is Outcome.TOUCHED:
                store.touch_file(f.source, f.path, item.mtime_ns, item.size)
                counts.unchanged += 1
            elif item.outcome is Outcome.CHANGED:
                counts.chunks += store.replace_file(
                    source=f.source,
                    path=f.path,
                    file_hash=NO_VECTORS + item.hash if missing_vectors else item.hash,
                    mtime_ns=item.mtime_ns,
                    size=item.size,
                    bad_lines=item.bad_lines,
                    chunks=item.chunks,
                    model=model,
                    vectors=vectors[i] if vectors is not None else None,
                )
                counts.indexed += 1
            elif item.outcome is Outcome.SKIPPED:
                counts.indexed += 1  # rows written: its old chunks, if any, are gone
                log.info("media file not indexed", path=f.path, reason=item.skip)
                store.replace_file(
                    source=f.source,
                    path=f.path,
                    file_hash=item.hash,
                    mtime_ns=item.mtime_ns,
                    size=item.size,
                    bad_lines=0,
                    chunks=[],
                    model=model,
                    vectors=None,
                )
            elif item.outcome is Outcome.UNREADABLE:
                counts.unreadable.append(f.path)
            else:
                counts.deleted += store.delete_files(f.source, [f.path])
    return counts
