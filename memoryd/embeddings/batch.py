"""Async batch embedding APIs (OpenAI, Voyage, Gemini): big job sets at a discount, with a way back.

A (re)index of many chunks can go through a provider's batch API instead of thousands of synchronous
requests: the texts are uploaded as one JSONL file (one request per text, its index as custom id), a
job is created and polled until it ends, and the output file is mapped back by custom id, since
outputs come in any order. More than 50,000 texts are split into several jobs, at most
`concurrency` of them in flight at once across every caller of one `BatchEmbedder`.

Batch mode is an optimisation, never a requirement (spec §3.12): after any failure the caller embeds
the same texts through the synchronous API (`embed_or_fallback`). A timeout is retried once and
counts as two failures if the retry fails too; two failures, or Gemini answering that it has no
asyncBatchEmbedContent, switch batch mode off for the embedder's lifetime; a success resets the count.
A job we stop waiting for is cancelled, so an abandoned job is not billed on top of the retry.
"""

from __future__ import annotations

import re
import secrets
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, Literal, TypeVar
from urllib.parse import quote, urlsplit, urlunsplit

import anyio
import numpy as np
import orjson
import structlog

from memoryd.config import BatchSettings
from memoryd.embeddings.base import EmbeddingProvider, Vectors
from memoryd.embeddings.remote import RemoteEmbeddingProvider
from memoryd.embeddings.retry import DEFAULT_RETRY_POLICY, RetryPolicy, with_retries
from memoryd.errors import EmbeddingError

T = TypeVar("T")

log = structlog.get_logger(__name__)

MAX_REQUESTS_PER_JOB = 50_000
"""Most requests one job may hold: OpenAI, Gemini and Voyage alike (spec §1)."""
BATCH_FAILURE_LIMIT = 2
"""Failures after which batch mode is switched off (OpenClaw's MEMORY_BATCH_FAILURE_LIMIT)."""
UNAVAILABLE_MARKER = "asyncBatchEmbedContent not available"
"""Part of the message of a Gemini endpoint without a batch API; such an error disables batch mode at once."""

_TIMEOUT_RE = re.compile(r"timed out|timeout", re.IGNORECASE)
_ERRORS_SHOWN = 3
_CANCEL_GRACE_S = 10.0
"""Longest a cancelled caller waits for the courtesy cancel of its running job."""
_GEMINI_NAME_RE = re.compile(r"(?:batches|files)/[\w.-]+")
_EMBEDDINGS_ENDPOINT = "/v1/embeddings"

Phase = Literal["running", "completed", "failed"]
Fallback = Callable[[list[str]], Awaitable[Vectors]]


@dataclass(frozen=True, slots=True)
class JobStatus:
    """Where a job stands, in the provider's words (`state`) and in ours (`phase`)."""

    job_id: str
    phase: Phase
    state: str
    output_file: str = ""
    error_file: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class OutputLine:
    """One answered request: a vector, or why there is none."""

    custom_id: str
    vector: Vectors | None
    error: str = ""


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
        shown = "; ".join(errors[:_ERRORS_SHOWN])
        raise fail(f"failed for {len(errors)} of {len(ids)} requests: {shown}")
    missing = [i for i in ids if i not in vectors]
    if missing:
        shown = ", ".join(missing[:_ERRORS_SHOWN])
        raise fail(f"is missing {len(missing)} of {len(ids)} embeddings (custom ids {shown})")
    return vectors


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


# -- wire formats --------------------------------------------------------------------------------


