"""Append an entry to a memory file without ever losing a byte of the user's, or of the entry.

The steps, in a worker thread:

1. Open the folder the file lives in (`memory/` for the daily note, created if missing; the
   workspace for MEMORY.md) without following a symlink, and take an exclusive `flock` on it. Every
   memoryd writer (the daemon, `memoryd mcp --standalone`, an in-process `memoryd remember`) takes it,
   so two writers never interleave; editors do not, and the steps below cover them.
2. Open the file `O_RDWR | O_APPEND | O_NOFOLLOW` (a symlink, a FIFO, a folder is refused; a missing
   file is created with `O_EXCL`), read what it holds and compute the block to append (`entry.place`).
3. Write the block with one `write(2)`: with `O_APPEND` the kernel puts it at the end of the file as it
   is at that instant, so nothing already there is overwritten, whatever an editor did meanwhile.
   Then `fsync` the file, and the folder when the file (or `memory/`) was created.
4. Check the entry is in the file now at that path. If an editor saved a new file over it (a rename
   between our open and our write: we wrote to the old inode), or truncated and rewrote it without the
   entry, the file is read again and the entry appended to what is there now (at most 5 rounds). If
   something was appended between our read and our write, the entry is where the kernel put it, and its
   lines are counted there.

What no file protocol can prevent: an editor that read the file before the write and saves its old
buffer after step 4 drops the entry, as it would drop any other program's change (vim and VS Code warn
about a file changed on disk before they save over it).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from memoryd.errors import NotFoundError, WriteRefusedError
from memoryd.runtime.private import PRIVATE_DIR_MODE
from memoryd.sources.discovery import ROOT_NOTES
from memoryd.sources.write.entry import Entry, Placement, place, stamp_line

Target = Literal["daily", "long-term"]
Stage = Literal["read", "written"]

LOCK_TIMEOUT_S = 10.0
ROUNDS = 5
"""How many times an entry is appended again after an editor's save replaced the file without it."""
LONG_TERM_TITLE = "Memory"

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_UNWRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


@dataclass(frozen=True, slots=True)
class Written:
    """Where an entry was saved: the file (workspace-relative and absolute) and the entry's lines."""

    path: str
    abs_path: Path
    start_line: int
    end_line: int
    created_file: bool
    created_heading: bool
    saved_at: datetime

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


def append_entry(
    workspace: Path,
    target: Target,
    entry: Entry,
    *,
    now: datetime,
    max_bytes: int | None = None,
    allow_hard_links: bool = False,
    on_stage: Callable[[Stage, Path], None] | None = None,
) -> Written:
    """Append `entry` to the agent's daily note (of `now`'s date) or to MEMORY.md; blocking.

    `on_stage` is called after the file was read ("read") and after the block was written and
    synced ("written"): tests play an editor saving at exactly those moments. The read rules hold
    for the target too (`files.*`, as `memoryd.sources.safefile` applies them): a file that would grow
    past `max_bytes` could never be indexed, and a hard link names a file elsewhere, so both are refused.
    """
    with _folder(workspace, target) as (folder, folder_path):
        _lock(folder, folder_path)
        name = f"{now:%Y-%m-%d}.md" if target == "daily" else _long_term_name(folder, folder_path)
        shown = f"memory/{name}" if target == "daily" else name
        title = f"{now:%Y-%m-%d}" if target == "daily" else LONG_TERM_TITLE
        stamp = stamp_line(now)
        file_path = folder_path / name
        fd, created = _open_file(folder, file_path, allow_hard_links=allow_hard_links)
        try:
            for _ in range(ROUNDS):
                before = _read_all(fd)
                placed = place(before, entry, stamp, title=title)
                grown = len(before) + len(placed.block)
                if max_bytes is not None and grown > max_bytes:
                    raise WriteRefusedError(
                        f"{shown} would grow to {grown:,} bytes, over files.max_markdown_bytes ({max_bytes:,}), "
                        "and could no longer be indexed: save to the other target, or raise the limit"
                    )
                if on_stage is not None:
                    on_stage("read", file_path)
                landed = _append(fd, placed.block, file_path)
                os.fsync(fd)
                if created:
                    os.fsync(folder)  # the new file's name is durable too
                if on_stage is not None:
                    on_stage("written", file_path)
                found = _locate(fd, folder, file_path, before=before, placed=placed, landed=landed)
                if isinstance(found, int):
                    return Written(
                        path=shown,
                        abs_path=file_path,
                        start_line=found,
                        end_line=found + placed.end_line - placed.start_line,
                        created_file=created,
                        created_heading=placed.created_heading,
                        saved_at=now,
                    )
                os.close(fd)  # the entry is not in the file at this path: append it to what is there now
                fd, created_now = _open_file(folder, file_path, allow_hard_links=allow_hard_links)
                created = created or created_now
        finally:
            os.close(fd)
    raise WriteRefusedError(
        f"{shown} kept being replaced while the entry was written ({ROUNDS} tries): save it again when the "
        "file is not being edited"
    )


