"""OpenAI's and Voyage's batch APIs: a JSONL file uploaded to Files, a job created on Batches, polled.

Voyage's API is OpenAI's shape with the model and input type given once per job, and a 12h window.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import ClassVar
from urllib.parse import quote

import orjson

from memoryd.embeddings.batch.jobs import (
    ERRORS_SHOWN,
    JobApi,
    JobStatus,
    OutputLine,
    Phase,
    as_mapping,
    as_text,
    vector_line,
)
from memoryd.errors import EmbeddingError

_EMBEDDINGS_ENDPOINT = "/v1/embeddings"
_OPENAI_FAILED = frozenset({"failed", "expired", "cancelled", "canceled"})


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
        file_id = as_text(uploaded.get("id"))
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
        return "; ".join([d for d in (status.detail, *errors[:ERRORS_SHOWN]) if d])

    def _status(self, job: Mapping[str, object]) -> JobStatus:
        job_id = as_text(job.get("id"))
        if not job_id:
            raise self.fail("create answer has no batch id")
        state = as_text(job.get("status")) or "unknown"
        phase: Phase = "completed" if state == "completed" else "failed" if state in _OPENAI_FAILED else "running"
        return JobStatus(
            job_id=job_id,
            phase=phase,
            state=state,
            output_file=as_text(job.get("output_file_id")),
            error_file=as_text(job.get("error_file_id")),
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


def openai_output_line(record: Mapping[str, object]) -> OutputLine:
    """`{custom_id, response: {status_code, body: {data: [{embedding}]}}, error}` (OpenAI and Voyage)."""
    custom_id = as_text(record.get("custom_id"))
    error = as_mapping(record.get("error"))
    if error:
        return OutputLine(custom_id, None, as_text(error.get("message")) or as_text(error.get("code")) or "error")
    response = as_mapping(record.get("response"))
    status = response.get("status_code")
    body = response.get("body")
    if isinstance(status, int) and status >= 400:
        message = as_text(as_mapping(as_mapping(body).get("error")).get("message")) or as_text(
            as_mapping(body).get("detail")
        )
        return OutputLine(custom_id, None, f"HTTP {status}: {message or as_text(body) or 'no details'}")
    data = as_mapping(body).get("data")
    first = data[0] if isinstance(data, list) and data else None
    return vector_line(custom_id, as_mapping(first).get("embedding"))


def _openai_job_errors(errors: object) -> str:
    """A failed job's `errors: {data: [{code, message, line}]}` (validation of the input file)."""
    data = as_mapping(errors).get("data")
    if not isinstance(data, list):
        return ""
    shown = []
    for item in data[:ERRORS_SHOWN]:
        entry = as_mapping(item)
        line = entry.get("line")
        where = f"line {line}: " if isinstance(line, int) else ""
        shown.append(where + (as_text(entry.get("message")) or as_text(entry.get("code"))))
    return "; ".join(shown)


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
