"""The rerank stage against loopback servers speaking Cohere's, Voyage's, Jina's and TEI's rerank APIs."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.config import RerankProvider, RerankSettings
from memoryd.errors import ConfigError, RerankError
from memoryd.search.fuse import Candidate, ranking_key
from memoryd.search.rerank import HttpReranker, RerankOutcome, blend, build_reranker, rerank
from tests.fakes.http_server import FakeHTTPServer, RecordedRequest, Reply, Route

KEY = "sk-rerank-secret-123"
QUERY = "when is the launch?"
KEY_ENV: Mapping[str, str] = MappingProxyType(
    {"cohere": "COHERE_API_KEY", "voyage": "VOYAGE_API_KEY", "jina": "JINA_API_KEY"}
)
PROVIDERS: tuple[RerankProvider, ...] = ("cohere", "voyage", "jina", "tei")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class RerankFake(FakeHTTPServer):
    """One provider's rerank API: checks credentials and fields, answers best first as the real APIs do.

    A document's relevance is `relevance[text]` (0.5 for texts not listed).
    """

    PATHS: Mapping[str, str] = MappingProxyType(
        {"cohere": "/v2/rerank", "voyage": "/v1/rerank", "jina": "/v1/rerank", "tei": "/rerank"}
    )
    FIELDS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = MappingProxyType(
        {
            "cohere": (frozenset({"model", "query", "documents"}), frozenset({"top_n", "max_tokens_per_doc"})),
            "voyage": (
                frozenset({"query", "documents", "model"}),
                frozenset({"top_k", "return_documents", "truncation"}),
            ),
            "jina": (frozenset({"model", "query", "documents"}), frozenset({"top_n", "return_documents"})),
            "tei": (
                frozenset({"query", "texts"}),
                frozenset({"raw_scores", "return_text", "truncate", "truncation_direction"}),
            ),
        }
    )

    def __init__(self, provider: str, *, api_key: str | None, relevance: Mapping[str, float] | None = None) -> None:
        super().__init__()
        self.provider = provider
        self.api_key = api_key
        self.relevance = dict(relevance or {})

    def routes(self) -> list[Route]:
        return [Route("POST", self.PATHS[self.provider], self._rerank)]

    def authorize(self, request: RecordedRequest) -> Reply | None:
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return self.error(401, "invalid api token")
        return None

    def error(self, status: int, message: str) -> Reply:
        if self.provider == "cohere":
            return Reply.json({"id": "c0ffee", "message": message}, status)
        if self.provider == "tei":
            return Reply.json({"error": message, "error_type": "Validation"}, status)
        return Reply.json({"detail": message}, status)

    def answer(self, items: Sequence[tuple[object, object]], documents: Sequence[str] = ()) -> Reply:
        """An answer in the provider's format with the given (index, score) results, in that order."""
        score_field = "score" if self.provider == "tei" else "relevance_score"
        results: list[dict[str, object]] = [{"index": i, score_field: s} for i, s in items]
        if self.provider == "tei":
            return Reply.json(results)
        if self.provider == "cohere":
            meta = {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}
            return Reply.json({"id": "c0ffee", "results": results, "meta": meta})
        if self.provider == "voyage":
            usage = {"total_tokens": 42}
            return Reply.json({"object": "list", "data": results, "model": "rerank-2-lite", "usage": usage})
        for result, text in zip(results, documents, strict=False):
            result["document"] = {"text": text}
        return Reply.json({"model": "jina", "usage": {"total_tokens": 42}, "results": results})

    def _rerank(self, request: RecordedRequest, _match: re.Match[str]) -> Reply:
        body = request.json()
        required, optional = self.FIELDS[self.provider]
        if not isinstance(body, dict) or not required <= body.keys() <= required | optional:
            return self.error(400, f"bad fields: {sorted(body) if isinstance(body, dict) else body!r}")
        documents: list[str] = body["texts" if self.provider == "tei" else "documents"]
        order = sorted(range(len(documents)), key=lambda i: (-self.relevance.get(documents[i], 0.5), i))
        limit = body.get("top_k" if self.provider == "voyage" else "top_n") or len(documents)
        best = order[:limit]
        echoed = [documents[i] for i in best] if body.get("return_documents", True) else []
        return self.answer([(i, self.relevance.get(documents[i], 0.5)) for i in best], echoed)


