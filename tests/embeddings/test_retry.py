"""The retry loop: which errors are retried, and how long it asks to wait before each retry."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.embeddings.retry import RetryPolicy, is_quota_window, is_retryable, with_retries
from memoryd.errors import EmbeddingAuthError, EmbeddingError, EmbeddingQuotaError, EmbeddingRateLimitError

NO_JITTER = RetryPolicy(rand=lambda: 0.0)
SERVER_ERROR = "openai embeddings failed: HTTP 500: boom"
RATE_LIMIT_429 = "openai embeddings failed: HTTP 429: Rate limit reached for requests per min (RPM)"
OVERLOADED_503 = "gemini embeddings failed: HTTP 503: The model is overloaded."


class Script:
    """A call that raises the given errors in turn, then returns "ok"; waits are recorded, not slept."""

    def __init__(self, errors: Sequence[EmbeddingError]) -> None:
        self.errors = list(errors)
        self.calls = 0
        self.waits: list[float] = []

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


async def run(script: Script, policy: RetryPolicy = NO_JITTER) -> str:
    return await with_retries(script, policy=policy, sleep=script.sleep)


@pytest.mark.anyio
async def test_transient_errors_are_retried_after_half_a_second_doubling() -> None:
    script = Script([EmbeddingError(SERVER_ERROR)] * 3)
    assert await run(script) == "ok"
    assert script.waits == [0.5, 1.0, 2.0]
    assert script.calls == 4


@pytest.mark.anyio
async def test_jitter_stretches_each_wait_by_up_to_a_fifth() -> None:
    script = Script([EmbeddingError(SERVER_ERROR)] * 3)
    assert await run(script, RetryPolicy(rand=lambda: 0.5)) == "ok"
    assert script.waits == [0.55, 1.1, 2.2]


@pytest.mark.anyio
async def test_waits_are_capped_at_eight_seconds() -> None:
    script = Script([EmbeddingError(SERVER_ERROR)] * 3)
    await run(script, RetryPolicy(base_delay_s=5.0, rand=lambda: 0.0))
    assert script.waits == [5.0, 8.0, 8.0]


@pytest.mark.anyio
async def test_after_three_retries_the_last_error_is_raised() -> None:
    errors = [EmbeddingError(f"{SERVER_ERROR} #{i}") for i in range(4)]
    script = Script(errors)
    with pytest.raises(EmbeddingError) as caught:
        await run(script)
    assert caught.value is errors[3]
    assert script.calls == 4


@pytest.mark.anyio
@pytest.mark.parametrize(
    "error",
    [
        EmbeddingAuthError("openai embeddings failed: HTTP 401: Incorrect API key provided."),
        EmbeddingQuotaError("openai embeddings failed: HTTP 429: insufficient_quota"),
        EmbeddingError("openai embeddings failed: vectors have 512 dimensions, expected 8 as before"),
        EmbeddingError("openai embeddings failed: HTTP 400: input too long"),
    ],
)
async def test_final_errors_are_raised_at_once(error: EmbeddingError) -> None:
    script = Script([error])
    with pytest.raises(EmbeddingError) as caught:
        await run(script)
    assert caught.value is error
    assert (script.calls, script.waits) == (1, [])


@pytest.mark.anyio
async def test_retry_after_is_waited_in_full() -> None:
    script = Script([EmbeddingRateLimitError(RATE_LIMIT_429, retry_after=30.0)])
    await run(script)
    assert script.waits == [30.0]


@pytest.mark.anyio
async def test_a_retry_after_shorter_than_the_backoff_still_waits_the_backoff() -> None:
    script = Script([EmbeddingError(SERVER_ERROR)] * 2 + [EmbeddingRateLimitError(RATE_LIMIT_429, retry_after=0.1)])
    await run(script)
    assert script.waits == [0.5, 1.0, 2.0]


@pytest.mark.anyio
async def test_retry_after_is_capped_by_the_policy() -> None:
    script = Script([EmbeddingRateLimitError(RATE_LIMIT_429, retry_after=3600.0)] * 2)
    await run(script, RetryPolicy(max_retry_after_s=45.0, rand=lambda: 0.0))
    assert script.waits == [45.0, 45.0]
    default = Script([EmbeddingRateLimitError(RATE_LIMIT_429, retry_after=3600.0)])
    await run(default)
    assert default.waits == [120.0]


@pytest.mark.anyio
async def test_a_quota_window_429_without_a_hint_backs_off_for_seconds_to_a_minute() -> None:
    script = Script([EmbeddingRateLimitError(RATE_LIMIT_429)] * 3)
    await run(script)
    assert script.waits == [5.0, 15.0, 60.0]


@pytest.mark.anyio
async def test_an_overload_without_a_hint_uses_the_quick_backoff() -> None:
    error = EmbeddingRateLimitError(OVERLOADED_503)
    assert not is_quota_window(error)
    script = Script([error] * 2)
    await run(script)
    assert script.waits == [0.5, 1.0]


@pytest.mark.anyio
async def test_more_retries_repeat_the_last_quota_window_wait() -> None:
    script = Script([EmbeddingRateLimitError(RATE_LIMIT_429)] * 5)
    await run(script, RetryPolicy(max_retries=5, rand=lambda: 0.0))
    assert script.waits == [5.0, 15.0, 60.0, 60.0, 60.0]


@pytest.mark.anyio
async def test_a_call_past_its_deadline_is_retried_as_a_timeout() -> None:
    never = anyio.Event()
    calls = 0
    waits: list[float] = []

    async def hang() -> str:
        nonlocal calls
        calls += 1
        await never.wait()
        return "unreachable"

    async def record(seconds: float) -> None:
        waits.append(seconds)

    policy = RetryPolicy(max_retries=1, attempt_timeout_s=0.05, rand=lambda: 0.0)
    with anyio.fail_after(5), pytest.raises(EmbeddingError, match=r"timed out after 0\.05 s"):
        await with_retries(hang, policy=policy, sleep=record)
    assert (calls, waits) == (2, [0.5])


@pytest.mark.anyio
async def test_the_default_sleep_really_waits_on_the_event_loop() -> None:
    script = Script([EmbeddingError(SERVER_ERROR)])
    with anyio.fail_after(5):
        assert await with_retries(script, policy=RetryPolicy(base_delay_s=0.001, rand=lambda: 0.0)) == "ok"
    assert script.calls == 2


def test_retryable_messages_follow_openclaw_but_a_number_is_not_a_status() -> None:
    retryable = [
        "HTTP 503: unavailable",
        "request to /embeddings timed out after 60 s",
        "connection error on /embeddings: ConnectError",
        "Too Many Requests",
        "rate_limit exceeded",
        "Resource has been exhausted (e.g. check quota).",
        "blocked by Cloudflare",
        "tokens per day exceeded",
    ]
    final = ["vectors have 512 dimensions", "expected 500 vectors, got 499", "HTTP 404: not found"]
    assert all(is_retryable(EmbeddingError(m)) for m in retryable)
    assert not any(is_retryable(EmbeddingError(m)) for m in final)


@given(st.integers(min_value=0, max_value=12), st.floats(min_value=0.0, max_value=0.999999))
def test_every_backoff_lies_between_the_base_and_a_fifth_above_it_within_the_cap(retry: int, rand: float) -> None:
    policy = RetryPolicy(rand=lambda: rand)
    base = 0.5 * 2**retry
    delay = policy.delay_for(EmbeddingError(SERVER_ERROR), retry)
    assert min(8.0, base) - 0.0005 <= delay <= min(8.0, base * 1.2) + 0.0005


@given(st.floats(min_value=0.0, max_value=10_000.0), st.integers(min_value=0, max_value=5))
def test_a_servers_wait_is_honoured_up_to_the_cap(retry_after: float, retry: int) -> None:
    policy = RetryPolicy()
    delay = policy.delay_for(EmbeddingRateLimitError(RATE_LIMIT_429, retry_after=retry_after), retry)
    assert min(120.0, retry_after) <= delay <= max(min(120.0, retry_after), 8.0)
