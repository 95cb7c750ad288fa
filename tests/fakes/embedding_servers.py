"""Fake embedding providers on 127.0.0.1 that speak each provider's real wire format.

    with OpenAIFake(api_key="sk-test") as server:
        provider = OpenAIProvider(RemoteSettings(base_url=server.base_url, api_key="sk-test"))
        server.enqueue(server.rate_limited(retry_after="2"), server.server_error())
        ...                                   # first call: 429 + Retry-After, second: 500, then normal
        server.requests[0].json()["input"]    # what the client sent

Every fake

* checks credentials the way the provider does and answers with its error body;
* validates requests strictly (unknown fields, wrong types, too many inputs -> 400 in its format);
* answers with deterministic vectors: `fake_vector(text, dims)`, not normalised, so that tests can
  tell whether the client normalises;
* offers scripted failures as methods returning replies for `enqueue`: `unauthorized()`,
  `rate_limited(...)`, `server_error()`, `overloaded()`, `malformed_json()`, `wrong_count()`,
  `wrong_dims(dims)`, `stall()`, and `quota_exhausted()` where the provider has a distinct signal.

To add an API (async batch jobs, files), subclass a fake, keep state on the instance and return
`[*super().routes(), Route("POST", r"/v1/files", self._upload), ...]` from `routes()`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from tests.fakes.http_server import FakeHTTPServer, RecordedRequest, Reply, Responder, Route

DEFAULT_DIMS = 8


def fake_vector(text: str, dims: int = DEFAULT_DIMS) -> list[float]:
    """A deterministic, non-normalised vector for `text`: equal texts, equal vectors."""
    digest = hashlib.shake_256(text.encode("utf-8", "surrogatepass")).digest(2 * dims)
    return [(int.from_bytes(digest[2 * i : 2 * i + 2], "big") - 32767.5) / 4096.0 for i in range(dims)]


@dataclass(frozen=True, slots=True)
class Tweak:
    """A deliberate flaw in an otherwise normal answer."""

    drop: int = 0
    """Leave out this many vectors at the end."""
    dims: int | None = None
    """Answer with vectors of this many dimensions."""
    reverse: bool = False
    """List the items in reverse order (they keep their `index`)."""


_NORMAL = Tweak()


class EmbeddingFake(FakeHTTPServer, ABC):
    """What the provider fakes share: settings, the flaw replies, the error-body hook."""

    max_inputs: ClassVar[int] = 2048

    def __init__(self, *, api_key: str | None = "test-key", dims: int = DEFAULT_DIMS) -> None:
        super().__init__()
        self.api_key = api_key
        self.dims = dims
        self.max_input_bytes: int | None = None
        """Refuse any input longer than this many UTF-8 bytes, as the provider refuses one over the
        model's context (the provider counts tokens; a byte is never fewer than a token)."""
        self.longest_input = 0
        """The longest input (UTF-8 bytes) of any embedding request answered so far."""

    def too_long(self, texts: Sequence[str]) -> str | None:
        """The provider's words for an input over the model's context, or None when every input fits."""
        sizes = [len(t.encode("utf-8", "surrogatepass")) for t in texts]
        self.longest_input = max([self.longest_input, *sizes])
        limit = self.max_input_bytes
        worst = max(sizes, default=0)
        if limit is None or worst <= limit:
            return None
        return self.context_message(worst, limit)

    def context_message(self, size: int, limit: int) -> str:
        return (
            f"This model's maximum context length is {limit} tokens, however you requested {size} tokens "
            "(0 in the messages, 0 in the completion). Please reduce the length of the messages."
        )

    @abstractmethod
    def error_body(self, status: int, message: str, *, kind: str | None = None, code: str | None = None) -> Any:
        """The provider's JSON error body."""

    def error(
        self,
        status: int,
        message: str,
        *,
        kind: str | None = None,
        code: str | None = None,
        headers: Sequence[tuple[str, str]] = (),
    ) -> Reply:
        return Reply.json(self.error_body(status, message, kind=kind, code=code), status, headers)

    @abstractmethod
    def embed(self, request: RecordedRequest, match: re.Match[str], tweak: Tweak) -> Reply:
        """The normal answer to an embedding request, possibly with a flaw."""

    def routes(self) -> list[Route]:
        return [Route(m, p, lambda r, g: self.embed(r, g, _NORMAL)) for m, p in self.embedding_routes()]

    def embedding_routes(self) -> list[tuple[str, str]]:
        return []

    def vectors(self, texts: Sequence[str], dims: int | None, tweak: Tweak) -> list[list[float]]:
        size = tweak.dims or dims or self.dims
        return [fake_vector(t, size) for t in texts[: len(texts) - tweak.drop]]

    # -- scripted flaws ----------------------------------------------------------------------

    def _tweaked(self, tweak: Tweak) -> Responder:
        def respond(request: RecordedRequest) -> Reply:
            for route in self.routes():
                match = route.match(request)
                if match is not None:
                    return self.embed(request, match, tweak)
            return self.not_found(request)

        return respond

    def wrong_count(self, drop: int = 1) -> Responder:
        return self._tweaked(Tweak(drop=drop))

    def wrong_dims(self, dims: int) -> Responder:
        return self._tweaked(Tweak(dims=dims))

    def reversed_order(self) -> Responder:
        return self._tweaked(Tweak(reverse=True))

    def malformed_json(self) -> Reply:
        return Reply(200, b'{"data": [{"embedding": [0.1, ', (("Content-Type", "application/json"),))

    def unauthorized(self) -> Reply:
        return self.error(401, "Invalid API key", kind="authentication_error")

    def server_error(self, status: int = 500) -> Reply:
        return self.error(status, "Internal server error", kind="server_error")

    def overloaded(self) -> Reply:
        return self.error(503, "The service is overloaded, please try again later", kind="server_error")

    def rate_limited(self, retry_after: str | None = None, message: str | None = None) -> Reply:
        headers = [("Retry-After", retry_after)] if retry_after is not None else []
        text = message or "Rate limit exceeded: too many requests per minute"
        return self.error(429, text, kind="rate_limit_error", code="rate_limit_exceeded", headers=headers)

    def bad_request(self, message: str) -> Reply:
        return self.error(400, message, kind="invalid_request_error")