def settings_for(server: RerankFake, **overrides: Any) -> RerankSettings:
    provider = server.provider
    return RerankSettings(provider=provider, base_url=server.base_url, **overrides)  # type: ignore[arg-type]


def env_for(provider: str) -> dict[str, str]:
    return {KEY_ENV[provider]: KEY} if provider in KEY_ENV else {}


def chunk(cid: str, score: float, snippet: str | None = None, path: str | None = None, start: int = 1) -> Candidate:
    return Candidate(
        id=cid,
        path=path or f"memory/{cid}.md",
        source="memory",
        start_line=start,
        end_line=start + 9,
        snippet=snippet if snippet is not None else f"text of {cid}",
        score=score,
    )


def fused(*cands: Candidate) -> list[Candidate]:
    return sorted(cands, key=ranking_key)


@pytest.fixture(params=PROVIDERS)
def server(request: pytest.FixtureRequest) -> Iterator[RerankFake]:
    provider: str = request.param
    with RerankFake(provider, api_key=KEY if provider in KEY_ENV else None) as fake:
        yield fake


@pytest.fixture
def cohere() -> Iterator[RerankFake]:
    with RerankFake("cohere", api_key=KEY) as fake:
        yield fake


@pytest.fixture
async def cohere_reranker(cohere: RerankFake) -> AsyncIterator[HttpReranker]:
    reranker = HttpReranker(settings_for(cohere), env=env_for("cohere"))
    yield reranker
    await reranker.aclose()


# --------------------------------------------------------------------------- wire formats

EXPECTED_BODIES: Mapping[str, dict[str, object]] = MappingProxyType(
    {
        "cohere": {"model": "rerank-v3.5", "query": QUERY, "documents": ["d0", "d1", "d2"], "top_n": 3},
        "voyage": {"query": QUERY, "documents": ["d0", "d1", "d2"], "model": "rerank-2-lite", "top_k": 3},
        "jina": {
            "model": "jina-reranker-v2-base-multilingual",
            "query": QUERY,
            "documents": ["d0", "d1", "d2"],
            "top_n": 3,
            "return_documents": False,
        },
        "tei": {"query": QUERY, "texts": ["d0", "d1", "d2"], "raw_scores": False, "truncate": True},
    }
)


@pytest.mark.anyio
async def test_each_provider_is_sent_its_own_body_and_answers_one_score_per_document_in_order(
    server: RerankFake,
) -> None:
    server.relevance = {"d0": 0.25, "d1": 0.75, "d2": 0.5}
    settings = settings_for(server, headers={"X-Client-Name": "memoryd-tests"})
    reranker = HttpReranker(settings, env=env_for(server.provider))
    try:
        scores = await reranker.relevance(QUERY, ["d0", "d1", "d2"])
    finally:
        await reranker.aclose()
    assert scores == [0.25, 0.75, 0.5]
    (sent,) = server.requests
    assert (sent.method, sent.path) == ("POST", RerankFake.PATHS[server.provider])
    assert sent.json() == EXPECTED_BODIES[server.provider]
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["x-client-name"] == "memoryd-tests"
    expected_auth = f"Bearer {KEY}" if server.provider in KEY_ENV else None
    assert sent.headers.get("authorization") == expected_auth


@pytest.mark.parametrize(
    ("provider", "base_url", "model"),
    [
        ("cohere", "https://api.cohere.com", "rerank-v3.5"),
        ("voyage", "https://api.voyageai.com", "rerank-2-lite"),
        ("jina", "https://api.jina.ai", "jina-reranker-v2-base-multilingual"),
        ("tei", "http://127.0.0.1:8080", ""),
    ],
)
@pytest.mark.anyio
async def test_each_provider_has_its_public_endpoint_and_model_by_default(
    provider: RerankProvider, base_url: str, model: str
) -> None:
    reranker = HttpReranker(RerankSettings(provider=provider), env=env_for(provider))
    await reranker.aclose()
    assert (reranker.name, reranker.base_url, reranker.model) == (provider, base_url, model)


