"""Opening a source file safely: the one way memoryd reads a memory file or a transcript.

Every reader (indexing, hashing, `memory_get`, transcript reads, the session-growth counter, the QMD
exporter) goes through `open_checked`, because checking a path and then opening it is a race: a
file can be swapped for a FIFO (a blocking read hangs a sync, and with it SIGTERM), for a symlink
to a file outside the roots, or grow to gigabytes between discovery and the read. So the checks are
made on the opened descriptor, never on the path:

* opened with O_NOFOLLOW|O_NONBLOCK (a symlink is refused, a FIFO opens without waiting); with a
  `root`, every folder below it is opened with O_DIRECTORY|O_NOFOLLOW relative to the one before
  (openat), so a folder swapped for a symlink cannot lead outside either;
* `fstat` of that descriptor: a regular file, at most `max_bytes` long, not a hard link to another
  name unless `allow_hard_links` (a link in memory/ to a file elsewhere reads that file; no path
  check can see it);
* the bytes come from that descriptor, never more than `max_bytes` of them (a file that grows past
  its `fstat` size is refused, not read whole).

Errors: `RefusedFileError` (an AccessDeniedError) names why a file is not read — status lists such files as
skipped; anything else is the OSError of the open (missing, no permission, out of descriptors), for
the caller to treat as it treats any unreadable file.

Usage::

    data, info = read_checked(path, max_bytes=10 << 20)                      # whole file
    with open_checked(path, max_bytes=limit, root=workspace) as f:           # or stream it
        for line in f.lines(): ...
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from memoryd.errors import AccessDeniedError

RefusalReason = Literal["symlink", "not-regular", "too-large", "hard-link"]

READ_BLOCK = 1024 * 1024
"""Bytes per read(2) while streaming: large enough to be fast, small enough to bound memory."""

_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_LINK_ERRNOS = (errno.ELOOP, errno.EMLINK)  # what O_NOFOLLOW on a symlink gives (Linux/macOS, FreeBSD)


class RefusedFileError(AccessDeniedError):
    """A file memoryd will not read, and why (`reason`); `path` is the path as the caller showed it."""

    def __init__(self, path: str, reason: RefusalReason, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason


class CheckedFile:
    """An open descriptor that passed the checks; `info` is its `fstat`. Close it (or use `open_checked`)."""

    def __init__(self, fd: int, info: os.stat_result, shown: str, max_bytes: int) -> None:
        self.fd = fd
        self.info = info
        self.shown = shown
        self.max_bytes = max_bytes

    def read_all(self) -> bytes:
        """The whole file from its start; RefusedFileError if it grew past `max_bytes` since the check."""
        return self.read_range(0, None)

    def read_range(self, start: int, end: int | None) -> bytes:
        """Bytes [start, end) (end None: to the end of the file), at most `max_bytes` of them."""
        parts: list[bytes] = []
        taken = 0
        want = None if end is None else max(0, end - start)
        for block in self._blocks(start):
            if want is not None and taken + len(block) >= want:
                parts.append(block[: want - taken])
                return b"".join(parts)
            parts.append(block)
            taken += len(block)
        return b"".join(parts)

    def lines(self) -> Iterator[bytes]:
        """The file's lines without their `\\n`, streamed, as `data.split(b"\\n")` would give them (a final
        empty piece after a trailing newline included); holds one line and one block at a time."""
        pending: list[bytes] = []
        for block in self._blocks(0):
            start = 0
            while (end := block.find(b"\n", start)) >= 0:
                pending.append(block[start:end])
                yield b"".join(pending)
                pending.clear()
                start = end + 1
            pending.append(block[start:])
        yield b"".join(pending)

    def line_slice(self, first: int, count: int | None) -> tuple[list[bytes], int]:
        """Lines `first`.. (1-based; `count` of them, None: to the end) and the file's total line count
        (as `lines()` counts), reading the file once and splitting only the blocks that hold the slice."""
        wanted: list[bytes] = []
        last = None if count is None else first + count - 1
        line = 1  # the line the next byte belongs to
        pending: list[bytes] = []
        for block in self._blocks(0):
            newlines = block.count(b"\n")
            if line + newlines < first or (last is not None and line > last):
                line += newlines
                continue
            start = 0
            while (end := block.find(b"\n", start)) >= 0:
                if line >= first and (last is None or line <= last):
                    pending.append(block[start:end])
                    wanted.append(b"".join(pending))
                pending.clear()
                line += 1
                start = end + 1
            if line >= first and (last is None or line <= last):
                pending.append(block[start:])
        if line >= first and (last is None or line <= last):
            wanted.append(b"".join(pending))
        return wanted, line

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _blocks(self, start: int) -> Iterator[bytes]:
        """Blocks from offset `start` to the end of the file; refused once it proves longer than `max_bytes`."""
        offset = start
        while block := os.pread(self.fd, READ_BLOCK, offset):
            offset += len(block)
            if offset > self.max_bytes:
                raise _too_large(self.shown, offset, self.max_bytes)
            yield block


@contextlib.contextmanager
def open_checked(
    path: Path | str,
    *,
    max_bytes: int,
    allow_hard_links: bool = False,
    root: Path | None = None,
    shown: str | None = None,
) -> Iterator[CheckedFile]:
    """Open `path` for reading after the checks above; the descriptor is closed when the block ends.

    `root`: a folder `path` is inside; no symlink below it is followed (the root itself may be one).
    `shown`: the path to name in messages (default: `path`). Raises RefusedFileError or OSError.
    """
    handle = check(path, max_bytes=max_bytes, allow_hard_links=allow_hard_links, root=root, shown=shown)
    try:
        yield handle
    finally:
        handle.close()


def read_checked(
    path: Path | str,
    *,
    max_bytes: int,
    allow_hard_links: bool = False,
    root: Path | None = None,
    shown: str | None = None,
) -> tuple[bytes, os.stat_result]:
    """The whole file and the `fstat` of the descriptor it was read from (see `open_checked`)."""
    with open_checked(path, max_bytes=max_bytes, allow_hard_links=allow_hard_links, root=root, shown=shown) as f:
        return f.read_all(), f.info


def check(
    path: Path | str,
    *,
    max_bytes: int,
    allow_hard_links: bool = False,
    root: Path | None = None,
    shown: str | None = None,
) -> CheckedFile:
    """`open_checked` without the context manager: the caller closes the CheckedFile."""
    target = Path(path)
    label = shown if shown is not None else str(target)
    fd = _open_below(root, target, label) if root is not None else _open_file(None, target, target, label)
    try:
        info = os.fstat(fd)
        problem = _refusal(info, label, max_bytes, allow_hard_links)
    except BaseException:
        os.close(fd)
        raise
    if problem is not None:
        os.close(fd)
        raise problem
    return CheckedFile(fd, info, label, max_bytes)


def _refusal(info: os.stat_result, label: str, max_bytes: int, allow_hard_links: bool) -> RefusedFileError | None:
    """Why the opened file is not to be read, or None."""
    if not stat.S_ISREG(info.st_mode):
        return RefusedFileError(label, "not-regular", f"{label} is not a regular file ({_kind(info.st_mode)})")
    if info.st_size > max_bytes:
        return _too_large(label, info.st_size, max_bytes)
    if info.st_nlink > 1 and not allow_hard_links:
        return RefusedFileError(
            label,
            "hard-link",
            f"{label} is a hard link ({info.st_nlink} names for one file): memoryd cannot tell whether the "
            "other names are outside the memory roots, so it does not read it (files.allow_hard_links = true "
            "reads hard links)",
        )
    return None


def _too_large(label: str, size: int, limit: int) -> RefusedFileError:
    return RefusedFileError(
        label,
        "too-large",
        f"{label} is {size:,} bytes, over the {limit:,}-byte limit for this kind of file "
        "(files.max_markdown_bytes / files.max_transcript_bytes): it is neither indexed nor read",
    )


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def _symlink(label: str, at: Path) -> RefusedFileError:
    return RefusedFileError(label, "symlink", f"{at} is a symlink; memoryd does not follow symlinks")


def _open_file(dir_fd: int | None, name: Path, at: Path, label: str) -> int:
    """Open the file itself (relative to `dir_fd` when given) without following a symlink or waiting."""
    try:
        return os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS:  # O_NOFOLLOW met a symlink as the last component
            raise _symlink(label, at) from None
        raise


def _open_below(root: Path, target: Path, label: str) -> int:
    """Open `target`, walking from `root` one folder at a time without following any symlink."""
    parts = target.relative_to(root).parts
    if not parts:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
    fd = os.open(root, _DIRECTORY_FLAGS & ~os.O_NOFOLLOW)
    at = root
    try:
        for part in parts[:-1]:
            at = at / part
            try:
                next_fd = os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (*_LINK_ERRNOS, errno.ENOTDIR) and _is_symlink(at):
                    raise _symlink(label, at) from None
                raise
            os.close(fd)
            fd = next_fd
        return _open_file(fd, Path(parts[-1]), at / parts[-1], label)
    finally:
        os.close(fd)


def _is_symlink(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False
