"""What every HTTP embedding provider shares: settings, API keys, one JSON POST, and checked answers.

httpx errors are turned into memoryd's error tree here, where they enter, and HTTP error responses
by `http_errors.error_for_response`, so the retry loop can decide on types alone; a response we
cannot use (bad JSON, wrong number of vectors, changed dimensions) names what was wrong with it.
How long an input each model takes is `limits`.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal
from urllib.parse import urlsplit

import anyio
import httpx
import numpy as np
import orjson

from memoryd.credentials import api_key
from memoryd.embeddings.base import Fingerprint, Vectors, normalize_rows
from memoryd.embeddings.http_errors import error_for_response
from memoryd.embeddings.limits import model_max_input_tokens
from memoryd.errors import ConfigError, EmbeddingAuthError, EmbeddingError

Kind = Literal["query", "document"]
"""Why a text is embedded: providers with asymmetric models embed queries and documents differently."""

DOCUMENT_REQUESTS_IN_FLIGHT = 2
"""Document requests one provider has open at once, whichever agents' syncs send them."""


@dataclass(frozen=True, slots=True)
class RemoteSettings:
    """How to reach one remote provider. Empty strings and 0 mean "the provider's default"."""

    base_url: str = ""
    api_key: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 60.0
    model: str = ""
    output_dimensionality: int = 0


def resolve_api_key(provider_id: str, settings: RemoteSettings, env: Mapping[str, str], names: Sequence[str]) -> str:
    """The configured key, else the first non-empty env var; raises the error auto-selection skips on."""
    key = api_key(settings.api_key, env, names)
    if not key:
        raise EmbeddingAuthError(f"No API key found for provider {provider_id}")
    return key


def header_pairs(headers: Mapping[str, str], *, secret_names: Sequence[str]) -> list[list[str]]:
    """Headers as sorted [name, value] pairs without the secret ones, for provider keys."""
    hidden = {n.lower() for n in secret_names}
    return sorted([k.lower(), v] for k, v in headers.items() if k.lower() not in hidden)


