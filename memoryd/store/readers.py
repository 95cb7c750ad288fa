"""A small pool of read connections, which a reindex swap can drain and pause.

Searches read through their own connections (WAL readers never wait for the writer). Before a
rebuilt database is renamed over the live one every connection to it must be closed; `paused()`
waits for checked-out readers to come back, closes them all and holds new ones off until the
swap is done.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import apsw

from memoryd.store.db import VecState, connect


class ReaderPool:
    def __init__(self, db_path: Path, *, vec_path: str = "", vec_enabled: bool = True, size: int = 4) -> None:
        self.db_path = db_path
        self._vec_path = vec_path
        self._vec_enabled = vec_enabled
        self._size = size
        self._idle: list[tuple[apsw.Connection, VecState]] = []
        self._out = 0
        self._paused = False
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def reader(self) -> Iterator[tuple[apsw.Connection, VecState]]:
        with self._cond:
            while self._paused:
                self._cond.wait()
            item = self._idle.pop() if self._idle else None
            self._out += 1
        try:
            if item is None:
                item = connect(self.db_path, readonly=True, vec_path=self._vec_path, vec_enabled=self._vec_enabled)
            yield item
        except BaseException:
            if item is not None:
                with contextlib.suppress(apsw.Error):
                    item[0].close()
                item = None
            raise
        finally:
            with self._cond:
                self._out -= 1
                if item is not None:
                    if len(self._idle) < self._size and not self._paused:
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
