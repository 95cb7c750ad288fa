"""The optional rerank stage: a cross-encoder behind an HTTP API re-scores the best fused candidates.

A reranker reads query and chunk together, so it judges relevance better than the fused score, but it
is slow and remote. So this stage is built never to cost a search anything but time, and little of
that: one attempt, no retries, under a deadline; on a late answer or any failure the fused ranking
stands and the outcome says why. Only the first `top_n` candidates are re-scored and re-sorted; the
rest keep their order behind them, so the ranked list stays one list and top-k stays a prefix of it.

Providers differ only in wire format (path, body, where the scores are), so one `HttpReranker`
speaks them all from the `WIRE_FORMATS` table. None of them returns logits here (TEI is asked for
`raw_scores: false`, i.e. sigmoid-ed scores), so scores are only checked and clamped to [0, 1].
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Protocol
from urllib.parse import urlsplit

import anyio
import httpx
import orjson
import structlog

from memoryd.config import RerankSettings
from memoryd.credentials import api_key
from memoryd.errors import ConfigError, MemorydError, RerankError
from memoryd.search.fuse import Candidate, ranking_key

log = structlog.get_logger(__name__)

CLIENT_TIMEOUT_GRACE_S = 1.0
"""The HTTP client's own timeout exceeds the stage deadline by this much: the deadline governs, the
client timeout only bounds callers that call `relevance` without one."""
_DETAIL_MAX_CHARS = 200
_VALUE_MAX_CHARS = 40


class Reranker(Protocol):
    """Scores documents against a query: one relevance in [0, 1] per document, in input order."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    async def relevance(self, query: str, documents: Sequence[str]) -> list[float]: ...

    async def aclose(self) -> None: ...


# --------------------------------------------------------------------------- wire formats

BodyBuilder = Callable[[str, str, Sequence[str]], dict[str, object]]
"""(model, query, documents) -> the JSON request body."""


def _cohere_body(model: str, query: str, documents: Sequence[str]) -> dict[str, object]:
    return {"model": model, "query": query, "documents": list(documents), "top_n": len(documents)}


def _voyage_body(model: str, query: str, documents: Sequence[str]) -> dict[str, object]:
    return {"query": query, "documents": list(documents), "model": model, "top_k": len(documents)}


def _jina_body(model: str, query: str, documents: Sequence[str]) -> dict[str, object]:
    # Jina echoes every document back unless told not to: wasted bytes on a deadline.
    return {
        "model": model,
        "query": query,
        "documents": list(documents),
        "top_n": len(documents),
        "return_documents": False,
    }


def _tei_body(model: str, query: str, documents: Sequence[str]) -> dict[str, object]:
    # A TEI server serves one model; the name would be ignored, so it is not sent.
    return {"query": query, "texts": list(documents), "raw_scores": False, "truncate": True}


@dataclass(frozen=True, slots=True)
class WireFormat:
    """How one provider's rerank API is spoken."""

    path: str
    default_base_url: str
    default_model: str
    key_env: tuple[str, ...]
    """Env vars searched for the API key, in order; empty = no key needed (one may still be set)."""
    body: BodyBuilder
    results_field: str | None
    """The answer's field holding the result list; None = the answer is the list."""
    score_field: str


WIRE_FORMATS: Mapping[str, WireFormat] = MappingProxyType(
    {
        "cohere": WireFormat(
            path="/v2/rerank",
            default_base_url="https://api.cohere.com",
            default_model="rerank-v3.5",
            key_env=("COHERE_API_KEY", "CO_API_KEY"),
            body=_cohere_body,
            results_field="results",
            score_field="relevance_score",
        ),
        "voyage": WireFormat(
            path="/v1/rerank",
            default_base_url="https://api.voyageai.com",
            default_model="rerank-2-lite",
            key_env=("VOYAGE_API_KEY",),
            body=_voyage_body,
            results_field="data",
            score_field="relevance_score",
        ),
        "jina": WireFormat(
            path="/v1/rerank",
            default_base_url="https://api.jina.ai",
            default_model="jina-reranker-v2-base-multilingual",
            key_env=("JINA_API_KEY",),
            body=_jina_body,
            results_field="results",
            score_field="relevance_score",
        ),
        "tei": WireFormat(
            path="/rerank",
            default_base_url="http://127.0.0.1:8080",
            default_model="",
            key_env=(),
            body=_tei_body,
            results_field=None,
            score_field="score",
        ),
    }
)


