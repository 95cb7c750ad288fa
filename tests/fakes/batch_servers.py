"""Fake async batch APIs on 127.0.0.1: OpenAI and Voyage (Files + Batches), Gemini (File API + LRO).

    with OpenAIBatchFake(api_key="sk-test") as server:
        server.lifecycle = ("validating", "in_progress", "finalizing", "completed")
        server.output_order = "shuffled"         # output lines in another order than the input
        server.drop_ids = {"3"}                  # no output line for custom id "3"
        server.item_errors = {"1": "too long"}   # request "1" fails (error file / inline error)
        ...
        server.polls                             # status requests per job id

The fakes extend the synchronous fakes, so one server answers `/embeddings` too (the fallback path).
They validate uploads, input lines and job requests the way the real APIs do: an input file that the
real API would reject fails its job with the API's error list, and a malformed request gets a 400.

A job walks through `lifecycle`: creating it answers with the first state, and each status request
moves it one step; the last state sticks, so a lifecycle without a terminal state never ends (for
timeouts). A cancel request ends the job as cancelled at the next status request. When a job reaches
the success state its output file is written from its input file with `fake_vector`, so tests can
compare batch vectors with synchronous ones.
"""

from __future__ import annotations

import email
import email.policy
import itertools
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import orjson

from memoryd.embeddings.retry import RetryPolicy
from tests.fakes.embedding_servers import GeminiFake, OpenAIFake, VoyageFake, fake_vector
from tests.fakes.http_server import RecordedRequest, Reply, Route

OutputOrder = Literal["input", "reversed", "shuffled"]


FAST_RETRY = RetryPolicy(base_delay_s=0.001, max_delay_s=0.001, jitter=0.0, quota_window_delays_s=(0.001,))
"""Retries with millisecond waits, for tests of the batch code against these fakes."""


@dataclass(frozen=True, slots=True)
class Part:
    """One part of a multipart body."""

    name: str | None
    filename: str | None
    content_type: str
    data: bytes


def multipart(request: RecordedRequest) -> list[Part] | None:
    """The parts of a multipart/form-data or multipart/related body; None if it is not multipart."""
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/"):
        return None
    message = email.message_from_bytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + request.body, policy=email.policy.HTTP
    )
    if not message.is_multipart():
        return None
    parts = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        parts.append(
            Part(
                name if isinstance(name, str) else None,
                part.get_filename(),
                part.get_content_type(),
                payload if isinstance(payload, bytes) else b"",
            )
        )
    return parts


@dataclass(slots=True)
class FakeJob:
    """A job as the fake keeps it."""

    job_id: str
    requests: list[tuple[str, str]]
    """(custom id, text) in input order."""
    lifecycle: tuple[str, ...]
    model: str
    dims: int | None
    step: int = 0
    cancel_requested: bool = False
    settled: bool = False
    """Reached a terminal state (and, on success, has its output written)."""
    output_file: str | None = None
    error_file: str | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def state(self) -> str:
        return self.lifecycle[min(self.step, len(self.lifecycle) - 1)]


