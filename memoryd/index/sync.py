"""Delta sync of one agent's files into an IndexStore (spec §3.7 steps 4–6).

Blocking code: the engine runs it in worker threads. Reading and chunking (`prepare`) is
separate from writing (`write_prepared`) so embedding can happen in between, off the thread.

Rules that differ from OpenClaw on purpose:
* a file whose size and mtime (ns) are unchanged is not read again (a no-change resync of
  10k files takes a stat per file, not a read and a hash);
* an unreadable file keeps its old rows and is never pruned as deleted (basic-memory #1007);
* malformed transcript lines are counted per file (`files.bad_lines`) and shown by status;
* every file is read through `memoryd.sources.safefile` (no symlink followed below its root, a regular
  file checked on the open descriptor, a size cap per kind, hard links refused unless allowed): a file
  refused there is SKIPPED — its rows are removed and status lists it with the reason;
* each transcript's format is stored (`files.format`): a transcript indexed before formats were
  told apart is read again even when its size and mtime are unchanged.

A media file (multimodal memory) is one chunk, its caption, with no lines, read through the same safe
reader with `multimodal.max_file_bytes` as its cap; one that cannot be indexed now (too large, not
what its name says, nothing to embed it, refused by the provider) is MEDIA_SKIPPED: it keeps a file
row without chunks whose hash names the reason, so it is neither read again nor sent again nor
reported as changed until it changes, and status counts it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

import structlog

from memoryd.config import ChunkingSettings, FilesSettings
from memoryd.embeddings.base import Vectors
from memoryd.media import DEFAULT_MAX_FILE_BYTES, NO_LINES, Modality
from memoryd.sources.chunking import Chunk, chunk_markdown, split_for_input_limit
from memoryd.sources.discovery import SourceFile
from memoryd.sources.media import MediaRef, SkipReason, describe
from memoryd.sources.safefile import RefusedFileError, read_checked
from memoryd.sources.transcripts import Transcript, chunk_transcript, parse_transcript
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
    SKIPPED = "skipped"  # refused by the read rules (too large, not a regular file, a hard link): rows removed
    MEDIA_SKIPPED = "media-skipped"  # a media file not indexed now: a file row without chunks, naming why


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
    reason: str = ""  # why a SKIPPED file was refused (memoryd.sources.safefile.RefusalReason)
    transient: bool = False  # UNREADABLE for want of a resource (descriptors, memory): worth a retry soon
    format: str | None = None  # a transcript's format as read now (None: not a transcript, or not read)
    previous_format: str | None = None  # as the index knew it
    media: MediaRef | None = None
    """A media file to embed with its bytes (re-read at embedding time); None for text."""
    transcript: Transcript | None = None
    """A transcript as read now (CHANGED, TOUCHED), for the retention store (memoryd.index.retention)."""
    total_lines: int = 0

    @property
    def media_skip(self) -> str:
        """Why a media file is not indexed (MEDIA_SKIPPED, or UNCHANGED since); "" otherwise."""
        return self.hash.removeprefix(SKIPPED) if self.hash.startswith(SKIPPED) else ""


@dataclass(frozen=True, slots=True)
class MediaOptions:
    """How media files are prepared: their size limit, and whether the provider in use can embed them."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    embeddable: bool = False


def media_skipped(item: Prepared, reason: SkipReason) -> Prepared:
    """`item` as a media file that is not indexed, for `reason`."""
    return Prepared(item.file, Outcome.MEDIA_SKIPPED, hash=SKIPPED + reason, mtime_ns=item.mtime_ns, size=item.size)


TRANSIENT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN, errno.EINTR})
"""Read failures that say nothing about the file: the process ran out of something; a retry will do."""
TRANSIENT_REASONS = frozenset(os.strerror(code) for code in TRANSIENT_ERRNOS)
"""The same, as the `strerror` a degraded place reports ("Too many open files")."""


def read_source(file: SourceFile, files: FilesSettings, max_bytes: int | None = None) -> tuple[bytes, os.stat_result]:
    """Read a source file whole through the safe reader, with its kind's size cap or `max_bytes` (a media
    file's) (its own function so fault tests can make one file unreadable)."""
    limit = max_bytes if max_bytes is not None else _cap(file, files)
    return read_checked(
        file.abs_path, max_bytes=limit, allow_hard_links=files.allow_hard_links, root=file.root, shown=file.path
    )


