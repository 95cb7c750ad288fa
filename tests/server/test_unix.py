"""The Unix socket transport: permissions, one daemon per socket, and bytes that are not MCP."""

from __future__ import annotations

import json
import os
import socket
import stat
from functools import partial
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from memoryd.errors import DaemonError
from memoryd.server.client import unix_client
from memoryd.server.unix import serve_unix
from tests.server.fakes import FakeMemoryService
from tests.server.wire import INITIALIZE, INITIALIZED, raw_client

pytestmark = pytest.mark.anyio


async def _still_serves(path: Path, agent: str = "alpha") -> None:
    async with Client(unix_client(path, agent)) as client:
        result = await client.call_tool("status", {})
    assert not result.is_error
    assert result.structured_content["agent"] == agent


async def test_the_socket_is_0600_inside_a_0700_directory(daemon: Path) -> None:
    assert stat.S_IMODE(os.stat(daemon).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(daemon.parent).st_mode) == 0o700


async def test_an_existing_directory_open_to_others_is_refused(service: FakeMemoryService, socket_path: Path) -> None:
    socket_path.parent.mkdir(mode=0o755)
    os.chmod(socket_path.parent, 0o755)
    with anyio.fail_after(10), pytest.raises(DaemonError, match="open to others"):
        await serve_unix(service, socket_path)
    assert not socket_path.exists()


async def test_a_second_daemon_on_a_live_socket_refuses_and_the_first_keeps_serving(
    daemon: Path, service: FakeMemoryService
) -> None:
    with anyio.fail_after(10):
        with pytest.raises(DaemonError, match="another memoryd daemon is running"):
            await serve_unix(service, daemon)
        await _still_serves(daemon)


async def test_a_live_listener_on_the_path_is_never_replaced(service: FakeMemoryService, socket_path: Path) -> None:
    socket_path.parent.mkdir(mode=0o700)
    with anyio.fail_after(10):
        async with await anyio.create_unix_listener(socket_path):
            with pytest.raises(DaemonError, match="already listening"):
                await serve_unix(service, socket_path)
            assert stat.S_ISSOCK(os.lstat(socket_path).st_mode)


async def test_a_stale_socket_file_is_replaced(service: FakeMemoryService, socket_path: Path) -> None:
    socket_path.parent.mkdir(mode=0o700)
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(socket_path))
    leftover.close()  # the file stays, nobody listens: what a crashed daemon leaves behind
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(partial(serve_unix, service, socket_path))
            await _still_serves(socket_path)
            tg.cancel_scope.cancel()


async def test_a_file_that_is_not_a_socket_is_left_alone(service: FakeMemoryService, socket_path: Path) -> None:
    socket_path.parent.mkdir(mode=0o700)
    socket_path.write_text("precious")
    with anyio.fail_after(10), pytest.raises(DaemonError, match="not a socket"):
        await serve_unix(service, socket_path)
    assert socket_path.read_text() == "precious"


async def test_the_socket_file_is_removed_on_shutdown(service: FakeMemoryService, socket_path: Path) -> None:
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(partial(serve_unix, service, socket_path))
            assert socket_path.exists()
            tg.cancel_scope.cancel()
    assert not socket_path.exists()


async def test_a_peer_with_another_uid_is_disconnected_without_a_reply(
    service: FakeMemoryService, socket_path: Path
) -> None:
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(partial(serve_unix, service, socket_path, allowed_uid=os.geteuid() + 1))
            async with raw_client(socket_path) as client:
                await client.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
                assert await client.receive() is None
            tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"this is not json\n", -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"\n', -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"p\xff\xfeing"}\n', -32700),
        (b"[1, 2, 3]\n", -32600),
        (b'{"jsonrpc":"1.0","method":"ping"}\n', -32600),
    ],
)
async def test_a_bad_line_gets_an_error_and_the_connection_keeps_serving(daemon: Path, line: bytes, code: int) -> None:
    with anyio.fail_after(10):
        async with raw_client(daemon) as client:
            await client.send(line)
            error = await client.receive()
            pong = await client.request(7, "ping")
    assert error is not None
    assert error["error"]["code"] == code
    assert error["id"] is None
    assert pong == {"jsonrpc": "2.0", "id": 7, "result": {}}


async def test_an_invalid_request_is_answered_with_its_id(daemon: Path) -> None:
    with anyio.fail_after(10):
        async with raw_client(daemon) as client:
            await client.send(b'{"jsonrpc":"2.0","id":"x7","method":42}\n')
            error = await client.receive()
    assert error == {
        "jsonrpc": "2.0",
        "id": "x7",
        "error": {"code": -32600, "message": "invalid request: not a JSON-RPC 2.0 message"},
    }


async def test_a_line_over_the_limit_is_refused_and_the_connection_continues(
    service: FakeMemoryService, socket_path: Path
) -> None:
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(partial(serve_unix, service, socket_path, max_line_bytes=1024))
            async with raw_client(socket_path) as client:
                huge = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 100_000 + b'"}}\n'
                await client.send(huge)
                error = await client.receive()
                pong = await client.request(2, "ping")
            tg.cancel_scope.cancel()
    assert error == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "invalid request: line longer than 1024 bytes"},
    }
    assert pong["result"] == {}


