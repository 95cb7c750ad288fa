"""Served snippets show what matched, and their citation names the file lines they show (real index)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memoryd.index.engine import IndexEngine
from tests.conftest import AgentFactory, transcript_line, write

pytestmark = pytest.mark.anyio

NOTE_LINES = ["# Memory", ""] + [
    f"- Sprint {i}: weekly planning for project alpha, ticket {i}, reviewed with the team." for i in range(25)
]
APPENDED = "- Uses Neovim with the lazy.nvim setup for editing."


@pytest.fixture
async def engine(tmp_path: Path, make_agent: AgentFactory) -> AsyncIterator[IndexEngine]:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "\n".join([*NOTE_LINES, APPENDED]) + "\n")
    long_answer = " ".join(f"Step {i}: run the migration script for shard {i}." for i in range(60))
    write(
        ws / "sessions" / "s1.jsonl",
        transcript_line("user", "How do we roll out the schema change?")
        + "\n"
        + transcript_line("assistant", long_answer + " Finally rotate the replica credentials.")
        + "\n",
    )
    eng = IndexEngine(make_agent(ws, chunking={"tokens": 1024}))
    await eng.open()
    try:
        await eng.sync("test")
        yield eng
    finally:
        eng.close()


async def test_a_note_hit_shows_the_matching_line_and_cites_the_lines_shown(
    engine: IndexEngine, tmp_path: Path
) -> None:
    resp = await engine.search("neovim lazy.nvim", max_results=1)
    (hit,) = resp.results
    assert (hit.start_line, hit.end_line) == (
        1,
        29,
    )  # the chunk: the whole note (and the empty line after its last newline)
    assert APPENDED in hit.snippet
    assert hit.snippet_lines is not None and hit.snippet_lines[1] == 28
    first, last = hit.snippet_lines
    assert hit.citation == f"MEMORY.md#L{first}-L{last}"
    file_lines = (tmp_path / "ws" / "MEMORY.md").read_text().split("\n")
    shown = hit.snippet.split("\n\nSource: ")[0]
    assert shown == "\n".join(file_lines[first - 1 : last])
    wire = hit.to_dict()
    assert (wire["snippetStartLine"], wire["snippetEndLine"]) == (first, last)
    assert (wire["startLine"], wire["endLine"]) == (1, 29)
    offset = wire["snippetMatchOffset"]  # the window reached the note's end: earlier lines were taken back
    assert isinstance(offset, int) and offset > 0 and hit.snippet[offset:].startswith(NOTE_LINES[-1] + "\n" + APPENDED)


async def test_a_transcript_hit_shows_the_matching_sentence_and_keeps_its_records_lines(engine: IndexEngine) -> None:
    resp = await engine.search("rotate the replica credentials", max_results=1)
    (hit,) = resp.results
    assert hit.path == "sessions/s1.jsonl"
    assert "rotate the replica credentials" in hit.snippet
    assert not hit.snippet.startswith("User: How do we roll out")  # not the chunk's head
    proper = hit.snippet[hit.snippet_match_at :]  # after what fill-back took back: led in by the sentence before
    assert proper.startswith("run the migration script for shard 59. Finally rotate")
    assert hit.snippet_lines is None and "snippetStartLine" not in hit.to_dict()
    assert hit.citation == f"sessions/s1.jsonl#L{hit.start_line}-L{hit.end_line}"
