"""Multimodal memory through the real daemon: Gemini on loopback, the SDK's MCP client, the real watcher.

The SDK client checks every structured result against the tool's output schema, so a media result
(no lines: startLine and endLine 0, its `kind`) must be what protocol/memory_search.output.json says.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from memoryd.server.client import unix_client
from tests.conftest import write
from tests.fakes.embedding_servers import GeminiFake
from tests.fakes.media_files import png, wav
from tests.integration.daemon_fixture import Daemon, search_response

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CONFIG = """
[defaults.sync]
watch_debounce_ms = 100
[agents.main]
workspace = "{root}/ws"
provider = "gemini"
model = "gemini-embedding-2"
extra_paths = ["{root}/vault"]
multimodal = {{ enabled = true }}
remote = {{ base_url = "{base_url}", api_key = "k" }}
"""


@pytest.fixture
def gemini() -> Iterator[GeminiFake]:
    with GeminiFake(api_key="k") as fake:
        yield fake


@pytest.fixture
def daemon(tmp_path: Path, gemini: GeminiFake) -> Iterator[Daemon]:
    root = tmp_path
    write(root / "ws" / "MEMORY.md", "# Memory\n\nThe keeper paints on Sundays.\n")
    for topic in ("bread baking", "tax forms", "garden beds", "bike repair"):
        write(root / "ws" / "memory" / f"{topic.replace(' ', '-')}.md", f"# Notes\n\nSome notes about {topic}.\n")
    (root / "vault").mkdir()
    (root / "vault" / "lighthouse.png").write_bytes(png(rgb=(250, 250, 0)))
    config = write(root / "config.toml", CONFIG.format(root=root, base_url=gemini.base_url))
    env = {**os.environ, "XDG_RUNTIME_DIR": str(root / "rt")}
    env.pop("MEMORYD_CRASH_AT", None)
    env.pop("GEMINI_API_KEY", None)
    d = Daemon(root, config, root / "state", root / "rt" / "memoryd" / "memoryd.sock", env)
    d.start()
    yield d
    d.stop()


def _media(response: dict[str, Any], path: str) -> dict[str, Any] | None:
    return next((r for r in response["results"] if r["path"] == path), None)


async def test_media_results_memory_get_refusal_and_a_new_file_seen_by_the_watcher(
    daemon: Daemon, gemini: GeminiFake, tmp_path: Path
) -> None:
    with anyio.fail_after(30):
        response = await search_response(daemon.socket, "main", "lighthouse png", wait_ms=2000)
        found = _media(response, "../vault/lighthouse.png")
        assert found is not None, response
        assert (found["startLine"], found["endLine"], found["kind"]) == (0, 0, "image")
        assert found["citation"] == "../vault/lighthouse.png"
        assert found["snippet"].startswith("Image file: ../vault/lighthouse.png")
        async with Client(unix_client(daemon.socket, "main")) as client:
            refused = await client.call_tool("memory_get", {"path": "../vault/lighthouse.png"})
        assert refused.is_error
        assert "an image file has no text to read" in str(refused.content[0])
        (tmp_path / "vault" / "foghorn.wav").write_bytes(wav(hz=220.0))
        # No waitFresh (its stat pass would find the file by itself): only the watcher can make it searchable.
        while True:
            if _media(await search_response(daemon.socket, "main", "foghorn wav"), "../vault/foghorn.wav"):
                break
            await anyio.sleep(0.05)  # a bounded retry of a query until the watcher's sync indexed it
        async with Client(unix_client(daemon.socket, "main")) as client:
            status = await client.call_tool("status", {})
    assert status.structured_content is not None
    assert status.structured_content["multimodal"]["indexed"] == 2
    assert sorted(m for m, _ in gemini.media) == ["audio/wav", "image/png"]