class _JobBook:
    """Files, jobs and counters of one fake, shared by its request threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.files: dict[str, bytes] = {}
        self.jobs: dict[str, FakeJob] = {}
        self.polls: dict[str, int] = {}
        self.cancelled: list[str] = []
        self.active = 0
        self.max_active = 0
        self._ids = itertools.count(1)

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):04d}"


class _BatchKnobs:
    """What tests may change about how jobs end and what their outputs look like."""

    success_state: ClassVar[str]
    terminal_states: ClassVar[frozenset[str]]
    cancelled_state: ClassVar[str]

    def _init_knobs(self, lifecycle: tuple[str, ...]) -> None:
        self.lifecycle = lifecycle
        self.next_lifecycles: list[tuple[str, ...]] = []
        """Lifecycles for the next jobs, one each, before `lifecycle` applies again."""
        self.output_order: OutputOrder = "reversed"
        self.drop_ids: set[str] = set()
        self.item_errors: dict[str, str] = {}
        self.stray_ids: set[str] = set()
        """Custom ids that were never sent but appear in the output."""
        self.job_errors: list[dict[str, Any]] = []
        """OpenAI-style `errors.data` entries given to a job whose lifecycle ends in failure."""
        self.max_requests = 50_000
        self.book = _JobBook()

    @property
    def polls(self) -> dict[str, int]:
        with self.book.lock:
            return dict(self.book.polls)

    @property
    def cancelled(self) -> list[str]:
        with self.book.lock:
            return list(self.book.cancelled)

    @property
    def jobs(self) -> list[FakeJob]:
        with self.book.lock:
            return list(self.book.jobs.values())

    @property
    def max_active(self) -> int:
        """Most jobs that were running at the same time."""
        with self.book.lock:
            return self.book.max_active

    def _lifecycle_for_new_job(self) -> tuple[str, ...]:
        with self.book.lock:
            return self.next_lifecycles.pop(0) if self.next_lifecycles else self.lifecycle

    def _open_job(self, job: FakeJob) -> None:
        with self.book.lock:
            self.book.jobs[job.job_id] = job
            self.book.active += 1
            self.book.max_active = max(self.book.max_active, self.book.active)
        self._settle(job)

    def _advance(self, job_id: str) -> FakeJob | None:
        """One status request: count it, move the job one step, write its output when it succeeds."""
        with self.book.lock:
            job = self.book.jobs.get(job_id)
            if job is None:
                return None
            self.book.polls[job_id] = self.book.polls.get(job_id, 0) + 1
            if job.state not in self.terminal_states:
                if job.cancel_requested:
                    job.lifecycle, job.step = (*job.lifecycle[: job.step + 1], self.cancelled_state), job.step + 1
                else:
                    job.step += 1
        self._settle(job)
        return job

    def _settle(self, job: FakeJob) -> None:
        with self.book.lock:
            if job.settled or job.state not in self.terminal_states:
                return
            job.settled = True
            self.book.active -= 1
            if job.state == self.success_state:
                self._write_outputs(job)

    def _ordered(self, job: FakeJob) -> list[tuple[str, str]]:
        kept = [(cid, text) for cid, text in job.requests if cid not in self.drop_ids]
        kept += [(cid, "stray") for cid in sorted(self.stray_ids)]
        if self.output_order == "reversed":
            kept.reverse()
        elif self.output_order == "shuffled":
            random.Random(len(kept)).shuffle(kept)
        return kept

    def _write_outputs(self, job: FakeJob) -> None:
        """Called with the book's lock held."""
        raise NotImplementedError