class HttpReranker:
    """A rerank API over one long-lived httpx client; one request per call, never retried.

    The API key comes from `api_key`, else the provider's env vars; a configured `Authorization`
    header replaces it. A keyed provider without a key is a ConfigError at construction, naming the
    env vars. Every failure of a call is a RerankError whose message never contains the key.
    """

    def __init__(self, settings: RerankSettings, *, env: Mapping[str, str] | None = None) -> None:
        wire = WIRE_FORMATS.get(settings.provider)
        if wire is None:
            known = ", ".join(WIRE_FORMATS)
            raise ConfigError("query.rerank.provider", f"no HTTP reranker {settings.provider!r} (known: {known})")
        self._name: str = settings.provider
        self._wire = wire
        self._base_url = _checked_base_url(settings.base_url.strip() or wire.default_base_url)
        model = settings.model.strip()
        prefix = f"{self._name}/"
        self._model = model.removeprefix(prefix) or wire.default_model
        self._api_key = self._resolve_key(settings, os.environ if env is None else env)
        headers = dict(settings.headers)
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        self._client_timeout_s = settings.timeout_ms / 1000.0 + CLIENT_TIMEOUT_GRACE_S
        self._client = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(self._client_timeout_s))

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return self._base_url

    async def relevance(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        answer = await self._post(self._wire.body(self._model, query, documents))
        return self._scores(answer, len(documents))

    async def aclose(self) -> None:
        await self._client.aclose()

    def _resolve_key(self, settings: RerankSettings, env: Mapping[str, str]) -> str:
        if any(name.lower() == "authorization" for name in settings.headers):
            return ""
        names = self._wire.key_env
        key = api_key(settings.api_key, env, names)
        if names and not key:
            raise ConfigError(
                "query.rerank.api_key", f"no API key for reranker {self._name}: set it or {' or '.join(names)}"
            )
        return key

    async def _post(self, body: dict[str, object]) -> object:
        path = self._wire.path
        try:
            content = orjson.dumps(body)
        except orjson.JSONEncodeError as exc:
            raise self._fail(f"request cannot be encoded as JSON: {exc}") from None
        try:
            response = await self._client.post(
                f"{self._base_url}{path}", content=content, headers={"Content-Type": "application/json"}
            )
        except httpx.TimeoutException:
            raise self._fail(f"request to {path} timed out after {self._client_timeout_s:g} s") from None
        except httpx.RequestError as exc:
            raise self._fail(f"connection error on {path}: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise self._fail(f"HTTP {response.status_code}: {_error_detail(response.content)}")
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError:
            raise self._fail(f"answer from {path} is not valid JSON") from None

    def _scores(self, answer: object, count: int) -> list[float]:
        """One score per document from results in any order; documents left out score 0."""
        field = self._wire.results_field
        items = answer if field is None else answer.get(field) if isinstance(answer, Mapping) else None
        if not isinstance(items, list):
            where = "a list" if field is None else f"an object with a {field!r} list"
            raise self._fail(f"answer is not {where}")
        scores = [0.0] * count
        seen: set[int] = set()
        for position, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise self._fail(f"result {position} is not an object: {_short(item)}")
            index = item.get("index")
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
                raise self._fail(f"result {position} has index {_short(index)}, expected 0..{count - 1}")
            if index in seen:
                raise self._fail(f"index {index} appears twice")
            score = item.get(self._wire.score_field)
            if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
                raise self._fail(
                    f"result {position} has {self._wire.score_field} {_short(score)}, expected a finite number"
                )
            seen.add(index)
            scores[index] = _unit(float(score))
        return scores

    def _fail(self, problem: str) -> RerankError:
        message = f"{self._name} rerank failed: {problem}"
        if self._api_key:
            message = message.replace(self._api_key, "***")
        return RerankError(message)


def build_reranker(settings: RerankSettings, *, env: Mapping[str, str] | None = None) -> Reranker | None:
    """The configured reranker, or None when the stage is off (`provider = "none"`)."""
    if settings.provider == "none":
        return None
    return HttpReranker(settings, env=env)


def _checked_base_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError("query.rerank.base_url", f"expected an http(s) URL, got {url!r}")
    return url.rstrip("/")


def _error_detail(content: bytes) -> str:
    """A short, one-line excerpt of an error body: the provider's message if it has one."""
    try:
        body: object = orjson.loads(content)
    except orjson.JSONDecodeError:
        body = None
    text = ""
    if isinstance(body, Mapping):
        for key in ("message", "detail", "error"):  # Cohere; Voyage and Jina; TEI
            value = body.get(key)
            if isinstance(value, Mapping):
                value = value.get("message")
            if isinstance(value, str) and value.strip():
                text = value
                break
            if isinstance(value, list) and value:
                text = orjson.dumps(value).decode()
                break
    if not text:
        text = content.decode("utf-8", "replace")
    return " ".join(text.split())[:_DETAIL_MAX_CHARS] or "no details"


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _VALUE_MAX_CHARS else text[: _VALUE_MAX_CHARS - 3] + "..."


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))


