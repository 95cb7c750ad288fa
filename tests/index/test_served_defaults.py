"""What a user gets at the default settings, through the real engine and the local model.

Eval measures rankings at min_score 0; users get the default min_score. A question that shares no
word with its answer must still be answered when the answer ranks first, and a question about
something the memory never mentions must still get nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memoryd.cli.search import abstention_hint, format_search
from memoryd.embeddings.local import LoadState, LocalEmbeddingProvider
from memoryd.index.engine import IndexEngine
from memoryd.search.smallindex import SMALL_INDEX_CHUNKS, size_share
from tests.conftest import AgentFactory, write

pytestmark = pytest.mark.anyio

NOTES = {
    "MEMORY.md": "# Memory\n\n- My dog Rex is a golden retriever.\n- I work as a nurse at the city hospital.\n",
    "memory/garden.md": "# Garden\n\nPlant tomatoes and basil in April, water the seedlings daily.\n",
    "memory/travel.md": "# Travel\n\nFlight to Lisbon on March 3rd, hotel near the Alfama district.\n",
    "memory/home.md": "# Home\n\nThe black and white design of the new kitchen looks so fancy.\n",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def local(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalEmbeddingProvider]:
    # As `provider = "auto"` makes it by default (long inputs read in windows; these notes are short).
    provider = LocalEmbeddingProvider(tmp_path_factory.mktemp("models"), allow_download=False, windows=True)
    assert await provider.load() is LoadState.READY, provider.error
    yield provider
    await provider.aclose()


@pytest.fixture
async def engine(tmp_path: Path, make_agent: AgentFactory, local: LocalEmbeddingProvider) -> AsyncIterator[IndexEngine]:
    ws = tmp_path / "ws"
    for rel, text in NOTES.items():
        write(ws / rel, text)
    eng = IndexEngine(make_agent(ws), local)
    await eng.open()
    try:
        await eng.sync("test")
        yield eng
    finally:
        await eng.aclose()


async def test_a_meaning_match_sharing_no_word_is_served(engine: IndexEngine) -> None:
    query = "what kind of pet do I have"
    assert not {"kind", "pet", "have"} & set(NOTES["MEMORY.md"].lower().split())
    resp = await engine.search(query)  # the default settings: min_score and all
    assert resp.mode == "hybrid"
    assert [r.path for r in resp.results][:1] == ["MEMORY.md"]
    assert "golden retriever" in resp.results[0].snippet


@pytest.mark.parametrize("query", ["what is the capital of Peru", "how do I compile the linux kernel with clang"])
async def test_a_question_the_memory_never_mentions_gets_nothing(engine: IndexEngine, query: str) -> None:
    resp = await engine.search(query)
    assert resp.mode == "hybrid"
    assert resp.results == []


async def test_one_word_in_common_with_an_unrelated_note_is_no_answer(engine: IndexEngine) -> None:
    """ "black" matches the kitchen note; it covers little of the question and means something else."""
    query = "Is the Ruff linter compatible with Black?"
    ranking = await engine.search(query, min_score=0.0)  # min_score 0: the ranking, no abstention
    assert ranking.results[0].path == "memory/home.md"
    # Four notes of one chunk each: a small index's threshold (memoryd.search.smallindex), still above it.
    threshold = engine.agent.settings.query.min_evidence * size_share(len(NOTES))
    assert threshold < engine.agent.settings.query.min_evidence
    assert ranking.evidence is not None and ranking.evidence < threshold
    served = await engine.search(query)
    assert served.results == []
    assert served.to_dict()["evidence"] == pytest.approx(ranking.evidence, abs=1e-6)
    assert served.to_dict()["minEvidence"] == pytest.approx(threshold)
    assert ranking.to_dict()["minEvidence"] == 0.0  # minScore 0: judged against nothing


async def test_an_answer_reports_its_evidence(engine: IndexEngine) -> None:
    resp = await engine.search("when is my flight to Lisbon")
    assert [r.path for r in resp.results][:1] == ["memory/travel.md"]
    assert resp.evidence is not None and resp.evidence >= engine.agent.settings.query.min_evidence


def test_the_cli_says_why_an_answer_is_empty() -> None:
    """`memoryd search` prints "No matches." on stdout and, on stderr, that abstention decided it, by the
    threshold the reply says it was judged against (the daemon's agent's, not this shell's config)."""
    empty = {"results": [], "mode": "hybrid", "evidence": 0.063, "minEvidence": 0.12}
    hint = abstention_hint(empty)
    assert hint is not None and "0.06 is below 0.12, query.min_evidence" in hint and "--min-score 0" in hint
    assert format_search(empty) == "No matches.\n"
    assert abstention_hint({"results": [], "mode": "keyword"}) is None  # no evidence: keyword-only
    assert abstention_hint({"results": [], "evidence": 0.2, "minEvidence": 0.12}) is None  # empty for another reason
    assert abstention_hint({"results": [{"path": "a.md"}], "evidence": 0.05, "minEvidence": 0.12}) is None
    assert abstention_hint({"results": [], "evidence": 0.05, "minEvidence": 0.0}) is None  # minScore 0: no abstention


async def test_a_one_note_memory_answers_a_paraphrase_a_large_index_would_not(
    tmp_path: Path, make_agent: AgentFactory, local: LocalEmbeddingProvider
) -> None:
    """One chunk: the configured thresholds apply at SMALL_INDEX_CHUNKS chunks and more; here a lower share
    of them does (memoryd.search.smallindex). "what do I drive" of the car line: evidence ~0.10, under
    min_evidence 0.12, over 0.084. A request's own minScore is applied as given; an off-topic question
    still gets nothing."""
    ws = tmp_path / "ws"
    car = "Car: 2018 Toyota Corolla hybrid, next service due in May."
    write(ws / "MEMORY.md", f"# Memory\n\n{car}\nPassed the AWS Solutions Architect exam in June 2024.\n")
    engine = IndexEngine(make_agent(ws), local)
    await engine.open()
    try:
        await engine.sync("test")
        configured = engine.agent.settings.query
        share = size_share(1)
        assert share < 1 and size_share(SMALL_INDEX_CHUNKS) == 1

        ranking = await engine.search("what do I drive", min_score=0.0)
        assert ranking.evidence is not None
        assert configured.min_evidence * share < ranking.evidence < configured.min_evidence
        served = await engine.search("what do I drive")
        assert [r.path for r in served.results] == ["MEMORY.md"]
        assert served.to_dict()["minEvidence"] == pytest.approx(configured.min_evidence * share)
        assert (await engine.search("what do I drive", min_score=ranking.results[0].score + 0.01)).results == []
        assert (await engine.search("what is the capital of Peru")).results == []
    finally:
        await engine.aclose()
