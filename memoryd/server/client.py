"""Talking to the daemon from Python: a transport for the MCP SDK's Client, and two one-shot calls.

`unix_client` yields the `(read, write)` stream pair the SDK's `Client`/`ClientSession` accept, so
the CLI and the tests speak real MCP over the real socket. Binding happens before the SDK sees the
connection: a refused agent is an exception here, never a stray message on the MCP stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import CallToolResult, JSONRPCError, JSONRPCRequest, JSONRPCResponse, Request, Result
from pydantic import ConfigDict

from memoryd.errors import DaemonError, NotFoundError, ProtocolError
from memoryd.server.bridge import BIND_REQUEST_ID, connect
from memoryd.server.framing import CLIENT_MAX_LINE_BYTES, LineReader, Rejection, encode_message, next_message
from memoryd.server.mcp import BIND_METHOD, SyncParams
from memoryd.server.sockets import UnixStream

TransportStreams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


class DaemonRequestError(DaemonError):
    """The daemon answered a request with a JSON-RPC error; `code` is its error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class SyncRequest(Request[SyncParams, Literal["memoryd/sync"]]):
    method: Literal["memoryd/sync"] = "memoryd/sync"
    params: SyncParams


class SyncResult(Result):
    """Whatever the daemon reports about a sync; its fields are kept as extras."""

    model_config = ConfigDict(extra="allow")


async def bind_agent(stream: UnixStream, lines: LineReader, agent: str) -> None:
    """Bind the connection to `agent` (the first message); NotFoundError when the daemon refuses it."""
    request = JSONRPCRequest(jsonrpc="2.0", id=BIND_REQUEST_ID, method=BIND_METHOD, params={"agent": agent})
    try:
        await stream.send(encode_message(request))
    except (anyio.BrokenResourceError, OSError) as exc:
        raise DaemonError(f"the daemon closed the connection: {exc}") from exc
    reply = await next_message(lines)
    if reply is None:
        raise DaemonError("the daemon closed the connection before answering memoryd/bind")
    if isinstance(reply, JSONRPCError) and reply.id == BIND_REQUEST_ID:
        raise NotFoundError(reply.error.message)
    if not (isinstance(reply, JSONRPCResponse) and reply.id == BIND_REQUEST_ID):
        raise ProtocolError(f"unexpected answer to memoryd/bind: {reply!r}")


@asynccontextmanager
async def unix_client(
    path: Path, agent: str | None = None, *, max_line_bytes: int = CLIENT_MAX_LINE_BYTES
) -> AsyncIterator[TransportStreams]:
    """Connect to the daemon (bound to `agent` when given) and yield MCP streams for the SDK."""
    stream = await connect(path)
    async with stream:
        lines = LineReader(stream, max_line_bytes)
        if agent is not None:
            await bind_agent(stream, lines, agent)
        inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        outbound, outbound_receive = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_loop, lines, inbound_send)
            tg.start_soon(_write_loop, outbound_receive, stream)
            try:
                yield inbound, outbound
            finally:
                tg.cancel_scope.cancel()


async def call_tool(path: Path, agent: str | None, name: str, arguments: dict[str, Any]) -> CallToolResult:
    """One tool call over a fresh connection (for the CLI). Tool errors come back as `is_error`."""
    failure: MCPError | None = None
    async with Client(unix_client(path, agent)) as client:
        try:
            result = await client.call_tool(name, arguments)
        except MCPError as exc:
            failure = exc
    # Raised outside the Client block, which would wrap it in an ExceptionGroup.
    if failure is not None:
        raise DaemonRequestError(failure.code, failure.message) from failure
    return result


async def request_sync(path: Path, agent: str | None, *, force: bool, reason: str = "cli") -> dict[str, Any]:
    """Ask the daemon to sync `agent`'s index now (`memoryd/sync`) and return its report."""
    failure: MCPError | None = None
    async with Client(unix_client(path, agent)) as client:
        try:
            request = SyncRequest(params=SyncParams(force=force, reason=reason))
            result = await client.session.send_request(request, SyncResult)
        except MCPError as exc:
            failure = exc
    if failure is not None:
        raise DaemonRequestError(failure.code, failure.message) from failure
    report = dict(result.model_extra or {})
    report.pop("resultType", None)
    return report


async def _read_loop(lines: LineReader, inbound: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    async with inbound:
        try:
            while (item := await next_message(lines)) is not None:
                if isinstance(item, Rejection):
                    problem = item.response.error.message
                    await inbound.send(ProtocolError(f"the daemon sent an unreadable line: {problem}"))
                else:
                    await inbound.send(SessionMessage(item))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return


async def _write_loop(outbound: MemoryObjectReceiveStream[SessionMessage], stream: UnixStream) -> None:
    async with outbound:
        async for item in outbound:
            try:
                await stream.send(encode_message(item.message))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return
