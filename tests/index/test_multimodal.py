"""Multimodal memory through the index engine, against a loopback server speaking Gemini's wire format.

Images and audio in an extra path become one caption chunk each, embedded with their bytes; what
cannot be indexed (too large, not what its name says, refused by the provider, nothing to embed it)
is skipped, counted in status and not read or sent again until it changes; turning the feature on or
changing its settings rebuilds the index; search returns media files without lines.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.config import AgentConfig
from memoryd.embeddings.base import Fingerprint
from memoryd.embeddings.select import create_provider
from memoryd.errors import AccessDeniedError
from memoryd.index import plan
from memoryd.index.discover import discover
from memoryd.index.engine import IndexEngine
from memoryd.index.media_embedding import embed_media
from memoryd.index.sync import MediaOptions, prepare_many
from tests.conftest import AgentFactory, write
from tests.fakes.embedding_servers import GeminiFake, Tweak
from tests.fakes.http_server import RecordedRequest, Reply
from tests.fakes.media_files import jpeg, png, wav

pytestmark = pytest.mark.anyio

MAX_FILE_BYTES = 6000


class RefusingGemini(GeminiFake):
    """Gemini that answers requests with inline data with 401 while `refuse_media` is set."""

    refuse_media = False

    def embed(self, request: RecordedRequest, match: re.Match[str], tweak: Tweak) -> Reply:
        if self.refuse_media and b"inlineData" in request.body:
            return self.unauthorized()
        return super().embed(request, match, tweak)


@pytest.fixture
def server() -> Iterator[RefusingGemini]:
    with RefusingGemini(api_key="k") as fake:
        yield fake


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe heron came back to the pond.\n")
    vault = tmp_path / "vault"
    write(vault / "trip.md", "# Trip\n\nWe photographed a cat on the harbour wall.\n")
    (vault / "cat.png").write_bytes(png(rgb=(10, 20, 30)))
    (vault / "songs").mkdir()
    (vault / "songs" / "tune.wav").write_bytes(wav())
    (vault / "fake.png").write_text("# a note named like a picture\n")
    (vault / "poster.jpg").write_bytes(jpeg("x" * MAX_FILE_BYTES))  # over max_file_bytes
    return ws


def _status(engine: IndexEngine, block: str) -> dict[str, Any]:
    """One block of the engine's status."""
    value = engine.status()[block]
    assert isinstance(value, dict)
    return value


def _error(engine: IndexEngine) -> str | None:
    return engine.state.embedding_error


def _agent(make_agent: AgentFactory, ws: Path, server: GeminiFake, **overrides: Any) -> AgentConfig:
    table: dict[str, Any] = {
        "provider": "gemini",
        "model": "gemini-embedding-2",
        "remote": {"base_url": server.base_url, "api_key": "k"},
        "extra_paths": [str(ws.parent / "vault")],
        "multimodal": {"enabled": True, "max_file_bytes": MAX_FILE_BYTES},
        **overrides,
    }
    return make_agent(ws, **table)


@pytest.fixture
async def engine(
    make_agent: AgentFactory, ws: Path, server: RefusingGemini, tmp_path: Path
) -> AsyncIterator[IndexEngine]:
    agent = _agent(make_agent, ws, server)
    provider = await create_provider("gemini", agent.settings, cache_dir=tmp_path / "cache", explicit_model=True)
    engine = IndexEngine(agent, provider)
    await engine.open()
    yield engine
    engine.close()
    await provider.aclose()


async def test_media_files_are_indexed_and_found_without_lines(engine: IndexEngine, server: GeminiFake) -> None:
    await engine.sync("test")
    assert engine.state.embedding_error is None
    assert sorted(m for m, _ in server.media) == ["audio/wav", "image/png"]
    resp = await engine.search("cat png", min_score=0)
    found = {r.path: r for r in resp.results}
    assert resp.mode == "hybrid"
    cat = found["../vault/cat.png"].to_dict()
    assert (cat["startLine"], cat["endLine"], cat["kind"]) == (0, 0, "image")
    assert cat["citation"] == "../vault/cat.png"  # the path alone: a picture has no lines
    assert cat["snippet"] == "Image file: ../vault/cat.png\n\nSource: ../vault/cat.png"
    trip = {r.path: r for r in (await engine.search("photographed harbour", min_score=0)).results}["../vault/trip.md"]
    assert "kind" not in trip.to_dict() and trip.start_line == 1
    tune = {r.path: r for r in (await engine.search("audio tune", min_score=0)).results}["../vault/songs/tune.wav"]
    assert tune.to_dict()["kind"] == "audio"


