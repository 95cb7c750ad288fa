"""README's "Differences from OpenClaw": one well-formed table, and the memoryd claim of each row checked
where that is cheap (defaults, limits, schemas, small real runs). A row whose claim stops being true
fails here, so the table cannot drift from the code."""

from __future__ import annotations

import os
import sqlite3
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from memoryd import config as config_mod
from memoryd.cli.parser import build_parser
from memoryd.config import Fusion, MemorySearchSettings, ProviderName
from memoryd.embeddings.active import ActiveProvider
from memoryd.embeddings.gemini import GeminiProvider
from memoryd.embeddings.local import LocalEmbeddingProvider
from memoryd.embeddings.ollama import OllamaProvider
from memoryd.embeddings.remote import RemoteSettings
from memoryd.embeddings.select import AUTO_ORDER
from memoryd.errors import AccessDeniedError, ConfigError, NotFoundError
from memoryd.index.engine import IndexEngine
from memoryd.media import MEDIA_MODELS
from memoryd.search import pipeline
from memoryd.search.citations import location
from memoryd.search.searcher import QUERY_EMBED_TIMEOUT_S
from memoryd.sources.chunking import chunk_markdown, weighted_length
from memoryd.sources.discovery import list_all_session_files, list_memory_files
from memoryd.sources.media import describe
from memoryd.sources.readfile import read_memory_file
from memoryd.sources.secrets import mask_token
from memoryd.sources.transcripts import UNKNOWN, parse_transcript
from tests.conftest import write
from tests.fakes.embedding_servers import GeminiFake, OllamaFake

ROOT = Path(__file__).resolve().parent.parent
PROTOCOL = ROOT / "protocol"
HEADER = "| behaviour | OpenClaw | memoryd | why |"


