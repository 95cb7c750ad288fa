"""PROTOCOL.md tells the truth: its example session replays as written, its numbers are the code's."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import anyio
import pytest

from memoryd.config import DaemonSettings
from memoryd.server.accept import MIN_RESERVE, TOO_MANY_CONNECTIONS
from memoryd.server.backpressure import DEFAULT_MAX_QUEUED_BYTES, MAX_RUNNING
from memoryd.server.connection import DRAIN_SECONDS
from memoryd.server.framing import CLIENT_MAX_LINE_BYTES, DEFAULT_MAX_LINE_BYTES
from memoryd.server.mcp import BIND_METHOD, MEMORYD_ERROR, SYNC_METHOD, TRANSCRIPT_UPDATED_METHOD
from memoryd.server.schemas import TOOL_NAMES, protocol_dir
from memoryd.server.unix import serve_unix
from memoryd.server.validate import SAFE_INTEGER
from tests.server.fakes import FakeMemoryService
from tests.server.wire import raw_client

pytestmark = pytest.mark.anyio

DOC = (protocol_dir() / "PROTOCOL.md").read_text()


def _example_session() -> list[tuple[str, list[str]]]:
    """Each line sent in the example, with the lines the document says come back."""
    block = DOC.split("## Example session", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    exchanges: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("> "):
            exchanges.append((line[2:], []))
        elif line.startswith("< "):
            exchanges[-1][1].append(line[2:])
    return exchanges


def _pattern(documented: str) -> re.Pattern[str]:
    """`…` in the document stands for any text."""
    return re.compile(".*".join(re.escape(part) for part in documented.split("…")) + r"\Z")


async def test_the_example_session_replays_as_documented(socket_path: Path) -> None:
    service = FakeMemoryService(notes={"main": {"MEMORY.md": "# Main\nThe front door is blue.\nTea at four.\n"}})
    exchanges = _example_session()
    assert sum(len(documented) for _, documented in exchanges) >= 8
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(partial(serve_unix, service, socket_path))
            async with raw_client(socket_path) as client:
                for sent, documented in exchanges:
                    await client.send(sent.encode() + b"\n")
                    for expected in documented:
                        line = await client.receive_line()
                        assert line is not None and _pattern(expected).match(line), (sent, expected, line)
            tg.cancel_scope.cancel()


def test_every_tool_and_memoryd_method_is_documented() -> None:
    for name in (*TOOL_NAMES, BIND_METHOD, SYNC_METHOD, TRANSCRIPT_UPDATED_METHOD):
        assert f"`{name}`" in DOC, name
    for schema in sorted(path.name for path in protocol_dir().glob("*.json")):
        assert f"`{schema}`" in DOC, schema


def test_the_documented_limits_and_codes_are_the_codes() -> None:
    assert f"{DEFAULT_MAX_LINE_BYTES:,} bytes" in DOC
    assert f"{DEFAULT_MAX_LINE_BYTES // (1024 * 1024)} MiB" in DOC
    assert DaemonSettings().max_line_bytes == DEFAULT_MAX_LINE_BYTES  # what the daemon really takes
    assert f"{CLIENT_MAX_LINE_BYTES // (1024 * 1024)} MiB per line" in DOC
    assert f"at most {DRAIN_SECONDS:g} seconds" in DOC
    assert f"`{MEMORYD_ERROR}` memoryd error" in DOC
    assert f"`{TOO_MANY_CONNECTIONS}` too many connections" in DOC
    assert f"at most **{MAX_RUNNING}** per connection" in DOC
    assert f"**{DEFAULT_MAX_QUEUED_BYTES:,} bytes**" in DOC
    assert f"at least {MIN_RESERVE}" in DOC
    assert f"±{SAFE_INTEGER:,}" in DOC