@pytest.mark.anyio
async def test_a_model_named_with_its_provider_prefix_is_sent_without_it(cohere: RerankFake) -> None:
    reranker = HttpReranker(settings_for(cohere, model="cohere/rerank-english-v3.0"), env=env_for("cohere"))
    try:
        await reranker.relevance(QUERY, ["d0"])
    finally:
        await reranker.aclose()
    assert reranker.model == "rerank-english-v3.0"
    assert cohere.requests[0].json()["model"] == "rerank-english-v3.0"


@pytest.mark.anyio
async def test_results_in_any_order_land_on_their_documents_and_left_out_ones_score_zero(
    server: RerankFake,
) -> None:
    server.enqueue(server.answer([(3, 0.9), (0, 0.2), (2, 0.6)]))
    reranker = HttpReranker(settings_for(server), env=env_for(server.provider))
    try:
        assert await reranker.relevance(QUERY, ["a", "b", "c", "d"]) == [0.2, 0.0, 0.6, 0.9]
    finally:
        await reranker.aclose()


@pytest.mark.anyio
async def test_scores_outside_zero_to_one_are_clamped(cohere: RerankFake, cohere_reranker: HttpReranker) -> None:
    cohere.enqueue(cohere.answer([(0, 1.7), (1, -0.2), (2, 1)]))
    assert await cohere_reranker.relevance(QUERY, ["a", "b", "c"]) == [1.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ([(5, 0.5)], "result 0 has index 5, expected 0..1"),
        ([(-1, 0.5)], "result 0 has index -1, expected 0..1"),
        ([(True, 0.5)], "result 0 has index True"),
        ([(0, 0.5), (0, 0.4)], "index 0 appears twice"),
        ([(0, "0.5")], "result 0 has relevance_score '0.5', expected a finite number"),
        ([(0, None)], "result 0 has relevance_score None"),
    ],
)
@pytest.mark.anyio
async def test_answers_with_impossible_results_are_clear_errors(
    cohere: RerankFake, cohere_reranker: HttpReranker, answer: list[tuple[object, object]], problem: str
) -> None:
    cohere.enqueue(cohere.answer(answer))
    with pytest.raises(RerankError, match=f"^cohere rerank failed: {re.escape(problem)}"):
        await cohere_reranker.relevance(QUERY, ["a", "b"])


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (Reply.json({"id": "x", "meta": {}}), "answer is not an object with a 'results' list"),
        (Reply.json({"results": [0.5]}), "result 0 is not an object: 0.5"),
        (Reply.text("<html>gateway says hi</html>"), "answer from /v2/rerank is not valid JSON"),
        (Reply(200, b'{"results": [{"index": 0, "relevance_score": 1e999}]}'), "is not valid JSON"),
    ],
)
@pytest.mark.anyio
async def test_answers_of_the_wrong_shape_are_clear_errors(
    cohere: RerankFake, cohere_reranker: HttpReranker, reply: Reply, problem: str
) -> None:
    cohere.enqueue(reply)
    with pytest.raises(RerankError, match=re.escape(problem)):
        await cohere_reranker.relevance(QUERY, ["a"])


@pytest.mark.anyio
async def test_tei_answers_a_bare_list() -> None:
    with RerankFake("tei", api_key=None) as tei:
        tei.enqueue(Reply.json({"results": []}))
        reranker = HttpReranker(settings_for(tei))
        try:
            with pytest.raises(RerankError, match=r"^tei rerank failed: answer is not a list$"):
                await reranker.relevance(QUERY, ["a"])
        finally:
            await reranker.aclose()


