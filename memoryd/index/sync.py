"""Delta sync of one agent's files into an IndexStore (spec §3.7 steps 4–6).

Blocking code: the engine runs it in worker threads. Reading and chunking (`prepare`) is
separate from writing (`write_prepared`) so embedding can happen in between, off the thread.

Rules that differ from OpenClaw on purpose:
* a file whose size and mtime (ns) are unchanged is not read again (a no-change resync of
  10k files takes a stat per file, not a read and a hash);
* an unreadable file keeps its old rows and is never pruned as deleted (basic-memory #1007);
* malformed transcript lines are counted per file (`files.bad_lines`) and shown by status;
* each transcript's format is stored (`files.format`): a transcript indexed before formats were
  told apart is read again even when its size and mtime are unchanged.
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
from memoryd.sources.chunking import Chunk, chunk_markdown, split_for_input_limit
from memoryd.sources.discovery import SourceFile
from memoryd.sources.transcripts import chunk_transcript, parse_transcript
from memoryd.store.index import FileState, IndexStore

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
    format: str | None = None  # a transcript's format as read now (None: not a transcript, or not read)
    previous_format: str | None = None  # as the index knew it


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
    subagents: bool = False,
) -> Prepared:
    """Stat, read, hash and chunk one file, deciding whether its rows must change.

    `max_input_bytes`: the embedding provider's input limit (spec §3.4); a chunk over it is split into
    pieces within it (same lines), so a raised `chunking.tokens` never sends the provider an input it
    rejects. None (keyword-only) keeps chunks whole, as OpenClaw does without a provider.
    `subagents`: transcripts keep sub-agent turns (`transcripts.subagents`).
    """
    try:
        st = os.stat(file.abs_path)
    except FileNotFoundError:
        return Prepared(file, Outcome.VANISHED)
    except OSError as exc:
        return Prepared(file, Outcome.UNREADABLE, error=exc.strerror or str(exc))
    unchanged_stat = state is not None and state.size == st.st_size and state.mtime_ns == st.st_mtime_ns
    format_known = file.source != "sessions" or (state is not None and state.format is not None)
    if not full and state is not None and unchanged_stat and format_known and not state.hash.startswith(NO_VECTORS):
        return Prepared(
            file, Outcome.UNCHANGED, hash=state.hash, mtime_ns=st.st_mtime_ns, size=st.st_size, format=state.format
        )
    try:
        data = read_source(file.abs_path)
    except FileNotFoundError:
        return Prepared(file, Outcome.VANISHED)
    except OSError as exc:
        log.warning("cannot read file; keeping its indexed rows", path=file.path, error=exc.strerror)
        return Prepared(file, Outcome.UNREADABLE, error=exc.strerror or str(exc))
    transcript = parse_transcript(data, subagents=subagents) if file.source == "sessions" else None
    digest = transcript.hash if transcript is not None else hashlib.sha256(data).hexdigest()
    bad = transcript.malformed_lines if transcript is not None else 0
    fmt = transcript.format if transcript is not None else None
    before = state.format if state is not None else None
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
        )
    if transcript is not None:
        chunks = chunk_transcript(transcript, chunking.tokens, chunking.overlap)
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
    )


def prepare_many(
    files: Sequence[SourceFile],
    states: dict[str, FileState],
    chunking: ChunkingSettings,
    *,
    full: bool,
    max_input_bytes: int | None = None,
    subagents: bool = False,
) -> list[Prepared]:
    return [
        prepare(f, states.get(f.path), chunking, full=full, max_input_bytes=max_input_bytes, subagents=subagents)
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
            else:
                counts.deleted += store.delete_files(f.source, [f.path])
    return counts