# -- OpenAI and the APIs shaped like it ----------------------------------------------------------


class OpenAIFake(EmbeddingFake):
    """`POST /v1/embeddings {model, input, dimensions?}` with `Authorization: Bearer <key>`."""

    api_prefix = "/v1"
    allowed_fields: ClassVar[frozenset[str]] = frozenset({"model", "input", "dimensions", "encoding_format", "user"})
    dimensions_field: ClassVar[str] = "dimensions"
    invalid_key_message: ClassVar[str] = "Incorrect API key provided."

    def embedding_routes(self) -> list[tuple[str, str]]:
        return [("POST", r"/v1/embeddings")]

    def error_body(self, status: int, message: str, *, kind: str | None = None, code: str | None = None) -> Any:
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def authorize(self, request: RecordedRequest) -> Reply | None:
        if self.api_key is None:
            return None
        given = request.headers.get("authorization", "")
        if not given:
            return self.error(401, "You didn't provide an API key.", kind="invalid_request_error")
        if given != f"Bearer {self.api_key}":
            return self.unauthorized()
        return None

    def not_found(self, request: RecordedRequest) -> Reply:
        return self.error(404, f"Invalid URL ({request.method} {request.path})", kind="invalid_request_error")

    def unauthorized(self) -> Reply:
        return self.error(401, self.invalid_key_message, kind="invalid_request_error", code="invalid_api_key")

    def quota_exhausted(self) -> Reply:
        return self.error(
            429,
            "You exceeded your current quota, please check your plan and billing details.",
            kind="insufficient_quota",
            code="insufficient_quota",
        )

    def rate_limited(self, retry_after: str | None = None, message: str | None = None) -> Reply:
        headers = [("Retry-After", retry_after)] if retry_after is not None else []
        text = message or "Rate limit reached for requests per min (RPM): Limit 3000, Used 3000, Requested 1."
        return self.error(429, text, kind="requests", code="rate_limit_exceeded", headers=headers)

    def extra_checks(self, body: dict[str, Any]) -> str | None:
        """A provider-specific validation message, or None."""
        return None

    def embed(self, request: RecordedRequest, match: re.Match[str], tweak: Tweak) -> Reply:
        try:
            body = request.json()
        except orjson.JSONDecodeError:
            return self.bad_request("We could not parse the JSON body of your request.")
        if not isinstance(body, dict):
            return self.bad_request("The request body must be a JSON object.")
        unknown = sorted(set(body) - self.allowed_fields)
        if unknown:
            return self.bad_request(f"Unrecognized request argument supplied: {unknown[0]}")
        model, texts = body.get("model"), body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(model, str) or not model:
            return self.bad_request("you must provide a model parameter")
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return self.bad_request("'input' must be a non-empty string or array of strings")
        if len(texts) > self.max_inputs:
            return self.bad_request(f"'input' must have at most {self.max_inputs} items")
        dims = body.get(self.dimensions_field)
        if dims is not None and (not isinstance(dims, int) or dims < 1):
            return self.bad_request(f"'{self.dimensions_field}' must be a positive integer")
        problem = self.extra_checks(body) or self.too_long(texts)
        if problem:
            return self.bad_request(problem)
        items = [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(self.vectors(texts, dims, tweak))
        ]
        if tweak.reverse:
            items.reverse()
        tokens = sum(len(t.split()) for t in texts)
        return Reply.json(self.success_body(model, items, tokens))

    def success_body(self, model: str, items: list[dict[str, Any]], tokens: int) -> Any:
        return {
            "object": "list",
            "data": items,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


class VoyageFake(OpenAIFake):
    """Voyage: OpenAI-shaped, plus `input_type`; errors as `{"detail": "..."}`."""

    max_inputs = 1000
    allowed_fields = frozenset(
        {"model", "input", "input_type", "truncation", "output_dimension", "output_dtype", "encoding_format"}
    )
    dimensions_field = "output_dimension"
    invalid_key_message = "Provided API key is invalid."

    def error_body(self, status: int, message: str, *, kind: str | None = None, code: str | None = None) -> Any:
        return {"detail": message}

    def extra_checks(self, body: dict[str, Any]) -> str | None:
        if body.get("input_type") not in (None, "query", "document"):
            return "input_type must be one of None, 'query', 'document'"
        return None

    def success_body(self, model: str, items: list[dict[str, Any]], tokens: int) -> Any:
        return {"object": "list", "data": items, "model": model, "usage": {"total_tokens": tokens}}


class MistralFake(OpenAIFake):
    """Mistral: OpenAI-shaped; 401 is `{"message": "Unauthorized"}`, other errors carry object "error"."""

    allowed_fields = frozenset({"model", "input", "output_dimension", "output_dtype", "encoding_format"})
    dimensions_field = "output_dimension"

    def error_body(self, status: int, message: str, *, kind: str | None = None, code: str | None = None) -> Any:
        if status == 401:
            return {"message": "Unauthorized", "request_id": "fake-request"}
        return {"object": "error", "message": message, "type": kind, "param": None, "code": code}

    def success_body(self, model: str, items: list[dict[str, Any]], tokens: int) -> Any:
        usage = {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0}
        return {"id": "embd-fake", "object": "list", "data": items, "model": model, "usage": usage}


# -- Gemini --------------------------------------------------------------------------------------

_GRPC_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_TASK_TYPES = frozenset(
    {
        "TASK_TYPE_UNSPECIFIED",
        "RETRIEVAL_QUERY",
        "RETRIEVAL_DOCUMENT",
        "SEMANTIC_SIMILARITY",
        "CLASSIFICATION",
        "CLUSTERING",
        "QUESTION_ANSWERING",
        "FACT_VERIFICATION",
        "CODE_RETRIEVAL_QUERY",
    }
)
_GEMINI_REQUEST_FIELDS = frozenset({"model", "content", "taskType", "title", "outputDimensionality"})


class GeminiFake(EmbeddingFake):
    """`models/{model}:embedContent` and `:batchEmbedContents` (at most 100), key in `x-goog-api-key`.

    Multimodal content as the API takes it: a request's `content.parts` may hold, besides `text` parts,
    `inlineData` (or `inline_data`) parts `{mimeType, data: base64}`, accepted only by the Gemini
    Embedding 2 models, and one vector answers for all the parts of a request. `max_request_bytes`
    refuses a bigger request body as Google does ("Request payload size exceeds the limit", 400), or
    with its front end's HTML 413 when `oversize_html` is set. `media` records every inline part seen.
    """

    api_prefix = "/v1beta"
    max_inputs = 100

    def __init__(self, *, api_key: str | None = "test-key", dims: int = DEFAULT_DIMS) -> None:
        super().__init__(api_key=api_key, dims=dims)
        self.media_models = frozenset({"gemini-embedding-2", "gemini-embedding-2-preview"})
        """Models that take inline data; any other answers it with a 400."""
        self.max_request_bytes: int | None = None
        self.oversize_html = False
        self.media: list[tuple[str, bytes]] = []
        """(MIME type, bytes) of every inline part of an answered request, in order."""

    def embedding_routes(self) -> list[tuple[str, str]]:
        return [("POST", r"/v1beta/models/([^/:]+):(embedContent|batchEmbedContents)")]

    def error_body(
        self,
        status: int,
        message: str,
        *,
        kind: str | None = None,
        code: str | None = None,
        details: list[dict[str, Any]] | None = None,
    ) -> Any:
        error: dict[str, Any] = {"code": status, "message": message, "status": _GRPC_STATUS.get(status, "UNKNOWN")}
        if details:
            error["details"] = details
        return {"error": error}

    def _error(
        self, status: int, message: str, details: list[dict[str, Any]], headers: Sequence[tuple[str, str]] = ()
    ) -> Reply:
        return Reply.json(self.error_body(status, message, details=details), status, headers)

    def authorize(self, request: RecordedRequest) -> Reply | None:
        if self.api_key is None:
            return None
        given = request.headers.get("x-goog-api-key") or request.query.get("key")
        if not given:
            return self.error(
                403,
                "Method doesn't allow unregistered callers (callers without established identity). "
                "Please use API Key or other form of API consumer identity to call this API.",
            )
        if given != self.api_key:
            return self.unauthorized()
        return None

    def not_found(self, request: RecordedRequest) -> Reply:
        return self.error(404, f"Requested entity was not found: {request.path}")

    def unauthorized(self) -> Reply:
        info = {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        }
        return self._error(400, "API key not valid. Please pass a valid API key.", [info])

    def rate_limited(
        self, retry_after: str | None = None, message: str | None = None, *, retry_delay: str | None = "27s"
    ) -> Reply:
        """A per-minute quota 429; `retry_delay` goes into RetryInfo (None leaves RetryInfo out)."""
        details = [_quota_failure("EmbedContentRequestsPerMinutePerProjectPerModel-FreeTier"), _HELP]
        if retry_delay is not None:
            details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay})
        headers = [("Retry-After", retry_after)] if retry_after is not None else []
        return self._error(429, message or _GEMINI_QUOTA_MESSAGE, details, headers)

    def quota_exhausted(self) -> Reply:
        """The per-day free-tier quota is used up."""
        details = [
            _quota_failure("EmbedContentRequestsPerDayPerProjectPerModel-FreeTier"),
            _HELP,
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "41s"},
        ]
        return self._error(429, _GEMINI_QUOTA_MESSAGE, details)

    def overloaded(self) -> Reply:
        return self.error(503, "The model is overloaded. Please try again later.")

    def server_error(self, status: int = 500) -> Reply:
        return self.error(status, "An internal error has occurred. Please retry or report in the forum.")

    def malformed_json(self) -> Reply:
        return Reply(200, b'{"embeddings": [{"values": [0.1, ', (("Content-Type", "application/json"),))

    def context_message(self, size: int, limit: int) -> str:
        return (
            f"* BatchEmbedContentsRequest.requests[0].content: input token count {size} exceeds the maximum "
            f"number of tokens allowed {limit}."
        )

    def payload_too_large(self) -> Reply:
        limit = self.max_request_bytes
        if self.oversize_html:
            page = (
                "<!DOCTYPE html><html lang=en><title>Error 413 (Request Entity Too Large)!!1</title>"
                "<p><b>413.</b> <ins>That's an error.</ins><p>Your client issued a request that was too large."
            )
            return Reply(413, page.encode(), (("Content-Type", "text/html; charset=UTF-8"),))
        return self.error(400, f"Request payload size exceeds the limit: {limit} bytes.")

    def _check_part(self, part: dict[str, Any], n: int, model: str) -> str | None:
        where = f"* EmbedContentRequest.content.parts[{n}]"
        if set(part) == {"text"}:
            return None if isinstance(part["text"], str) else f"{where}.text: must be a string"
        inline = part.get("inlineData", part.get("inline_data"))
        if len(part) != 1 or not isinstance(inline, dict):
            return f'Invalid JSON payload received. Unknown name "{sorted(part)[0]}" at parts[{n}]: Cannot find field.'
        mime, data = inline.get("mimeType", inline.get("mime_type")), inline.get("data")
        if not isinstance(mime, str) or "/" not in mime:
            return f"{where}.inline_data.mime_type: a MIME type is required"
        try:
            base64.b64decode(data if isinstance(data, str) else "", validate=True)
        except (binascii.Error, ValueError):
            return f"{where}.inline_data.data: Invalid value (bytes), base64 decoding failed"
        if model not in self.media_models:
            return f"{where}: inline_data is not supported by models/{model}; only text input is supported"
        return None

    @staticmethod
    def _content_key(parts: list[dict[str, Any]]) -> str:
        """What a request's vector is made from: its text parts, and the hash of each inline part's bytes."""
        out = []
        for part in parts:
            mime, data = _inline(part)
            out.append(f"<{mime}:{hashlib.sha256(data).hexdigest()}>" if mime else part["text"])
        return "".join(out)

    def _check_request(self, item: object, model: str) -> str | None:
        if not isinstance(item, dict):
            return "Invalid JSON payload received. Request must be an object."
        unknown = sorted(set(item) - _GEMINI_REQUEST_FIELDS)
        if unknown:
            return f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.'
        if item.get("model", f"models/{model}") != f"models/{model}":
            return f"Model {item.get('model')} does not match the model of the request, models/{model}."
        parts = item.get("content", {}).get("parts") if isinstance(item.get("content"), dict) else None
        if not isinstance(parts, list) or not parts or not all(isinstance(p, dict) for p in parts):
            return "* EmbedContentRequest.content: contents.parts must not be empty."
        for n, part in enumerate(parts):
            problem = self._check_part(part, n, model)
            if problem:
                return problem
        if item.get("taskType", "TASK_TYPE_UNSPECIFIED") not in _TASK_TYPES:
            return f"Invalid value at 'task_type', \"{item.get('taskType')}\""
        dims = item.get("outputDimensionality")
        if dims is not None and (not isinstance(dims, int) or dims < 1):
            return "* EmbedContentRequest.output_dimensionality: must be a positive integer"
        return None

    def embed(self, request: RecordedRequest, match: re.Match[str], tweak: Tweak) -> Reply:
        model, method = match.group(1), match.group(2)
        try:
            body = request.json()
        except orjson.JSONDecodeError:
            return self.bad_request("Invalid JSON payload received.")
        items = body.get("requests") if method == "batchEmbedContents" and isinstance(body, dict) else [body]
        if not isinstance(items, list) or not items:
            return self.bad_request("* BatchEmbedContentsRequest.requests: requests must not be empty")
        if len(items) > self.max_inputs:
            return self.bad_request(
                f"* BatchEmbedContentsRequest.requests: at most {self.max_inputs} requests can be in one batch"
            )
        for item in items:
            problem = self._check_request(item, model)
            if problem:
                return self.bad_request(problem)
        texts = ["".join(p["text"] for p in item["content"]["parts"] if "text" in p) for item in items]
        problem = self.too_long(texts)
        if problem:
            return self.bad_request(problem)
        if self.max_request_bytes is not None and len(request.body) > self.max_request_bytes:
            return self.payload_too_large()
        texts = [self._content_key(item["content"]["parts"]) for item in items]
        dims = items[0].get("outputDimensionality")
        values = [{"values": v} for v in self.vectors(texts, dims, tweak)]
        for item in items:
            self.media += [(m, d) for m, d in map(_inline, item["content"]["parts"]) if m]
        if tweak.reverse:
            values.reverse()
        if method == "embedContent":
            return Reply.json({"embedding": values[0]} if values else {})
        return Reply.json({"embeddings": values})