@pytest.mark.anyio
async def test_http_errors_name_the_status_and_the_providers_own_message(server: RerankFake) -> None:
    reranker = HttpReranker(settings_for(server, api_key="wrong-key"), env={})
    try:
        if server.provider == "tei":  # TEI has no auth by default: its errors are validation errors
            server.enqueue(server.error(413, "batch size 3 > maximum allowed batch size 2"))
            expected = "HTTP 413: batch size 3 > maximum allowed batch size 2"
        else:
            expected = "HTTP 401: invalid api token"
        with pytest.raises(RerankError, match=f"^{server.provider} rerank failed: {expected}$"):
            await reranker.relevance(QUERY, ["a", "b", "c"])
    finally:
        await reranker.aclose()


@pytest.mark.anyio
async def test_a_server_error_is_reported_with_a_short_one_line_excerpt(
    cohere: RerankFake, cohere_reranker: HttpReranker
) -> None:
    cohere.enqueue(Reply.text("<html>\n  <body>upstream   exploded</body>\n" + "x" * 5000 + "</html>", 502))
    with pytest.raises(RerankError) as caught:
        await cohere_reranker.relevance(QUERY, ["a"])
    message = str(caught.value)
    assert message.startswith("cohere rerank failed: HTTP 502: <html> <body>upstream exploded</body> xxx")
    assert "\n" not in message
    assert len(message) < 300


@pytest.mark.anyio
async def test_the_api_key_never_appears_in_an_error(cohere: RerankFake, cohere_reranker: HttpReranker) -> None:
    cohere.enqueue(cohere.error(500, f"crashed while checking key {KEY}"))
    with pytest.raises(RerankError) as caught:
        await cohere_reranker.relevance(QUERY, ["a"])
    assert KEY not in str(caught.value)
    assert str(caught.value) == "cohere rerank failed: HTTP 500: crashed while checking key ***"


@pytest.mark.anyio
async def test_an_unreachable_server_is_a_connection_error() -> None:
    with RerankFake("tei", api_key=None) as gone:
        settings = settings_for(gone)
    reranker = HttpReranker(settings)
    try:
        with pytest.raises(RerankError, match=r"^tei rerank failed: connection error on /rerank: ConnectError"):
            await reranker.relevance(QUERY, ["a"])
    finally:
        await reranker.aclose()


@pytest.mark.anyio
async def test_no_documents_means_no_request(cohere: RerankFake, cohere_reranker: HttpReranker) -> None:
    assert await cohere_reranker.relevance(QUERY, []) == []
    assert cohere.requests == []


# --------------------------------------------------------------------------- keys and settings


@pytest.mark.parametrize("provider", ["cohere", "voyage", "jina"])
def test_a_keyed_provider_without_a_key_names_the_env_variable(provider: RerankProvider) -> None:
    with pytest.raises(
        ConfigError, match=f"query.rerank.api_key: no API key for reranker {provider}: .*{KEY_ENV[provider]}"
    ):
        HttpReranker(RerankSettings(provider=provider), env={"OPENAI_API_KEY": "sk-elsewhere"})


@pytest.mark.anyio
async def test_cohere_also_reads_co_api_key(cohere: RerankFake) -> None:
    reranker = HttpReranker(settings_for(cohere), env={"CO_API_KEY": KEY})
    try:
        await reranker.relevance(QUERY, ["a"])
    finally:
        await reranker.aclose()
    assert cohere.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.anyio
async def test_a_configured_key_wins_over_the_environment(cohere: RerankFake) -> None:
    reranker = HttpReranker(settings_for(cohere, api_key=KEY), env={"COHERE_API_KEY": "sk-from-env"})
    try:
        await reranker.relevance(QUERY, ["a"])
    finally:
        await reranker.aclose()
    assert cohere.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.anyio
async def test_a_configured_authorization_header_replaces_the_key(cohere: RerankFake) -> None:
    reranker = HttpReranker(settings_for(cohere, headers={"Authorization": f"Bearer {KEY}"}), env={})
    try:
        assert await reranker.relevance(QUERY, ["a"]) == [0.5]
    finally:
        await reranker.aclose()