async def test_what_cannot_be_indexed_is_skipped_counted_and_left_alone(
    engine: IndexEngine, server: GeminiFake, ws: Path
) -> None:
    await engine.sync("test")
    status = engine.status()
    assert status["multimodal"] == {
        "enabled": True,
        "modalities": ["image", "audio"],
        "maxFileBytes": MAX_FILE_BYTES,
        "indexed": 2,
        "skipped": {
            "count": 2,
            "byReason": {"wrong-type": 1, "too-large": 1},
            "files": [
                {"path": "../vault/fake.png", "reason": "wrong-type"},
                {"path": "../vault/poster.jpg", "reason": "too-large"},
            ],
        },
    }
    assert status["files"] == 4  # MEMORY.md, trip.md, cat.png, tune.wav: skipped files are not indexed files
    sent = len(server.requests)
    report = await engine.sync("again")
    assert len(server.requests) == sent and report.counts.indexed == 0  # nothing read or sent again
    assert engine.drift() == []  # and nothing looks changed to a freshness check
    (ws.parent / "vault" / "poster.jpg").write_bytes(jpeg("small"))  # now within the limit
    await engine.sync("changed")
    assert _status(engine, "multimodal")["skipped"]["byReason"] == {"wrong-type": 1}
    assert [m for m, _ in server.media].count("image/jpeg") == 1


async def test_a_file_the_provider_refuses_as_too_large_is_skipped_and_the_rest_indexed(
    engine: IndexEngine, server: GeminiFake, ws: Path
) -> None:
    vault = ws.parent / "vault"
    big = png(32, 32, (1, 1, 1)) + bytes(range(256)) * 16  # 4 KB of bytes PNG readers ignore: under max_file_bytes
    (vault / "panorama.png").write_bytes(big)
    server.max_request_bytes = 5000  # the base64 of panorama.png does not fit; the other files do
    await engine.sync("test")
    assert engine.state.embedding_error is None
    skipped = _status(engine, "multimodal")["skipped"]
    assert {"path": "../vault/panorama.png", "reason": "rejected"} in skipped["files"]
    assert _status(engine, "multimodal")["indexed"] == 2
    found = {r.path for r in (await engine.search("cat harbour heron", min_score=0)).results}
    assert {"../vault/cat.png", "../vault/trip.md", "MEMORY.md"} <= found
    sent = len(server.requests)
    await engine.sync("again")
    assert len(server.requests) == sent  # a refused file is not sent again until it changes


async def test_a_provider_failure_keeps_the_caption_searchable_and_retries_next_sync(
    engine: IndexEngine, server: RefusingGemini
) -> None:
    server.refuse_media = True
    await engine.sync("test")
    assert _error(engine) is not None
    assert _status(engine, "embedding")["filesWithoutVectors"] >= 1
    found = {r.path for r in (await engine.search("cat png", min_score=0)).results}
    assert "../vault/cat.png" in found  # keyword search still finds it by its caption
    server.refuse_media = False
    await engine.sync("retry")
    assert _error(engine) is None
    assert _status(engine, "embedding")["filesWithoutVectors"] == 0
    assert _status(engine, "multimodal")["indexed"] == 2


async def test_a_rebuild_takes_media_vectors_from_the_cache(engine: IndexEngine, server: GeminiFake) -> None:
    await engine.sync("test")
    embedded = len(server.media)
    report = await engine.sync("rebuild", force=True)
    assert report.full and len(server.media) == embedded
    assert _status(engine, "multimodal")["indexed"] == 2


async def test_memory_get_refuses_media_files_with_a_clear_message(engine: IndexEngine) -> None:
    await engine.sync("test")
    with pytest.raises(AccessDeniedError, match="an image file has no text to read"):
        engine.read_file("../vault/cat.png")
    with pytest.raises(AccessDeniedError, match="an audio file"):
        engine.read_file("../vault/songs/tune.wav")


async def test_keyword_only_agents_skip_media_and_count_them(
    make_agent: AgentFactory, ws: Path, server: GeminiFake
) -> None:
    agent = _agent(make_agent, ws, server)
    engine = IndexEngine(agent, None, provider_unavailable_reason="gemini: No API key found for provider gemini")
    await engine.open()
    try:
        await engine.sync("test")
        media = _status(engine, "multimodal")
        found = {r.path for r in (await engine.search("cat harbour", min_score=0)).results}
    finally:
        engine.close()
    assert server.requests == []
    assert media["indexed"] == 0
    assert media["skipped"]["byReason"] == {"no-provider": 4}
    assert found == {"../vault/trip.md"}  # markdown is indexed keyword-only; media is not


