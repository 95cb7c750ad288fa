"""The pure parts of the remote providers: wait hints, error classification, key resolution, model limits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.embeddings.http_errors import error_for_response, parse_duration, parse_retry_after, retry_hint
from memoryd.embeddings.limits import model_max_input_tokens
from memoryd.embeddings.remote import RemoteSettings, header_pairs, resolve_api_key
from memoryd.errors import EmbeddingAuthError, EmbeddingError, EmbeddingQuotaError, EmbeddingRateLimitError

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)


@given(st.integers(min_value=0, max_value=10**6))
def test_retry_after_in_whole_seconds_is_read_as_given(seconds: int) -> None:
    assert parse_retry_after(str(seconds)) == seconds


@given(st.integers(min_value=0, max_value=86_400))
def test_retry_after_as_an_http_date_is_the_time_until_that_date(seconds: int) -> None:
    header = format_datetime(NOW + timedelta(seconds=seconds), usegmt=True)
    assert parse_retry_after(header, now=NOW) == seconds


def test_retry_after_in_the_past_or_negative_means_now_and_garbage_means_unknown() -> None:
    assert parse_retry_after(format_datetime(NOW - timedelta(hours=1), usegmt=True), now=NOW) == 0.0
    assert parse_retry_after("-5") == 0.0
    assert parse_retry_after("1.5") == 1.5
    for garbage in ("", "soon", "nan", "inf", "Thu, 99 Foo 2026"):
        assert parse_retry_after(garbage) is None


@given(
    st.integers(min_value=0, max_value=48),
    st.integers(min_value=0, max_value=59),
    st.integers(min_value=0, max_value=59),
    st.integers(min_value=0, max_value=999),
)
def test_durations_add_their_parts(hours: int, minutes: int, seconds: int, millis: int) -> None:
    text = f"{hours}h{minutes}m{seconds}s{millis}ms"
    expected = hours * 3600 + minutes * 60 + seconds + millis / 1000
    assert parse_duration(text) == pytest.approx(expected)


def test_durations_in_google_and_openai_forms() -> None:
    assert parse_duration("27s") == 27.0
    assert parse_duration("0.5s") == 0.5
    assert parse_duration("6m0s") == 360.0
    assert parse_duration("20ms") == pytest.approx(0.02)
    for garbage in ("", "27", "s", "3 days", "1x"):
        assert parse_duration(garbage) is None


def test_retry_hints_prefer_headers_then_provider_hints() -> None:
    gemini = {"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "9s"}]}}
    assert retry_hint({"Retry-After-Ms": "1500", "Retry-After": "7"}, gemini) == 1.5
    assert retry_hint({"retry-after": "7"}, gemini) == 7.0
    assert retry_hint({"retry-after": "later"}, gemini) == 9.0
    assert retry_hint({}, {"error": {"message": "Please try again in 2.5s."}}) == 2.5
    assert retry_hint({}, None) is None


def test_openai_rate_limit_reset_headers_count_only_for_an_exhausted_limit() -> None:
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "6m0s",
    }
    assert retry_hint(headers, None) == 360.0
    assert retry_hint({**headers, "x-ratelimit-remaining-tokens": "5000"}, None) == 1.0
    assert (
        retry_hint({**headers, "x-ratelimit-remaining-requests": "9", "x-ratelimit-remaining-tokens": "9"}, None)
        is None
    )


def classify(status: int, body: object, headers: dict[str, str] | None = None) -> EmbeddingError:
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    return error_for_response("openai", status, headers or {}, content)


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (401, {"error": {"message": "bad key", "code": "invalid_api_key"}}, EmbeddingAuthError),
        (403, {"error": {"code": 403, "message": "denied", "status": "PERMISSION_DENIED"}}, EmbeddingAuthError),
        (
            400,
            {"error": {"code": 400, "message": "API key not valid", "details": [{"reason": "API_KEY_INVALID"}]}},
            EmbeddingAuthError,
        ),
        (429, {"error": {"message": "quota", "type": "insufficient_quota"}}, EmbeddingQuotaError),
        (402, {"detail": "payment required"}, EmbeddingQuotaError),
        (429, {"detail": "You have exceeded your rate limits"}, EmbeddingRateLimitError),
        (503, b"upstream unavailable", EmbeddingRateLimitError),
        (529, {"error": {"message": "overloaded"}}, EmbeddingRateLimitError),
        (500, {"error": {"message": "The engine is currently overloaded"}}, EmbeddingRateLimitError),
        (500, {"error": {"message": "boom"}}, EmbeddingError),
        (400, {"error": "model is required"}, EmbeddingError),
    ],
)
def test_error_responses_map_onto_the_error_tree(status: int, body: object, expected: type[EmbeddingError]) -> None:
    error = classify(status, body)
    assert type(error) is expected
    assert str(error).startswith(f"openai embeddings failed: HTTP {status}: ")


def test_the_error_message_is_taken_from_each_providers_body_shape() -> None:
    assert str(classify(400, {"error": {"message": "openai says"}})).endswith("openai says")
    assert str(classify(400, {"detail": "voyage says"})).endswith("voyage says")
    assert str(classify(400, {"object": "error", "message": "mistral says"})).endswith("mistral says")
    assert str(classify(400, {"error": "ollama says"})).endswith("ollama says")
    assert str(classify(400, {"detail": [{"loc": ["body"], "msg": "field required"}]})).endswith(
        '[{"loc":["body"],"msg":"field required"}]'
    )
    assert str(classify(502, b"<html>Bad gateway</html>")).endswith("<html>Bad gateway</html>")
    assert str(classify(502, b"")).endswith("no details")
    assert len(str(classify(400, {"detail": "x" * 5000}))) < 400


def test_a_secret_echoed_by_the_server_is_masked() -> None:
    error = error_for_response("openai", 400, {}, b'{"detail": "key sk-secret is odd"}', secret="sk-secret")
    assert "sk-secret" not in str(error)


def test_a_rate_limit_carries_the_wait_from_an_http_date() -> None:
    headers = {"Retry-After": format_datetime(NOW + timedelta(seconds=45), usegmt=True)}
    error = error_for_response("openai", 429, headers, b"{}", now=NOW)
    assert isinstance(error, EmbeddingRateLimitError)
    assert error.retry_after == 45.0


def test_the_configured_key_wins_then_env_vars_in_order() -> None:
    env = {"GEMINI_API_KEY": "", "GOOGLE_API_KEY": "from-google"}
    names = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    assert resolve_api_key("gemini", RemoteSettings(api_key=" set "), env, names) == "set"
    assert resolve_api_key("gemini", RemoteSettings(), env, names) == "from-google"
    with pytest.raises(EmbeddingAuthError, match=r"^No API key found for provider gemini$"):
        resolve_api_key("gemini", RemoteSettings(), {}, names)


def test_header_pairs_are_sorted_lowercase_and_without_secrets() -> None:
    headers = {"X-B": "2", "Authorization": "Bearer k", "x-a": "1", "X-Goog-Api-Key": "k"}
    assert header_pairs(headers, secret_names=("authorization", "x-goog-api-key")) == [["x-a", "1"], ["x-b", "2"]]


@pytest.mark.parametrize(
    ("provider", "model", "tokens"),
    [
        ("openai", "text-embedding-3-small", 8192),
        ("openai", "text-embedding-3-large", 8192),
        ("openai", "text-embedding-ada-002", 8191),
        ("gemini", "text-embedding-004", 2048),
        ("gemini", "gemini-embedding-001", 2048),
        ("gemini", "gemini-embedding-2-preview", 8192),
        ("gemini", "unknown", 2048),
        ("voyage", "voyage-3", 32000),
        ("voyage", "voyage-3-lite", 16000),
        ("voyage", "voyage-code-3", 32000),
        ("voyage", "voyage-4-large", 8192),
        ("mistral", "mistral-embed", 8192),
        ("ollama", "nomic-embed-text", 8192),
        ("local", "anything", 2048),
    ],
)
def test_model_limits_follow_the_spec_table(provider: str, model: str, tokens: int) -> None:
    assert model_max_input_tokens(provider, model) == tokens
