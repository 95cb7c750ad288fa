"""Keyword first, vectors after (issue 24, items 1 and 3), through the real daemon and an OpenAI-shaped fake.

While the provider holds its answers, new notes are already found by their words, status says the
index is embedding (with the chunks left), and every search answer carries `indexing`; once the
provider answers, the vectors are in and the block is gone. A daemon killed between two slices of
vectors resumes them at the next start without rebuilding anything.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest

from memoryd.server.client import call_tool, request_sync
from tests.conftest import write
from tests.fakes.embedding_servers import OpenAIFake, Tweak
from tests.fakes.http_server import RecordedRequest, Reply
from tests.integration.daemon_fixture import Daemon, search_response
from tests.survival.conftest import DaemonFactory

pytestmark = pytest.mark.integration

API_KEY = "sk-keyword-first"
CONFIG = """
[defaults]
provider = "openai"
model = "text-embedding-3-small"
[defaults.remote]
base_url = "{url}"
api_key = "{key}"
timeout_s = 60
[defaults.sync]
watch = false
on_search = false
[agents.main]
workspace = "{ws}"
"""


class GatedFake(OpenAIFake):
    """Answers the embedding of notes only while its gate is open (tests close it to hold their vectors back);
    queries are answered at once."""

    def __init__(self) -> None:
        super().__init__(api_key=API_KEY)
        self.gate = threading.Event()
        self.gate.set()

    def embed(self, request: RecordedRequest, match: re.Match[str], tweak: Tweak) -> Reply:
        texts = request.json().get("input")
        if isinstance(texts, list) and any(str(t).startswith("Note ") for t in texts):
            self.gate.wait(60)
        return super().embed(request, match, tweak)

    def close(self) -> None:
        self.gate.set()
        super().close()


@pytest.fixture
def fake() -> Iterator[GatedFake]:
    with GatedFake() as server:
        yield server


def status(daemon: Daemon) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        with anyio.fail_after(30):
            result = await call_tool(daemon.socket, None, "status", {})
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    return anyio.run(run)


def answer(daemon: Daemon, text: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        with anyio.fail_after(30):
            return await search_response(daemon.socket, None, text)

    return anyio.run(run)


def until(check: Callable[[], bool], what: str, deadline_s: float = 30.0) -> None:
    end = time.monotonic() + deadline_s
    while not check():
        assert time.monotonic() < end, f"still not {what} after {deadline_s} s"
        time.sleep(0.05)


def sync_in_background(daemon: Daemon) -> tuple[threading.Thread, list[dict[str, Any]]]:
    done: list[dict[str, Any]] = []

    def run() -> None:
        done.append(anyio.run(lambda: request_sync(daemon.socket, None, force=False, reason="test")))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done


def null_vectors(daemon: Daemon) -> int:
    conn = apsw.Connection(str(daemon.state / "agents" / "main" / "index.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (n,) = conn.execute("SELECT COUNT(*) FROM chunks WHERE embedding IS NULL").fetchone() or (0,)
    finally:
        conn.close()
    return int(n)


def test_new_notes_are_found_by_keyword_while_their_vectors_wait(
    make_daemon: DaemonFactory, fake: GatedFake, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe lighthouse keeper feeds the gulls.\n")
    daemon = make_daemon(CONFIG.format(url=fake.base_url, key=API_KEY, ws=ws))
    daemon.start()
    daemon.wait_for_line("sync done")
    assert "indexing" not in answer(daemon, "lighthouse gulls")

    fake.gate.clear()
    for i in range(3):
        write(ws / "memory" / f"heron-{i}.md", f"Note {i}: the marsh heron counts {i} frogs at dawn.\n")
    thread, done = sync_in_background(daemon)
    until(lambda: status(daemon)["progress"]["phase"] == "embedding", "embedding")

    reply = answer(daemon, "marsh heron frogs")
    assert {r["path"] for r in reply["results"]} >= {f"memory/heron-{i}.md" for i in range(3)}
    assert reply["mode"] == "hybrid"  # the old note's vector answers; the new notes by keywords alone
    indexing = reply["indexing"]
    assert indexing["phase"] == "embedding" and indexing["chunks"]["withoutVectors"] == 3
    st = status(daemon)
    assert st["embedding"]["chunksWithoutVectors"] == 3 and st["embedding"]["filesWithoutVectors"] == 3
    assert st["progress"]["job"] == "delta" and st["progress"]["files"]["indexed"] == 3

    fake.gate.set()
    thread.join(30)
    assert done and done[0]["indexed"] == 3
    st = status(daemon)
    assert st["progress"]["phase"] == "idle" and st["embedding"]["chunksWithoutVectors"] == 0
    assert "indexing" not in answer(daemon, "marsh heron")
    assert null_vectors(daemon) == 0


def test_a_daemon_killed_between_slices_of_vectors_resumes_them_without_a_rebuild(
    make_daemon: DaemonFactory, fake: GatedFake, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    for i in range(300):  # 300 one-chunk notes: two slices of vectors
        write(ws / "memory" / f"n{i:03d}.md", f"Note {i}: the orchard ledger, page {i}, mark q{i}z.\n")
    daemon = make_daemon(CONFIG.format(url=fake.base_url, key=API_KEY, ws=ws))
    daemon.start(crash_at="vectors:after-slice", expect_ready=False)
    assert daemon.wait_exit(60) != 0  # SIGKILLed after the first slice committed
    assert 0 < null_vectors(daemon) < 300

    daemon.start()
    daemon.wait_for_line("sync done")
    log = "".join(daemon.runs[-1].lines)
    assert "full reindex" not in log  # the second start embeds what is left; it rebuilds nothing
    assert null_vectors(daemon) == 0
    reply = answer(daemon, "q123z")
    assert "memory/n123.md" in [r["path"] for r in reply["results"]]
    assert "indexing" not in reply