class JobApi(ABC):
    """One provider's batch wire format: submit, poll, cancel, read results."""

    def __init__(self, provider: RemoteEmbeddingProvider) -> None:
        self.provider = provider

    @property
    def label(self) -> str:
        return self.provider.id

    def fail(self, problem: str, job_id: str = "") -> EmbeddingError:
        """An error naming the provider and, once there is one, the job."""
        return EmbeddingError(f"{self.label} batch {job_id} {problem}" if job_id else f"{self.label} batch {problem}")

    @abstractmethod
    async def submit(self, ids: Sequence[str], texts: Sequence[str]) -> JobStatus:
        """Upload the requests and create the job."""

    @abstractmethod
    async def status(self, job_id: str) -> JobStatus: ...

    @abstractmethod
    async def cancel(self, job_id: str) -> None: ...

    @abstractmethod
    async def results(self, status: JobStatus) -> list[OutputLine]:
        """Every answered request of a completed job, errors included."""

    async def failure_detail(self, status: JobStatus) -> str:
        """Why a job failed, as far as the provider says."""
        return status.detail

    async def _json(
        self,
        method: str,
        target: str,
        body: object = None,
        *,
        content: bytes | None = None,
        content_type: str | None = None,
    ) -> Mapping[str, object]:
        if body is not None:
            content, content_type = orjson.dumps(body), "application/json"
        response = await self.provider.send(method, target, content=content, content_type=content_type)
        return self._object(response.content, target)

    def _object(self, content: bytes, target: str) -> Mapping[str, object]:
        try:
            answer = orjson.loads(content)
        except orjson.JSONDecodeError:
            raise self.fail(f"got an answer from {target} that is not JSON") from None
        if not isinstance(answer, Mapping):
            raise self.fail(f"got an answer from {target} that is not a JSON object")
        return answer

    async def _download(self, target: str, params: Mapping[str, str] | None = None) -> bytes:
        return (await self.provider.send("GET", target, params=params)).content

    def _jsonl(self, content: bytes, origin: str) -> Iterator[Mapping[str, object]]:
        for number, raw in enumerate(content.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise self.fail(f"output line {number} is not JSON", origin) from None
            if not isinstance(record, Mapping):
                raise self.fail(f"output line {number} is not a JSON object", origin)
            yield record


class OpenAIJobs(JobApi):
    """OpenAI's Files + Batches API: JSONL of `{custom_id, method, url, body}`, window 24h."""

    completion_window: ClassVar[str] = "24h"

    def request_line(self, custom_id: str, text: str) -> dict[str, object]:
        body: dict[str, object] = {"model": self.provider.model, "input": text}
        if self.provider.output_dimensionality:
            body["dimensions"] = self.provider.output_dimensionality
        return {"custom_id": custom_id, "method": "POST", "url": _EMBEDDINGS_ENDPOINT, "body": body}

    def create_body(self, file_id: str) -> dict[str, object]:
        return {
            "input_file_id": file_id,
            "endpoint": _EMBEDDINGS_ENDPOINT,
            "completion_window": self.completion_window,
            "metadata": {"source": "memoryd"},
        }

    async def submit(self, ids: Sequence[str], texts: Sequence[str]) -> JobStatus:
        payload = b"".join(orjson.dumps(self.request_line(i, t)) + b"\n" for i, t in zip(ids, texts, strict=True))
        content, content_type = _form_data({"purpose": "batch"}, "file", "memoryd-embeddings.jsonl", payload)
        uploaded = await self._json("POST", "/files", content=content, content_type=content_type)
        file_id = _text(uploaded.get("id"))
        if not file_id:
            raise self.fail("upload answer has no file id")
        return self._status(await self._json("POST", "/batches", self.create_body(file_id)))

    async def status(self, job_id: str) -> JobStatus:
        return self._status(await self._json("GET", f"/batches/{quote(job_id, safe='')}"))

    async def cancel(self, job_id: str) -> None:
        await self.provider.send("POST", f"/batches/{quote(job_id, safe='')}/cancel")

    async def results(self, status: JobStatus) -> list[OutputLine]:
        if not status.output_file and not status.error_file:
            raise self.fail("completed without an output file", status.job_id)
        lines: list[OutputLine] = []
        for file_id in (status.output_file, status.error_file):
            if file_id:
                content = await self._download(f"/files/{quote(file_id, safe='')}/content")
                lines += [openai_output_line(r) for r in self._jsonl(content, status.job_id)]
        return lines

    async def failure_detail(self, status: JobStatus) -> str:
        if not status.error_file:
            return status.detail
        try:
            content = await self._download(f"/files/{quote(status.error_file, safe='')}/content")
            errors = [line.error for line in map(openai_output_line, self._jsonl(content, status.job_id)) if line.error]
        except EmbeddingError as error:
            return f"{status.detail} (error file unreadable: {error})".strip()
        return "; ".join([d for d in (status.detail, *errors[:_ERRORS_SHOWN]) if d])

    def _status(self, job: Mapping[str, object]) -> JobStatus:
        job_id = _text(job.get("id"))
        if not job_id:
            raise self.fail("create answer has no batch id")
        state = _text(job.get("status")) or "unknown"
        phase: Phase = "completed" if state == "completed" else "failed" if state in _OPENAI_FAILED else "running"
        return JobStatus(
            job_id=job_id,
            phase=phase,
            state=state,
            output_file=_text(job.get("output_file_id")),
            error_file=_text(job.get("error_file_id")),
            detail=_openai_job_errors(job.get("errors")),
        )


class VoyageJobs(OpenAIJobs):
    """Voyage's OpenAI-shaped Files + Batches API: model and input type per job, window 12h."""

    completion_window: ClassVar[str] = "12h"

    def request_line(self, custom_id: str, text: str) -> dict[str, object]:
        return {"custom_id": custom_id, "body": {"input": text}}

    def create_body(self, file_id: str) -> dict[str, object]:
        params: dict[str, object] = {"model": self.provider.model, "input_type": "document"}
        if self.provider.output_dimensionality:
            params["output_dimension"] = self.provider.output_dimensionality
        return {**super().create_body(file_id), "request_params": params}


class GeminiJobs(JobApi):
    """Gemini's File API + `models/{model}:asyncBatchEmbedContent`, polled as a long-running operation."""

    async def submit(self, ids: Sequence[str], texts: Sequence[str]) -> JobStatus:
        payload = b"".join(
            orjson.dumps({"key": i, "request": self._request(t)}) + b"\n" for i, t in zip(ids, texts, strict=True)
        )
        metadata = orjson.dumps({"file": {"displayName": "memoryd-embeddings", "mimeType": "application/jsonl"}})
        content, content_type = _related(metadata, payload)
        upload_url = _google_media_url(self.provider.base_url, "upload", "files")
        uploaded = await self._json(
            "POST", upload_url + "?uploadType=multipart", content=content, content_type=content_type
        )
        file_info = uploaded.get("file")
        file_name = _text(file_info.get("name")) if isinstance(file_info, Mapping) else _text(uploaded.get("name"))
        if not _GEMINI_NAME_RE.fullmatch(file_name):
            raise self.fail(f"upload answer names no file (name {file_name!r})")
        body = {"batch": {"displayName": "memoryd-embeddings", "inputConfig": {"fileName": file_name}}}
        target = f"/models/{self.provider.model}:asyncBatchEmbedContent"
        response = await self.provider.send(
            "POST", target, content=orjson.dumps(body), content_type="application/json", allow=(404,)
        )
        if response.status_code == 404:
            raise self.fail(f"create failed: HTTP 404 ({UNAVAILABLE_MARKER} for this model or base URL)")
        return self._status(self._object(response.content, target))

    async def status(self, job_id: str) -> JobStatus:
        return self._status(await self._json("GET", f"/{job_id}"))

    async def cancel(self, job_id: str) -> None:
        await self.provider.send("POST", f"/{job_id}:cancel")

    async def results(self, status: JobStatus) -> list[OutputLine]:
        if not _GEMINI_NAME_RE.fullmatch(status.output_file):
            raise self.fail(f"completed without a responses file (got {status.output_file!r})", status.job_id)
        url = _google_media_url(self.provider.base_url, "download", f"{status.output_file}:download")
        content = await self._download(url, params={"alt": "media"})
        return [gemini_output_line(r) for r in self._jsonl(content, status.job_id)]

    def _request(self, text: str) -> dict[str, object]:
        request: dict[str, object] = {
            "model": f"models/{self.provider.model}",
            "content": {"parts": [{"text": text}]},
            "taskType": "RETRIEVAL_DOCUMENT",
        }
        if self.provider.output_dimensionality:
            request["outputDimensionality"] = self.provider.output_dimensionality
        return request

    def _status(self, operation: Mapping[str, object]) -> JobStatus:
        job_id = _text(operation.get("name"))
        if not _GEMINI_NAME_RE.fullmatch(job_id):
            raise self.fail(f"answer names no batch (name {job_id!r})")
        metadata = _mapping(operation.get("metadata"))
        state = _text(metadata.get("state")) or _text(operation.get("state")) or "BATCH_STATE_UNSPECIFIED"
        error = _mapping(operation.get("error"))
        response = _mapping(operation.get("response"))
        output = _text(_mapping(metadata.get("output")).get("responsesFile")) or _text(
            _mapping(response.get("output")).get("responsesFile") or response.get("responsesFile")
        )
        phase: Phase = "running"
        if error or state in _GEMINI_FAILED:
            phase = "failed"
        elif state == "BATCH_STATE_SUCCEEDED" or operation.get("done") is True:
            phase = "completed"
        return JobStatus(job_id, phase, state, output_file=output, detail=_text(error.get("message")))


_OPENAI_FAILED = frozenset({"failed", "expired", "cancelled", "canceled"})
_GEMINI_FAILED = frozenset({"BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED"})
_JOB_APIS: Mapping[str, type[JobApi]] = MappingProxyType(
    {"openai": OpenAIJobs, "voyage": VoyageJobs, "gemini": GeminiJobs}
)


# -- output lines --------------------------------------------------------------------------------


def openai_output_line(record: Mapping[str, object]) -> OutputLine:
    """`{custom_id, response: {status_code, body: {data: [{embedding}]}}, error}` (OpenAI and Voyage)."""
    custom_id = _text(record.get("custom_id"))
    error = _mapping(record.get("error"))
    if error:
        return OutputLine(custom_id, None, _text(error.get("message")) or _text(error.get("code")) or "error")
    response = _mapping(record.get("response"))
    status = response.get("status_code")
    body = response.get("body")
    if isinstance(status, int) and status >= 400:
        message = _text(_mapping(_mapping(body).get("error")).get("message")) or _text(_mapping(body).get("detail"))
        return OutputLine(custom_id, None, f"HTTP {status}: {message or _text(body) or 'no details'}")
    data = _mapping(body).get("data")
    first = data[0] if isinstance(data, list) and data else None
    return _vector_line(custom_id, _mapping(first).get("embedding"))


def gemini_output_line(record: Mapping[str, object]) -> OutputLine:
    """`{key, response: {embedding: {values}}}` or `{key, error: {code, message}}`."""
    custom_id = _text(record.get("key")) or _text(record.get("custom_id"))
    response = _mapping(record.get("response"))
    error = _mapping(record.get("error")) or _mapping(response.get("error"))
    if error:
        return OutputLine(custom_id, None, _text(error.get("message")) or _text(error.get("status")) or "error")
    embedding = _mapping(response.get("embedding")) or _mapping(record.get("embedding"))
    return _vector_line(custom_id, embedding.get("values"))


def _vector_line(custom_id: str, values: object) -> OutputLine:
    if not isinstance(values, list) or not values:
        return OutputLine(custom_id, None, "empty embedding")
    try:
        vector = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError):
        return OutputLine(custom_id, None, "embedding is not a list of numbers")
    if vector.ndim != 1:
        return OutputLine(custom_id, None, "embedding is not a flat list of numbers")
    return OutputLine(custom_id, vector)


