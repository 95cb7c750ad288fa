"""A small blocking JSON-RPC client for the daemon's socket: just what the CLI sends.

The MCP SDK's client costs ~2 s of imports (pydantic models of every protocol era) for a command
that hooks run on every prompt; this speaks the same wire format (PROTOCOL.md: one JSON message
per line, `memoryd/bind` first, the `initialize` handshake, then requests) with the standard
library and orjson. It never reads more than one reply line past its limit into memory.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import orjson

from memoryd import __version__
from memoryd.errors import DaemonError, NotFoundError, ProtocolError
from memoryd.runtime.private import check_server_peer

PROTOCOL_VERSION = "2025-11-25"
"""The MCP protocol version the CLI asks for (handshake era)."""

BIND_REQUEST_ID = "memoryd-bind"
AGENTS_METHOD = "memoryd/agents"
MAX_REPLY_BYTES = 64 * 1024 * 1024
"""Largest reply line accepted (memory_get may return whole files), as memoryd's other clients."""

CONNECT_TIMEOUT_S = 5.0


class DaemonRequestError(DaemonError):
    """The daemon answered a request with a JSON-RPC error; `code` is its error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class DaemonClient:
    """One connection to the daemon, optionally bound to an agent, after the MCP handshake.

    Use as a context manager: `with DaemonClient.open(path, agent) as client: client.call_tool(...)`.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._reader = sock.makefile("rb")
        self._next_id = 1
        self.agent: str | None = None
        """The agent the connection is bound to (None: unbound)."""

    @classmethod
    def open(
        cls,
        path: Path,
        agent: str | None,
        *,
        pick: Callable[[list[str]], str] | None = None,
        timeout: float | None = None,
    ) -> DaemonClient:
        """Connect, bind to `agent` and finish the `initialize` handshake. With no `agent` but a `pick`,
        the daemon's own agents (`memoryd/agents`) are asked first and `pick` chooses the one to bind
        (or raises saying how to choose); with neither the connection stays unbound. `timeout` bounds
        every later read and write (hooks must never hold a prompt); None waits as long as it takes."""
        client = cls(_connect(path, timeout))
        try:
            if agent is None and pick is not None:
                agent = pick(client._served())
            if agent is not None:
                client._bind(agent)
            client.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "memoryd-cli", "version": __version__},
                },
            )
            client.notify("notifications/initialized")
        except BaseException:
            client.close()
            raise
        client.agent = agent
        return client

    @classmethod
    def served_agents(cls, path: Path) -> list[str]:
        """The agents the daemon at `path` serves, in its configuration order (one `memoryd/agents`)."""
        with cls(_connect(path)) as client:
            return client._served()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._reader.close()
        self._sock.close()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and wait for its reply; DaemonRequestError for a JSON-RPC error."""
        request_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        reply = self._reply_to(request_id, method)
        if "error" in reply:
            raise _request_error(reply["error"], method)
        result = reply.get("result")
        if not isinstance(result, dict):
            raise ProtocolError(f"the daemon's answer to {method} carries no result object")
        return result

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """`tools/call`: the CallToolResult as the daemon sent it (`isError` for tool errors)."""
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def _served(self) -> list[str]:
        agents = self.request(AGENTS_METHOD).get("agents")
        if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
            raise ProtocolError(f"the daemon's answer to {AGENTS_METHOD} carries no list of agent ids")
        return agents

    def _bind(self, agent: str) -> None:
        self._send({"jsonrpc": "2.0", "id": BIND_REQUEST_ID, "method": "memoryd/bind", "params": {"agent": agent}})
        reply = self._reply_to(BIND_REQUEST_ID, "memoryd/bind")
        if "error" in reply:
            error = reply["error"]
            raise NotFoundError(str(error.get("message", "the daemon refused the agent")))

    def _send(self, message: dict[str, Any]) -> None:
        try:
            self._sock.sendall(orjson.dumps(message) + b"\n")
        except OSError as exc:
            raise DaemonError(f"the daemon closed the connection: {exc.strerror or exc}") from exc

    def _reply_to(self, request_id: int | str, method: str) -> dict[str, Any]:
        """The response with `request_id`; notifications and other messages on the way are skipped."""
        while True:
            try:
                line = self._reader.readline(MAX_REPLY_BYTES + 1)
            except OSError as exc:
                raise DaemonError(f"the daemon closed the connection: {exc.strerror or exc}") from exc
            if not line:
                raise DaemonError(f"the daemon closed the connection before answering {method}")
            if len(line) > MAX_REPLY_BYTES:
                raise ProtocolError(f"the daemon's answer to {method} is longer than {MAX_REPLY_BYTES} bytes")
            if not line.strip():
                continue
            try:
                message = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise ProtocolError(f"the daemon sent a line that is not JSON: {exc}") from exc
            if not isinstance(message, dict) or "method" in message:
                continue  # a notification or a request from the server: nothing the CLI answers
            if message.get("id") == request_id:
                return message
            if message.get("id") is None and "error" in message:  # the daemon could not read what we sent
                raise _request_error(message["error"], method)


def _connect(path: Path, timeout: float | None = None) -> socket.socket:
    """A connection to the daemon at `path`, its listener checked to be this user's before a byte is sent."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT_S if timeout is None else min(timeout, CONNECT_TIMEOUT_S))
    try:
        sock.connect(str(path))
    except OSError as exc:
        sock.close()
        raise DaemonError(f"cannot reach the memoryd daemon at {path}: {exc.strerror or exc}") from exc
    try:
        check_server_peer(sock, path)
    except BaseException:
        sock.close()
        raise
    sock.settimeout(timeout)  # None: a sync may take as long as it takes; Ctrl-C still interrupts
    return sock


def _request_error(error: object, method: str) -> DaemonRequestError:
    if not isinstance(error, dict):
        return DaemonRequestError(0, f"the daemon answered {method} with a malformed error")
    code = error.get("code")
    return DaemonRequestError(code if isinstance(code, int) else 0, str(error.get("message", f"{method} failed")))
