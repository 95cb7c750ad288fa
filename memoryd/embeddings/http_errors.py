"""HTTP error responses of the embedding APIs, turned into memoryd's error tree where they enter.

The retry loop decides on types alone: auth and exhausted quota are final (EmbeddingAuthError,
EmbeddingQuotaError), rate limits and overloads carry the wait the server asked for
(EmbeddingRateLimitError.retry_after, from Retry-After, Google's RetryInfo or OpenAI's reset
headers), a request refused as too large is EmbeddingInputTooLargeError (multimodal indexing skips
that file and goes on), and anything else is an EmbeddingError naming the provider, the status and
its message.
"""

from __future__ import annotations

import email.utils
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType

import orjson

from memoryd.errors import (
    EmbeddingAuthError,
    EmbeddingError,
    EmbeddingInputTooLargeError,
    EmbeddingQuotaError,
    EmbeddingRateLimitError,
)

_DETAIL_MAX_CHARS = 300
_QUOTA_EXHAUSTED_MARKERS = ("insufficient_quota", "billing_hard_limit_reached", "billing_not_active")
_OVERLOAD_STATUSES = frozenset({503, 529})
_TRY_AGAIN_RE = re.compile(r"try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)", re.IGNORECASE)
_DURATION_PART_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_TOO_LARGE_RE = re.compile(
    r"payload too large|request too large|input too large|too many tokens|input limit|request size"
    r"|payload size exceeds|request entity too large|exceeds the maximum number of tokens",
    re.IGNORECASE,
)
"""OpenClaw's structured-input-too-large test (its `413` is the status here), plus Google's own words for
a request over its payload size ("Request payload size exceeds the limit") or a model's token limit."""
_DURATION_UNITS: Mapping[str, float] = MappingProxyType({"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0})


def parse_duration(value: str) -> float | None:
    """Seconds in a duration such as Google's "27s"/"0.5s" or OpenAI's "6m0s"/"20ms"; None if unreadable."""
    text = value.strip().lower()
    if not text or _DURATION_PART_RE.sub("", text):
        return None
    return sum(float(n) * _DURATION_UNITS[unit] for n, unit in _DURATION_PART_RE.findall(text))


def parse_retry_after(value: str, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After value: delta-seconds or an HTTP date; None if unreadable."""
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def retry_hint(headers: Mapping[str, str], body: object, *, now: datetime | None = None) -> float | None:
    """The wait a rate-limited response asks for, from headers or the provider's own hints."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        millis = parse_retry_after(lowered["retry-after-ms"])
        if millis is not None:
            return millis / 1000.0
    if "retry-after" in lowered:
        seconds = parse_retry_after(lowered["retry-after"], now=now)
        if seconds is not None:
            return seconds
    for detail in _error_details(body):
        if str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = parse_duration(str(detail.get("retryDelay", "")))
            if delay is not None:
                return delay
    match = _TRY_AGAIN_RE.search(_error_message(body))
    if match:
        return parse_duration(match.group(1))
    resets = [
        parse_duration(lowered.get(f"x-ratelimit-reset-{what}", ""))
        for what in ("requests", "tokens")
        if lowered.get(f"x-ratelimit-remaining-{what}", "").strip() == "0"
    ]
    known = [r for r in resets if r is not None]
    return max(known) if known else None


def error_for_response(
    provider_id: str,
    status: int,
    headers: Mapping[str, str],
    content: bytes,
    *,
    secret: str = "",
    now: datetime | None = None,
) -> EmbeddingError:
    """Translate an HTTP error response into the error tree (see the module docstring)."""
    body = _json_or_none(content)
    detail = _error_message(body) or content.decode("utf-8", "replace").strip()
    if secret:
        detail = detail.replace(secret, "***")
    detail = detail[:_DETAIL_MAX_CHARS] or "no details"
    message = f"{provider_id} embeddings failed: HTTP {status}: {detail}"
    codes = " ".join(_error_codes(body)).lower()
    if status in (401, 403) or "api_key_invalid" in codes:
        return EmbeddingAuthError(message)
    if status == 402 or any(m in codes or m in detail.lower() for m in _QUOTA_EXHAUSTED_MARKERS):
        return EmbeddingQuotaError(message)
    if status == 429 and _only_daily_quota_violated(body):
        return EmbeddingQuotaError(f"{message} (daily quota used up)")
    if status == 429 or status in _OVERLOAD_STATUSES or (status >= 500 and "overloaded" in message.lower()):
        return EmbeddingRateLimitError(message, retry_after=retry_hint(headers, body, now=now))
    if status == 413 or (400 <= status < 500 and _TOO_LARGE_RE.search(detail)):
        return EmbeddingInputTooLargeError(message)
    return EmbeddingError(message)


def _json_or_none(content: bytes) -> object:
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return None


def _error_object(body: object) -> Mapping[str, object]:
    """The provider's error object: OpenAI/Gemini nest it under "error"; Voyage/Mistral do not."""
    if not isinstance(body, Mapping):
        return {}
    inner = body.get("error")
    return inner if isinstance(inner, Mapping) else body


def _error_message(body: object) -> str:
    if isinstance(body, Mapping) and isinstance(body.get("error"), str):
        return str(body["error"])  # Ollama: {"error": "..."}
    err = _error_object(body)
    for key in ("message", "detail"):
        value = err.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value:
            return orjson.dumps(value).decode()
    return ""


def _error_codes(body: object) -> list[str]:
    err = _error_object(body)
    codes = [str(err[k]) for k in ("code", "type", "status") if err.get(k) is not None]
    codes += [str(d["reason"]) for d in _error_details(body) if "reason" in d]
    return codes


def _error_details(body: object) -> list[Mapping[str, object]]:
    details = _error_object(body).get("details")
    return [d for d in details if isinstance(d, Mapping)] if isinstance(details, list) else []


def _only_daily_quota_violated(body: object) -> bool:
    """Gemini names the exhausted quota; a per-day one will not reset within any retry horizon."""
    quota_ids: list[str] = []
    for detail in _error_details(body):
        violations = detail.get("violations")
        if str(detail.get("@type", "")).endswith("google.rpc.QuotaFailure") and isinstance(violations, list):
            quota_ids += [str(v.get("quotaId", "")) for v in violations if isinstance(v, Mapping)]
    return bool(quota_ids) and all("perday" in q.lower() for q in quota_ids)