@pytest.mark.anyio
async def test_a_tei_server_started_with_an_api_key_gets_it_as_a_bearer_token() -> None:
    with RerankFake("tei", api_key=KEY) as tei:
        reranker = HttpReranker(settings_for(tei, api_key=KEY))
        try:
            assert await reranker.relevance(QUERY, ["a"]) == [0.5]
        finally:
            await reranker.aclose()


@pytest.mark.anyio
async def test_build_reranker_is_none_when_off_and_http_otherwise() -> None:
    assert build_reranker(RerankSettings()) is None
    reranker = build_reranker(RerankSettings(provider="jina"), env={"JINA_API_KEY": KEY})
    assert isinstance(reranker, HttpReranker)
    await reranker.aclose()


def test_a_base_url_that_is_not_http_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"query\.rerank\.base_url: expected an http"):
        HttpReranker(RerankSettings(provider="tei", base_url="localhost:8080"))


# --------------------------------------------------------------------------- the stage


def ids(cands: Sequence[Candidate]) -> list[str]:
    return [c.id for c in cands]


@pytest.mark.anyio
async def test_only_the_first_top_n_are_sent_and_reordered_and_the_tail_follows_untouched(
    cohere: RerankFake, cohere_reranker: HttpReranker
) -> None:
    ranked = fused(chunk("a", 0.9), chunk("b", 0.8), chunk("c", 0.7), chunk("d", 0.6), chunk("e", 0.5))
    cohere.relevance = {"text of a": 0.3, "text of b": 0.2, "text of c": 0.9}
    outcome = await rerank(QUERY, ranked, cohere_reranker, top_n=3, timeout_s=5.0, weight=0.5)
    assert (outcome.applied, outcome.reason) == (True, None)
    assert cohere.requests[0].json()["documents"] == ["text of a", "text of b", "text of c"]
    assert ids(outcome.candidates) == ["c", "a", "b", "d", "e"]
    assert [c.score for c in outcome.candidates[:3]] == pytest.approx([0.8, 0.6, 0.5])
    assert outcome.candidates[3:] == ranked[3:]


@pytest.mark.anyio
async def test_weight_one_is_the_rerankers_order(cohere: RerankFake, cohere_reranker: HttpReranker) -> None:
    ranked = fused(chunk("a", 0.9), chunk("b", 0.8), chunk("c", 0.7))
    cohere.relevance = {"text of a": 0.3, "text of b": 0.1, "text of c": 0.2}
    outcome = await rerank(QUERY, ranked, cohere_reranker, top_n=3, timeout_s=5.0, weight=1.0)
    assert ids(outcome.candidates) == ["a", "c", "b"]
    assert [c.score for c in outcome.candidates] == [0.3, 0.2, 0.1]


@pytest.mark.anyio
async def test_the_same_answers_give_the_same_ranking(cohere: RerankFake, cohere_reranker: HttpReranker) -> None:
    ranked = fused(chunk("a", 0.9), chunk("b", 0.9), chunk("c", 0.4), chunk("d", 0.2))
    first = await rerank(QUERY, ranked, cohere_reranker, top_n=4, timeout_s=5.0, weight=0.5)
    second = await rerank(QUERY, list(reversed(ranked)), cohere_reranker, top_n=4, timeout_s=5.0, weight=0.5)
    assert first.candidates == second.candidates


@pytest.mark.anyio
async def test_weight_zero_sends_nothing_and_keeps_the_ranking(
    cohere: RerankFake, cohere_reranker: HttpReranker
) -> None:
    ranked = fused(chunk("a", 0.9), chunk("b", 0.8))
    outcome = await rerank(QUERY, ranked, cohere_reranker, top_n=3, timeout_s=5.0, weight=0.0)
    assert (outcome.candidates, outcome.applied, outcome.reason) == (ranked, False, "weight is 0")
    assert cohere.requests == []