def test_turning_multimodal_on_or_changing_it_rebuilds_the_index(
    make_agent: AgentFactory, ws: Path, server: GeminiFake
) -> None:
    off = _agent(make_agent, ws, server, multimodal={"enabled": False})
    # Off, the scope is what it was before multimodal memory existed: upgrading rebuilds nothing.
    before = hashlib.sha256(
        b'{"extraPaths":["' + str(ws.parent / "vault").encode() + b'"],'
        b'"multimodal":{"enabled":false,"modalities":[],"maxFileBytes":0}}'
    ).hexdigest()
    assert plan.scope_hash(off, legacy=True) == before  # the hash as written before extra paths were a delta
    quiet = _agent(make_agent, ws, server, multimodal={"enabled": False, "max_file_bytes": 5})
    assert plan.scope_hash(quiet, legacy=True) == before
    assert plan.scope_hash(quiet) == plan.scope_hash(off)
    on = _agent(make_agent, ws, server)
    audio = _agent(make_agent, ws, server, multimodal={"enabled": True, "modalities": ["audio"]})
    bigger = _agent(make_agent, ws, server, multimodal={"enabled": True, "max_file_bytes": 2 * MAX_FILE_BYTES})
    hashes = {plan.scope_hash(a) for a in (off, on, audio, bigger)}
    assert len(hashes) == 4
    fp = Fingerprint(provider="gemini", model="gemini-embedding-2")
    meta = plan.desired_meta(off, fp, 8)
    assert "multimodal or transcript settings changed" in plan.full_reindex_reasons(on, fp, meta, vectors_expected=True)
    assert plan.full_reindex_reasons(off, fp, meta, vectors_expected=True) == []


async def test_a_media_file_changed_while_it_is_indexed_waits_for_the_next_sync(
    engine: IndexEngine, server: GeminiFake, ws: Path
) -> None:
    """The bytes are read again to embed them; a file rewritten since it was prepared is left out of
    this pass (its rows dropped, no file row), so the next sync indexes what is there now."""
    await engine.sync("test")
    files, _ = discover(engine.agent, ("memory",))
    cat = [f for f in files if f.path == "../vault/cat.png"]
    (prepared,) = prepare_many(cat, {}, engine.agent.settings.chunking, full=True, media=MediaOptions(embeddable=True))
    (ws.parent / "vault" / "cat.png").write_bytes(png(rgb=(99, 99, 99)))  # rewritten before it is embedded
    assert engine.active.provider is not None
    got = await embed_media(engine.active.provider, engine.database.store, [prepared], cache=False)
    assert got.dropped == {0: "changed"} and got.vectors == {}


def test_the_cli_prints_a_media_result_without_lines(ws: Path, server: GeminiFake, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[agents.main]\nworkspace = "{ws}"\nprovider = "gemini"\nmodel = "gemini-embedding-2"\n'
        f'extra_paths = ["{ws.parent / "vault"}"]\nmultimodal = {{ enabled = true }}\n'
        f'remote = {{ base_url = "{server.base_url}", api_key = "k" }}\n'
    )
    argv = ["search", "cat png", "--min-score", "0", "--config", str(config), "--state-dir", str(tmp_path / "st")]
    argv += ["--socket", str(tmp_path / "no-daemon.sock")]
    command = [sys.executable, "-m", "memoryd", *argv]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if "cat.png" in line)
    assert re.fullmatch(r"\d\.\d{3} \.\./vault/cat\.png", header), header
    assert lines[lines.index(header) + 1] == "Image file: ../vault/cat.png"


async def test_media_files_are_read_through_the_safe_reader(engine: IndexEngine, server: GeminiFake, ws: Path) -> None:
    """A hard link is refused for media as for markdown (it may name any file): listed in skippedFiles."""
    vault = ws.parent / "vault"
    os.link(vault / "cat.png", vault / "cat-copy.png")
    await engine.sync("test")
    listed = engine.status()["skippedFiles"]
    assert isinstance(listed, list)
    refused = {f["path"]: f["reason"] for f in listed}
    assert refused == {"../vault/cat.png": "hard-link", "../vault/cat-copy.png": "hard-link"}
    assert [m for m, _ in server.media] == ["audio/wav"]  # neither picture was sent
