"""A sync pass's batches: bounded in files and in bytes, covering every file once, in order; and a real sync
of transcripts larger than the bound writes them all, a batch at a time."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.index import batching
from memoryd.index.engine import IndexEngine
from memoryd.index.state import Progress
from memoryd.sources.discovery import SourceFile
from tests.conftest import AgentFactory, transcript_line, write


@given(
    st.lists(st.integers(min_value=0, max_value=1000), max_size=60),
    st.integers(min_value=1, max_value=10),
    st.integers(min_value=1, max_value=2000),
)
def test_batches_cover_every_file_once_in_order_within_both_bounds(
    sizes: list[int], max_files: int, max_bytes: int
) -> None:
    parts = list(batching.cut(sizes, max_files, max_bytes))
    assert [i for part in parts for i in part] == list(range(len(sizes)))
    for part in parts:
        assert 1 <= len(part) <= max_files
        held = sum(sizes[i] for i in part)
        assert held <= max_bytes or len(part) == 1  # only a lone file may be larger than the bound
    for before, after in itertools.pairwise(parts):  # a batch ends only when the next file would not fit
        held = sum(sizes[i] for i in before)
        assert len(before) == max_files or held + sizes[after.start] > max_bytes


def test_a_file_larger_than_the_bound_is_a_batch_of_its_own() -> None:
    assert [list(p) for p in batching.cut([5, 50, 5, 5], 10, 12)] == [[0], [1], [2, 3]]


def test_an_unreadable_file_counts_as_empty(tmp_path: Path) -> None:
    real = write(tmp_path / "a.md", "12345")
    files = [SourceFile("memory", "a.md", real), SourceFile("memory", "gone.md", tmp_path / "gone.md")]
    assert batching.source_sizes(files) == [5, 0]


@pytest.mark.anyio
async def test_a_sync_writes_large_transcripts_a_few_at_a_time(
    workspace: Path, make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = workspace / "sessions"
    for n in range(6):
        lines = [transcript_line("user", f"session{n} question {i} about the harbour crane") for i in range(40)]
        write(sessions / f"big{n}.jsonl", "\n".join(lines) + "\n")
    size = (sessions / "big0.jsonl").stat().st_size
    monkeypatch.setattr(batching, "MAX_BYTES", size * 2 + 1)  # two transcripts per batch
    seen: list[Progress] = []
    eng = IndexEngine(make_agent(workspace))
    await eng.open()
    try:
        report = await eng.sync("test", progress=seen.append)
        found = {r.path for r in (await eng.search("harbour crane", max_results=50)).results}
    finally:
        eng.close()
    assert report.counts.indexed >= 6
    assert {f"sessions/big{n}.jsonl" for n in range(6)} <= found
    done = [p.files_done for p in seen if p.phase == "index"]
    assert len(done) >= 3 and done == sorted(done)  # one report per batch, at least three batches