async def test_blank_lines_are_ignored(daemon: Path) -> None:
    with anyio.fail_after(10):
        async with raw_client(daemon) as client:
            await client.send(b"\n  \r\n\n")
            pong = await client.request(1, "ping")
    assert pong["result"] == {}


async def test_an_abrupt_disconnect_mid_request_leaves_the_daemon_serving(
    daemon: Path, service: FakeMemoryService
) -> None:
    with anyio.fail_after(10):
        async with raw_client(daemon) as client:
            await client.send({"jsonrpc": "2.0", "method": "memoryd/bind", "params": {"agent": "alpha"}})
            await client.initialize()
            call = {"name": "memory_search", "arguments": {"query": "slow"}}
            await client.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call})
            await service.slow_started.wait()
        async with raw_client(daemon) as half_a_line:
            await half_a_line.send(b'{"jsonrpc":"2.0","id":1,"meth')
        await _still_serves(daemon, "beta")
        service.release.set()
        await _still_serves(daemon, "alpha")


async def test_a_client_that_half_closes_still_gets_its_answers(daemon: Path) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "memory_search", "arguments": {"query": "red"}},
    }
    with anyio.fail_after(10):
        async with raw_client(daemon) as client:
            await client.send({"jsonrpc": "2.0", "method": "memoryd/bind", "params": {"agent": "beta"}})
            await client.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
            await client.send({**INITIALIZE, "id": 2})
            await client.send(INITIALIZED)
            await client.send(json.dumps(call).encode())  # the last line may lack its newline
            await client.stream.send_eof()
            replies = []
            while (reply := await client.receive()) is not None:
                replies.append(reply)
    assert sorted(reply["id"] for reply in replies) == [1, 2, 3]
    search = next(reply for reply in replies if reply["id"] == 3)
    assert search["result"]["structuredContent"]["results"][0]["snippet"] == "The beta door is red."


async def test_a_bind_request_is_confirmed(daemon: Path) -> None:
    with anyio.fail_after(10):
        async with raw_client(daemon) as client:
            reply = await client.request("b", "memoryd/bind", {"agent": "beta"})
    assert reply == {"jsonrpc": "2.0", "id": "b", "result": {"agent": "beta"}}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"agent": "gamma"}, "unknown agent 'gamma'; this daemon serves: alpha, beta"),
        (
            {"name": "alpha"},
            'memoryd/bind needs params {"agent": "<id>"}: name is not an accepted argument (accepted: agent)',
        ),
        ({"agent": 7}, 'memoryd/bind needs params {"agent": "<id>"}: agent must be a string (got an integer)'),
    ],
)
async def test_a_refused_bind_is_answered_and_the_connection_closed(
    daemon: Path, params: dict[str, str], message: str
) -> None:
    with anyio.fail_after(10):
        async with raw_client(daemon) as client:
            await client.send({"jsonrpc": "2.0", "method": "memoryd/bind", "params": params})
            error = await client.receive()
            after = await client.receive()
    assert error == {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": message}}
    assert after is None


async def test_a_late_bind_is_refused_and_the_binding_stays(daemon: Path) -> None:
    with anyio.fail_after(10):
        async with raw_client(daemon) as client:
            await client.send({"jsonrpc": "2.0", "method": "memoryd/bind", "params": {"agent": "alpha"}})
            await client.initialize()
            late = await client.request(9, "memoryd/bind", {"agent": "beta"})
            status = await client.request(10, "tools/call", {"name": "status", "arguments": {}})
    assert late["error"]["code"] == -32600
    assert status["result"]["structuredContent"]["agent"] == "alpha"


async def test_the_agents_are_listed_before_the_bind_and_in_the_session(daemon: Path) -> None:
    """`memoryd/agents` lets a client apply its agent rule to the daemon's agents, then bind on the same
    connection; a bad params object is answered and the connection goes on."""
    with anyio.fail_after(10):
        async with raw_client(daemon) as client:
            listed = await client.request("a", "memoryd/agents")
            bad = await client.request("x", "memoryd/agents", {"verbose": True})
            bound = await client.request("b", "memoryd/bind", {"agent": "beta"})
            await client.initialize()
            again = await client.request(7, "memoryd/agents", {})
            status = await client.request(8, "tools/call", {"name": "status", "arguments": {}})
    assert listed == {"jsonrpc": "2.0", "id": "a", "result": {"agents": ["alpha", "beta"]}}
    assert bad["error"]["code"] == -32602 and "verbose is not an accepted argument" in bad["error"]["message"]
    assert bound["result"] == {"agent": "beta"}
    assert again["result"]["agents"] == ["alpha", "beta"]
    assert status["result"]["structuredContent"]["agent"] == "beta"