@contextlib.contextmanager
def _folder(workspace: Path, target: Target) -> Iterator[tuple[int, Path]]:
    """The folder the target lives in, opened without following a symlink: (fd, path)."""
    try:
        root = os.open(workspace, _DIR_FLAGS & ~os.O_NOFOLLOW)
    except FileNotFoundError:
        raise NotFoundError(f"the workspace {workspace} does not exist; create it first") from None
    except NotADirectoryError:
        raise WriteRefusedError(f"the workspace {workspace} is not a directory") from None
    except OSError as exc:
        raise _refusal(exc, workspace) from None
    if target == "long-term":
        try:
            yield root, workspace
        finally:
            os.close(root)
        return
    memory = workspace / "memory"
    try:
        fd = _memory_dir(root, memory)
    finally:
        os.close(root)
    try:
        yield fd, memory
    finally:
        os.close(fd)


def _memory_dir(root: int, memory: Path) -> int:
    """`memory/` below the workspace, created (and the workspace fsynced) when missing."""
    try:
        return os.open(memory.name, _DIR_FLAGS, dir_fd=root)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _dir_refusal(exc, root, memory) from None
    try:
        os.mkdir(memory.name, PRIVATE_DIR_MODE, dir_fd=root)  # notes are private, as the index of them
        os.fsync(root)
    except FileExistsError:
        pass  # another writer made it first
    except OSError as exc:
        raise _refusal(exc, memory) from None
    return _open_dir(root, memory)


def _open_dir(root: int, path: Path) -> int:
    try:
        return os.open(path.name, _DIR_FLAGS, dir_fd=root)
    except OSError as exc:
        raise _dir_refusal(exc, root, path) from None


def _dir_refusal(exc: OSError, root: int, path: Path) -> Exception:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.lstat(path.name, dir_fd=root).st_mode):
                return WriteRefusedError(f"{path} is a symlink; memory_write does not write through symlinks")
        return WriteRefusedError(f"{path} exists and is not a directory")
    return _refusal(exc, path)


def _lock(folder: int, path: Path) -> None:
    """An exclusive flock on the folder, waited for at most LOCK_TIMEOUT_S."""
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    while True:
        try:
            fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise WriteRefusedError(
                    f"another memoryd writer has held the lock on {path} for {LOCK_TIMEOUT_S:g} s; try again"
                ) from None
            time.sleep(0.002)  # flock has no timeout of its own; writers hold it for milliseconds
        else:
            return


def _long_term_name(folder: int, workspace: Path) -> str:
    """MEMORY.md, or memory.md when that is the file in use (the first of them that exists)."""
    for name in ROOT_NOTES:
        try:
            os.lstat(name, dir_fd=folder)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _refusal(exc, workspace / name) from None
        return name
    return ROOT_NOTES[0]


