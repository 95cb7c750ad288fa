"""What every async batch API shares: a job's status, its answered lines, and the JobApi each provider implements.

A provider's batch wire format (upload, create, poll, cancel, read results) is one `JobApi`
subclass (`openai_jobs`, `gemini_jobs`); the shared polling, retries and failure state that run any
of them are `embedder.BatchEmbedder`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import orjson

from memoryd.embeddings.base import Vectors
from memoryd.embeddings.remote import RemoteEmbeddingProvider
from memoryd.errors import EmbeddingError

UNAVAILABLE_MARKER = "asyncBatchEmbedContent not available"
"""Part of the message of a Gemini endpoint without a batch API; such an error disables batch mode at once."""
ERRORS_SHOWN = 3
"""Per-request errors quoted in one failure message."""

Phase = Literal["running", "completed", "failed"]


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


def vector_line(custom_id: str, values: object) -> OutputLine:
    if not isinstance(values, list) or not values:
        return OutputLine(custom_id, None, "empty embedding")
    try:
        vector = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError):
        return OutputLine(custom_id, None, "embedding is not a list of numbers")
    if vector.ndim != 1:
        return OutputLine(custom_id, None, "embedding is not a flat list of numbers")
    return OutputLine(custom_id, vector)


def as_mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def as_text(value: object) -> str:
    return value if isinstance(value, str) else ""
