"""The CLI's raw JSON-RPC client against the real daemon, and against a scripted peer for the odd cases."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import orjson
import pytest

from memoryd.cli.link import request_sync, tool
from memoryd.cli.rpc import DaemonClient, DaemonRequestError
from memoryd.errors import DaemonError, NotFoundError, ProtocolError
from tests.integration.daemon_fixture import Daemon


@pytest.mark.integration
def test_tools_and_sync_through_the_real_daemon(daemon: Daemon) -> None:
    found = tool(daemon.socket, "alpha", "memory_search", {"query": "bees roof"})
    assert [r["path"] for r in found["results"]] == ["MEMORY.md"]
    assert request_sync(daemon.socket, "beta", force=False)["reason"] == "cli"
    with pytest.raises(DaemonError, match="not a memory file"):
        tool(daemon.socket, "alpha", "memory_get", {"path": "../beta/MEMORY.md"})
    with pytest.raises(NotFoundError, match="alpha, beta"):
        tool(daemon.socket, "gamma", "status", {})
    with DaemonClient.open(daemon.socket, "alpha") as client, pytest.raises(DaemonRequestError) as caught:
        client.request("memoryd/nothing")
    assert caught.value.code == -32601


def test_no_daemon_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DaemonError, match="cannot reach the memoryd daemon"):
        DaemonClient.open(tmp_path / "none.sock", None)


def _start(path: Path, script: list[list[bytes]]) -> None:
    """A peer on `path` that answers the n-th request (a line with an id) with the n-th list of lines."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        with conn, conn.makefile("rb") as lines:
            for answer in script:
                line = b""
                while b'"id"' not in line:
                    line = lines.readline()
                    if not line:
                        return
                conn.sendall(b"".join(answer))
        server.close()

    threading.Thread(target=serve, daemon=True).start()


def _line(message: dict[str, object]) -> bytes:
    return orjson.dumps(message) + b"\n"


INITIALIZED = _line({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}})


def test_notifications_blank_lines_and_other_ids_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "p.sock"
    _start(
        path,
        [
            [INITIALIZED],
            [
                b"\n",
                _line({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}),
                _line({"jsonrpc": "2.0", "id": 99, "result": {}}),
                _line({"jsonrpc": "2.0", "id": 2, "result": {"structuredContent": {"ok": True}}}),
            ],
        ],
    )
    with DaemonClient.open(path, None) as client:
        assert client.call_tool("status", {}) == {"structuredContent": {"ok": True}}


def test_an_error_without_id_and_a_bad_line_fail_clearly(tmp_path: Path) -> None:
    path = tmp_path / "p.sock"
    _start(path, [[INITIALIZED], [_line({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "nope"}})]])
    with DaemonClient.open(path, None) as client, pytest.raises(DaemonRequestError, match="nope"):
        client.request("ping")
    other = tmp_path / "q.sock"
    _start(other, [[INITIALIZED], [b"not json\n"]])
    with DaemonClient.open(other, None) as client, pytest.raises(ProtocolError, match="not JSON"):
        client.request("ping")
    closed = tmp_path / "r.sock"
    _start(closed, [[INITIALIZED]])
    with pytest.raises(DaemonError, match="closed the connection"), DaemonClient.open(closed, None) as client:
        client.request("ping")  # the peer hangs up after the handshake (or while the client finishes it)
