"""Unix stream sockets as anyio byte streams, for both ends of the daemon's socket.

anyio's own asyncio Unix socket stream (4.16) leaves a reader callback armed on a future that a
cancellation has just resolved; when data or EOF arrives in the same loop iteration, the loop
reports an InvalidStateError — on every daemon shutdown or client exit that races with traffic.
This stream waits with `anyio.wait_readable`/`wait_writable`, which tolerate exactly that.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import anyio
import anyio.lowlevel
from anyio.abc import ByteStream


class UnixStream(ByteStream):
    """A connected Unix stream socket. One task may receive while another sends."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self._sock = sock
        self._closed = False

    @property
    def raw_socket(self) -> socket.socket:
        return self._sock

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint()
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                data = self._sock.recv(max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._sock)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def send(self, item: bytes) -> None:
        await anyio.lowlevel.checkpoint()
        view = memoryview(item)
        while view:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                sent = self._sock.send(view)
            except BlockingIOError:
                await anyio.wait_writable(self._sock)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            view = view[sent:]

    async def send_eof(self) -> None:
        """Half-close: the peer reads end of stream, and can still answer."""
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        await anyio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            anyio.notify_closing(self._sock)
            self._sock.close()
        await anyio.lowlevel.checkpoint()


async def connect_unix(path: Path) -> UnixStream:
    """Connect to the Unix socket at `path`; raises OSError like `socket.connect`."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        try:
            sock.connect(os.fspath(path))
        except BlockingIOError:
            await anyio.wait_writable(sock)
            error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error:
                raise OSError(error, os.strerror(error), str(path)) from None
    except BaseException:
        sock.close()
        raise
    return UnixStream(sock)
