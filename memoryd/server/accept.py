"""Accepting connections without ever running the daemon out of file descriptors.

Every connection costs a descriptor, and so does everything else the daemon does: each agent's
database (a file, its -wal and -shm, per connection), the watcher, the model, HTTP clients, and the
very files a sync reads. With `nofile` exhausted by idle clients (1,100 under a limit of 1,024) the
daemon stopped answering and a note written meanwhile was never indexed. So connections are capped
below the descriptor limit (`daemon.max_connections`; by default a quarter of the limit, at least
64, is kept for everything else), a client past the cap gets one JSON-RPC error line saying so and
is closed, and an accept that still fails for want of descriptors waits for a connection to close
instead of spinning. (A sync that could not open a file for the same reason is retried by the
agent's scheduler: see `memoryd.index.scheduler`.)
"""

from __future__ import annotations

import errno
import resource
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from memoryd.server.framing import encode_message, error_response

log = structlog.get_logger(__name__)

TOO_MANY_CONNECTIONS = -32011
"""JSON-RPC error code of the line a client past `daemon.max_connections` receives before it is closed."""

MIN_RESERVE = 64
"""Descriptors always kept for the databases, the watcher and the files syncs read."""

_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_RETRY_SECONDS = 1.0

Handler = Callable[[socket.socket], Coroutine[Any, Any, None]]


def descriptor_limit() -> int:
    """The process's soft RLIMIT_NOFILE (a large number where it is unlimited)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_limit(configured: int, descriptors: int | None = None) -> int:
    """How many connections to serve at once: `configured` if set (> 0), else the descriptor limit less
    a reserve of a quarter of it (at least MIN_RESERVE), and never fewer than one."""
    limit = descriptor_limit() if descriptors is None else descriptors
    if configured > 0:
        if configured > limit - MIN_RESERVE:
            log.warning(
                "daemon.max_connections leaves fewer than the reserved descriptors free",
                max_connections=configured,
                descriptor_limit=limit,
                reserve=MIN_RESERVE,
            )
        return configured
    return max(1, limit - max(MIN_RESERVE, limit // 4))


class ConnectionGate:
    """Counts live connections against the cap; wakes the accept loop when one closes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0
        self.refused = 0
        self._closed = anyio.Event()

    @property
    def full(self) -> bool:
        return self.active >= self.limit

    def opened(self) -> None:
        self.active += 1

    def closed(self) -> None:
        self.active -= 1
        self._closed.set()
        self._closed = anyio.Event()

    async def wait_for_a_close(self) -> None:
        """Until a connection closes (the caller bounds the wait)."""
        await self._closed.wait()


async def accept_forever(raw: socket.socket, connections: TaskGroup, handle: Handler, *, max_connections: int) -> None:
    """Accept until cancelled, each connection in its own task, at most `max_connections` at once.

    Waits with `anyio.wait_readable` instead of `listener.accept()`: cancelling the latter while a
    connection arrives makes anyio's asyncio backend log an InvalidStateError (seen with anyio 4.16).
    """
    gate = ConnectionGate(max_connections)
    log.info("accepting", max_connections=gate.limit, descriptor_limit=descriptor_limit())
    short_of_descriptors = False
    while True:
        await anyio.wait_readable(raw)
        try:
            client, _address = raw.accept()
        except BlockingIOError:
            continue
        except OSError as exc:
            if exc.errno in _OUT_OF_DESCRIPTORS:
                if not short_of_descriptors:
                    log.warning("accept_failed_out_of_descriptors", error=str(exc), connections=gate.active)
                short_of_descriptors = True
                with anyio.move_on_after(_RETRY_SECONDS):
                    await gate.wait_for_a_close()
            else:
                log.warning("accept_failed", error=str(exc))
                await anyio.sleep(0.1)
            continue
        if short_of_descriptors:
            log.info("accepting again", connections=gate.active)
            short_of_descriptors = False
        if gate.full:
            _refuse(client, gate)
            continue
        if gate.refused:
            log.info("connections below the limit again", refused_meanwhile=gate.refused, limit=gate.limit)
            gate.refused = 0
        gate.opened()
        connections.start_soon(_serve_counted, handle, client, gate)


async def _serve_counted(handle: Handler, client: socket.socket, gate: ConnectionGate) -> None:
    try:
        await handle(client)
    finally:
        gate.closed()


def _refuse(client: socket.socket, gate: ConnectionGate) -> None:
    """Tell a client past the cap why it is closed (best effort: one non-blocking write), and close it."""
    if not gate.refused:
        log.warning("connection limit reached; refusing new clients", limit=gate.limit)
    gate.refused += 1
    message = (
        f"memoryd is serving its limit of {gate.limit} connections (daemon.max_connections); "
        "close idle connections and try again"
    )
    try:
        client.setblocking(False)
        client.send(encode_message(error_response(None, TOO_MANY_CONNECTIONS, message)))
    except OSError:
        pass
    finally:
        client.close()
