"""Another program on the socket, knowing only PROTOCOL.md: find the socket from the daemon's record,
then newline-delimited JSON-RPC 2.0 — bind, the MCP handshake, tools, errors — with plain sockets."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.host import UserHome

pytestmark = pytest.mark.integration


class Line:
    """One connection: send a JSON line (or raw bytes), read one JSON line back."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(path)
        self.reader = self.sock.makefile("rb")

    def send(self, message: dict[str, Any] | bytes) -> None:
        self.sock.sendall(message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n")

    def receive(self) -> dict[str, Any]:
        line = self.reader.readline()
        assert line.endswith(b"\n"), line
        reply: dict[str, Any] = json.loads(line)
        return reply

    def request(self, request_id: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})})
        reply = self.receive()
        assert reply["id"] == request_id, reply
        return reply

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def call(line: Line, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = line.request(request_id, "tools/call", {"name": name, "arguments": arguments})["result"]
    return result


def test_a_plain_socket_client_following_protocol_md(user: UserHome) -> None:
    daemon = user.serve_from_shell()
    record = json.loads((user.state / "daemon.json").read_text())  # "Record" in PROTOCOL.md
    assert record["pid"] == daemon.pid
    assert record["socket"] == str(user.runtime / "memoryd" / "memoryd.sock")  # $XDG_RUNTIME_DIR/memoryd/
    assert stat.S_IMODE(os.stat(record["socket"]).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(Path(record["socket"]).parent).st_mode) == 0o700

    line = Line(record["socket"])
    try:
        assert line.request("b", "memoryd/bind", {"agent": "main"}) == {
            "jsonrpc": "2.0",
            "id": "b",
            "result": {"agent": "main"},
        }
        before = line.request(0, "tools/list")
        assert before["error"]["code"] == -32602  # nothing but ping before initialize
        init = line.request(
            1,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        assert init["result"]["serverInfo"]["name"] == "memoryd"
        line.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = line.request(2, "tools/list")["result"]["tools"]
        assert [t["name"] for t in tools] == ["memory_search", "memory_get", "status", "memory_write"]

        found = call(line, 3, "memory_search", {"query": "spare key fern", "waitFresh": 10000})
        assert found["isError"] is False
        hits = found["structuredContent"]["results"]
        assert [(h["path"], h["startLine"] <= 4 <= h["endLine"]) for h in hits] == [("MEMORY.md", True)]
        assert json.loads(found["content"][0]["text"]) == found["structuredContent"]  # the same JSON as text

        got = call(line, 4, "memory_get", {"path": "MEMORY.md", "from": 4, "lines": 1})
        assert got["structuredContent"]["text"] == "The spare key is under the fern pot."

        wrong = call(line, 5, "memory_search", {"query": "key", "agent": "other"})
        assert wrong["isError"] is True and "agent is not an argument" in wrong["content"][0]["text"]

        line.send(b"this is not json\n")
        assert line.receive()["error"]["code"] == -32700
        assert line.request(6, "ping") == {"jsonrpc": "2.0", "id": 6, "result": {}}  # the connection goes on
        synced = line.request(7, "memoryd/sync", {"force": False})
        assert "error" not in synced, synced
    finally:
        line.close()
    assert user.daemons() == [daemon.pid]
