"""Running job sets through a provider's batch API, and the failure state of spec §3.12.

The texts go into jobs of at most `max_requests_per_job` requests (custom id = the text's index),
at most `concurrency` jobs in flight across every caller of one `BatchEmbedder`; each job is
submitted, polled every `poll_interval_ms` until it ends or `timeout_minutes` pass, and its output
lines are mapped back by custom id. Which wire format a provider speaks is its `JobApi`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar, TypeVar

import anyio
import numpy as np
import structlog

from memoryd.config import BatchSettings
from memoryd.embeddings.base import EmbeddingProvider, Vectors
from memoryd.embeddings.batch.gemini_jobs import GeminiJobs
from memoryd.embeddings.batch.jobs import ERRORS_SHOWN, UNAVAILABLE_MARKER, JobApi, JobStatus, OutputLine
from memoryd.embeddings.batch.openai_jobs import OpenAIJobs, VoyageJobs
from memoryd.embeddings.remote import RemoteEmbeddingProvider
from memoryd.embeddings.retry import DEFAULT_RETRY_POLICY, RetryPolicy, with_retries
from memoryd.errors import EmbeddingError

T = TypeVar("T")

log = structlog.get_logger(__name__)

MAX_REQUESTS_PER_JOB = 50_000
"""Most requests one job may hold: OpenAI, Gemini and Voyage alike (spec §1)."""
BATCH_FAILURE_LIMIT = 2
"""Failures after which batch mode is switched off (OpenClaw's MEMORY_BATCH_FAILURE_LIMIT)."""

_TIMEOUT_RE = re.compile(r"timed out|timeout", re.IGNORECASE)
_CANCEL_GRACE_S = 10.0
"""Longest a cancelled caller waits for the courtesy cancel of its running job."""
_JOB_APIS: Mapping[str, type[JobApi]] = MappingProxyType(
    {"openai": OpenAIJobs, "voyage": VoyageJobs, "gemini": GeminiJobs}
)

Fallback = Callable[[list[str]], Awaitable[Vectors]]


def supports_batch(provider: EmbeddingProvider) -> bool:
    """Whether the provider has an async batch API that this module speaks."""
    return isinstance(provider, RemoteEmbeddingProvider) and provider.id in _JOB_APIS


class BatchEmbedder:
    """Runs job sets through the batch APIs and keeps the failure state of spec §3.12.

    One per daemon (or per agent): its failure count and its job limit span every call.
    `timeout_s` overrides `settings.timeout_minutes`; `policy` retries each HTTP call of a job.
    """

    limit: ClassVar[int] = BATCH_FAILURE_LIMIT

    def __init__(
        self,
        settings: BatchSettings,
        *,
        policy: RetryPolicy = DEFAULT_RETRY_POLICY,
        timeout_s: float | None = None,
        max_requests_per_job: int = MAX_REQUESTS_PER_JOB,
    ) -> None:
        self.settings = settings
        self.failures = 0
        self.disabled = False
        self.last_error: str | None = None
        self.last_provider: str | None = None
        self._policy = policy
        self._timeout_s = timeout_s if timeout_s is not None else settings.timeout_minutes * 60.0
        self._max_requests = max(1, max_requests_per_job)
        self._gate = anyio.CapacityLimiter(max(1, settings.concurrency))

    @property
    def enabled(self) -> bool:
        return self.settings.enabled and not self.disabled

    def usable(self, provider: EmbeddingProvider) -> bool:
        """Batch mode is on, not switched off by failures, and the provider has a batch API."""
        return self.enabled and supports_batch(provider)

    def state(self) -> dict[str, object]:
        """The `batch` object of the status tool, named as OpenClaw names it."""
        return {
            "enabled": self.enabled,
            "failures": self.failures,
            "limit": self.limit,
            "wait": self.settings.wait,
            "concurrency": max(1, self.settings.concurrency),
            "pollIntervalMs": self.settings.poll_interval_ms,
            "timeoutMs": round(self._timeout_s * 1000),
            "lastError": self.last_error,
            "lastProvider": self.last_provider,
        }

    async def embed_or_fallback(self, provider: EmbeddingProvider, texts: list[str], fallback: Fallback) -> Vectors:
        """Batch mode when usable; otherwise, or after any batch failure, `fallback(texts)`."""
        if not self.usable(provider):
            return await fallback(texts)
        try:
            return await self.embed(provider, texts)
        except EmbeddingError as error:
            log.warning(
                "batch embedding failed; embedding synchronously",
                provider=provider.id,
                failures=self.failures,
                limit=self.limit,
                disabled=self.disabled,
                error=str(error),
            )
            return await fallback(texts)

    async def embed(self, provider: EmbeddingProvider, texts: list[str]) -> Vectors:
        """Embed `texts` as one job set; rows in input order. Raises EmbeddingError on any failure."""
        if not isinstance(provider, RemoteEmbeddingProvider) or provider.id not in _JOB_APIS:
            raise EmbeddingError(f"{provider.id} has no async batch API")
        if not self.enabled:
            raise EmbeddingError(f"{provider.id} batch mode is off")
        if not texts:
            return np.zeros((0, provider.output_dimensionality), dtype=np.float32)
        api = _JOB_APIS[provider.id](provider)
        attempts = 1
        try:
            try:
                vectors = await self._run(api, texts)
            except EmbeddingError as error:
                if not _TIMEOUT_RE.search(str(error)):
                    raise
                log.warning("batch embedding timed out; retrying once", provider=provider.id, error=str(error))
                attempts = 2
                vectors = await self._run(api, texts)
        except EmbeddingError as error:
            self._record_failure(provider.id, str(error), attempts=attempts)
            raise
        self._record_success()
        return vectors

    # -- failure state ---------------------------------------------------------------------------

    def _record_failure(self, provider_id: str, message: str, *, attempts: int) -> None:
        if self.disabled:
            return
        force = UNAVAILABLE_MARKER.lower() in message.lower()
        self.failures += self.limit if force else attempts
        self.last_error = message
        self.last_provider = provider_id
        if force or self.failures >= self.limit:
            self.disabled = True
            log.warning("batch embedding switched off", provider=provider_id, failures=self.failures)

    def _record_success(self) -> None:
        """A success clears the count; it does not switch a disabled batch mode back on."""
        self.failures = 0
        self.last_error = None
        self.last_provider = None

    # -- running jobs ----------------------------------------------------------------------------

    async def _run(self, api: JobApi, texts: list[str]) -> Vectors:
        ids = [str(i) for i in range(len(texts))]
        groups = [ids[start : start + self._max_requests] for start in range(0, len(ids), self._max_requests)]
        found: dict[str, Vectors] = {}

        async def run_group(group: list[str]) -> None:
            async with self._gate:
                found.update(await self._run_job(api, group, [texts[int(i)] for i in group]))

        try:
            async with anyio.create_task_group() as tg:
                for group in groups:
                    tg.start_soon(run_group, group)
        except BaseExceptionGroup as group_error:
            raise _first_leaf(group_error) from None
        return api.provider.accept_vectors([found[i] for i in ids])

    async def _run_job(self, api: JobApi, ids: list[str], texts: list[str]) -> dict[str, Vectors]:
        status = await self._call(lambda: api.submit(ids, texts))
        log.info("batch job created", provider=api.label, job=status.job_id, requests=len(ids), state=status.state)
        if status.phase == "running":
            if not self.settings.wait:
                raise api.fail("submitted; not waiting for it (remote.batch.wait is off)", status.job_id)
            try:
                status = await self._wait(api, status)
            except anyio.get_cancelled_exc_class():
                # A sibling job failed or the daemon is stopping: nobody will read this job's output.
                with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_GRACE_S):
                    await self._cancel_quietly(api, status.job_id)
                raise
        if status.phase == "failed":
            detail = await api.failure_detail(status)
            raise api.fail(status.state + (f": {detail}" if detail else ""), status.job_id)
        lines = await self._call(lambda: api.results(status))
        log.info("batch job completed", provider=api.label, job=status.job_id, requests=len(ids))
        return collect_outputs(api.label, status.job_id, ids, lines)

    async def _wait(self, api: JobApi, status: JobStatus) -> JobStatus:
        interval = max(0.0, self.settings.poll_interval_ms / 1000.0)
        job_id = status.job_id
        with anyio.move_on_after(self._timeout_s):
            while status.phase == "running":
                await anyio.sleep(interval)
                status = await self._call(lambda: api.status(job_id))
        if status.phase != "running":
            return status
        await self._cancel_quietly(api, job_id)
        raise api.fail(f"timed out after {self._timeout_s:g} s (last state {status.state})", job_id)

    async def _cancel_quietly(self, api: JobApi, job_id: str) -> None:
        """Stop a job we gave up on, so it is not billed; failing to is only worth a log line."""
        try:
            await api.cancel(job_id)
        except EmbeddingError as error:
            log.warning("could not cancel an abandoned batch job", provider=api.label, job=job_id, error=str(error))

    async def _call(self, call: Callable[[], Awaitable[T]]) -> T:
        return await with_retries(call, policy=self._policy)


def collect_outputs(label: str, job_id: str, ids: Sequence[str], lines: Sequence[OutputLine]) -> dict[str, Vectors]:
    """Map output lines, in any order, back to custom ids; any per-request error or missing id fails the job."""

    def fail(problem: str) -> EmbeddingError:
        return EmbeddingError(f"{label} batch {job_id} {problem}")

    wanted = set(ids)
    vectors: dict[str, Vectors] = {}
    errors: list[str] = []
    for line in lines:
        if line.custom_id not in wanted:
            raise fail(f"answered an unknown custom_id {line.custom_id!r}")
        if line.vector is None:
            errors.append(f"{line.custom_id}: {line.error or 'no embedding'}")
        else:
            vectors[line.custom_id] = line.vector
    if errors:
        shown = "; ".join(errors[:ERRORS_SHOWN])
        raise fail(f"failed for {len(errors)} of {len(ids)} requests: {shown}")
    missing = [i for i in ids if i not in vectors]
    if missing:
        shown = ", ".join(missing[:ERRORS_SHOWN])
        raise fail(f"is missing {len(missing)} of {len(ids)} embeddings (custom ids {shown})")
    return vectors


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first