def _may_skip_reading(st: os.stat_result, file: SourceFile, files: FilesSettings) -> bool:
    """Whether the `lstat` of a file allows trusting an unchanged size and mtime without opening it:
    a regular file within its cap and no hard link (else it is opened, and refused there). A media file
    over its cap is trusted too: its row says it was skipped as too large."""
    within = file.modality is not None or st.st_size <= _cap(file, files)
    return stat.S_ISREG(st.st_mode) and within and (st.st_nlink <= 1 or files.allow_hard_links)


def _cap(file: SourceFile, files: FilesSettings) -> int:
    return files.max_transcript_bytes if file.source == "sessions" else files.max_markdown_bytes


def prepare(
    file: SourceFile,
    state: FileState | None,
    chunking: ChunkingSettings,
    *,
    full: bool,
    max_input_bytes: int | None = None,
    rules: FilesSettings | None = None,
    media: MediaOptions | None = None,
    subagents: bool = False,
) -> Prepared:
    """Stat, read, hash and chunk one file, deciding whether its rows must change.

    `max_input_bytes`: the embedding provider's input limit (spec §3.4); a chunk over it is split into
    pieces within it (same lines), so a raised `chunking.tokens` never sends the provider an input it
    rejects. None (keyword-only) keeps chunks whole, as OpenClaw does without a provider.
    `rules`: the read rules (size caps, hard links); default FilesSettings().
    `media`: how image and audio files are prepared (the defaults skip them: nothing embeds them).
    `subagents`: transcripts keep sub-agent turns (`transcripts.subagents`).
    """
    rules = rules if rules is not None else FilesSettings()
    try:
        st = os.lstat(file.abs_path)
    except (FileNotFoundError, NotADirectoryError):
        return Prepared(file, Outcome.VANISHED)
    except OSError as exc:
        return Prepared(
            file, Outcome.UNREADABLE, error=exc.strerror or str(exc), transient=exc.errno in TRANSIENT_ERRNOS
        )
    unchanged_stat = state is not None and state.size == st.st_size and state.mtime_ns == st.st_mtime_ns
    trusted = _may_skip_reading(st, file, rules)
    format_known = file.source != "sessions" or (state is not None and state.format is not None)
    skip = trusted and format_known and not full and state is not None and unchanged_stat
    if skip and state is not None and not state.hash.startswith(NO_VECTORS):
        return Prepared(
            file, Outcome.UNCHANGED, hash=state.hash, mtime_ns=st.st_mtime_ns, size=st.st_size, format=state.format
        )
    if file.modality is not None:
        return _prepare_media(file, state, st, rules, media or MediaOptions(), full=full)
    try:
        data, st = read_source(file, rules)
    except RefusedFileError as exc:
        log.warning("file not indexed", path=file.path, reason=exc.reason, error=str(exc))
        return Prepared(file, Outcome.SKIPPED, error=str(exc), reason=exc.reason)
    except (FileNotFoundError, NotADirectoryError):
        return Prepared(file, Outcome.VANISHED)
    except OSError as exc:
        log.warning("cannot read file; keeping its indexed rows", path=file.path, error=exc.strerror)
        return Prepared(
            file, Outcome.UNREADABLE, error=exc.strerror or str(exc), transient=exc.errno in TRANSIENT_ERRNOS
        )
    transcript = parse_transcript(data, subagents=subagents) if file.source == "sessions" else None
    digest = transcript.hash if transcript is not None else hashlib.sha256(data).hexdigest()
    bad = transcript.malformed_lines if transcript is not None else 0
    fmt = transcript.format if transcript is not None else None
    before = state.format if state is not None else None
    lines = data.count(b"\n") + 1 if transcript is not None else 0
    if not full and state is not None and state.hash == digest:
        return Prepared(
            file,
            Outcome.TOUCHED,
            hash=digest,
            mtime_ns=st.st_mtime_ns,
            size=st.st_size,
            bad_lines=bad,
            format=fmt,
            previous_format=before,
            transcript=transcript,
            total_lines=lines,
        )
    if transcript is not None:
        chunks = chunk_transcript(transcript, chunking.tokens, chunking.overlap, chunking.transcripts)
    else:
        chunks = chunk_markdown(data.decode("utf-8", errors="replace"), chunking.tokens, chunking.overlap)
    if max_input_bytes is not None:
        chunks = split_for_input_limit(chunks, max_input_bytes)
    return Prepared(
        file,
        Outcome.CHANGED,
        hash=digest,
        mtime_ns=st.st_mtime_ns,
        size=len(data),
        bad_lines=bad,
        chunks=chunks,
        format=fmt,
        previous_format=before,
        transcript=transcript,
        total_lines=lines,
    )