# --------------------------------------------------------------------------- the stage


@dataclass(frozen=True, slots=True)
class RerankOutcome:
    """The ranked list after the stage, and whether the reranker had a say (`reason` says why not)."""

    candidates: list[Candidate]
    applied: bool
    reason: str | None
    elapsed_ms: float

    def to_dict(self) -> dict[str, object]:
        """The `rerank` part of a search reply."""
        return {"applied": self.applied, "reason": self.reason, "ms": round(self.elapsed_ms, 1)}


def blend(ranked: Sequence[Candidate], relevance: Sequence[float], *, top_n: int, weight: float) -> list[Candidate]:
    """Blend relevance into the first `top_n` scores, re-sort that block, keep the tail as it was.

    `score = (1 - weight)·score + weight·relevance` (relevance clamped to [0, 1]); the block is sorted
    by `ranking_key`, a total order, so equal answers give equal rankings. With `ranked` sorted by
    `ranking_key` (as fusion leaves it), weight 0 changes nothing and weight 1 is the reranker's order.
    """
    _check_parameters(top_n=top_n, weight=weight)
    size = min(top_n, len(ranked))
    if len(relevance) != size:
        raise RerankError(f"reranker returned {len(relevance)} scores for {size} documents")
    if not all(math.isfinite(r) for r in relevance):
        raise RerankError("reranker returned a score that is not a finite number")
    block = [
        replace(cand, score=(1.0 - weight) * cand.score + weight * _unit(r))
        for cand, r in zip(ranked[:size], relevance, strict=True)
    ]
    return sorted(block, key=ranking_key) + list(ranked[size:])


async def rerank(
    query: str,
    ranked: Sequence[Candidate],
    reranker: Reranker,
    *,
    top_n: int,
    timeout_s: float,
    weight: float,
) -> RerankOutcome:
    """Rerank the head of `ranked` within `timeout_s`; on a late answer or a failure, `ranked` as it was.

    Never raises for the reranker's failures (any MemorydError), only for bad arguments (ConfigError)
    and bugs. Nothing is sent, and `reason` says why, when there are no candidates, the query is blank
    or `weight` is 0 (the answer could not change anything). `reason` is None exactly when applied.
    """
    _check_parameters(top_n=top_n, weight=weight)
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        raise ConfigError("query.rerank.timeout_ms", f"must be a positive number of seconds, got {timeout_s!r}")
    started = time.perf_counter()

    def unchanged(reason: str) -> RerankOutcome:
        return RerankOutcome(list(ranked), False, reason, (time.perf_counter() - started) * 1000.0)

    if not ranked:
        return unchanged("no candidates")
    if not query.strip():
        return unchanged("empty query")
    if weight == 0:
        return unchanged("weight is 0")
    blended: list[Candidate] | None = None
    try:
        with anyio.move_on_after(timeout_s):
            relevance = await reranker.relevance(query, [cand.snippet for cand in ranked[:top_n]])
            blended = blend(ranked, relevance, top_n=top_n, weight=weight)
    except MemorydError as exc:
        log.warning("rerank_failed", reranker=reranker.name, error=str(exc))
        return unchanged(f"reranker error: {exc}")
    if blended is None:
        log.info("rerank_late", reranker=reranker.name, timeout_s=timeout_s)
        return unchanged(f"reranker took over {timeout_s:g} s")
    return RerankOutcome(blended, True, None, (time.perf_counter() - started) * 1000.0)


def _check_parameters(*, top_n: int, weight: float) -> None:
    if top_n < 1:
        raise ConfigError("query.rerank.top_n", f"must be at least 1, got {top_n!r}")
    if not (math.isfinite(weight) and 0.0 <= weight <= 1.0):
        raise ConfigError("query.rerank.weight", f"must be within [0, 1], got {weight!r}")
