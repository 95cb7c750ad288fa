"""Memory outlives its source, through the real engine and real SQLite files: a deleted transcript stays
searchable (`retained: true`) and readable at its JSONL lines, after a restart and a forced rebuild; notes
are pruned as ever; `retain = false` prunes; `retain_days` drops old ones; `forget` leaves no byte of it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.config import AgentConfig, FilesSettings
from memoryd.index import sync as sync_mod
from memoryd.index.engine import IndexEngine
from memoryd.index.forget import Forget, parse_when
from memoryd.sources.discovery import SourceFile
from memoryd.store.retained import retained_path
from tests.conftest import AgentFactory, transcript_line, write

pytestmark = pytest.mark.anyio

PLANTED = "zorblaxquintet"
SESSION = "sessions/2026/01/trip.jsonl"


def state_files(agent: AgentConfig) -> Iterator[Path]:
    """Every file of the agent's state folder: the index, the retention store, their -wal and -shm."""
    yield from (p for p in agent.db_path.parent.rglob("*") if p.is_file())


def occurrences(agent: AgentConfig, needle: str) -> int:
    data = needle.encode()
    return sum(p.read_bytes().lower().count(data) for p in state_files(agent))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe heron nests by the weir.\n")
    write(ws / "memory" / "gone.md", "# Gone\n\nThe quokka note.\n")
    lines = [
        '{"type":"session","id":"s1"}',
        transcript_line("user", f"Book the {PLANTED} ferry to Lisbon.", "2026-01-05T10:00:00Z"),
        transcript_line("assistant", "Booked the ferry for March.", "2026-01-05T10:01:00Z"),
    ]
    write(ws / SESSION, "\n".join(lines) + "\n")
    return ws


async def open_engine(agent: AgentConfig) -> IndexEngine:
    engine = IndexEngine(agent)
    await engine.open()
    return engine


async def paths(engine: IndexEngine, query: str) -> list[tuple[str, bool]]:
    resp = await engine.search(query, min_score=0)
    return [(r.path, r.retained) for r in resp.results]


async def test_a_deleted_transcript_stays_searchable_and_readable(ws: Path, make_agent: AgentFactory) -> None:
    agent = make_agent(ws)
    engine = await open_engine(agent)
    try:
        await engine.sync("start")
        assert await paths(engine, PLANTED) == [(SESSION, False)]
        (ws / SESSION).unlink()
        (ws / "memory" / "gone.md").unlink()
        report = await engine.sync("deleted")
        assert report.counts.deleted == 1  # the note; the transcript is kept
        assert await paths(engine, PLANTED) == [(SESSION, True)]
        assert await paths(engine, "quokka") == []
        assert engine.status()["retention"] == {
            "enabled": True,
            "retained": 1,
            "retainDays": 0,
            "path": str(agent.db_path.with_name("index.retained.sqlite")),
        }
        got = engine.read_file(SESSION).to_dict()
        assert got["retained"] is True and got["lineNumbers"] == [2, 3] and PLANTED in str(got["text"])
        assert engine.read_file(SESSION, from_line=3, lines=1).to_dict()["lineNumbers"] == [3]
        await engine.sync("forced", force=True)
        assert await paths(engine, PLANTED) == [(SESSION, True)]
    finally:
        await engine.aclose()
    again = await open_engine(agent)  # a restart: the store is read at open
    try:
        assert await paths(again, PLANTED) == [(SESSION, True)]
        await again.sync("start")
        assert await paths(again, PLANTED) == [(SESSION, True)]
    finally:
        await again.aclose()


async def test_a_rebuild_into_a_new_index_reads_the_store(ws: Path, make_agent: AgentFactory) -> None:
    agent = make_agent(ws)
    engine = await open_engine(agent)
    try:
        await engine.sync("start")
        (ws / SESSION).unlink()
        await engine.sync("deleted")
    finally:
        await engine.aclose()
    for ext in ("", "-wal", "-shm"):  # the index is lost entirely (the retention store is not)
        Path(f"{agent.db_path}{ext}").unlink(missing_ok=True)
    fresh = await open_engine(agent)
    try:
        await fresh.sync("start")
        assert await paths(fresh, PLANTED) == [(SESSION, True)]
    finally:
        await fresh.aclose()


async def test_retain_off_prunes_as_before(ws: Path, make_agent: AgentFactory) -> None:
    engine = await open_engine(make_agent(ws, transcripts={"retain": False}))
    try:
        await engine.sync("start")
        (ws / SESSION).unlink()
        await engine.sync("deleted")
        assert await paths(engine, PLANTED) == []
    finally:
        await engine.aclose()


async def test_retain_days_drops_old_deleted_transcripts(ws: Path, make_agent: AgentFactory) -> None:
    engine = await open_engine(make_agent(ws, transcripts={"retain_days": 30}))  # the session is from 2026-01-05
    try:
        await engine.sync("start")
        (ws / SESSION).unlink()
        await engine.sync("deleted")
        assert await paths(engine, PLANTED) == []
        assert engine.indexer.retention.gone == frozenset()
    finally:
        await engine.aclose()