class RemoteEmbeddingProvider(ABC):
    """Base of the HTTP providers: owns (or borrows) an httpx.AsyncClient and checks every response.

    Subclasses set the class attributes and implement `_request_vectors` (one HTTP exchange per call)
    and `_key_data`. Vectors are validated (count, consistent dimensions) and L2-normalised here, for
    every provider alike.
    """

    provider_id: ClassVar[str]
    default_model: ClassVar[str]
    default_base_url: ClassVar[str]
    api_key_env: ClassVar[tuple[str, ...]] = ()
    """Env vars searched for a key, in order; empty = the provider needs no key."""
    max_batch_items: ClassVar[int] = 2048
    """Most texts one request may carry; longer lists are split into several requests."""
    supports_output_dimensionality: ClassVar[bool] = True
    secret_header_names: ClassVar[tuple[str, ...]] = ("authorization",)
    """Headers that carry credentials: a configured one replaces the key; none enters the provider key."""

    def __init__(
        self,
        settings: RemoteSettings | None = None,
        *,
        env: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._settings = settings or RemoteSettings()
        environ = os.environ if env is None else env
        if self._settings.output_dimensionality and not self.supports_output_dimensionality:
            raise ConfigError("output_dimensionality", f"not supported by provider {self.provider_id}")
        self._api_key = self._resolve_key(environ) if self.api_key_env else ""
        self._base_url = (self._settings.base_url.strip() or self.default_base_url).rstrip("/")
        self._model = self._normalize_model(self._settings.model.strip()) or self.default_model
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(timeout=httpx.Timeout(self._settings.timeout_s))
        self._dims = self._settings.output_dimensionality or 0
        # One provider instance serves every agent that uses it (select.ProviderPool): this bounds the
        # document requests all their syncs have in flight together. Query embeddings do not queue here.
        self._document_requests = anyio.CapacityLimiter(DOCUMENT_REQUESTS_IN_FLIGHT)

    @property
    def id(self) -> str:
        return self.provider_id

    @property
    def model(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def max_input_tokens(self) -> int:
        return model_max_input_tokens(self.provider_id, self._model)

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint(provider=self.provider_id, model=self._model, key_data=self._key_data())

    async def embed_query(self, text: str) -> Vectors:
        return self._finish(await self._request_vectors([text], "query"), expected=1)

    async def embed_documents(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dims), dtype=np.float32)
        rows: list[object] = []
        for start in range(0, len(texts), self.max_batch_items):
            part = texts[start : start + self.max_batch_items]
            async with self._document_requests:
                got = await self._request_vectors(part, "document")
            self._check_count(got, len(part))
            rows.extend(got)
        return self._finish(rows, expected=len(texts))

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    # -- for the async batch APIs (batch/) --------------------------------------------------------

    @property
    def output_dimensionality(self) -> int:
        """The vector size asked of the API; 0 = the model's own."""
        return self._settings.output_dimensionality

    async def send(
        self,
        method: str,
        target: str,
        *,
        content: bytes | None = None,
        content_type: str | None = None,
        params: Mapping[str, str] | None = None,
        allow: Collection[int] = (),
    ) -> httpx.Response:
        """One call beyond embeddings (files, batch jobs), with the same credentials and error translation.

        `target` is a path under base_url or an absolute URL (Gemini uploads live outside the base).
        Error statuses in `allow` come back as responses for the caller to judge; others raise.
        """
        response = await self._transmit(method, target, content=content, content_type=content_type, params=params)
        if response.status_code >= 400 and response.status_code not in allow:
            raise self._error_for(response)
        return response

    def accept_vectors(self, rows: Sequence[object]) -> Vectors:
        """Check, pin the dimension of, and L2-normalise vectors fetched outside embed_documents."""
        return self._finish(rows, expected=len(rows))

    # -- for subclasses -------------------------------------------------------------------------

    @abstractmethod
    async def _request_vectors(self, texts: list[str], kind: Kind) -> list[object]:
        """Send one request for `texts` and return the raw vectors, in input order."""

    def _key_data(self) -> dict[str, object]:
        """What identifies the vector space beyond provider and model; {} = {provider, model}."""
        return {}

    def _normalize_model(self, model: str) -> str:
        """Strip the "<provider>/" prefix users may write."""
        prefix = f"{self.provider_id}/"
        return model[len(prefix) :] if model.startswith(prefix) else model

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _resolve_key(self, env: Mapping[str, str]) -> str:
        if any(k.lower() in self.secret_header_names for k in self._settings.headers):
            return ""
        return resolve_api_key(self.provider_id, self._settings, env, self.api_key_env)

    def _fail(self, problem: str) -> EmbeddingError:
        return EmbeddingError(f"{self.provider_id} embeddings failed: {problem}")

    async def _post_json(self, path: str, body: object) -> object:
        """POST `body` as JSON to base_url + path; the decoded JSON answer, or a translated error."""
        response = await self._post(path, body)
        if response.status_code >= 400:
            raise self._error_for(response)
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError:
            raise self._fail(f"response from {path} is not valid JSON") from None

    async def _post(self, path: str, body: object) -> httpx.Response:
        try:
            content = orjson.dumps(body)
        except orjson.JSONEncodeError as exc:
            raise self._fail(f"request cannot be encoded as JSON: {exc}") from None
        return await self._transmit("POST", path, content=content, content_type="application/json")

    async def _transmit(
        self,
        method: str,
        target: str,
        *,
        content: bytes | None = None,
        content_type: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """One exchange with configured headers and credentials; transport failures translated."""
        headers = {**self._settings.headers, **self._auth_headers()}
        if content_type:
            headers["Content-Type"] = content_type
        absolute = "://" in target
        url = target if absolute else f"{self._base_url}{target}"
        label = urlsplit(target).path if absolute else target
        try:
            return await self._client.request(method, url, content=content, headers=headers, params=params)
        except httpx.TimeoutException:
            raise self._fail(f"request to {label} timed out after {self._settings.timeout_s:g} s") from None
        except httpx.TransportError as exc:
            raise self._fail(f"connection error on {label}: {type(exc).__name__}: {exc}") from None

    def _error_for(self, response: httpx.Response) -> EmbeddingError:
        return error_for_response(
            self.provider_id, response.status_code, response.headers, response.content, secret=self._api_key
        )

    def _check_count(self, rows: Sequence[object], expected: int) -> None:
        if len(rows) != expected:
            raise self._fail(f"expected {expected} vectors, got {len(rows)}")

    def _finish(self, rows: Sequence[object], *, expected: int) -> Vectors:
        """Check count and shape (and the configured dimension, if any), then L2-normalise.

        Without a configured dimension nothing is pinned across calls: the index checks every batch
        against the vectors it holds, and a provider that once answered with the wrong size (a
        misrouted proxy, say) must not be refused for the rest of the process once it recovers.
        """
        self._check_count(rows, expected)
        try:
            matrix = np.array(rows, dtype=np.float64)
        except (TypeError, ValueError):
            raise self._fail("vectors are not lists of numbers of one length") from None
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise self._fail(f"vectors have shape {matrix.shape}, expected (n, dims)")
        dims = int(matrix.shape[1])
        wanted = self._settings.output_dimensionality
        if wanted and dims != wanted:
            raise self._fail(f"vectors have {dims} dimensions, expected the configured {wanted}")
        self._dims = dims  # only the shape of an empty answer depends on it
        return normalize_rows(matrix)
