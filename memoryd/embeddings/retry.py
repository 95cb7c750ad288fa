"""Retrying embedding calls: OpenClaw's loop, plus the waits its users asked for (spec §3.12, §5 item 9).

OpenClaw retries three times after 0.5, 1 and 2 s (jittered, capped at 8 s). Against a provider's
per-minute quota window that is over before the window is, and it retried exhausted quotas that can
never succeed. Here a rate-limited answer waits at least as long as the server asked (Retry-After,
Gemini's RetryInfo, ...) up to a cap, a quota-window 429 without such a hint backs off for seconds
to a minute, and auth or exhausted-quota errors are raised at once.
"""

from __future__ import annotations

import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import structlog

from memoryd.errors import EmbeddingAuthError, EmbeddingError, EmbeddingQuotaError, EmbeddingRateLimitError

T = TypeVar("T")

log = structlog.get_logger(__name__)

_RETRYABLE_RE = re.compile(
    r"timed out|timeout|connection error|HTTP 5\d\d\b|\b429\b|rate[_ ]limit|too many requests"
    r"|resource has been exhausted|cloudflare|tokens per day",
    re.IGNORECASE,
)
"""OpenClaw's retryable-message test, with `5\\d\\d` narrowed to HTTP statuses so that a message
such as "512 dimensions" is not mistaken for a server error, plus timeouts and dropped connections."""

_QUOTA_WINDOW_RE = re.compile(
    r"\b429\b|quota|per (?:min|minute|hour|day)\b|resource[_ ]exhausted|resource has been exhausted"
    r"|tokens per|requests per|too many requests",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry. Times in seconds."""

    max_retries: int = 3
    """Retries after the first call (OpenClaw: 3, so 4 calls in all)."""
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    jitter: float = 0.2
    """Each wait is multiplied by 1 + jitter·rand, so clients that failed together spread out."""
    max_retry_after_s: float = 120.0
    """Cap on any one wait a server asks for, and on the quota-window backoff."""
    quota_window_delays_s: tuple[float, ...] = (5.0, 15.0, 60.0)
    """Waits for a 429 that names a rate window but no wait; the last one repeats."""
    attempt_timeout_s: float | None = None
    """Deadline of one call (OpenClaw: 60 s for a query, 120 s for a batch); None = the call's own."""
    rand: Callable[[], float] = field(default=random.random)
    """Source of jitter in [0, 1); tests pin it."""

    def delay_for(self, error: EmbeddingError, retry: int) -> float:
        """The wait before retry number `retry` (0-based) after `error`."""
        spread = 1.0 + self.jitter * self.rand()
        backoff = min(self.max_delay_s, round(self.base_delay_s * 2.0**retry * spread * 1000) / 1000)
        if isinstance(error, EmbeddingRateLimitError) and error.retry_after is not None:
            return min(self.max_retry_after_s, max(error.retry_after, backoff))
        if is_quota_window(error) and self.quota_window_delays_s:
            step = self.quota_window_delays_s[min(retry, len(self.quota_window_delays_s) - 1)]
            return min(self.max_retry_after_s, step * spread)
        return backoff


DEFAULT_RETRY_POLICY = RetryPolicy()


def is_retryable(error: EmbeddingError) -> bool:
    """Auth and exhausted quota never; rate limits always; others when the message says transient."""
    if isinstance(error, EmbeddingAuthError | EmbeddingQuotaError):
        return False
    if isinstance(error, EmbeddingRateLimitError):
        return True
    return bool(_RETRYABLE_RE.search(str(error)))


def is_quota_window(error: EmbeddingError) -> bool:
    """A rate limit tied to a per-minute/day window, with no hint of when the window reopens."""
    return (
        isinstance(error, EmbeddingRateLimitError)
        and error.retry_after is None
        and bool(_QUOTA_WINDOW_RE.search(str(error)))
    )


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    sleep: Callable[[float], Awaitable[object]] = anyio.sleep,
) -> T:
    """Await `call()` until it succeeds, the error is final, or the retries are spent (then re-raise)."""
    retry = 0
    while True:
        try:
            return await _attempt(call, policy.attempt_timeout_s)
        except EmbeddingError as error:
            if retry >= policy.max_retries or not is_retryable(error):
                raise
            delay = policy.delay_for(error, retry)
            log.warning("embedding call failed; retrying", retry=retry + 1, wait_s=delay, error=str(error))
            await sleep(delay)
            retry += 1


async def _attempt(call: Callable[[], Awaitable[T]], timeout_s: float | None) -> T:
    if timeout_s is None:
        return await call()
    try:
        with anyio.fail_after(timeout_s):
            return await call()
    except TimeoutError:
        raise EmbeddingError(f"embedding call timed out after {timeout_s:g} s") from None
