"""One connection over in-memory byte streams, where the test decides exactly when input ends."""

from __future__ import annotations

import json

import anyio
import pytest
from anyio.abc import ByteReceiveStream
from anyio.streams.memory import MemoryObjectSendStream

from memoryd.server.connection import serve_connection
from memoryd.server.schemas import load_tool_schemas
from tests.server.fakes import FakeMemoryService
from tests.server.wire import INITIALIZE, INITIALIZED, MemoryByteReceiveStream, MemoryByteSendStream

pytestmark = pytest.mark.anyio


class ObservedEnd(ByteReceiveStream):
    """Passes bytes through and sets `ended` once the reader has seen end of stream."""

    def __init__(self, inner: ByteReceiveStream) -> None:
        self._inner = inner
        self.ended = anyio.Event()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            return await self._inner.receive(max_bytes)
        except anyio.EndOfStream:
            self.ended.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


def _line(message: dict[str, object]) -> bytes:
    return json.dumps(message).encode() + b"\n"


async def _serve_then_close(
    service: FakeMemoryService, receive: ByteReceiveStream, output: MemoryObjectSendStream[bytes]
) -> None:
    """What a transport does: serve the connection, then close its end (the caller owns the streams)."""
    async with output:
        await serve_connection(
            service, load_tool_schemas(), receive, MemoryByteSendStream(output), max_line_bytes=4096, agent="alpha"
        )


async def test_requests_in_flight_when_input_ends_are_still_answered() -> None:
    service = FakeMemoryService()
    to_server, server_input = anyio.create_memory_object_stream[bytes](10)
    server_output, from_server = anyio.create_memory_object_stream[bytes](10)
    observed = ObservedEnd(MemoryByteReceiveStream(server_input))
    call: dict[str, object] = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory_search", "arguments": {"query": "slow"}},
    }
    with anyio.fail_after(10):
        async with to_server, server_input, server_output, from_server, anyio.create_task_group() as tg:
            tg.start_soon(_serve_then_close, service, observed, server_output)
            for message in (INITIALIZE, INITIALIZED, call):
                await to_server.send(_line(message))
            await service.slow_started.wait()
            await to_server.aclose()
            await observed.ended.wait()
            # Let the server act on the end of its input before the slow search may finish.
            await anyio.wait_all_tasks_blocked()
            service.release.set()
            received = b"".join([chunk async for chunk in from_server])
    replies = [json.loads(line) for line in received.splitlines()]
    assert [reply["id"] for reply in replies] == ["init", 1]
    assert replies[1]["result"]["structuredContent"]["results"] == []


async def test_a_preset_agent_refuses_a_bind_to_another() -> None:
    service = FakeMemoryService()
    to_server, server_input = anyio.create_memory_object_stream[bytes](10)
    server_output, from_server = anyio.create_memory_object_stream[bytes](10)
    with anyio.fail_after(10):
        async with to_server, server_input, server_output, from_server, anyio.create_task_group() as tg:
            tg.start_soon(_serve_then_close, service, MemoryByteReceiveStream(server_input), server_output)
            await to_server.send(
                _line({"jsonrpc": "2.0", "id": "b", "method": "memoryd/bind", "params": {"agent": "beta"}})
            )
            received = b"".join([chunk async for chunk in from_server])
            await to_server.aclose()
    assert json.loads(received) == {
        "jsonrpc": "2.0",
        "id": "b",
        "error": {"code": -32602, "message": "this connection serves agent 'alpha' only, not 'beta'"},
    }
