"""What one connection may hold: requests it has running, and replies waiting for the client to read them.

A client that pipelines requests and never reads its replies used to grow the daemon without bound
(104 MB to 911 MB): every reply sat in a task waiting for a socket the client would never drain. Two
bounds per connection make that impossible:

* `RequestTally` — at most MAX_RUNNING requests run at once; the connection reads no further line until
  one finishes (the client's writes then block in its own kernel buffer, not in the daemon);
* `Outbox` — finished replies wait here, in bytes, for the writer; past `max_queued_bytes` of replies
  the client is not reading, and the connection is dropped (and logged). One reply larger than the
  bound is still sent when nothing else waits (a whole-file memory_get can be big).
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass

import anyio
from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, RequestId

MAX_RUNNING = 64
"""Requests one connection may have running at once; the next line is read when one of them answers."""

DEFAULT_MAX_QUEUED_BYTES = 32 * 1024 * 1024
"""`daemon.max_queued_bytes`' default: replies a client has not read yet, beyond which it is dropped."""


class RequestTally:
    """The client's requests by id: running (no reply produced yet) and unanswered (reply not written yet).

    A multiset, so a client repeating an id cannot slip past the running bound.
    """

    def __init__(self) -> None:
        self._running: Counter[RequestId] = Counter()
        self._running_total = 0
        self._unanswered: Counter[RequestId] = Counter()
        self._changed = anyio.Event()

    def track(self, message: JSONRPCMessage) -> None:
        """A message is on its way to the server."""
        if isinstance(message, JSONRPCRequest):
            self._running[message.id] += 1
            self._running_total += 1
            self._unanswered[message.id] += 1
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            # A cancelled request gets no reply: stop counting it (a no-op when its reply came first).
            request_id = (message.params or {}).get("requestId")
            if isinstance(request_id, str | int) and not isinstance(request_id, bool):
                self._finish(request_id)
                self._take(self._unanswered, request_id)

    def produced(self, message: JSONRPCMessage) -> None:
        """The server produced a message for the client (a reply frees a running slot)."""
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self._finish(message.id)

    def answered(self, message: JSONRPCMessage) -> None:
        """A message was written to the client."""
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self._take(self._unanswered, message.id)
            self._notify()

    async def wait_below(self, limit: int) -> None:
        """Until fewer than `limit` requests are running."""
        while self._running_total >= limit:
            changed = self._changed
            await changed.wait()

    async def wait_idle(self) -> None:
        """Until every request received has been answered (or cancelled)."""
        while sum(self._unanswered.values()):
            changed = self._changed
            await changed.wait()

    def _finish(self, request_id: RequestId) -> None:
        if self._take(self._running, request_id):
            self._running_total -= 1
            self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    @staticmethod
    def _take(counter: Counter[RequestId], request_id: RequestId) -> bool:
        if counter[request_id] <= 0:
            counter.pop(request_id, None)
            return False
        counter[request_id] -= 1
        if not counter[request_id]:
            del counter[request_id]
        return True


@dataclass(slots=True)
class _Queued:
    data: bytes
    message: JSONRPCMessage


class Outbox:
    """Encoded replies waiting for the writer, bounded in bytes; `close()` when no more will come."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        self._items: deque[_Queued] = deque()
        self._ready = anyio.Event()
        self._closed = False
        self.dropped = False  # the client was dropped for not reading

    def __len__(self) -> int:
        return len(self._items)

    def put(self, data: bytes, message: JSONRPCMessage) -> bool:
        """Queue a reply; False when the backlog would pass the bound (the client is not reading)."""
        if self._items and self.queued_bytes + len(data) > self.max_bytes:
            return False
        self._items.append(_Queued(data, message))
        self.queued_bytes += len(data)
        self._ready.set()
        return True

    def close(self) -> None:
        self._closed = True
        self._ready.set()

    def clear(self) -> None:
        """Forget every queued reply (the connection is gone)."""
        self._items.clear()
        self.queued_bytes = 0
        self.close()

    async def get(self) -> tuple[bytes, JSONRPCMessage] | None:
        """The next reply to write (it stays counted until `sent`), or None once closed and empty."""
        while not self._items:
            if self._closed:
                return None
            ready = self._ready
            await ready.wait()
            if not self._items:
                self._ready = anyio.Event()
        head = self._items[0]
        return head.data, head.message

    def sent(self) -> None:
        """The reply `get` gave was written."""
        head = self._items.popleft()
        self.queued_bytes -= len(head.data)
        if not self._items and not self._closed:
            self._ready = anyio.Event()
