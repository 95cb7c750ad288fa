"""`memoryd mcp` through the daemon: copy bytes between a host's stdio and the daemon's socket.

The bridge copies bytes, not messages: the daemon does all framing and checking, so a shim and a
direct socket client see exactly the same protocol. It imports neither the MCP SDK nor pydantic
nor the daemon: a host waits for the shim to answer `initialize` (the MCP Inspector gives up
after 15 s), and those imports cost seconds on a loaded machine. While it runs, file descriptor 1
is pointed at stderr and the protocol goes out through a private duplicate, so a stray write
anywhere in the process cannot corrupt the stream.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
from anyio import CancelScope
from anyio.abc import ByteReceiveStream, ByteSendStream

from memoryd.errors import DaemonError, NotFoundError, ProtocolError
from memoryd.runtime.private import check_server_peer
from memoryd.server.sockets import UnixStream, connect_unix

DRAIN_SECONDS = 30.0
"""How long the daemon's answers are still copied after stdin ended (the daemon's own drain:
`memoryd.server.connection.DRAIN_SECONDS`; a test keeps the two equal)."""

BIND_REQUEST_ID = "memoryd-bind"
"""The id of the bind request; a string, so it never collides with the SDK's integer ids."""
AGENTS_REQUEST_ID = "memoryd-agents"
_MAX_BIND_REPLY = 1024 * 1024
_CHUNK = 65536
_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


async def connect(path: Path) -> UnixStream:
    """Connect to the daemon; DaemonError when nothing answers, NotPrivateError when the process
    listening is not this user's (checked before anything is sent)."""
    try:
        stream = await connect_unix(path)
    except OSError as exc:
        raise DaemonError(f"cannot reach the memoryd daemon at {path}: {exc.strerror or exc}") from exc
    try:
        check_server_peer(stream.raw_socket, path)
    except BaseException:
        await stream.aclose()
        raise
    return stream


async def bind(daemon: UnixStream, agent: str) -> bytes:
    """Bind the connection to `agent` (`memoryd/bind`, the first message); returns what the daemon
    sent after its answer. NotFoundError when the daemon refuses the agent."""
    reply, rest = await _ask(daemon, BIND_REQUEST_ID, "memoryd/bind", {"agent": agent})
    error = reply.get("error")
    if isinstance(error, dict):
        raise NotFoundError(str(error.get("message", "the daemon refused the agent")))
    return rest


async def served_agents(daemon: UnixStream) -> list[str]:
    """The agents the daemon serves (`memoryd/agents`, asked before the bind)."""
    reply, rest = await _ask(daemon, AGENTS_REQUEST_ID, "memoryd/agents", {})
    agents = reply.get("result", {}).get("agents") if isinstance(reply.get("result"), dict) else None
    if rest or not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
        raise ProtocolError(f"unexpected answer to memoryd/agents: {reply!r:.200}")
    return agents


async def _ask(
    daemon: UnixStream, request_id: str, method: str, params: dict[str, str]
) -> tuple[dict[str, Any], bytes]:
    """Send one request before the session and read its answer line; (the answer, what came after it)."""
    request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    try:
        await daemon.send(orjson.dumps(request) + b"\n")
    except _GONE as exc:
        raise DaemonError(f"the daemon closed the connection: {exc}") from exc
    received = b""
    while b"\n" not in received:
        if len(received) > _MAX_BIND_REPLY:
            raise ProtocolError(f"the daemon's answer to {method} has no end of line")
        try:
            received += await daemon.receive()
        except (*_GONE, anyio.EndOfStream):
            raise DaemonError(f"the daemon closed the connection before answering {method}") from None
    line, _, rest = received.partition(b"\n")
    try:
        reply = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"unreadable answer to {method}: {line[:200]!r}") from exc
    if not isinstance(reply, dict) or reply.get("id") != request_id:
        raise ProtocolError(f"unexpected answer to {method}: {line[:200]!r}")
    return reply, rest


async def bridge(
    socket_path: Path,
    agent: str | None,
    stdin: ByteReceiveStream,
    stdout: ByteSendStream,
    *,
    drain_seconds: float = DRAIN_SECONDS,
    pick: Callable[[list[str]], str] | None = None,
) -> None:
    """Forward an MCP session between a client's stdio and the daemon, bound to `agent`; with no `agent`
    but a `pick`, to the one `pick` chooses among the daemon's agents (it raises to refuse them all).

    Ends when stdin ends (after the daemon has answered what it already received, at most
    `drain_seconds` later), when the daemon closes, or when stdout's reader goes away. Raises
    DaemonError when the daemon cannot be reached and NotFoundError when it refuses the agent.
    """
    daemon = await connect(socket_path)
    async with daemon:
        if agent is None and pick is not None:
            agent = pick(await served_agents(daemon))
        buffered = await bind(daemon, agent) if agent is not None else b""
        daemon_done = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_daemon_to_client, daemon, buffered, stdout, daemon_done, tg.cancel_scope)
            await _client_to_daemon(stdin, daemon)
            with anyio.move_on_after(drain_seconds):
                await daemon_done.wait()
            tg.cancel_scope.cancel()


async def run_bridge(socket_path: Path, agent: str | None, pick: Callable[[list[str]], str] | None = None) -> None:
    """`bridge` over this process's real stdin/stdout."""
    async with stdio_streams() as (stdin, stdout):
        await bridge(socket_path, agent, stdin, stdout, pick=pick)


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
