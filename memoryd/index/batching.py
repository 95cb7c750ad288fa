"""How a sync pass cuts its files into batches: at most so many files and so many bytes of source each.

A batch's prepared files (chunks and, for transcripts, the parsed transcript kept for the retention store)
live until the batch is written, so a count alone lets a history of large transcripts hold hundreds of MB at
once (issue 24: 256 files of a 316 MB history took the daemon from 170 to 360 MB; batches of at most 8 MB keep
the keyword phase under 290 MB, for a little time: every file keyword-searchable in 4.7 s, against 3.4 s with
batches of 24 MB, both runs on that history). Bytes bound that; a single file larger than the bound is a batch
of its own, never skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from memoryd.sources.discovery import SourceFile

MAX_FILES = 256
MAX_BYTES = 8 * 1024 * 1024


def of_files(files: Sequence[SourceFile]) -> list[range]:
    """The batches of `files` by their sizes on disk now, within MAX_FILES and MAX_BYTES (a blocking call)."""
    return list(cut(source_sizes(files), MAX_FILES, MAX_BYTES))


def cut(sizes: Sequence[int], max_files: int, max_bytes: int) -> Iterator[range]:
    """Consecutive ranges over `sizes`, in order, each within `max_files` and (but for a lone file larger than
    it) `max_bytes`; together they cover every index once."""
    start, total = 0, 0
    for i, size in enumerate(sizes):
        if i > start and (i - start >= max_files or total + size > max_bytes):
            yield range(start, i)
            start, total = i, 0
        total += size
    if start < len(sizes):
        yield range(start, len(sizes))


def source_sizes(files: Sequence[SourceFile]) -> list[int]:
    """Each file's size on disk now (0 when it cannot be read: the prepare step says why, in its batch)."""
    sizes: list[int] = []
    for f in files:
        try:
            sizes.append(os.lstat(f.abs_path).st_size)
        except OSError:
            sizes.append(0)
    return sizes
