"""One client connection, whatever carries it (Unix socket, stdio): bind an agent, then serve MCP.

Owns the parts the SDK leaves to transports: framing and its errors (a malformed or oversized line
gets a JSON-RPC error and the connection goes on), the optional `memoryd/bind` first message, and a
clean end — a client that half-closes still gets answers to requests it already sent, and a client
that vanishes never disturbs anything beyond its own connection — and the bounds of
`memoryd.server.backpressure`: a client that floods requests is read no faster than it is answered,
and one that does not read its replies is dropped once they pass `daemon.max_queued_bytes`.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import anyio.to_thread
import structlog
from anyio import CancelScope
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

from memoryd import heap
from memoryd.server.backpressure import DEFAULT_MAX_QUEUED_BYTES, MAX_RUNNING, Outbox, RequestTally
from memoryd.server.framing import LineReader, Rejection, encode_message, error_response, next_message
from memoryd.server.mcp import (
    AGENTS_METHOD,
    BIND_METHOD,
    AgentBinding,
    McpServer,
    build_server,
    method_schemas,
    served_agents,
)
from memoryd.server.schemas import ToolSchema
from memoryd.server.service import MemoryService
from memoryd.server.validate import InvalidArgumentsError, validate_params

log = structlog.get_logger(__name__)

DRAIN_SECONDS = 30.0
"""After a client half-closes, how long its unanswered requests may still run before the end."""

_CLOSED = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


async def serve_connection(
    service: MemoryService,
    tools: Sequence[ToolSchema],
    receive: ByteReceiveStream,
    send: ByteSendStream,
    *,
    max_line_bytes: int,
    agent: str | None = None,
    max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES,
) -> None:
    """Serve one client until it leaves. Never raises for anything the client does.

    `agent` pre-binds the connection (the standalone stdio server); a `memoryd/bind` naming another
    agent is then refused. `max_queued_bytes` bounds the replies the client has not read yet
    (`memoryd.server.backpressure`): past it the client is dropped.
    """
    try:
        await _serve(
            service, tools, receive, send, max_line_bytes=max_line_bytes, agent=agent, max_queued_bytes=max_queued_bytes
        )
    except _CLOSED:
        log.debug("connection_dropped")
    except Exception:
        log.exception("connection_failed")


async def _serve(
    service: MemoryService,
    tools: Sequence[ToolSchema],
    receive: ByteReceiveStream,
    send: ByteSendStream,
    *,
    max_line_bytes: int,
    agent: str | None,
    max_queued_bytes: int,
) -> None:
    lines = LineReader(receive, max_line_bytes)
    first = await next_message(lines)
    while isinstance(first, Rejection) or _is_agents(first):  # `memoryd/agents` may come before the bind
        reply = first.response if isinstance(first, Rejection) else _agents_reply(service, first)
        await send.send(encode_message(reply))
        first = await next_message(lines)
    if first is None:
        return
    pending: JSONRPCMessage | None = first
    if _is_bind(first):
        agent = await _accept_bind(service, first, agent, send)
        if agent is None:
            return
        pending = None
    server = build_server(service, tools, AgentBinding(agent))
    await _run_session(server, lines, send, pending, max_queued_bytes)


async def _accept_bind(
    service: MemoryService, message: JSONRPCMessage, fixed_agent: str | None, send: ByteSendStream
) -> str | None:
    """The bound agent, or None after telling the client why not (the caller then closes)."""
    request_id = message.id if isinstance(message, JSONRPCRequest) else None
    params = message.params if isinstance(message, JSONRPCRequest | JSONRPCNotification) else None
    try:
        agent = str(validate_params(method_schemas()[BIND_METHOD], params)["agent"])
    except InvalidArgumentsError as exc:
        problem = f'{BIND_METHOD} needs params {{"agent": "<id>"}}: {exc.field} {exc.problem}'
    else:
        known = service.agent_ids()
        if fixed_agent is not None and agent != fixed_agent:
            problem = f"this connection serves agent {fixed_agent!r} only, not {agent!r}"
        elif agent not in known:
            problem = f"unknown agent {agent!r}; this daemon serves: {', '.join(known) or 'no agents'}"
        else:
            if request_id is not None:
                reply = JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"agent": agent})
                await send.send(encode_message(reply))
            return agent
    log.info("bind_refused", reason=problem)
    await send.send(encode_message(error_response(request_id, INVALID_PARAMS, problem)))
    return None


async def _run_session(
    server: McpServer,
    lines: LineReader,
    send: ByteSendStream,
    pending: JSONRPCMessage | None,
    max_queued_bytes: int,
) -> None:
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    tally = RequestTally()
    outbox = Outbox(max_queued_bytes)
    async with to_server, from_client, to_client, from_server, anyio.create_task_group() as tg:
        tg.start_soon(_collect_out, from_server, outbox, tally, tg.cancel_scope)
        tg.start_soon(_write_out, outbox, send, tally, tg.cancel_scope)
        tg.start_soon(_pump_in, lines, pending, to_server, to_client.clone(), tally)
        await server.run(from_client, to_client, server.create_initialization_options())
    if outbox.dropped:
        # Its unread replies were tens of MB: hand the freed pages back instead of keeping them in the heap.
        outbox.clear()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(heap.release_free_memory)


async def _pump_in(
    lines: LineReader,
    pending: JSONRPCMessage | None,
    to_server: MemoryObjectSendStream[SessionMessage | Exception],
    to_client: MemoryObjectSendStream[SessionMessage],
    tally: RequestTally,
) -> None:
    """Client lines to the server; rejected lines are answered here, in order with everything else.

    No line is read while MAX_RUNNING requests of this connection run: a client that floods requests
    waits in its own socket buffer.
    """
    async with to_server, to_client:
        try:
            message = pending if pending is not None else await next_message(lines)
            while message is not None:
                if isinstance(message, Rejection):
                    await to_client.send(SessionMessage(message.response))
                elif _is_bind(message):
                    request_id = message.id if isinstance(message, JSONRPCRequest) else None
                    problem = f"{BIND_METHOD} is only accepted as the first message of a connection"
                    await to_client.send(SessionMessage(error_response(request_id, INVALID_REQUEST, problem)))
                else:
                    tally.track(message)
                    await to_server.send(SessionMessage(message))
                await tally.wait_below(MAX_RUNNING)
                message = await next_message(lines)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return
        with anyio.move_on_after(DRAIN_SECONDS):
            await tally.wait_idle()


async def _collect_out(
    from_server: MemoryObjectReceiveStream[SessionMessage],
    outbox: Outbox,
    tally: RequestTally,
    connection_scope: CancelScope,
) -> None:
    """Server messages into the bounded outbox; a client whose unread replies pass the bound is dropped."""
    async with from_server:
        async for item in from_server:
            tally.produced(item.message)
            if not outbox.put(encode_message(item.message), item.message):
                outbox.dropped = True
                log.warning(
                    "client_not_reading_dropped",
                    queued_bytes=outbox.queued_bytes,
                    queued_replies=len(outbox),
                    max_queued_bytes=outbox.max_bytes,
                )
                connection_scope.cancel()
                return
    outbox.close()


async def _write_out(outbox: Outbox, send: ByteSendStream, tally: RequestTally, connection_scope: CancelScope) -> None:
    """The outbox to the client, one message per line; a client gone mid-write ends the connection."""
    while (queued := await outbox.get()) is not None:
        data, message = queued
        try:
            await send.send(data)
        except _CLOSED:
            connection_scope.cancel()
            return
        outbox.sent()
        tally.answered(message)


def _is_agents(message: JSONRPCMessage | None) -> bool:
    return isinstance(message, JSONRPCRequest) and message.method == AGENTS_METHOD


def _agents_reply(service: MemoryService, message: JSONRPCMessage | None) -> JSONRPCMessage:
    """The answer to a `memoryd/agents` request sent before the bind (the session's own handler answers later ones)."""
    assert isinstance(message, JSONRPCRequest)
    try:
        validate_params(method_schemas()[AGENTS_METHOD], message.params)
    except InvalidArgumentsError as exc:
        return error_response(message.id, INVALID_PARAMS, str(exc))
    return JSONRPCResponse(jsonrpc="2.0", id=message.id, result=served_agents(service))


def _is_bind(message: JSONRPCMessage) -> bool:
    return isinstance(message, JSONRPCRequest | JSONRPCNotification) and message.method == BIND_METHOD
