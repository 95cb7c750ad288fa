"""Test-side plumbing: a bare line client for the raw wire, and in-memory byte streams."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from memoryd.server.framing import LineReader, OversizedLine, Rejection, encode_message, next_message
from memoryd.server.sockets import UnixStream, connect_unix

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
}
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class RawClient:
    """Speaks (and misspeaks) the wire protocol one line at a time."""

    def __init__(self, stream: UnixStream) -> None:
        self.stream = stream
        self._lines = LineReader(stream, 64 * 1024 * 1024)

    async def send(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        await self.stream.send(data)

    async def receive_line(self) -> str | None:
        """The next line as text, or None once the daemon has closed the connection."""
        line = await self._lines.next_line()
        assert not isinstance(line, OversizedLine)
        return None if line is None else line.decode()

    async def receive(self) -> dict[str, Any] | None:
        """The next line as JSON, or None once the daemon has closed the connection."""
        line = await self._lines.next_line()
        if line is None:
            return None
        assert isinstance(line, bytes)
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    async def request(self, request_id: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        while True:
            reply = await self.receive()
            assert reply is not None, f"connection closed while waiting for {method}"
            if reply.get("id") == request_id:
                return reply

    async def initialize(self) -> None:
        await self.send(INITIALIZE)
        reply = await self.receive()
        assert reply is not None and "result" in reply, reply
        await self.send(INITIALIZED)


@asynccontextmanager
async def raw_client(path: Path) -> AsyncIterator[RawClient]:
    async with await connect_unix(path) as stream:
        yield RawClient(stream)


class MemoryByteReceiveStream(ByteReceiveStream):
    """Bytes pushed into a memory object stream, read as a byte stream (a stand-in for stdin)."""

    def __init__(self, source: MemoryObjectReceiveStream[bytes]) -> None:
        self._source = source

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            return await self._source.receive()
        except anyio.EndOfStream:
            raise
        except anyio.ClosedResourceError:
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        await self._source.aclose()


class MemoryByteSendStream(ByteSendStream):
    """A byte stream that forwards into a memory object stream and keeps a copy (a stand-in for stdout)."""

    def __init__(self, sink: MemoryObjectSendStream[bytes]) -> None:
        self._sink = sink
        self.written = bytearray()

    async def send(self, item: bytes) -> None:
        self.written.extend(item)
        await self._sink.send(item)

    async def aclose(self) -> None:
        await self._sink.aclose()


@asynccontextmanager
async def line_transport(
    outgoing: MemoryObjectSendStream[bytes], incoming: ByteReceiveStream
) -> AsyncIterator[Streams]:
    """An SDK transport over byte streams: what an MCP client does on its side of a stdio pipe."""
    lines = LineReader(incoming, 64 * 1024 * 1024)
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        async with read_send:
            while (item := await next_message(lines)) is not None:
                if isinstance(item, Rejection):
                    await read_send.send(ValueError(item.response.error.message))
                else:
                    await read_send.send(SessionMessage(item))

    async def writer() -> None:
        async with write_receive, outgoing:
            async for item in write_receive:
                await outgoing.send(encode_message(item.message))

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_receive, write_send
        finally:
            await write_send.aclose()
            tg.cancel_scope.cancel()