def _openai_job_errors(errors: object) -> str:
    """A failed job's `errors: {data: [{code, message, line}]}` (validation of the input file)."""
    data = _mapping(errors).get("data")
    if not isinstance(data, list):
        return ""
    shown = []
    for item in data[:_ERRORS_SHOWN]:
        entry = _mapping(item)
        line = entry.get("line")
        where = f"line {line}: " if isinstance(line, int) else ""
        shown.append(where + (_text(entry.get("message")) or _text(entry.get("code"))))
    return "; ".join(shown)


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


# -- request bodies ------------------------------------------------------------------------------


def _form_data(fields: Mapping[str, str], file_field: str, filename: str, payload: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body with text fields and one JSONL file (OpenAI/Voyage uploads)."""
    boundary = f"memoryd-{secrets.token_hex(16)}"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{filename}"\r\n'
        "Content-Type: application/jsonl\r\n\r\n"
    )
    parts.append(head.encode() + payload + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def _related(metadata: bytes, payload: bytes) -> tuple[bytes, str]:
    """A multipart/related body: file metadata as JSON, then the JSONL itself (Google uploads)."""
    boundary = f"memoryd-{secrets.token_hex(16)}"
    body = b"".join(
        [
            f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode(),
            metadata,
            f"\r\n--{boundary}\r\nContent-Type: application/jsonl\r\n\r\n".encode(),
            payload,
            f"\r\n--{boundary}--\r\n".encode(),
        ]
    )
    return body, f"multipart/related; boundary={boundary}"


def _google_media_url(base_url: str, kind: Literal["upload", "download"], path: str) -> str:
    """Google serves media under /upload/<version>/… and /download/<version>/…, beside the API base."""
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{kind}{parts.path.rstrip('/')}/{path}", "", ""))
