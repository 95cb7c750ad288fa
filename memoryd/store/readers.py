"""A small pool of read connections, which a reindex swap can drain and pause.

Searches read through their own connections (WAL readers never wait for the writer). Before a
rebuilt database is renamed over the live one every connection to it must be closed; `paused()`
waits for checked-out readers to come back, closes them all and holds new ones off until the
swap is done. A read that finds the file damaged (SQLITE_CORRUPT, SQLITE_NOTADB) is reported to
`on_corrupt`, whatever path it came from (a search, status, the stat pass), so the owner rebuilds.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw

from memoryd.store.db import VecState, connect, is_corruption, translate


class ReaderPool:
    def __init__(self, db_path: Path, *, vec_path: str = "", vec_enabled: bool = True, size: int = 4) -> None:
        self.db_path = db_path
        self.on_corrupt: Callable[[BaseException], None] | None = None
        """Told (from the reading thread) whenever a read finds the file damaged; the owner rebuilds."""
        self._vec_path = vec_path
        self._vec_enabled = vec_enabled
        self._size = size
        self._idle: list[tuple[apsw.Connection, VecState]] = []
        self._out = 0
        self._paused = False
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def reader(self, *, fresh: bool = False) -> Iterator[tuple[apsw.Connection, VecState]]:
        """A reading connection, counted while out (`paused` waits for it); `fresh`: a new one, closed after
        use, with no page cached by earlier reads (the integrity check reads the file as it is now)."""
        with self._cond:
            while self._paused:
                self._cond.wait()
            item = self._idle.pop() if self._idle and not fresh else None
            self._out += 1
        try:
            if item is None:
                item = connect(self.db_path, readonly=True, vec_path=self._vec_path, vec_enabled=self._vec_enabled)
            yield item
        except BaseException as exc:
            if item is not None:
                with contextlib.suppress(apsw.Error):
                    item[0].close()
                item = None
            if is_corruption(exc):
                if self.on_corrupt is not None:
                    self.on_corrupt(exc)
                if isinstance(exc, apsw.Error):  # a read outside `translated`: still a memoryd error at the edge
                    raise translate(exc, "reading the index") from exc
            raise
        finally:
            with self._cond:
                self._out -= 1
                if item is not None:
                    if len(self._idle) < self._size and not self._paused and not fresh:
                        self._idle.append(item)
                    else:
                        with contextlib.suppress(apsw.Error):
                            item[0].close()
                self._cond.notify_all()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        with self._cond:
            self._paused = True
            while self._out:
                self._cond.wait()
            self._close_idle()
        try:
            yield
        finally:
            with self._cond:
                self._paused = False
                self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._close_idle()

    def _close_idle(self) -> None:
        for conn, _vec in self._idle:
            with contextlib.suppress(apsw.Error):
                conn.close()
        self._idle.clear()
