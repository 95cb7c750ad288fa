"""`chunking.transcripts = "exchange"` through the real engine: a change rebuilds the index; a question and
its answer are one hit citing both records; every window of a long answer carries and cites its question;
the chunk's date is keyword-searchable; a retained transcript is re-chunked the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memoryd.index.engine import IndexEngine
from memoryd.store.db import connect
from tests.conftest import AgentFactory, transcript_line, write

pytestmark = pytest.mark.anyio

SESSION = "sessions/build.jsonl"
EXCHANGE = {"chunking": {"transcripts": "exchange", "tokens": 100, "overlap": 20}}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe heron nests by the weir.\n")
    answer = " ".join(f"Step {i}: rebuild the runner image with libfoo installed." for i in range(40))
    lines = [
        '{"type":"session","id":"s1"}',
        transcript_line("user", "Why does the nightly build fail?", "2026-01-05T10:00:00Z"),
        '{"type":"toolResult","content":"noise"}',
        transcript_line("assistant", answer + " Finally pin zanzibarite.", "2026-01-05T10:01:00Z"),
        transcript_line("user", "And the flaky test?", "2026-02-07T09:00:00Z"),
        transcript_line("assistant", "It reads the wall clock.", "2026-02-07T09:01:00Z"),
    ]
    write(ws / SESSION, "\n".join(lines) + "\n")
    return ws


def chunk_rows(engine: IndexEngine) -> list[tuple[int, int, str]]:
    conn, _vec = connect(engine.agent.db_path, readonly=True, vec_enabled=False)
    try:
        query = "SELECT start_line, end_line, text FROM chunks WHERE path = ?"
        rows: list[Any] = conn.execute(query, (SESSION,)).fetchall()
    finally:
        conn.close()
    return sorted((int(s), int(e), str(t)) for s, e, t in rows)


async def test_exchange_chunks_through_the_engine(ws: Path, make_agent: AgentFactory) -> None:
    lines = IndexEngine(make_agent(ws, chunking={"tokens": 100, "overlap": 20}))
    await lines.open()
    await lines.sync("start")
    assert all("2026" not in text for _s, _e, text in chunk_rows(lines))
    assert (await lines.search("February", min_score=0)).results == []  # no word of a date in the text
    lines.close()
    engine = IndexEngine(make_agent(ws, **EXCHANGE))
    await engine.open()
    try:
        reasons = engine.full_reindex_reasons(engine._store_required().read_meta())
        assert reasons == ["transcript chunking lines -> exchange"]
        assert (await engine.sync("test")).full
        rows = chunk_rows(engine)
        windows = [r for r in rows if "libfoo" in r[2]]
        assert len(windows) > 2
        for start, end, text in windows:
            assert (start, end) == (2, 4)  # the question's record through the answer's (the tool line between)
            assert text.split("\n")[:2] == ["5 January 2026 (2026-01-05)", "User: Why does the nightly build fail?"]
        assert rows[-1] == (
            5,
            6,
            "7 February 2026 (2026-02-07)\nUser: And the flaky test?\nAssistant: It reads the wall clock.",
        )
        (hit,) = (await engine.search("zanzibarite")).results
        assert (hit.path, hit.start_line, hit.end_line) == (SESSION, 2, 4)
        (dated,) = (await engine.search("February", min_score=0)).results
        assert (dated.path, dated.start_line) == (SESSION, 5)
    finally:
        engine.close()


async def test_a_retained_transcript_is_rechunked_by_exchange(ws: Path, make_agent: AgentFactory) -> None:
    engine = IndexEngine(make_agent(ws, **EXCHANGE))
    await engine.open()
    try:
        await engine.sync("start")
        before = chunk_rows(engine)
        (ws / SESSION).unlink()
        await engine.sync("deleted")
        report = await engine.sync("rebuild", force=True)
        assert report.full
        assert chunk_rows(engine) == before
        (hit,) = (await engine.search("zanzibarite")).results
        assert hit.retained and (hit.start_line, hit.end_line) == (2, 4)
    finally:
        engine.close()
