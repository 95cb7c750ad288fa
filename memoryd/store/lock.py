"""One writer per database, across processes: an exclusive flock on `<db>.lock`.

The daemon holds it for its lifetime; an in-process CLI `index` takes it for the run. A second
writer gets a clear error instead of fighting over SQLite locks (a top complaint about peers).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from memoryd.errors import StoreError
from memoryd.runtime.private import make_private_dirs


class WriterLockBusyError(StoreError):
    """Another process is writing this index."""


class WriterLock:
    def __init__(self, db_path: Path) -> None:
        self.path = db_path.with_name(db_path.name + ".lock")
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        make_private_dirs(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise WriterLockBusyError(
                f"{self.path.parent} is being written by another memoryd process (is the daemon running?)"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        self.release()