@pytest.mark.parametrize(
    ("query", "ranked", "reason"), [(QUERY, [], "no candidates"), ("  ", [chunk("a", 1)], "empty query")]
)
@pytest.mark.anyio
async def test_nothing_to_rerank_sends_nothing_and_says_why(
    cohere: RerankFake, cohere_reranker: HttpReranker, query: str, ranked: list[Candidate], reason: str
) -> None:
    outcome = await rerank(query, ranked, cohere_reranker, top_n=3, timeout_s=5.0, weight=0.5)
    assert (outcome.candidates, outcome.applied, outcome.reason) == (ranked, False, reason)
    assert cohere.requests == []


@pytest.mark.anyio
async def test_a_failing_reranker_leaves_the_ranking_as_it_was_and_says_why(
    cohere: RerankFake, cohere_reranker: HttpReranker
) -> None:
    ranked = fused(chunk("a", 0.9), chunk("b", 0.8))
    cohere.enqueue(cohere.error(500, "internal server error"))
    outcome = await rerank(QUERY, ranked, cohere_reranker, top_n=3, timeout_s=5.0, weight=0.5)
    assert (outcome.candidates, outcome.applied) == (ranked, False)
    assert outcome.reason == "reranker error: cohere rerank failed: HTTP 500: internal server error"
    assert outcome.to_dict() == {"applied": False, "reason": outcome.reason, "ms": round(outcome.elapsed_ms, 1)}


@pytest.mark.anyio
async def test_a_stalled_reranker_is_abandoned_at_the_deadline_and_the_next_search_reranks(
    cohere: RerankFake, cohere_reranker: HttpReranker
) -> None:
    ranked = fused(chunk("a", 0.9), chunk("b", 0.8))
    cohere.relevance = {"text of b": 0.9, "text of a": 0.1}
    cohere.enqueue(cohere.stall())
    with anyio.fail_after(5):
        late = await rerank(QUERY, ranked, cohere_reranker, top_n=3, timeout_s=0.3, weight=0.5)
    assert (late.candidates, late.applied, late.reason) == (ranked, False, "reranker took over 0.3 s")
    assert late.elapsed_ms >= 250
    with anyio.fail_after(5):
        on_time = await rerank(QUERY, ranked, cohere_reranker, top_n=3, timeout_s=5.0, weight=0.5)
    assert (ids(on_time.candidates), on_time.applied) == (["b", "a"], True)


class ScriptedReranker:
    """A reranker that answers fixed scores or raises: for what no well-behaved server can produce."""

    name = "scripted"
    model = "none"

    def __init__(self, scores: list[float] | None = None, error: Exception | None = None) -> None:
        self.scores = scores or []
        self.error = error

    async def relevance(self, query: str, documents: Sequence[str]) -> list[float]:
        if self.error is not None:
            raise self.error
        return self.scores

    async def aclose(self) -> None:
        return None


@pytest.mark.anyio
async def test_a_reranker_answering_the_wrong_number_of_scores_is_ignored() -> None:
    ranked = fused(chunk("a", 0.9), chunk("b", 0.8))
    outcome = await rerank(QUERY, ranked, ScriptedReranker([0.5]), top_n=3, timeout_s=5.0, weight=0.5)
    assert (outcome.candidates, outcome.applied) == (ranked, False)
    assert outcome.reason == "reranker error: reranker returned 1 scores for 2 documents"


@pytest.mark.anyio
async def test_a_bug_in_a_reranker_is_not_hidden() -> None:
    with pytest.raises(KeyError):
        await rerank(QUERY, [chunk("a", 1)], ScriptedReranker(error=KeyError("oops")), top_n=3, timeout_s=5, weight=1)


@pytest.mark.parametrize(
    ("top_n", "timeout_s", "weight", "key"),
    [
        (0, 1.0, 0.5, "top_n"),
        (3, 0.0, 0.5, "timeout_ms"),
        (3, float("nan"), 0.5, "timeout_ms"),
        (3, 1.0, 1.5, "weight"),
    ],
)
@pytest.mark.anyio
async def test_impossible_stage_settings_are_config_errors(
    top_n: int, timeout_s: float, weight: float, key: str
) -> None:
    with pytest.raises(ConfigError, match=f"^config query.rerank.{key}: "):
        await rerank(QUERY, [chunk("a", 1)], ScriptedReranker([1.0]), top_n=top_n, timeout_s=timeout_s, weight=weight)


