"""Splitting texts into embedding requests, and running those requests with retries and a limit.

The batch budget counts UTF-8 bytes, an upper bound on tokens for every tokenizer in use, so a
request never exceeds a provider's per-request token limit (spec §3.12 buildMemoryEmbeddingBatches).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import anyio
import numpy as np

from memoryd.embeddings.base import EMBEDDING_BATCH_MAX_BYTES, Vectors
from memoryd.embeddings.retry import RetryPolicy, with_retries


def plan_batches(
    texts: Sequence[str], max_bytes: int = EMBEDDING_BATCH_MAX_BYTES, max_items: int | None = None
) -> list[list[int]]:
    """Group text indexes, in order, into batches of at most `max_bytes` UTF-8 bytes.

    A new batch starts when adding the next text would exceed the budget (or `max_items`); a text
    larger than the budget on its own forms a batch by itself.
    """
    batches: list[list[int]] = []
    current: list[int] = []
    size = 0
    for index, text in enumerate(texts):
        length = len(text.encode("utf-8", "surrogatepass"))
        full = max_items is not None and len(current) >= max_items
        if current and (size + length > max_bytes or full):
            batches.append(current)
            current, size = [], 0
        current.append(index)
        size += length
    if current:
        batches.append(current)
    return batches


async def embed_in_batches(
    texts: Sequence[str],
    embed: Callable[[list[str]], Awaitable[Vectors]],
    *,
    policy: RetryPolicy,
    max_bytes: int = EMBEDDING_BATCH_MAX_BYTES,
    max_items: int | None = None,
    limiter: anyio.CapacityLimiter | None = None,
    sleep: Callable[[float], Awaitable[object]] = anyio.sleep,
) -> Vectors:
    """Embed `texts` batch by batch, each batch retried per `policy`; rows come back in input order.

    `limiter` bounds how many requests run at once; share one per provider across files and agents
    so that a burst of work cannot flood one account's rate limit. Without it batches run one by one.
    The first batch that fails for good cancels the rest and its error is raised.
    """
    plan = plan_batches(texts, max_bytes, max_items)
    results: list[Vectors] = [np.zeros((0, 0), dtype=np.float32)] * len(plan)

    async def run(slot: int, indexes: list[int]) -> None:
        batch = [texts[i] for i in indexes]
        async with gate:
            results[slot] = await with_retries(lambda: embed(batch), policy=policy, sleep=sleep)

    gate = limiter or anyio.CapacityLimiter(1)
    try:
        async with anyio.create_task_group() as tg:
            for slot, indexes in enumerate(plan):
                tg.start_soon(run, slot, indexes)
    except BaseExceptionGroup as group:
        raise _first_leaf(group) from None
    if not results:
        return np.zeros((0, 0), dtype=np.float32)
    return np.concatenate(results, axis=0).astype(np.float32, copy=False)


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The task group wraps errors; callers expect the provider's own error."""
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first
