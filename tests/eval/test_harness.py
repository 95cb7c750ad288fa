"""The harness drives the real engine: progress over the whole run, and the single mode switch."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd import config
from memoryd.eval import harness, locomo
from memoryd.eval.metrics import Span
from memoryd.index.engine import Progress
from memoryd.search.pipeline import Mode

pytestmark = pytest.mark.anyio


async def test_progress_covers_every_transcript_of_every_index(
    two_conversations_path: Path,
    tmp_path: Path,
) -> None:
    seen: list[Progress] = []
    dataset = locomo.load_locomo(two_conversations_path)
    work = tmp_path / "w"
    report = await harness.evaluate(dataset, mode="keyword", pool=False, work_dir=work, progress=seen.append)
    assert {p.files_total for p in seen} == {4}
    assert [p.files_done for p in seen] == sorted(p.files_done for p in seen)
    assert (seen[-1].files_done, seen[-1].chunks) == (4, 4)
    assert report.settings["chunks"] == 4


async def test_chunk_spans_are_read_back_from_the_index(tiny_path: Path, tmp_path: Path) -> None:
    await harness.evaluate(locomo.load_locomo(tiny_path), mode="keyword", pool=False, work_dir=tmp_path)
    table = {"agents": {"conv-t1": {"workspace": str(tmp_path / "conv-t1")}}}
    agent = config.build(table, state_dir=tmp_path / "state").agent("conv-t1")
    assert sorted(harness.read_chunk_spans(agent.db_path), key=lambda s: s.path) == [
        Span("sessions/session_01.jsonl", 1, 5),
        Span("sessions/session_02.jsonl", 1, 5),
    ]


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
async def test_modes_needing_vectors_run_with_the_local_model(mode: Mode, tiny_path: Path, tmp_path: Path) -> None:
    report = await harness.evaluate(locomo.load_locomo(tiny_path), mode=mode, pool=False, work_dir=tmp_path / "w")
    assert report.settings["mode"] == mode
    assert report.settings["provider"] == "local"
    assert report.overall.n == report.settings["scored"]
    assert 0.0 <= report.overall.recall_10 <= 1.0
