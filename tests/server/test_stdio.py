"""`memoryd mcp`: the stdio bridge to the daemon, and the standalone stdio server."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from memoryd.errors import DaemonError, NotFoundError
from memoryd.server.stdio import bridge
from memoryd.server.unix import serve_unix
from tests.server.fakes import FakeMemoryService
from tests.server.wire import MemoryByteReceiveStream, MemoryByteSendStream, line_transport

pytestmark = pytest.mark.anyio

REPOSITORY = Path(__file__).resolve().parents[2]


async def test_the_bridge_forwards_a_full_session_and_ends_with_stdin(daemon: Path, service: FakeMemoryService) -> None:
    stdin_send, stdin_receive = anyio.create_memory_object_stream[bytes](16)
    stdout_send, stdout_receive = anyio.create_memory_object_stream[bytes](16)
    stdout = MemoryByteSendStream(stdout_send)
    bridge_ended = anyio.Event()

    async def run_bridge() -> None:
        async with stdout_send:
            await bridge(daemon, "alpha", MemoryByteReceiveStream(stdin_receive), stdout)
        bridge_ended.set()

    with anyio.fail_after(10):
        async with stdin_receive, stdout_receive, anyio.create_task_group() as tg:
            tg.start_soon(run_bridge)
            async with Client(line_transport(stdin_send, MemoryByteReceiveStream(stdout_receive))) as client:
                listing = await client.list_tools()
                search = await client.call_tool("memory_search", {"query": "door"})
                denied = await client.call_tool("memory_get", {"path": "../secrets.md"})
            await bridge_ended.wait()
    assert [tool.name for tool in listing.tools] == ["memory_search", "memory_get", "status", "memory_write"]
    assert search.structured_content["results"][0]["snippet"] == "The alpha door is blue."
    assert denied.is_error
    assert {call.agent for call in service.calls} == {"alpha"}
    for line in bytes(stdout.written).splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"


async def test_the_bridge_refuses_an_unknown_agent_before_forwarding_anything(daemon: Path) -> None:
    stdin_send, stdin_receive = anyio.create_memory_object_stream[bytes](1)
    stdout_send, stdout_receive = anyio.create_memory_object_stream[bytes](1)
    stdout = MemoryByteSendStream(stdout_send)
    with anyio.fail_after(10):
        async with stdin_send, stdin_receive, stdout_send, stdout_receive:
            with pytest.raises(NotFoundError, match="unknown agent 'gamma'"):
                await bridge(daemon, "gamma", MemoryByteReceiveStream(stdin_receive), stdout)
    assert stdout.written == b""


async def test_the_bridge_says_so_when_no_daemon_listens(socket_path: Path) -> None:
    stdin_send, stdin_receive = anyio.create_memory_object_stream[bytes](1)
    stdout_send, stdout_receive = anyio.create_memory_object_stream[bytes](1)
    with anyio.fail_after(10):
        async with stdin_send, stdin_receive, stdout_send, stdout_receive:
            with pytest.raises(DaemonError, match="cannot reach the memoryd daemon"):
                await bridge(
                    socket_path, "alpha", MemoryByteReceiveStream(stdin_receive), MemoryByteSendStream(stdout_send)
                )


async def test_the_bridge_ends_when_the_daemon_goes_away(service: FakeMemoryService, socket_path: Path) -> None:
    stdin_send, stdin_receive = anyio.create_memory_object_stream[bytes](1)
    stdout_send, stdout_receive = anyio.create_memory_object_stream[bytes](16)
    bridge_ended = anyio.Event()

    async def run_bridge() -> None:
        await bridge(socket_path, "beta", MemoryByteReceiveStream(stdin_receive), MemoryByteSendStream(stdout_send))
        bridge_ended.set()

    with anyio.fail_after(10):
        async with stdin_send, stdin_receive, stdout_send, stdout_receive, anyio.create_task_group() as outer:
            async with anyio.create_task_group() as daemon:
                await daemon.start(partial(serve_unix, service, socket_path))
                outer.start_soon(run_bridge)
                await stdin_send.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
                assert json.loads(await stdout_receive.receive())["id"] == 1
                daemon.cancel_scope.cancel()
            await bridge_ended.wait()


def _child(code: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-c", code], env={"PYTHONPATH": str(REPOSITORY)}, cwd=REPOSITORY
    )


async def test_the_standalone_server_speaks_mcp_on_real_stdio_and_keeps_logs_off_stdout(tmp_path: Path) -> None:
    # Unconfigured structlog prints to stdout; tool errors are logged, so a log line on stdout
    # would break the session. The stdio server points fd 1 at stderr while it serves.
    code = (
        "import anyio\n"
        "from memoryd.server.stdio import serve_stdio\n"
        "from tests.server.fakes import FakeMemoryService\n"
        "anyio.run(serve_stdio, FakeMemoryService(), 'beta')\n"
    )
    with (tmp_path / "stderr.log").open("w") as errlog, anyio.fail_after(30):
        async with Client(stdio_client(_child(code), errlog=errlog)) as client:
            denied = await client.call_tool("memory_get", {"path": "/etc/passwd"})
            search = await client.call_tool("memory_search", {"query": "red"})
    assert denied.is_error
    assert search.structured_content["results"][0]["snippet"] == "The beta door is red."
    assert "tool_error" in (tmp_path / "stderr.log").read_text()


async def test_the_bridge_runs_on_real_stdio_against_the_daemon(
    daemon: Path, service: FakeMemoryService, tmp_path: Path
) -> None:
    code = (
        "import anyio, sys\n"
        "from pathlib import Path\n"
        "from memoryd.server.stdio import run_bridge\n"
        "anyio.run(run_bridge, Path(sys.argv[1]), 'beta')\n"
    )
    params = _child(code)
    params.args.append(str(daemon))
    with (tmp_path / "stderr.log").open("w") as errlog, anyio.fail_after(30):
        async with Client(stdio_client(params, errlog=errlog)) as client:
            status = await client.call_tool("status", {})
    assert status.structured_content["agent"] == "beta"
    assert [(call.method, call.agent) for call in service.calls] == [("status", "beta")]
