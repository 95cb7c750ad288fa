"""The engine end to end on real files and a real SQLite database (keyword-only mode, and how the
stored vectors' dimension carries an index through upgrades and provider changes)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memoryd.config import AgentConfig, FilesSettings
from memoryd.errors import AccessDeniedError
from memoryd.index import sync as sync_mod
from memoryd.index.engine import IndexEngine
from memoryd.sources.discovery import SourceFile
from memoryd.store import schema
from memoryd.store.db import connect
from memoryd.store.lock import WriterLock, WriterLockBusyError
from tests.conftest import AgentFactory, transcript_line, write
from tests.fakes.hash_embedder import HashEmbedder

pytestmark = pytest.mark.anyio


@pytest.fixture
async def engine(workspace: Path, make_agent: AgentFactory) -> AsyncIterator[IndexEngine]:
    eng = IndexEngine(make_agent(workspace))
    await eng.open()
    try:
        yield eng
    finally:
        eng.close()


async def paths_for(eng: IndexEngine, query: str, **kw: object) -> list[str]:
    resp = await eng.search(query, **kw)  # type: ignore[arg-type]
    return [r.path for r in resp.results]


async def test_cold_start_indexes_memory_and_transcripts(engine: IndexEngine) -> None:
    report = await engine.sync("test")
    assert report.full
    assert report.counts.indexed == 4
    assert await paths_for(engine, "golden retriever") == ["MEMORY.md"]
    assert await paths_for(engine, "Lisbon flight") == ["sessions/s1.jsonl"]
    assert await paths_for(engine, "quasar") == []  # node_modules is ignored while indexing
    assert await paths_for(engine, "quokka") == []  # notes.md is not a memory file
    st = engine.status()
    assert st["files"] == 4
    assert st["malformedTranscriptLines"] == 1
    assert st["dirty"] is False
    assert st["searchMode"] == "keyword"


async def test_results_carry_lines_snippets_and_citations(engine: IndexEngine) -> None:
    await engine.sync("test")
    resp = await engine.search("Lisbon")
    (hit,) = resp.results
    assert (hit.start_line, hit.end_line) == (2, 4)  # JSONL lines of the two messages
    assert hit.citation == "sessions/s1.jsonl#L2-L4"
    assert hit.snippet.startswith("User: Please book the flight to Lisbon")
    assert resp.mode == "keyword" and resp.provider == "none" and resp.model == "fts-only"
    assert resp.freshness["dirty"] is False and resp.freshness["indexedAt"]


async def test_edit_add_delete_then_resync(engine: IndexEngine, workspace: Path) -> None:
    await engine.sync("test")
    write(workspace / "MEMORY.md", "# Memory\n\n- My cat is called Pixel.\n")
    write(workspace / "memory" / "new.md", "Quarterly review with Dana on Friday.\n")
    (workspace / "memory" / "projects" / "garden.md").unlink()
    report = await engine.sync("test")
    assert not report.full
    assert (report.counts.indexed, report.counts.deleted) == (2, 1)
    assert await paths_for(engine, "golden retriever") == []
    assert await paths_for(engine, "Pixel") == ["MEMORY.md"]
    assert await paths_for(engine, "Dana") == ["memory/new.md"]
    assert await paths_for(engine, "tomatoes") == []


async def test_a_no_change_resync_reads_nothing(engine: IndexEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    await engine.sync("test")

    def fail(file: SourceFile, rules: FilesSettings) -> tuple[bytes, os.stat_result]:
        raise AssertionError(f"read {file.path}")

    monkeypatch.setattr(sync_mod, "read_source", fail)
    report = await engine.sync("test")
    assert report.counts.unchanged == 4 and report.counts.indexed == 0


async def test_touched_file_with_same_content_is_not_reindexed(engine: IndexEngine, workspace: Path) -> None:
    await engine.sync("test")
    note = workspace / "MEMORY.md"
    os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns + 10_000_000))
    report = await engine.sync("test")
    assert report.counts.indexed == 0 and report.counts.unchanged == 4


async def test_an_unreadable_file_keeps_its_rows(
    engine: IndexEngine, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await engine.sync("test")
    real = sync_mod.read_source
    target = workspace / "MEMORY.md"

    def flaky(file: SourceFile, rules: FilesSettings) -> tuple[bytes, os.stat_result]:
        if file.abs_path == target:
            raise PermissionError(13, "Permission denied")
        return real(file, rules)

    monkeypatch.setattr(sync_mod, "read_source", flaky)
    os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 10_000_000))
    report = await engine.sync("test")
    assert report.counts.unreadable == ["MEMORY.md"]
    assert report.counts.deleted == 0
    assert await paths_for(engine, "golden retriever") == ["MEMORY.md"]


async def test_invalid_utf8_is_indexed_with_replacement(engine: IndexEngine, workspace: Path) -> None:
    (workspace / "memory" / "bytes.md").write_bytes(b"caf\xe9 ol\xff\xfe marmalade\n")
    await engine.sync("test")
    assert await paths_for(engine, "marmalade") == ["memory/bytes.md"]


async def test_changing_chunking_forces_a_full_rebuild(workspace: Path, make_agent: AgentFactory) -> None:
    first = IndexEngine(make_agent(workspace))
    await first.open()
    await first.sync("test")
    first.close()
    second = IndexEngine(make_agent(workspace, chunking={"tokens": 64, "overlap": 8}))
    await second.open()
    try:
        assert second.full_reindex_reasons(second._store_required().read_meta()) == [
            "chunk size changed",
            "chunk overlap changed",
        ]
        report = await second.sync("test")
        assert report.full
        assert await paths_for(second, "golden") == ["MEMORY.md"]
    finally:
        second.close()


async def test_targeted_session_sync_indexes_only_the_named_transcript(engine: IndexEngine, workspace: Path) -> None:
    await engine.sync("test")
    write(workspace / "sessions" / "s2.jsonl", transcript_line("user", "The wifi password hint is pelican") + "\n")
    write(workspace / "memory" / "later.md", "ostrich\n")
    report = await engine.sync("session-delta", session_files=[workspace / "sessions" / "s2.jsonl"])
    assert report.counts.indexed == 1
    assert await paths_for(engine, "pelican") == ["sessions/s2.jsonl"]
    assert await paths_for(engine, "ostrich") == []


async def test_corpus_filters_sources(engine: IndexEngine) -> None:
    await engine.sync("test")
    assert await paths_for(engine, "Lisbon", corpus="memory") == []
    assert await paths_for(engine, "Lisbon", corpus="sessions") == ["sessions/s1.jsonl"]


async def test_fallback_per_keyword_finds_partial_matches(engine: IndexEngine) -> None:
    await engine.sync("test")
    # No chunk has every word, so the AND query is empty and each keyword is searched alone.
    found = await paths_for(engine, "what did we say about tomatoes and Lisbon?", max_results=5)
    assert sorted(found) == ["memory/projects/garden.md", "sessions/s1.jsonl"]


async def test_corrupt_database_is_moved_aside_and_rebuilt(workspace: Path, make_agent: AgentFactory) -> None:
    agent: AgentConfig = make_agent(workspace)
    agent.db_path.parent.mkdir(parents=True)
    agent.db_path.write_bytes(b"this is not a database" * 100)
    eng = IndexEngine(agent)
    await eng.open()
    try:
        moved = eng.status()["corruptDatabaseMovedTo"]
        assert isinstance(moved, str) and Path(moved).read_bytes().startswith(b"this is not")
        await eng.sync("test")
        assert await paths_for(eng, "golden retriever") == ["MEMORY.md"]
    finally:
        eng.close()


async def test_one_writer_per_database(workspace: Path, make_agent: AgentFactory) -> None:
    agent = make_agent(workspace)
    eng = IndexEngine(agent)
    await eng.open()
    try:
        with pytest.raises(WriterLockBusyError):
            WriterLock(agent.db_path).acquire()
    finally:
        eng.close()
    WriterLock(agent.db_path).acquire()


async def test_get_refuses_paths_outside_the_roots(engine: IndexEngine) -> None:
    with pytest.raises(AccessDeniedError):
        engine.read_file("../etc/passwd.md")
    assert engine.read_file("MEMORY.md", from_line=1, lines=1).text == "# Memory"


async def test_extra_paths_change_triggers_rebuild_and_indexes_them(
    workspace: Path, tmp_path: Path, make_agent: AgentFactory
) -> None:
    write(tmp_path / "vault" / "idea.md", "A zeppelin museum trip.\n")
    eng = IndexEngine(make_agent(workspace, extra_paths=[str(tmp_path / "vault")]))
    await eng.open()
    try:
        await eng.sync("test")
        assert await paths_for(eng, "zeppelin") == ["../vault/idea.md"]
    finally:
        eng.close()


async def test_status_survives_a_restart(workspace: Path, make_agent: AgentFactory) -> None:
    agent = make_agent(workspace)
    eng = IndexEngine(agent)
    await eng.open()
    await eng.sync("test")
    eng.close()
    again = IndexEngine(agent, hold_writer_lock=False)
    await again.open()
    try:
        st = again.status()
        assert st["dirty"] is False
        assert isinstance(st["lastSync"], dict) and st["lastSync"]["reason"] == "test"
        assert st["indexedAt"]
    finally:
        again.close()


async def synced(agent: AgentConfig, provider: HashEmbedder) -> None:
    eng = IndexEngine(agent, provider)
    await eng.open()
    try:
        await eng.sync("test")
    finally:
        eng.close()


def vector_status(eng: IndexEngine) -> tuple[object, object]:
    st = eng.status()
    vector, embedding = st["vector"], st["embedding"]
    assert isinstance(vector, dict) and isinstance(embedding, dict)
    return vector["dims"], embedding["filesWithoutVectors"]


async def test_a_v2_index_loses_its_float_table_on_open_and_needs_no_rebuild(
    workspace: Path, make_agent: AgentFactory
) -> None:
    agent = make_agent(workspace)
    await synced(agent, HashEmbedder())
    conn, _vec = connect(agent.db_path)  # what memoryd v2 left: a float table beside the binary one
    conn.execute("CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[64] distance_metric=cosine)")
    conn.execute("INSERT INTO chunks_vec(rowid, embedding) SELECT n, embedding FROM chunks")
    conn.execute("PRAGMA user_version=2")
    conn.close()
    eng = IndexEngine(agent, HashEmbedder())
    await eng.open()
    try:
        store = eng._store_required()
        assert not schema.table_exists(store.conn, "chunks_vec")
        assert eng.full_reindex_reasons(store.read_meta()) == []
        assert vector_status(eng) == (64, 0)
        (workspace / "memory" / "new.md").write_text("The heron fishes at dawn.\n")
        assert not (await eng.sync("test")).full
        resp = await eng.search("golden retriever", mode="vector")
        assert resp.mode == "vector" and resp.results[0].path == "MEMORY.md"
    finally:
        eng.close()


async def test_a_provider_with_another_dimension_rebuilds_the_index(workspace: Path, make_agent: AgentFactory) -> None:
    agent = make_agent(workspace)
    await synced(agent, HashEmbedder(64))
    eng = IndexEngine(agent, HashEmbedder(32))
    await eng.open()
    try:
        assert "provider settings changed" in eng.full_reindex_reasons(eng._store_required().read_meta())
        assert (await eng.sync("test")).full
        assert vector_status(eng) == (32, 0)
        assert schema.vbit_dims(eng._store_required().conn) == 32
        resp = await eng.search("golden retriever", mode="vector")
        assert resp.mode == "vector" and resp.results[0].path == "MEMORY.md"
    finally:
        eng.close()


async def test_vectors_with_no_binary_table_keep_their_dimension_and_need_no_second_rebuild(
    workspace: Path, make_agent: AgentFactory
) -> None:
    agent = make_agent(workspace)
    await synced(agent, HashEmbedder(12))  # 12 is no multiple of 8: the vectors live in chunks alone
    eng = IndexEngine(agent, HashEmbedder(12))
    await eng.open()
    try:
        assert eng.full_reindex_reasons(eng._store_required().read_meta()) == []
        assert vector_status(eng) == (12, 0)
        assert not (await eng.sync("test")).full
    finally:
        eng.close()