def _rows() -> dict[str, list[str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Differences from OpenClaw", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    start = lines.index(HEADER)
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip().strip("|").replace("\\|", "\x00").split("|")]
        label = cells[0].replace(" ⟲", "")
        assert label not in rows, f"two rows for {label}"
        rows[label] = [c.replace("\x00", "|") for c in cells]
    return rows


ROWS = _rows()


def _settings(**table: Any) -> MemorySearchSettings:
    data = {"agents": {"a": {"workspace": "/tmp/memoryd-differences", **table}}}
    return config_mod.build(data, state_dir=Path("/tmp/memoryd-differences-state")).agent("a").settings


def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads((PROTOCOL / name).read_bytes())
    return loaded


def test_one_table_every_row_filled() -> None:
    assert len(ROWS) >= 40
    for label, cells in ROWS.items():
        assert len(cells) == 4 and all(cells), f"row {label!r} needs behaviour, OpenClaw, memoryd and why"


# -- the memoryd column, row by row ------------------------------------------------------------------


def _compat_rows() -> None:
    ours, theirs = _settings(), _settings(compat="openclaw")
    assert (ours.query.hybrid.vector_weight, ours.query.hybrid.text_weight) == (0.5, 0.5)
    assert (theirs.query.hybrid.vector_weight, theirs.query.hybrid.text_weight) == (0.7, 0.3)
    assert (ours.store.fts.tokenizer, theirs.store.fts.tokenizer) == ("unicode61", "unicode61")
    assert (ours.query.min_score, theirs.query.min_score) == (0.10, 0.35)
    assert (ours.query.min_evidence, theirs.query.min_evidence) == (0.12, 0.0)
    assert (ours.query.keyword_strategy, theirs.query.keyword_strategy) == ("relaxed", "openclaw")
    assert (ours.query.date_boost, theirs.query.date_boost) == (0.2, 0.0)


def _out_of_range() -> None:
    with pytest.raises(ConfigError, match=r"chunking\.overlap: must be below chunking\.tokens"):
        _settings(chunking={"tokens": 400, "overlap": 1000})
    with pytest.raises(ConfigError, match=r"query\.min_score: must be between 0 and 1"):
        _settings(query={"min_score": 7.0})
    with pytest.raises(ConfigError, match="max_file_bytes"):
        _settings(multimodal={"max_file_bytes": 0})
    clamped = config_mod.normalise(MemorySearchSettings(chunking=config_mod.ChunkingSettings(400, 1000)))
    assert clamped.chunking.overlap == 399  # settings built in code keep OpenClaw's clamps


def _sources() -> None:
    assert MemorySearchSettings().sources == ("memory", "sessions")


def _sessions_folder(tmp_path: Path) -> None:
    agent = config_mod.build({"agents": {"a": {"workspace": str(tmp_path)}}}, state_dir=tmp_path / "s").agent("a")
    assert agent.sessions_dir == tmp_path / "sessions"
    assert agent.db_path == tmp_path / "s" / "agents" / "a" / "index.sqlite"
    write(tmp_path / "sessions" / "deep" / "x.jsonl", "")
    assert [f.path for f in list_all_session_files(agent.session_roots)] == ["sessions/deep/x.jsonl"]
    presets = {"agents": {"a": {"workspace": str(tmp_path), "sessions": ["claude-code", "codex"]}}}
    roots = config_mod.build(presets, state_dir=tmp_path / "s").agent("a").session_roots
    assert [r.prefix for r in roots] == ["sessions", "claude-code", "codex"]


def _transcript_formats() -> None:
    claude = b'{"type":"user","message":{"role":"user","content":"hi"},"timestamp":"2026-01-01T00:00:00Z"}'
    codex = (
        b'{"timestamp":"2026-01-01T00:00:00Z","type":"response_item",'
        b'"payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}'
    )
    assert parse_transcript(claude).content == parse_transcript(codex).content == "User: hi"
    assert parse_transcript(b'{"said":"hi"}').format == UNKNOWN


async def _get_transcript(tmp_path: Path) -> None:
    write(tmp_path / "ws" / "sessions" / "s.jsonl", '{"type":"message","message":{"role":"user","content":"hi"}}\n')
    agent = config_mod.build({"agents": {"a": {"workspace": str(tmp_path / "ws")}}}, state_dir=tmp_path / "s")
    engine = IndexEngine(agent.agent("a"))
    await engine.open()
    try:
        got = engine.read_file("sessions/s.jsonl", from_line=1, lines=1)
    finally:
        engine.close()
    assert (got.text, got.line_numbers) == ("User: hi", (1,))


def _fusion_method() -> None:
    fusion = MemorySearchSettings().query.hybrid.fusion
    assert typing.get_args(Fusion) == ("anchored", "weighted", "rrf") and fusion == "anchored"


def _pools() -> None:
    assert (pipeline.MAX_CANDIDATES, pipeline.VECTOR_CANDIDATES) == (200, 50)


def _mmr() -> None:
    assert pipeline.MMR_POOL == 100


def _chunk_overlap() -> None:
    text = "\n".join(("word " * 90).strip() for _ in range(40))  # 40 lines of 449 characters
    chunks = chunk_markdown(text, 100, 80)
    assert chunks and max(weighted_length(c.text) for c in chunks) <= 400


def _ignored_and_sorted(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for name in ("memory/b.md", "memory/a.md", "memory/node_modules/pkg/readme.md", "memory/.git/x.md"):
        write(ws / name, "x\n")
    assert [f.path for f in list_memory_files(ws)] == ["memory/a.md", "memory/b.md"]


def _query_timeout() -> None:
    assert QUERY_EMBED_TIMEOUT_S == 15.0


def _auto() -> None:
    assert AUTO_ORDER[0] == "local"


def _local_model(tmp_path: Path) -> None:
    assert LocalEmbeddingProvider(tmp_path).model.startswith("all-MiniLM-L6-v2")


def _bedrock() -> None:
    assert "bedrock" not in typing.get_args(ProviderName)


async def _ollama() -> None:
    with OllamaFake() as server:
        provider = OllamaProvider(RemoteSettings(base_url=server.base_url), env={})
        try:
            await provider.embed_documents(["one", "two"])
        finally:
            await provider.aclose()
    assert [r.path for r in server.requests] == ["/api/embed"]


async def _gemini_dims() -> None:
    with GeminiFake(api_key="k") as server:
        settings = RemoteSettings(base_url=server.base_url, api_key="k", model="gemini-embedding-2")
        provider = GeminiProvider(settings, env={})
        try:
            await provider.embed_documents(["one"])
        finally:
            await provider.aclose()
    assert "outputDimensionality" not in server.requests[0].json()["requests"][0]


def _media_type() -> None:
    assert describe("vault/notes.png", "image", b"# a note named like a picture\n") == "wrong-type"


def _media_results() -> None:
    item = _schema("memory_search.output.json")["properties"]["results"]["items"]["properties"]
    assert item["startLine"]["minimum"] == 0 and item["kind"]["enum"] == ["image", "audio"]
    result = pipeline.SearchResult("../vault/cat.png", 0, 0, 0.5, "Image file: ../vault/cat.png", "memory")
    assert result.to_dict()["kind"] == "image" and location(result) == "../vault/cat.png"


def _media_models() -> None:
    assert MEDIA_MODELS["gemini"] >= {"gemini-embedding-2", "gemini-embedding-2-preview"}


async def _fts_always(tmp_path: Path) -> None:
    data = {"agents": {"a": {"workspace": str(tmp_path), "query": {"hybrid": {"enabled": False}}}}}
    agent = config_mod.build(data, state_dir=tmp_path / "s").agent("a")
    engine = IndexEngine(agent, None)
    await engine.open()
    engine.close()
    with sqlite3.connect(agent.db_path) as conn:
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()


def _search_arguments() -> None:
    props = _schema("memory_search.input.json")["properties"]
    assert props["corpus"]["enum"] == ["memory", "sessions", "all"]
    assert {"waitFresh", "sessionKey"} <= set(props) and props["maxResults"]["maximum"] == 100


def _missing_file(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no such memory file"):
        read_memory_file("memory/nothing.md", tmp_path, [])


def _from_zero() -> None:
    props = _schema("memory_get.input.json")["properties"]
    assert props["from"]["minimum"] == 1 and props["lines"]["minimum"] == 1


def _get_paths(tmp_path: Path) -> None:
    write(tmp_path / ".memory" / "x.md", "look-alike\n")
    with pytest.raises(AccessDeniedError):
        read_memory_file(".memory/x.md", tmp_path, [])
    write(tmp_path / "elsewhere" / "secret.md", "secret\n")
    (tmp_path / "memory").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "memory" / "linked")
    with pytest.raises(AccessDeniedError, match="symlink"):
        read_memory_file("memory/linked/secret.md", tmp_path, [])


def _redaction() -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    masked = mask_token(token)
    assert masked.endswith("…") and len(masked.removesuffix("…")) <= 4


def _status() -> None:
    report = ActiveProvider("none", None, "provider = none").report()
    assert {"searchMode", "providerUnavailableReason"} <= set(report) and "custom" not in report


def _post_compaction() -> None:
    assert not _settings(sync={"sessions": {"post_compaction_force": False}}).sync.sessions.post_compaction_force


def _quiet_time() -> None:
    assert MemorySearchSettings().sync.sessions.debounce_ms == 5000
    assert _settings(sync={"sessions": {"debounce_ms": 200}}).sync.sessions.debounce_ms == 200


def _cli() -> None:
    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices and "search" in a.choices)
    assert sub.choices is not None
    assert {
        "search",
        "get",
        "status",
        "index",
        "sync",
        "serve",
        "mcp",
        "install-service",
        "model",
        "config",
        "eval",
    } <= set(sub.choices)


CHECKS: dict[str, Callable[..., Any]] = {
    "fusion weights": _compat_rows,
    "score threshold": _compat_rows,
    "keyword leg": _compat_rows,
    "dates in the question": _compat_rows,
    "OpenClaw's exact search": _compat_rows,
    "out-of-range numbers": _out_of_range,
    "sources": _sources,
    "sessions folder": _sessions_folder,
    "transcript formats": _transcript_formats,
    "`memory_get` of a transcript": _get_transcript,
    "index database": _sessions_folder,
    "fusion method": _fusion_method,
    "candidate pools": _pools,
    "MMR": _mmr,
    "chunk overlap": _chunk_overlap,
    "ignored folders": _ignored_and_sorted,
    "discovery order": _ignored_and_sorted,
    "query embedding": _query_timeout,
    '`provider = "auto"`': _auto,
    "local model": _local_model,
    "Bedrock": _bedrock,
    "Ollama": _ollama,
    "Gemini `output_dimensionality`": _gemini_dims,
    "media type": _media_type,
    "media search results": _media_results,
    "media models": _media_models,
    "FTS table": _fts_always,
    "`memory_search` corpus": _search_arguments,
    "`memory_search` arguments": _search_arguments,
    "`memory_get` of a missing file": _missing_file,
    "`memory_get` `from` / `lines` of 0": _from_zero,
    "`memory_get` paths": _get_paths,
    "redaction": _redaction,
    "status": _status,
    "`sync.sessions.post_compaction_force`": _post_compaction,
    "transcript quiet time": _quiet_time,
    "CLI": _cli,
}


@pytest.mark.parametrize("label", sorted(CHECKS))
@pytest.mark.anyio
async def test_the_memoryd_claim_holds(label: str, tmp_path: Path) -> None:
    assert label in ROWS, f"README's differences table has no row {label!r}"
    check = CHECKS[label]
    wants_path = "tmp_path" in check.__code__.co_varnames[: check.__code__.co_argcount]
    result = check(tmp_path) if wants_path else check()
    if result is not None:
        await result