async def test_forget_leaves_no_byte_of_it(ws: Path, make_agent: AgentFactory) -> None:
    agent = make_agent(ws)
    engine = await open_engine(agent)
    try:
        await engine.sync("start")
        refused = await engine.forget(Forget((SESSION,)))
        assert refused["stillOnDisk"] == [SESSION] and refused["forgotten"] == []
        (ws / SESSION).unlink()
        await engine.sync("deleted")
        assert retained_path(agent.db_path).exists()
        assert occurrences(agent, PLANTED) > 0
        report = await engine.forget(Forget((SESSION, "sessions/never.jsonl")))
        assert report["forgotten"] == [SESSION] and report["unknown"] == ["sessions/never.jsonl"]
        assert occurrences(agent, PLANTED) == 0
        assert await paths(engine, PLANTED) == []
        assert await paths(engine, "heron") == [("MEMORY.md", False)]  # the rest of the index is intact
        await engine.sync("again", force=True)
        assert await paths(engine, PLANTED) == []
    finally:
        await engine.aclose()


async def test_forget_by_date_and_all(ws: Path, make_agent: AgentFactory) -> None:
    late = transcript_line("user", "The late walrus plan.", "2026-03-01T09:00:00Z")
    write(ws / "sessions" / "late.jsonl", late + "\n")
    agent = make_agent(ws)
    engine = await open_engine(agent)
    try:
        await engine.sync("start")
        (ws / SESSION).unlink()
        (ws / "sessions" / "late.jsonl").unlink()
        await engine.sync("deleted")
        early = await engine.forget(Forget(before_ms=parse_when("2026-02-01", "before")))
        assert early["forgotten"] == [SESSION]
        assert await paths(engine, "walrus") == [("sessions/late.jsonl", True)]
        rest = await engine.forget(Forget(all=True))
        assert rest["forgotten"] == ["sessions/late.jsonl"]
        assert await paths(engine, "walrus") == []
    finally:
        await engine.aclose()


async def test_a_deleted_session_folder_keeps_its_transcripts(ws: Path, make_agent: AgentFactory) -> None:
    engine = await open_engine(make_agent(ws))
    try:
        await engine.sync("start")
        for p in sorted((ws / "sessions").rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
        (ws / "sessions").rmdir()
        await engine.sync("folder gone")  # the sources change: a full rebuild, which reads the store
        assert await paths(engine, PLANTED) == [(SESSION, True)]
        assert engine.read_file(SESSION).retained
    finally:
        await engine.aclose()


async def test_a_transcript_back_on_disk_is_no_longer_retained(ws: Path, make_agent: AgentFactory) -> None:
    engine = await open_engine(make_agent(ws))
    try:
        await engine.sync("start")
        saved = (ws / SESSION).read_bytes()
        (ws / SESSION).unlink()
        await engine.sync("deleted")
        assert await paths(engine, PLANTED) == [(SESSION, True)]
        (ws / SESSION).write_bytes(saved)
        await engine.sync("restored")
        assert await paths(engine, PLANTED) == [(SESSION, False)]
        assert not engine.read_file(SESSION).retained
    finally:
        await engine.aclose()


async def test_a_transcript_gone_between_listing_and_reading_keeps_its_rows(
    ws: Path, make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = await open_engine(make_agent(ws))
    try:
        await engine.sync("start")
        os.utime(ws / SESSION, ns=(1, 1))  # changed: the sync reads it, and finds it gone at that moment
        real = sync_mod.read_source

        def vanishing(file: SourceFile, files: FilesSettings, max_bytes: int | None = None) -> tuple[bytes, object]:
            if file.path == SESSION:
                file.abs_path.unlink()  # deleted after it was listed, as it is read
                raise FileNotFoundError(file.abs_path)
            return real(file, files, max_bytes)

        monkeypatch.setattr(sync_mod, "read_source", vanishing)
        report = await engine.sync("raced")
        assert report.counts.deleted == 0
        assert await paths(engine, PLANTED) == [(SESSION, True)]
        assert engine.read_file(SESSION).retained
    finally:
        await engine.aclose()


async def test_sessions_dropped_from_sources_and_added_back_serve_the_retained_again(
    ws: Path, make_agent: AgentFactory
) -> None:
    # Adding a source back is a delta, not a rebuild: the retained transcripts must come back with it.
    engine = await open_engine(make_agent(ws))
    try:
        await engine.sync("start")
        (ws / SESSION).unlink()
        await engine.sync("deleted")
        assert await paths(engine, PLANTED) == [(SESSION, True)]
    finally:
        await engine.aclose()
    notes_only = await open_engine(make_agent(ws, sources=["memory"]))
    try:
        await notes_only.sync("sessions removed")
        assert await paths(notes_only, PLANTED) == []
    finally:
        await notes_only.aclose()
    back = await open_engine(make_agent(ws))
    try:
        report = await back.sync("sessions added back")
        assert not report.full
        assert await paths(back, PLANTED) == [(SESSION, True)]
        assert back.read_file(SESSION).to_dict()["retained"] is True
    finally:
        await back.aclose()