def _jsonl(records: Sequence[object]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


# -- OpenAI and Voyage ---------------------------------------------------------------------------

_OPENAI_TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


class OpenAIBatchFake(_BatchKnobs, OpenAIFake):
    """`POST /v1/files`, `GET /v1/files/{id}/content`, `POST /v1/batches`, `GET /v1/batches/{id}`, cancel."""

    success_state = "completed"
    terminal_states = _OPENAI_TERMINAL
    cancelled_state = "cancelled"
    completion_window: ClassVar[str] = "24h"

    def __init__(self, *, api_key: str | None = "test-key", dims: int = 8) -> None:
        super().__init__(api_key=api_key, dims=dims)
        self._init_knobs(("validating", "in_progress", "finalizing", "completed"))

    def routes(self) -> list[Route]:
        return [
            *super().routes(),
            Route("POST", r"/v1/files", lambda r, m: self._upload(r)),
            Route("GET", r"/v1/files/([^/]+)/content", lambda r, m: self._content(m.group(1))),
            Route("POST", r"/v1/batches", lambda r, m: self._create(r)),
            Route("GET", r"/v1/batches/([^/]+)", lambda r, m: self._status(m.group(1))),
            Route("POST", r"/v1/batches/([^/]+)/cancel", lambda r, m: self._cancel(m.group(1))),
        ]

    # -- files -----------------------------------------------------------------------------------

    def _upload(self, request: RecordedRequest) -> Reply:
        parts = multipart(request)
        if parts is None:
            return self.bad_request("Expected a multipart/form-data body.")
        fields = {p.name: p for p in parts if p.name}
        if "purpose" not in fields or fields["purpose"].data != b"batch":
            return self.bad_request("'purpose' must be 'batch' for batch input files.")
        upload = fields.get("file")
        if upload is None or not upload.filename:
            return self.bad_request("'file' is a required property")
        with self.book.lock:
            file_id = self.book.new_id("file-")
            self.book.files[file_id] = upload.data
        return Reply.json(
            {
                "id": file_id,
                "object": "file",
                "bytes": len(upload.data),
                "created_at": 1_700_000_000,
                "filename": upload.filename,
                "purpose": "batch",
            }
        )

    def _content(self, file_id: str) -> Reply:
        with self.book.lock:
            data = self.book.files.get(file_id)
        if data is None:
            return self.error(404, f"No such File object: {file_id}", kind="invalid_request_error")
        return Reply(200, data, (("Content-Type", "application/octet-stream"),))

    # -- batches ---------------------------------------------------------------------------------

    def check_create(self, body: dict[str, Any]) -> str | None:
        """A 400 message for a malformed create request, or None."""
        if body.get("endpoint") != "/v1/embeddings":
            return "Invalid value for 'endpoint': expected '/v1/embeddings'."
        if body.get("completion_window") != self.completion_window:
            return f"Invalid value for 'completion_window': only '{self.completion_window}' is supported."
        return None

    def parse_line(self, record: Any, body: dict[str, Any]) -> tuple[str, str, str, int | None] | str:
        """(custom id, text, model, dims) of one input line, or why the real API rejects it."""
        if not isinstance(record, dict) or set(record) != {"custom_id", "method", "url", "body"}:
            return "Each line must have exactly custom_id, method, url and body."
        if record["method"] != "POST" or record["url"] != "/v1/embeddings":
            return "The url of every request must match the endpoint of the batch."
        line_body = record["body"]
        if not isinstance(line_body, dict) or sorted(set(line_body) - self.allowed_fields):
            return "Unrecognized request argument in body."
        text, model = line_body.get("input"), line_body.get("model")
        if not isinstance(text, str) or not isinstance(model, str):
            return "'input' must be a string and 'model' is required."
        dims = line_body.get(self.dimensions_field)
        return record["custom_id"], text, model, dims if isinstance(dims, int) else None

    def _create(self, request: RecordedRequest) -> Reply:
        try:
            body = request.json()
        except orjson.JSONDecodeError:
            return self.bad_request("We could not parse the JSON body of your request.")
        if not isinstance(body, dict):
            return self.bad_request("The request body must be a JSON object.")
        problem = self.check_create(body)
        if problem:
            return self.bad_request(problem)
        with self.book.lock:
            data = self.book.files.get(str(body.get("input_file_id")))
            job_id = self.book.new_id("batch_")
        if data is None:
            return self.bad_request(f"Invalid 'input_file_id': {body.get('input_file_id')}")
        job = FakeJob(job_id, [], self._lifecycle_for_new_job(), model="", dims=None)
        self._load_requests(job, data, body)
        self._open_job(job)
        return Reply.json(self._batch_object(job, body))

    def _load_requests(self, job: FakeJob, data: bytes, body: dict[str, Any]) -> None:
        """Validate the input file as the API does: a bad file fails the job with an error list."""
        lines = [line for line in data.splitlines() if line.strip()]
        problems: list[dict[str, Any]] = []
        seen: set[str] = set()
        models: set[str] = set()
        if len(lines) > self.max_requests:
            problems.append({"code": "too_many_requests", "message": f"At most {self.max_requests} requests."})
        for number, line in enumerate(lines, start=1):
            try:
                parsed = self.parse_line(orjson.loads(line), body)
            except orjson.JSONDecodeError:
                parsed = "Line is not valid JSON."
            if isinstance(parsed, str):
                problems.append({"code": "invalid_request", "message": parsed, "line": number})
                continue
            custom_id, text, model, dims = parsed
            if custom_id in seen:
                problems.append({"code": "duplicate_custom_id", "message": "Duplicate custom_id.", "line": number})
            seen.add(custom_id)
            models.add(model)
            job.requests.append((custom_id, text))
            job.model, job.dims = model, dims
        if len(models) > 1:
            problems.append({"code": "mismatched_model", "message": "All requests must use the same model."})
        if problems:
            job.lifecycle, job.errors = ("validating", "failed"), problems
        elif job.lifecycle[-1] == "failed":
            job.errors = list(self.job_errors)

    def _batch_object(self, job: FakeJob, body: dict[str, Any] | None = None) -> dict[str, Any]:
        with self.book.lock:
            state, output, errors = job.state, job.output_file, job.error_file
        return {
            "id": job.job_id,
            "object": "batch",
            "endpoint": "/v1/embeddings",
            "completion_window": self.completion_window,
            "status": state,
            "output_file_id": output,
            "error_file_id": errors,
            "errors": {"object": "list", "data": job.errors} if job.errors else None,
            "request_counts": {"total": len(job.requests), "completed": 0, "failed": 0},
            "metadata": (body or {}).get("metadata"),
        }

    def _status(self, job_id: str) -> Reply:
        job = self._advance(job_id)
        if job is None:
            return self.error(404, f"No batch found with id '{job_id}'.", kind="invalid_request_error")
        return Reply.json(self._batch_object(job))

    def _cancel(self, job_id: str) -> Reply:
        with self.book.lock:
            job = self.book.jobs.get(job_id)
            if job is not None:
                self.book.cancelled.append(job_id)
                job.cancel_requested = True
        if job is None:
            return self.error(404, f"No batch found with id '{job_id}'.", kind="invalid_request_error")
        return Reply.json({**self._batch_object(job), "status": "cancelling"})

    def _write_outputs(self, job: FakeJob) -> None:
        good: list[dict[str, Any]] = []
        bad: list[dict[str, Any]] = []
        for number, (custom_id, text) in enumerate(self._ordered(job)):
            line_id = f"batch_req_{job.job_id}_{number}"
            if custom_id in self.item_errors:
                body = self.error_body(400, self.item_errors[custom_id], kind="invalid_request_error")
                bad.append(
                    {
                        "id": line_id,
                        "custom_id": custom_id,
                        "response": {"status_code": 400, "body": body},
                        "error": None,
                    }
                )
                continue
            item = {"object": "embedding", "index": 0, "embedding": fake_vector(text, job.dims or self.dims)}
            response = {"status_code": 200, "request_id": line_id, "body": self.success_body(job.model, [item], 1)}
            good.append({"id": line_id, "custom_id": custom_id, "response": response, "error": None})
        job.output_file = self.book.new_id("file-")
        self.book.files[job.output_file] = _jsonl(good)
        if bad:
            job.error_file = self.book.new_id("file-")
            self.book.files[job.error_file] = _jsonl(bad)


class VoyageBatchFake(OpenAIBatchFake, VoyageFake):
    """Voyage: lines `{custom_id, body: {input}}`, model and input type in `request_params`, window 12h."""

    completion_window = "12h"

    def check_create(self, body: dict[str, Any]) -> str | None:
        problem = super().check_create(body)
        if problem:
            return problem
        params = body.get("request_params")
        if not isinstance(params, dict) or not isinstance(params.get("model"), str):
            return "request_params.model is required"
        unknown = sorted(set(params) - {"model", "input_type", "truncation", "output_dimension", "output_dtype"})
        if unknown:
            return f"request_params has an unknown field: {unknown[0]}"
        return self.extra_checks(params)

    def parse_line(self, record: Any, body: dict[str, Any]) -> tuple[str, str, str, int | None] | str:
        if not isinstance(record, dict) or set(record) != {"custom_id", "body"}:
            return "Each line must have exactly custom_id and body."
        line_body = record["body"]
        if not isinstance(line_body, dict) or set(line_body) != {"input"} or not isinstance(line_body["input"], str):
            return "body must be {input: <string>}; model and parameters belong to request_params."
        params = body["request_params"]
        dims = params.get("output_dimension")
        return record["custom_id"], line_body["input"], params["model"], dims if isinstance(dims, int) else None


# -- Gemini --------------------------------------------------------------------------------------

_GEMINI_TERMINAL = frozenset(
    {"BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED"}
)


class GeminiBatchFake(_BatchKnobs, GeminiFake):
    """File API upload/download and `models/{model}:asyncBatchEmbedContent`, polled via `batches/{id}`.

    `async_available = False` plays an endpoint without the batch API (404 on create).
    """

    success_state = "BATCH_STATE_SUCCEEDED"
    terminal_states = _GEMINI_TERMINAL
    cancelled_state = "BATCH_STATE_CANCELLED"

    def __init__(self, *, api_key: str | None = "test-key", dims: int = 8) -> None:
        super().__init__(api_key=api_key, dims=dims)
        self._init_knobs(("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING", "BATCH_STATE_SUCCEEDED"))
        self.async_available = True
        self.failure_message = "Batch failed: the job could not be completed."

    def routes(self) -> list[Route]:
        return [
            *super().routes(),
            Route("POST", r"/upload/v1beta/files", lambda r, m: self._upload(r)),
            Route("GET", r"/download/v1beta/files/([^/:]+):download", lambda r, m: self._download(r, m.group(1))),
            Route("POST", r"/v1beta/models/([^/:]+):asyncBatchEmbedContent", lambda r, m: self._create(r, m.group(1))),
            Route("GET", r"/v1beta/batches/([^/:]+)", lambda r, m: self._status(m.group(1))),
            Route("POST", r"/v1beta/batches/([^/:]+):cancel", lambda r, m: self._cancel(m.group(1))),
        ]

    def _upload(self, request: RecordedRequest) -> Reply:
        if request.query.get("uploadType") != "multipart":
            return self.bad_request("Upload requests must set uploadType (this fake knows multipart).")
        parts = multipart(request)
        if parts is None or len(parts) != 2 or parts[0].content_type != "application/json":
            return self.bad_request("Expected multipart/related with JSON metadata and the file content.")
        try:
            metadata = orjson.loads(parts[0].data)
        except orjson.JSONDecodeError:
            return self.bad_request("Invalid JSON payload received in the metadata part.")
        info = metadata.get("file") if isinstance(metadata, dict) else None
        if not isinstance(info, dict):
            return self.bad_request('Invalid JSON payload received. Unknown name: expected "file".')
        with self.book.lock:
            name = f"files/{self.book.new_id('upl')}"
            self.book.files[name] = parts[1].data
        file = {
            "name": name,
            "displayName": info.get("displayName", ""),
            "mimeType": info.get("mimeType", parts[1].content_type),
            "sizeBytes": str(len(parts[1].data)),
            "state": "ACTIVE",
            "source": "UPLOADED",
        }
        return Reply.json({"file": file})

    def _download(self, request: RecordedRequest, file_id: str) -> Reply:
        if request.query.get("alt") != "media":
            return self.bad_request("Downloads need alt=media.")
        with self.book.lock:
            data = self.book.files.get(f"files/{file_id}")
        if data is None:
            return self.error(404, f"File files/{file_id} not found.")
        return Reply(200, data, (("Content-Type", "application/octet-stream"),))

    def _create(self, request: RecordedRequest, model: str) -> Reply:
        if not self.async_available:
            return self.not_found(request)
        try:
            body = request.json()
        except orjson.JSONDecodeError:
            return self.bad_request("Invalid JSON payload received.")
        batch = body.get("batch") if isinstance(body, dict) and set(body) == {"batch"} else None
        if not isinstance(batch, dict) or not isinstance(batch.get("displayName"), str):
            return self.bad_request("* EmbedContentBatch.display_name: display_name is required")
        config = batch.get("inputConfig")
        file_name = config.get("fileName", config.get("file_name")) if isinstance(config, dict) else None
        with self.book.lock:
            data = self.book.files.get(str(file_name))
            job_id = f"batches/{self.book.new_id('emb')}"
        if data is None:
            return self.error(400, f"Input file {file_name} was not found.")
        job = FakeJob(job_id, [], self._lifecycle_for_new_job(), model=model, dims=None)
        for number, line in enumerate((raw for raw in data.splitlines() if raw.strip()), start=1):
            problem = self._load_line(job, line, model)
            if problem:
                return self.bad_request(f"Input file line {number}: {problem}")
        if len(job.requests) > self.max_requests:
            return self.bad_request(f"At most {self.max_requests} requests can be in one batch.")
        self._open_job(job)
        return Reply.json(self._operation(job, batch["displayName"]))

    def _load_line(self, job: FakeJob, line: bytes, model: str) -> str | None:
        """Add one `{key, request}` line to the job, or say why the API would reject it."""
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            return "Invalid JSON payload received."
        if not isinstance(record, dict) or set(record) != {"key", "request"} or not isinstance(record["key"], str):
            return "Each line must be {key, request}."
        item = record["request"]
        problem = self._check_request(item, model)
        if problem:
            return problem
        job.requests.append((record["key"], "".join(p["text"] for p in item["content"]["parts"])))
        job.dims = item.get("outputDimensionality")
        return None

    def _operation(self, job: FakeJob, display_name: str = "memoryd") -> dict[str, Any]:
        with self.book.lock:
            state, output = job.state, job.output_file
        metadata: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.EmbedContentBatch",
            "model": f"models/{job.model}",
            "displayName": display_name,
            "state": state,
            "batchStats": {"requestCount": str(len(job.requests))},
        }
        operation: dict[str, Any] = {"name": job.job_id, "metadata": metadata}
        if state in self.terminal_states:
            operation["done"] = True
        if output:
            metadata["output"] = {"responsesFile": output}
            operation["response"] = {
                "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.EmbedContentBatchOutput",
                "responsesFile": output,
            }
        elif state in {"BATCH_STATE_FAILED", "BATCH_STATE_EXPIRED"}:
            operation["error"] = {"code": 13, "message": self.failure_message}
        return operation

    def _status(self, short_id: str) -> Reply:
        job = self._advance(f"batches/{short_id}")
        if job is None:
            return self.error(404, f"Batch batches/{short_id} not found.")
        return Reply.json(self._operation(job))

    def _cancel(self, short_id: str) -> Reply:
        with self.book.lock:
            job = self.book.jobs.get(f"batches/{short_id}")
            if job is not None:
                self.book.cancelled.append(job.job_id)
                job.cancel_requested = True
        return Reply.json({}) if job is not None else self.error(404, f"Batch batches/{short_id} not found.")

    def _write_outputs(self, job: FakeJob) -> None:
        lines: list[dict[str, Any]] = []
        for custom_id, text in self._ordered(job):
            if custom_id in self.item_errors:
                error = {"code": 3, "message": self.item_errors[custom_id], "status": "INVALID_ARGUMENT"}
                lines.append({"key": custom_id, "error": error})
            else:
                lines.append(
                    {"key": custom_id, "response": {"embedding": {"values": fake_vector(text, job.dims or self.dims)}}}
                )
        job.output_file = f"files/{self.book.new_id('out')}"
        self.book.files[job.output_file] = _jsonl(lines)