_GEMINI_QUOTA_MESSAGE = (
    "You exceeded your current quota, please check your plan and billing details. "
    "For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
)
_HELP = {
    "@type": "type.googleapis.com/google.rpc.Help",
    "links": [
        {
            "description": "Learn more about Gemini API quotas",
            "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
        }
    ],
}


def _inline(part: dict[str, Any]) -> tuple[str, bytes]:
    """(MIME type, bytes) of an inline data part; ("", b"") for a text part."""
    inline = part.get("inlineData", part.get("inline_data"))
    if not isinstance(inline, dict):
        return "", b""
    return str(inline.get("mimeType", inline.get("mime_type"))), base64.b64decode(inline["data"])


def _quota_failure(quota_id: str) -> dict[str, Any]:
    violation = {
        "quotaMetric": "generativelanguage.googleapis.com/embed_content_free_tier_requests",
        "quotaId": quota_id,
        "quotaDimensions": {"location": "global", "model": "gemini-embedding-001"},
        "quotaValue": "100",
    }
    return {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]}


# -- Ollama --------------------------------------------------------------------------------------


class OllamaFake(EmbeddingFake):
    """`POST /api/embed {model, input}` and the older `POST /api/embeddings {model, prompt}`; no key.

    `legacy_only=True` plays an Ollama older than /api/embed (plain-text 404 there). `models` are
    the pulled models; any other model gets Ollama's JSON 404 ("try pulling it first").
    """

    def __init__(
        self, *, dims: int = DEFAULT_DIMS, models: Sequence[str] = ("nomic-embed-text",), legacy_only: bool = False
    ) -> None:
        super().__init__(api_key=None, dims=dims)
        self.models = frozenset(models)
        self.legacy_only = legacy_only

    def embedding_routes(self) -> list[tuple[str, str]]:
        routes = [("POST", r"/api/embeddings")]
        return routes if self.legacy_only else [("POST", r"/api/embed"), *routes]

    def error_body(self, status: int, message: str, *, kind: str | None = None, code: str | None = None) -> Any:
        return {"error": message}

    def _known(self, model: str) -> bool:
        return model in self.models or model.removesuffix(":latest") in self.models

    def embed(self, request: RecordedRequest, match: re.Match[str], tweak: Tweak) -> Reply:
        try:
            body = request.json()
        except orjson.JSONDecodeError:
            return self.bad_request("invalid character looking for beginning of value")
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return self.bad_request("model is required")
        model = body["model"]
        if not self._known(model):
            return self.error(404, f'model "{model}" not found, try pulling it first')
        if request.path == "/api/embeddings":
            prompt = body.get("prompt")
            if not isinstance(prompt, str):
                return self.bad_request("prompt is required")
            if self.too_long([prompt]):
                return self.error(500, "the input length exceeds the context length")
            vectors = self.vectors([prompt], None, tweak)
            return Reply.json({"embedding": vectors[0] if vectors else []})
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return self.bad_request("invalid input type")
        if self.too_long(texts):
            return self.bad_request("the input length exceeds the context length")
        embeddings = self.vectors(texts, None, tweak)
        if tweak.reverse:
            embeddings.reverse()
        return Reply.json(
            {
                "model": model,
                "embeddings": embeddings,
                "total_duration": 1000,
                "load_duration": 10,
                "prompt_eval_count": len(texts),
            }
        )
