"""What one HTTP token may use: a request rate, requests at once, and time to send its request.

The socket bounds a client by its connection (`memoryd.server.backpressure`); over HTTP a client is
its token, whatever connections it opens. Each token has a token bucket (`daemon.http_rate_per_minute`,
a tenth of it as burst) and a count of running requests (`daemon.http_max_concurrent`); past either
the request is answered 429 at once, so a busy token never queues work in front of the socket's clients.
A body that has not arrived `daemon.http_timeout_s` after the request began ends in 408.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import anyio
from starlette.types import Message, Receive

from memoryd.errors import MemorydError


class SlowClientError(MemorydError):
    """The client did not send its request body in time (answered 408 by the app)."""


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float
    running: int = 0


@dataclass(slots=True)
class TokenLimits:
    """Per-token rate and concurrency; `admit` then `release` around each counted request."""

    per_minute: int
    concurrent: int
    _buckets: dict[str, _Bucket] = field(default_factory=dict)

    @property
    def burst(self) -> float:
        return max(1.0, self.per_minute / 10)

    def admit(self, token_id: str, *, counted: bool = True) -> str | None:
        """None when the request may run (and, if `counted`, it now holds a slot); else why not."""
        now = time.monotonic()
        bucket = self._buckets.get(token_id)
        if bucket is None:
            bucket = self._buckets[token_id] = _Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.stamp) * self.per_minute / 60)
        bucket.stamp = now
        if bucket.tokens < 1:
            return f"rate limit: this token may make {self.per_minute} requests a minute (daemon.http_rate_per_minute)"
        if counted and bucket.running >= self.concurrent:
            return (
                f"concurrency limit: this token may have {self.concurrent} requests running at once "
                "(daemon.http_max_concurrent)"
            )
        bucket.tokens -= 1
        if counted:
            bucket.running += 1
        return None

    def retry_after(self, token_id: str) -> int:
        """Seconds until the bucket holds a request again (at least 1)."""
        bucket = self._buckets.get(token_id)
        if bucket is None or bucket.tokens >= 1:
            return 1
        return max(1, int((1 - bucket.tokens) * 60 / self.per_minute + 0.999))

    def release(self, token_id: str) -> None:
        bucket = self._buckets.get(token_id)
        if bucket is not None and bucket.running > 0:
            bucket.running -= 1


def deadline_receive(receive: Receive, seconds: float) -> Receive:
    """`receive` that raises SlowClientError once the request body is `seconds` late (from now)."""
    deadline = anyio.current_time() + seconds
    body_done = False

    async def timed() -> Message:
        nonlocal body_done
        if body_done:
            return await receive()  # after the body: waiting for a disconnect is not the client's delay
        with anyio.move_on_after(max(0.0, deadline - anyio.current_time())) as scope:
            message = await receive()
        if scope.cancelled_caught:
            raise SlowClientError(f"the request body did not arrive within {seconds:g} s")
        if message["type"] != "http.request" or not message.get("more_body", False):
            body_done = True
        return message

    return timed
