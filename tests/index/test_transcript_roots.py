"""Transcripts from several session roots through the real engine: the presets' folders found under HOME,
nested files, per-format status, the unrecognised count logged once, `memory_get` of a session hit, and
transcripts indexed before formats existed read again once."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import structlog

from memoryd.config import FilesSettings
from memoryd.errors import AccessDeniedError, NotFoundError
from memoryd.index import sync as sync_mod
from memoryd.index.engine import IndexEngine
from memoryd.sources.chunking import hash_text
from memoryd.sources.discovery import SourceFile
from memoryd.store.db import connect
from tests.conftest import AgentFactory, transcript_line, write

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent.parent / "sources" / "transcript_fixtures"
CLAUDE_PATH = "claude-code/-home-dana-src-webshop/5f3c1a8e-7d42-4b19-9e60-2c8f4d1b7a05.jsonl"
CODEX_PATH = "codex/2026/02/11/rollout-2026-02-11T16-40-03-0199f2a4-6b1e-7c30-9d2f-4a8e1b3c5d70.jsonl"


def place(fixture: str, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / fixture, target)
    return target


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME holding a Claude Code project, a Codex day of rollouts and an OpenClaw agent's sessions."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    place("claude-code.jsonl", home / ".claude" / CLAUDE_PATH.replace("claude-code/", "projects/"))
    subagent = home / ".claude" / "projects" / "-home-dana-src-webshop" / "5f3c1a8e" / "subagents" / "agent-a3f9.jsonl"
    write(subagent, '{"type":"user","isSidechain":true,"message":{"role":"user","content":"sub-agent zebra"}}\n')
    place("codex.jsonl", home / ".codex" / CODEX_PATH.replace("codex/", "sessions/"))
    place("codex-subagent.jsonl", home / ".codex" / "sessions" / "2026" / "02" / "11" / "rollout-sub.jsonl")
    place("openclaw.jsonl", home / ".openclaw" / "agents" / "main" / "sessions" / "s-8c1f.jsonl")
    return home


@pytest.fixture
async def engine(tmp_path: Path, home: Path, make_agent: AgentFactory) -> AsyncIterator[IndexEngine]:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nNothing about tiles here.\n")
    write(ws / "sessions" / "2026" / "trip.jsonl", transcript_line("user", "Pack the snorkel for Lanzarote.") + "\n")
    place("unrecognised.jsonl", ws / "sessions" / "export.jsonl")
    eng = IndexEngine(make_agent(ws, sessions=["claude-code", "codex", "openclaw"]))
    await eng.open()
    try:
        yield eng
    finally:
        eng.close()


async def paths_for(eng: IndexEngine, query: str) -> list[str]:
    return [r.path for r in (await eng.search(query, corpus="sessions")).results]


async def test_every_root_is_indexed_under_its_own_prefix(engine: IndexEngine) -> None:
    await engine.sync("test")
    assert await paths_for(engine, "flaky login test fails") == [CLAUDE_PATH]
    assert await paths_for(engine, "tile cache zoom") == [CODEX_PATH]
    assert await paths_for(engine, "dentist Okafor") == ["openclaw/s-8c1f.jsonl"]
    assert await paths_for(engine, "snorkel Lanzarote") == ["sessions/2026/trip.jsonl"]  # nested in sessions_dir
    assert await paths_for(engine, "zebra") == []  # a Claude Code sub-agent file: sidechain, left out
    assert await paths_for(engine, "TileCache") == []  # a Codex sub-agent rollout


async def test_status_counts_transcripts_per_format_and_the_unrecognised_ones(engine: IndexEngine) -> None:
    await engine.sync("test")
    st = engine.status()
    formats = {f["format"]: (f["files"], f["chunks"]) for f in st["transcriptFormats"]}  # type: ignore[attr-defined]
    assert formats == {"claude-code": (2, 1), "codex": (2, 1), "openclaw": (2, 2)}  # sessions_dir holds one too
    assert st["unrecognisedTranscripts"] == 1
    assert [r["prefix"] for r in st["sessionRoots"]] == ["sessions", "claude-code", "codex", "openclaw"]  # type: ignore[attr-defined]


async def test_an_unrecognised_transcript_is_logged_once_not_on_every_sync(engine: IndexEngine, tmp_path: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        await engine.sync("test")
        export = tmp_path / "ws" / "sessions" / "export.jsonl"
        export.write_text(export.read_text() + '{"speaker":"me","said":"more"}\n')
        await engine.sync("test")  # re-read (it grew), still unrecognised: no second warning
        await engine.sync("test")
    warned = [e for e in logs if "no format memoryd reads" in e["event"]]
    assert [e["path"] for e in warned] == ["sessions/export.jsonl"]


async def test_memory_get_of_a_session_hit_serves_the_lines_its_citation_names(engine: IndexEngine) -> None:
    await engine.sync("test")
    (hit,) = (await engine.search("session fixture expires", corpus="sessions")).results
    got = engine.read_file(hit.path, from_line=hit.start_line, lines=hit.end_line - hit.start_line + 1)
    assert got.path == CLAUDE_PATH and got.format == "claude-code"
    assert got.text == hit.snippet.split("\n\nSource:")[0]
    assert got.line_numbers is not None
    assert got.line_numbers[0] == hit.start_line and got.line_numbers[-1] == hit.end_line
    assert got.total_lines == 27
    assert "sk_live_51Hx7dQ2" not in got.text and "sk_l…" in got.text  # redacted, never the raw JSONL
    assert '"parentUuid"' not in got.text


async def test_memory_get_pages_a_transcript_by_its_own_line_numbers(engine: IndexEngine) -> None:
    first = engine.read_file(CODEX_PATH, from_line=1, lines=11)
    assert first.line_numbers == (6, 11)
    rest = engine.read_file(CODEX_PATH, from_line=12)
    assert rest.line_numbers == (14, 19, 21)
    assert rest.to_dict()["lineNumbers"] == [14, 19, 21]


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("sessions/../sessions.jsonl", AccessDeniedError),
        ("sessions/a\x00.jsonl", AccessDeniedError),
        ("sessions/../../home/.codex/sessions/x.jsonl", AccessDeniedError),
        ("codex/2026/02/11/notes.txt", AccessDeniedError),
        ("sessions/node_modules/x.jsonl", AccessDeniedError),
        ("sessions/missing.jsonl", NotFoundError),
        ("elsewhere/x.jsonl", AccessDeniedError),
    ],
)
async def test_memory_get_keeps_to_the_session_roots(engine: IndexEngine, path: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        engine.read_file(path)


async def test_memory_get_never_follows_a_symlink_below_a_session_root(engine: IndexEngine, tmp_path: Path) -> None:
    secret = write(tmp_path / "outside" / "secret.jsonl", transcript_line("user", "outside the roots") + "\n")
    (tmp_path / "ws" / "sessions" / "link.jsonl").symlink_to(secret)
    (tmp_path / "ws" / "sessions" / "linkdir").symlink_to(secret.parent, target_is_directory=True)
    for path in ("sessions/link.jsonl", "sessions/linkdir/secret.jsonl"):
        with pytest.raises(AccessDeniedError, match="symlink"):
            engine.read_file(path)


async def test_a_targeted_sync_indexes_a_nested_transcript_of_a_preset_root(engine: IndexEngine, home: Path) -> None:
    await engine.sync("test")
    day = home / ".codex" / "sessions" / "2026" / "02" / "12"
    rollout = write(
        day / "rollout-new.jsonl",
        '{"timestamp":"2026-02-12T08:00:00Z","type":"response_item","payload":{"type":"message","role":"user",'
        '"content":[{"type":"input_text","text":"Remind me to rotate the quokka keys."}]}}\n',
    )
    report = await engine.sync("session-delta", session_files=[rollout])
    assert not report.full and report.counts.indexed == 1
    assert await paths_for(engine, "rotate quokka keys") == ["codex/2026/02/12/rollout-new.jsonl"]


async def test_transcripts_indexed_before_formats_existed_are_read_again_once(
    engine: IndexEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    await engine.sync("test")
    # What an older memoryd left: no formats, and the Claude Code transcript indexed as empty (its old hash).
    conn, _vec = connect(engine.agent.db_path)
    conn.execute("DELETE FROM chunks_fts WHERE rowid IN (SELECT n FROM chunks WHERE path = ?)", (CLAUDE_PATH,))
    conn.execute("DELETE FROM chunks WHERE path = ?", (CLAUDE_PATH,))
    conn.execute("UPDATE files SET hash = ? WHERE path = ?", (hash_text("\n\n"), CLAUDE_PATH))
    conn.execute("UPDATE files SET format = NULL WHERE source = 'sessions'")
    conn.close()
    assert await paths_for(engine, "flaky login test fails") == []
    report = await engine.sync("test")  # size and mtime unchanged, yet every transcript is read again
    assert report.counts.indexed == 1  # the one that reads differently now; the others keep their rows
    assert await paths_for(engine, "flaky login test fails") == [CLAUDE_PATH]
    conn, _vec = connect(engine.agent.db_path)
    assert conn.execute("SELECT COUNT(*) FROM files WHERE format IS NULL").fetchone() == (1,)  # MEMORY.md
    conn.close()

    def fail(file: SourceFile, rules: FilesSettings) -> tuple[bytes, os.stat_result]:
        raise AssertionError(f"read {file.path}")

    monkeypatch.setattr(sync_mod, "read_source", fail)
    assert (await engine.sync("test")).counts.indexed == 0  # ... and, once known, not read again


async def test_sub_agent_turns_are_indexed_when_configured(
    tmp_path: Path, home: Path, make_agent: AgentFactory
) -> None:
    agent = make_agent(tmp_path / "ws2", sessions=["claude-code", "codex"], transcripts={"subagents": True})
    eng = IndexEngine(agent)
    await eng.open()
    try:
        await eng.sync("test")
        assert await paths_for(eng, "zebra") == [
            "claude-code/-home-dana-src-webshop/5f3c1a8e/subagents/agent-a3f9.jsonl"
        ]
        assert await paths_for(eng, "TileCache") == ["codex/2026/02/11/rollout-sub.jsonl"]
    finally:
        eng.close()
