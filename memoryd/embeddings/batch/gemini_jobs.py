"""Gemini's batch API: the JSONL uploaded through the File API, `models/{model}:asyncBatchEmbedContent`,
polled as a long-running operation; media uploads and downloads live beside the API base URL."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

import orjson

from memoryd.embeddings.batch.jobs import (
    UNAVAILABLE_MARKER,
    JobApi,
    JobStatus,
    OutputLine,
    Phase,
    as_mapping,
    as_text,
    vector_line,
)

_GEMINI_NAME_RE = re.compile(r"(?:batches|files)/[\w.-]+")
_GEMINI_FAILED = frozenset({"BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED"})


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
        file_name = as_text(file_info.get("name")) if isinstance(file_info, Mapping) else as_text(uploaded.get("name"))
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
        job_id = as_text(operation.get("name"))
        if not _GEMINI_NAME_RE.fullmatch(job_id):
            raise self.fail(f"answer names no batch (name {job_id!r})")
        metadata = as_mapping(operation.get("metadata"))
        state = as_text(metadata.get("state")) or as_text(operation.get("state")) or "BATCH_STATE_UNSPECIFIED"
        error = as_mapping(operation.get("error"))
        response = as_mapping(operation.get("response"))
        output = as_text(as_mapping(metadata.get("output")).get("responsesFile")) or as_text(
            as_mapping(response.get("output")).get("responsesFile") or response.get("responsesFile")
        )
        phase: Phase = "running"
        if error or state in _GEMINI_FAILED:
            phase = "failed"
        elif state == "BATCH_STATE_SUCCEEDED" or operation.get("done") is True:
            phase = "completed"
        return JobStatus(job_id, phase, state, output_file=output, detail=as_text(error.get("message")))


def gemini_output_line(record: Mapping[str, object]) -> OutputLine:
    """`{key, response: {embedding: {values}}}` or `{key, error: {code, message}}`."""
    custom_id = as_text(record.get("key")) or as_text(record.get("custom_id"))
    response = as_mapping(record.get("response"))
    error = as_mapping(record.get("error")) or as_mapping(response.get("error"))
    if error:
        return OutputLine(custom_id, None, as_text(error.get("message")) or as_text(error.get("status")) or "error")
    embedding = as_mapping(response.get("embedding")) or as_mapping(record.get("embedding"))
    return vector_line(custom_id, embedding.get("values"))


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