def _prepare_media(
    file: SourceFile,
    state: FileState | None,
    st: os.stat_result,
    rules: FilesSettings,
    media: MediaOptions,
    *,
    full: bool,
) -> Prepared:
    """One media file: skipped (no provider, too large, not what its name says) or its caption chunk.

    The bytes are read here to hash and sniff them, then dropped: embedding re-reads the file, so a
    sync holds at most the file being embedded, never a batch of them, in memory.
    """
    modality: Modality | None = file.modality
    assert modality is not None
    seen = Prepared(file, Outcome.CHANGED, mtime_ns=st.st_mtime_ns, size=st.st_size)
    if not media.embeddable:
        return media_skipped(seen, "no-provider")
    if st.st_size > media.max_file_bytes:
        return media_skipped(seen, "too-large")
    try:
        data, st = read_source(file, rules, max_bytes=media.max_file_bytes)
    except RefusedFileError as exc:
        if exc.reason == "too-large":  # it grew since it was listed
            return media_skipped(seen, "too-large")
        log.warning("file not indexed", path=file.path, reason=exc.reason, error=str(exc))
        return Prepared(file, Outcome.SKIPPED, error=str(exc), reason=exc.reason)
    except (FileNotFoundError, NotADirectoryError):
        return Prepared(file, Outcome.VANISHED)
    except OSError as exc:
        log.warning("cannot read file; keeping its indexed rows", path=file.path, error=exc.strerror)
        return Prepared(
            file, Outcome.UNREADABLE, error=exc.strerror or str(exc), transient=exc.errno in TRANSIENT_ERRNOS
        )
    found = describe(file.path, modality, data)
    if isinstance(found, str):
        return media_skipped(Prepared(file, Outcome.CHANGED, mtime_ns=st.st_mtime_ns, size=st.st_size), found)
    if not full and state is not None and state.hash == found.hash:
        return Prepared(file, Outcome.TOUCHED, hash=found.hash, mtime_ns=st.st_mtime_ns, size=st.st_size)
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
    rules: FilesSettings | None = None,
    media: MediaOptions | None = None,
    subagents: bool = False,
) -> list[Prepared]:
    return [
        prepare(
            f,
            states.get(f.path),
            chunking,
            full=full,
            max_input_bytes=max_input_bytes,
            rules=rules,
            media=media,
            subagents=subagents,
        )
        for f in files
    ]


@dataclass(slots=True)
class SyncCounts:
    """What one sync did, per outcome."""

    indexed: int = 0
    unchanged: int = 0
    deleted: int = 0
    chunks: int = 0
    unreadable: list[str] = field(default_factory=list)
    skipped: dict[str, tuple[str, str]] = field(default_factory=dict)  # index path -> (reason, message)
    transient: bool = False  # a file was unreadable for want of descriptors or memory: sync again soon

    def add(self, other: SyncCounts) -> None:
        self.indexed += other.indexed
        self.unchanged += other.unchanged
        self.deleted += other.deleted
        self.chunks += other.chunks
        self.unreadable.extend(other.unreadable)
        self.skipped.update(other.skipped)
        self.transient = self.transient or other.transient


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
                store.touch_file(f.source, f.path, item.mtime_ns, item.size, item.format)
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
                    format=item.format,
                )
                counts.indexed += 1
            elif item.outcome is Outcome.UNREADABLE:
                counts.unreadable.append(f.path)
                counts.transient = counts.transient or item.transient
            elif item.outcome is Outcome.SKIPPED:
                counts.skipped[f.path] = (item.reason, item.error)
                counts.deleted += store.delete_files(f.source, [f.path])
            elif item.outcome is Outcome.MEDIA_SKIPPED:
                counts.indexed += 1  # rows written: its old chunks, if any, are gone
                log.info("media file not indexed", path=f.path, reason=item.media_skip)
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
            else:
                counts.deleted += store.delete_files(f.source, [f.path])
    return counts
