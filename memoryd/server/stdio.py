"""`memoryd mcp`: MCP over stdin/stdout, either forwarded to the daemon or served in-process.

The bridge copies bytes, not messages: the daemon does all framing and checking, so a shim and a
direct socket client see exactly the same protocol. While either mode runs, file descriptor 1 is
pointed at stderr and the protocol goes out through a private duplicate, so a stray write anywhere
in the process cannot corrupt the stream.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio import CancelScope
from anyio.abc import ByteReceiveStream, ByteSendStream

from memoryd.server.client import bind_agent, connect_daemon
from memoryd.server.connection import DRAIN_SECONDS, serve_connection
from memoryd.server.framing import CLIENT_MAX_LINE_BYTES, DEFAULT_MAX_LINE_BYTES, LineReader
from memoryd.server.schemas import ToolSchema, load_tool_schemas
from memoryd.server.service import MemoryService
from memoryd.server.sockets import UnixStream

_CHUNK = 65536
_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


async def bridge(
    socket_path: Path,
    agent: str | None,
    stdin: ByteReceiveStream,
    stdout: ByteSendStream,
    *,
    drain_seconds: float = DRAIN_SECONDS,
) -> None:
    """Forward an MCP session between a client's stdio and the daemon, bound to `agent`.

    Ends when stdin ends (after the daemon has answered what it already received, at most
    `drain_seconds` later), when the daemon closes, or when stdout's reader goes away. Raises
    DaemonError when the daemon cannot be reached and NotFoundError when it refuses the agent.
    """
    daemon = await connect_daemon(socket_path)
    async with daemon:
        lines = LineReader(daemon, CLIENT_MAX_LINE_BYTES)
        if agent is not None:
            await bind_agent(daemon, lines, agent)
        daemon_done = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_daemon_to_client, daemon, lines.take_buffered(), stdout, daemon_done, tg.cancel_scope)
            await _client_to_daemon(stdin, daemon)
            with anyio.move_on_after(drain_seconds):
                await daemon_done.wait()
            tg.cancel_scope.cancel()


async def serve_stdio(
    service: MemoryService,
    agent: str | None,
    *,
    tools: Sequence[ToolSchema] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> None:
    """Serve MCP in-process on this process's stdin/stdout (`memoryd mcp --standalone`)."""
    catalog = tools if tools is not None else await anyio.to_thread.run_sync(load_tool_schemas)
    async with stdio_streams() as (stdin, stdout):
        await serve_connection(service, catalog, stdin, stdout, max_line_bytes=max_line_bytes, agent=agent)


async def run_bridge(socket_path: Path, agent: str | None) -> None:
    """`bridge` over this process's real stdin/stdout."""
    async with stdio_streams() as (stdin, stdout):
        await bridge(socket_path, agent, stdin, stdout)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[ByteReceiveStream, ByteSendStream]]:
    """fd 0 and a private duplicate of fd 1 as byte streams; fd 1 itself points at stderr meanwhile."""
    wire = os.dup(1)
    os.dup2(2, 1)
    try:
        yield _FdReceiveStream(0), _FdSendStream(wire)
    finally:
        os.dup2(wire, 1)
        os.close(wire)


async def _client_to_daemon(stdin: ByteReceiveStream, daemon: UnixStream) -> None:
    """Copy until stdin ends, then half-close so the daemon knows no more requests are coming."""
    try:
        async for chunk in stdin:
            await daemon.send(chunk)
        await daemon.send_eof()
    except _GONE:
        return


async def _daemon_to_client(
    daemon: UnixStream, buffered: bytes, stdout: ByteSendStream, done: anyio.Event, bridge_scope: CancelScope
) -> None:
    """Copy until the daemon closes; then the bridge is over, whatever stdin is doing."""
    try:
        if buffered:
            await stdout.send(buffered)
        async for chunk in daemon:
            await stdout.send(chunk)
    except _GONE:
        pass
    done.set()
    bridge_scope.cancel()


class _FdReceiveStream(ByteReceiveStream):
    """Reads a file descriptor in a worker thread: works for pipes, terminals and regular files alike."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        try:
            data = await anyio.to_thread.run_sync(os.read, self._fd, max_bytes, abandon_on_cancel=True)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        """The descriptor belongs to the process; it stays open."""


class _FdSendStream(ByteSendStream):
    """Writes a file descriptor in a worker thread, all of each item, in order."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            try:
                written = await anyio.to_thread.run_sync(os.write, self._fd, view)
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            view = view[written:]

    async def aclose(self) -> None:
        """The descriptor belongs to `stdio_streams`, which restores and closes it."""
