"""The real daemon with an embedding provider that fails: the index stays usable and catches up.

The provider is OpenAI-compatible, served by the loopback fake that speaks OpenAI's wire format
(`tests/fakes/embedding_servers.py`); its scripted replies make it rate-limit, go down, answer
slowly or with vectors of the wrong size. While it fails, changed notes are indexed keyword-only
(found by search, counted in status as files without vectors); once it answers again, the next
sync embeds them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.conftest import write
from tests.fakes.embedding_servers import OpenAIFake
from tests.integration.daemon_fixture import Daemon
from tests.survival.conftest import DaemonFactory, query
from tests.survival.test_faults import status, sync

pytestmark = pytest.mark.integration

API_KEY = "sk-survival-test-key"
CONFIG = """
[defaults]
provider = "openai"
model = "text-embedding-3-small"
[defaults.remote]
base_url = "{url}"
api_key = "{key}"
timeout_s = 1
[defaults.sync]
watch = false
[agents.main]
workspace = "{ws}"
"""


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def daemon(make_daemon: DaemonFactory, fake: OpenAIFake, tmp_path: Path) -> Daemon:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe lighthouse keeper feeds the gulls.\n")
    for i in range(3):
        write(ws / "memory" / f"n{i}.md", f"Note {i}: the orchard ledger page {i}.\n")
    d = make_daemon(CONFIG.format(url=fake.base_url, key=API_KEY, ws=ws))
    d.start()
    d.wait_for_line("sync done")
    return d


def embedding(daemon: Daemon) -> dict[str, Any]:
    state: dict[str, Any] = status(daemon)["embedding"]
    return state


def vector_rows(daemon: Daemon) -> tuple[int, int]:
    """(chunks with an embedding, rows of the sqlite-vec table) in the daemon's database."""
    db = daemon.state / "agents" / "main" / "index.sqlite"
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (embedded,) = conn.execute("SELECT COUNT(*) FROM chunks WHERE embedding IS NOT NULL").fetchone() or (0,)
        (dims,) = conn.execute("SELECT COUNT(*) FROM chunks_vbit_rowids").fetchone() or (0,)
    finally:
        conn.close()
    return int(embedded), int(dims)


def add_note(daemon: Daemon, name: str, text: str) -> None:
    write(daemon.root.parent / "ws" / "memory" / name, text)


def test_a_rate_limit_with_retry_after_is_waited_out(daemon: Daemon, fake: OpenAIFake) -> None:
    assert embedding(daemon)["lastError"] is None
    before = len(fake.requests)
    fake.enqueue(fake.rate_limited(retry_after="1"))
    add_note(daemon, "limited.md", "The quota walrus waited one second.\n")
    report = sync(daemon)
    assert report["indexed"] == 1
    assert len(fake.requests) - before == 2  # the 429, then the retry after Retry-After
    state = embedding(daemon)
    assert state["lastError"] is None and state["filesWithoutVectors"] == 0


def test_a_provider_that_is_down_leaves_a_keyword_index_that_catches_up(daemon: Daemon, fake: OpenAIFake) -> None:
    fake.enqueue(*[fake.overloaded() for _ in range(4)])  # the first call and its three retries
    add_note(daemon, "outage.md", "The outage heron kept fishing.\n")
    sync(daemon)
    assert "memory/outage.md" in query(daemon, "outage heron")
    state = embedding(daemon)
    assert "503" in state["lastError"] or "overloaded" in state["lastError"]
    assert state["filesWithoutVectors"] == 1
    sync(daemon)  # the provider answers again
    state = embedding(daemon)
    assert state["lastError"] is None and state["filesWithoutVectors"] == 0
    embedded, in_vec = vector_rows(daemon)
    assert embedded == in_vec == 5


def test_vectors_of_the_wrong_size_are_refused_and_the_index_keeps_its_vectors(
    daemon: Daemon, fake: OpenAIFake
) -> None:
    fake.enqueue(fake.wrong_dims(4))
    add_note(daemon, "odd.md", "The odd-sized otter.\n")
    sync(daemon)
    assert "memory/odd.md" in query(daemon, "otter")
    assert "dimension" in embedding(daemon)["lastError"]
    assert vector_rows(daemon) == (4, 4)
    sync(daemon)
    assert embedding(daemon)["filesWithoutVectors"] == 0
    assert vector_rows(daemon) == (5, 5)


def test_wrong_sized_vectors_right_after_a_restart_do_not_replace_the_vector_table(
    daemon: Daemon, fake: OpenAIFake
) -> None:
    daemon.stop()
    add_note(daemon, "odd.md", "The odd-sized otter.\n")
    fake.enqueue(fake.wrong_dims(4))
    daemon.start()
    daemon.wait_for_line("sync done")
    assert vector_rows(daemon) == (4, 4)
    assert "dimension" in embedding(daemon)["lastError"]
    # The provider now expects the wrong size it saw first (memoryd/embeddings/remote.py keeps the
    # first answer's dimension for the process); a restart gives it a fresh start.
    daemon.stop()
    daemon.start()
    daemon.wait_for_line("sync done")
    assert embedding(daemon)["filesWithoutVectors"] == 0
    assert vector_rows(daemon) == (5, 5)


@pytest.mark.slow
def test_a_provider_that_stalls_times_out_and_the_note_is_still_found(daemon: Daemon, fake: OpenAIFake) -> None:
    fake.enqueue(*[fake.stall() for _ in range(4)])
    add_note(daemon, "slow.md", "The slow tortoise crossed the road.\n")
    sync(daemon)
    assert "memory/slow.md" in query(daemon, "tortoise")
    assert "timed out" in embedding(daemon)["lastError"]
    sync(daemon)
    assert embedding(daemon)["filesWithoutVectors"] == 0


def test_files_left_without_vectors_are_embedded_by_a_retry_without_any_new_change(
    make_daemon: DaemonFactory, fake: OpenAIFake, tmp_path: Path
) -> None:
    ws = tmp_path / "retry-ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe lighthouse keeper feeds the gulls.\n")
    config = CONFIG.format(url=fake.base_url, key=API_KEY, ws=ws).replace(
        "watch = false", "watch = false\nembedding_retry_ms = 300"
    )
    # The first sync's call and its three retries fail; the retry sync a moment later succeeds.
    fake.enqueue(*[fake.overloaded() for _ in range(4)])
    d = make_daemon(config, name="retry")
    d.start()
    d.wait_for_line("sync done")
    first = embedding(d)
    assert first["filesWithoutVectors"] == 1 and first["lastError"]
    line = d.wait_for_line("reason=embedding-retry")
    if "sync done" not in line:  # the retry rebuilt the index ("full reindex ..."): wait for its end
        d.wait_for_line("sync done")
    state = embedding(d)
    assert state["lastError"] is None and state["filesWithoutVectors"] == 0
    assert state["nextRetryAt"] is None