def _open_file(folder: int, path: Path, *, allow_hard_links: bool) -> tuple[int, bool]:
    """The file opened for appending, (fd, created now); a symlink, a non-regular file or (unless allowed) a
    hard link is refused."""
    while True:
        try:
            fd = os.open(path.name, _FILE_FLAGS, dir_fd=folder)
            created = False
        except FileNotFoundError:
            try:
                fd = os.open(path.name, _FILE_FLAGS | os.O_CREAT | os.O_EXCL, 0o666, dir_fd=folder)
            except FileExistsError:
                continue  # created by someone else in between: open theirs
            except OSError as exc:
                raise _file_refusal(exc, folder, path) from None
            created = True
        except OSError as exc:
            raise _file_refusal(exc, folder, path) from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise WriteRefusedError(f"{path} is not a regular file")
        if info.st_nlink > 1 and not allow_hard_links:
            os.close(fd)
            raise WriteRefusedError(
                f"{path} is a hard link ({info.st_nlink} names): it may be any file of yours, so memory_write does "
                "not append to it (files.allow_hard_links = true allows it)"
            )
        return fd, created


def _file_refusal(exc: OSError, folder: int, path: Path) -> Exception:
    if exc.errno in (errno.ELOOP, errno.EMLINK):
        return WriteRefusedError(f"{path} is a symlink; memory_write does not write through symlinks")
    if exc.errno in (errno.EISDIR, errno.ENXIO, errno.ENODEV):
        return WriteRefusedError(f"{path} is not a regular file")
    with contextlib.suppress(OSError):
        if not stat.S_ISREG(os.lstat(path.name, dir_fd=folder).st_mode):
            return WriteRefusedError(f"{path} is not a regular file")
    return _refusal(exc, path)


def _refusal(exc: OSError, path: Path) -> WriteRefusedError:
    reason = exc.strerror or str(exc)
    if exc.errno in _UNWRITABLE:
        return WriteRefusedError(f"cannot write {path}: {reason} (the workspace is not writable by memoryd)")
    return WriteRefusedError(f"cannot write {path}: {reason}")


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks: list[bytes] = []
    offset = 0
    while True:
        piece = os.pread(fd, max(65536, size - offset), offset)
        if not piece:
            return b"".join(chunks)
        chunks.append(piece)
        offset += len(piece)


def _append(fd: int, block: bytes, path: Path) -> int:
    """Write `block` at the end of the file in one write; the offset it landed at.

    A write the disk cannot hold is taken back (only when nothing was appended after it) and refused.
    """
    try:
        written = os.write(fd, block)
    except OSError as exc:
        raise _refusal(exc, path) from None
    end = os.lseek(fd, 0, os.SEEK_CUR)
    landed = end - written
    if written < len(block):
        # A short write to a regular file means the disk or quota is full: remove our partial entry.
        if os.fstat(fd).st_size == end:
            os.ftruncate(fd, landed)
        raise WriteRefusedError(f"cannot write {path}: {os.strerror(errno.ENOSPC)}")
    return landed


def _locate(fd: int, folder: int, path: Path, *, before: bytes, placed: Placement, landed: int) -> int | None:
    """The entry's first line in the file now at `path`, or None when the entry is not in it."""
    entry = placed.block[placed.entry_offset :]
    try:
        current = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None  # deleted meanwhile: written again into a new file
    mine = os.fstat(fd)
    if (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino):
        at = landed + placed.entry_offset
        if os.pread(fd, len(entry), at) == entry:
            if landed == len(before):
                return placed.start_line  # nothing changed between our read and our write
            return os.pread(fd, at, 0).count(b"\n") + 1
        return _find_new(_read_all(fd), before, entry)  # rewritten in place since: is the entry still in it?
    if not stat.S_ISREG(current.st_mode):
        raise WriteRefusedError(f"{path} was replaced by something that is not a regular file while writing")
    try:
        other = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    try:
        return _find_new(_read_all(other), before, entry)
    finally:
        os.close(other)


def _find_new(content: bytes, before: bytes, entry: bytes) -> int | None:
    """The line of the last copy of `entry` in `content` if it holds more copies than `before` did."""
    if content.count(entry) <= before.count(entry):
        return None
    at = content.rfind(entry)
    return content.count(b"\n", 0, at) + 1