def test_an_applied_outcome_reports_no_reason() -> None:
    assert RerankOutcome([], True, None, 12.345).to_dict() == {"applied": True, "reason": None, "ms": 12.3}


# --------------------------------------------------------------------------- blend, the pure core

unit = st.floats(min_value=0.0, max_value=1.0)


@st.composite
def ranked_lists(draw: st.DrawFn) -> list[Candidate]:
    rows = draw(
        st.lists(
            st.tuples(st.sampled_from(["a.md", "b.md", "c.md"]), st.integers(1, 50), unit),
            max_size=12,
            unique_by=lambda row: (row[0], row[1]),
        )
    )
    return fused(*(chunk(f"{path}:{line}", score, path=path, start=line) for path, line, score in rows))


@given(ranked_lists(), st.data(), st.integers(1, 15), unit)
def test_blend_permutes_the_head_and_leaves_the_tail_alone(
    ranked: list[Candidate], data: st.DataObject, top_n: int, weight: float
) -> None:
    size = min(top_n, len(ranked))
    relevance = data.draw(st.lists(unit, min_size=size, max_size=size))
    out = blend(ranked, relevance, top_n=top_n, weight=weight)
    assert sorted(ids(out)) == sorted(ids(ranked))
    assert out[size:] == ranked[size:]
    assert out[:size] == sorted(out[:size], key=ranking_key)
    by_id = {c.id: c for c in ranked}
    for cand in out[:size]:
        assert (cand.vector_score, cand.text_score, cand.snippet) == (
            by_id[cand.id].vector_score,
            by_id[cand.id].text_score,
            by_id[cand.id].snippet,
        )


@given(ranked_lists(), st.data(), st.integers(1, 15))
def test_blend_with_weight_zero_changes_nothing(ranked: list[Candidate], data: st.DataObject, top_n: int) -> None:
    size = min(top_n, len(ranked))
    relevance = data.draw(st.lists(unit, min_size=size, max_size=size))
    assert blend(ranked, relevance, top_n=top_n, weight=0.0) == ranked


@given(ranked_lists(), st.data(), st.integers(1, 15))
def test_blend_with_weight_one_orders_the_head_by_relevance(
    ranked: list[Candidate], data: st.DataObject, top_n: int
) -> None:
    size = min(top_n, len(ranked))
    relevance = data.draw(st.lists(unit, min_size=size, max_size=size))
    out = blend(ranked, relevance, top_n=top_n, weight=1.0)
    given_relevance = {c.id: r for c, r in zip(ranked[:size], relevance, strict=True)}
    assert [c.score for c in out[:size]] == sorted(relevance, reverse=True)
    assert all(c.score == given_relevance[c.id] for c in out[:size])


@given(ranked_lists(), st.data(), st.integers(1, 15), unit, st.randoms(use_true_random=False))
def test_blend_does_not_depend_on_the_order_of_the_head(
    ranked: list[Candidate], data: st.DataObject, top_n: int, weight: float, rnd: Any
) -> None:
    size = min(top_n, len(ranked))
    relevance = data.draw(st.lists(unit, min_size=size, max_size=size))
    pairs = list(zip(ranked[:size], relevance, strict=True))
    rnd.shuffle(pairs)
    shuffled = [c for c, _ in pairs] + ranked[size:]
    assert blend(shuffled, [r for _, r in pairs], top_n=top_n, weight=weight) == blend(
        ranked, relevance, top_n=top_n, weight=weight
    )


def test_blend_rejects_scores_that_do_not_match_the_head() -> None:
    ranked = fused(chunk("a", 0.9), chunk("b", 0.8))
    with pytest.raises(RerankError, match="returned 1 scores for 2 documents"):
        blend(ranked, [0.5], top_n=5, weight=0.5)
    with pytest.raises(RerankError, match="not a finite number"):
        blend(ranked, [0.5, float("nan")], top_n=2, weight=0.5)
