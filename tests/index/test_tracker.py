"""The progress tracker: the phases a sync moves it through, and when a search answer carries `indexing`."""

from __future__ import annotations

import pytest

from memoryd.index.tracker import Tracker

pytestmark = pytest.mark.anyio


async def test_a_first_index_is_reported_through_its_phases_and_idle_after() -> None:
    tracker = Tracker()
    assert tracker.indexing() is None and tracker.report()["phase"] == "idle"
    async with tracker.session():
        tracker.start("first")
        tracker.listed(4)
        tracker.batch_written(seen=4, indexed=4, chunks=12, without_vectors=12)
        block = tracker.indexing()
        assert block is not None and block["phase"] == "indexing" and block["job"] == "first"
        assert block["files"] == {"total": 4, "seen": 4, "indexed": 4}
        tracker.embedding(12)
        tracker.embedded(5)
        report = tracker.report()
        assert report["phase"] == "embedding"
        assert report["chunks"] == {"indexed": 12, "embedded": 5, "withoutVectors": 7}
    assert tracker.phase == "idle"
    assert tracker.indexing() is not None  # 7 chunks still wait for vectors: answers say so


async def test_a_delta_sync_with_every_vector_in_adds_nothing_to_answers() -> None:
    tracker = Tracker()
    with pytest.raises(RuntimeError):
        async with tracker.session():
            tracker.start("delta")
            tracker.listed(2)
            assert tracker.indexing() is None
            raise RuntimeError("a failed sync")
    assert tracker.phase == "idle" and tracker.indexing() is None
