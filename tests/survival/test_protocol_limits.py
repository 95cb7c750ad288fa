"""Hostile clients of the real daemon over its socket: bad ids, bad numbers and params, NUL, skipped
handshakes, a client that never reads, and more connections than the descriptor limit allows.

The descriptor limit is the daemon's own (`prlimit --nofile` execs it, so the pid is the daemon's);
memory is read from /proc/<pid>/status. Nothing waits on a clock edge: each test waits for replies,
log lines or a closed connection under a deadline.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from memoryd.server.schemas import load_tool_schemas
from tests.conftest import write
from tests.integration.daemon_fixture import Daemon
from tests.server.wire import RawClient, raw_client
from tests.survival.conftest import DaemonFactory, query
from tests.survival.test_hostile_files import proc_kib

pytestmark = pytest.mark.integration

CONFIG = """
[defaults]
provider = "none"
[defaults.sync]
watch_debounce_ms = 100
[daemon]
{daemon}
[agents.main]
workspace = "{ws}"
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n\nThe front door is blue.\n")
    write(ws / "memory" / "big.md", "".join(f"line {i} of a long note about kingfishers\n" for i in range(2000)))
    return ws


@pytest.fixture
def daemon(make_daemon: DaemonFactory, ws: Path) -> Daemon:
    d = make_daemon(CONFIG.format(ws=ws, daemon=""))
    d.start()
    d.wait_for_line("sync done")
    return d


def run(fn: Any, timeout: float = 60) -> Any:
    async def main() -> Any:
        with anyio.fail_after(timeout):
            return await fn()

    return anyio.run(main)


async def call(client: RawClient, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = await client.request(request_id, "tools/call", {"name": name, "arguments": arguments})
    assert "result" in reply, reply
    result: dict[str, Any] = reply["result"]
    return result


def test_requests_whose_id_is_no_id_are_answered_invalid_request_with_id_null(daemon: Daemon) -> None:
    async def attempt() -> list[dict[str, Any] | None]:
        replies: list[dict[str, Any] | None] = []
        async with raw_client(daemon.socket) as client:
            await client.initialize()
            for bad in ("{}", "[]", "true", "false", "null", "1.5", "1.0", '{"a":1}'):
                await client.send(f'{{"jsonrpc":"2.0","id":{bad},"method":"ping"}}\n'.encode())
                replies.append(await client.receive())
            replies.append(await client.request(9, "ping"))  # the connection goes on
        return replies

    *rejected, ping = run(attempt)
    for reply in rejected:
        assert reply is not None and reply["id"] is None and reply["error"]["code"] == -32600, reply
        assert "id must be a string or an integer" in reply["error"]["message"]
    assert ping == {"jsonrpc": "2.0", "id": 9, "result": {}}


def test_every_numeric_tool_argument_out_of_range_is_a_clear_tool_error(daemon: Daemon) -> None:
    """Every integer or number property of every tool's schema, with values past JSON's safe range."""
    numeric = [
        (tool.name, name, prop)
        for tool in load_tool_schemas()
        for name, prop in tool.input_schema.get("properties", {}).items()
        if prop.get("type") in ("integer", "number")
    ]
    assert {(t, n) for t, n, _ in numeric} >= {("memory_get", "from"), ("memory_get", "lines")}
    required = {  # the arguments each tool needs besides the number under test (memory_write has none today)
        "memory_search": {"query": "door"},
        "memory_get": {"path": "MEMORY.md"},
        "status": {},
        "memory_write": {"text": "never written: the number is refused first"},
    }

    async def attempt() -> list[tuple[str, str, str, dict[str, Any]]]:
        out: list[tuple[str, str, str, dict[str, Any]]] = []
        async with raw_client(daemon.socket) as client:
            await client.initialize()
            for i, (tool, name, _prop) in enumerate(numeric):
                for raw in ("1e300", "-1e300", "9.3e18", "18446744073709551616", "1e20"):
                    line = json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": i * 10 + len(out),
                            "method": "tools/call",
                            "params": {"name": tool, "arguments": {**required[tool], name: "NUMBER"}},
                        }
                    ).replace('"NUMBER"', raw)
                    await client.send(line.encode() + b"\n")
                    reply = await client.receive()
                    assert reply is not None
                    out.append((tool, name, raw, reply))
            out.append(("ping", "", "", await client.request("p", "ping")))
        return out

    replies = run(attempt)
    for tool, name, raw, reply in replies[:-1]:
        assert "result" in reply, (tool, name, raw, reply)  # a tool error, never a protocol error
        result = reply["result"]
        assert result["isError"] is True, (tool, name, raw, result)
        text = result["content"][0]["text"]
        assert text.startswith(f"invalid arguments: {name} must be at"), (tool, name, raw, text)
        assert "must be at most" in text or "must be at least" in text
    assert replies[-1][3]["result"] == {}
    assert daemon.alive


def test_a_nul_in_a_query_is_text(daemon: Daemon) -> None:
    async def attempt() -> list[dict[str, Any]]:
        async with raw_client(daemon.socket) as client:
            await client.initialize()
            return [
                await call(client, 1, "memory_search", {"query": "front\x00door", "minScore": 0}),
                await call(client, 2, "memory_search", {"query": "\x00", "minScore": 0}),
            ]

    glued, alone = run(attempt)
    assert glued["isError"] is False, glued
    assert [r["path"] for r in glued["structuredContent"]["results"]] == ["MEMORY.md"]
    assert alone["isError"] is False and alone["structuredContent"]["results"] == []


def test_a_request_before_initialize_says_what_to_send_first(daemon: Daemon) -> None:
    async def attempt() -> tuple[dict[str, Any], dict[str, Any]]:
        async with raw_client(daemon.socket) as client:
            early = await client.request(1, "tools/list")
            ping = await client.request(2, "ping")
        return early, ping

    early, ping = run(attempt)
    error = early["error"]
    assert error["code"] == -32602
    assert "tools/list before initialize: send an initialize request first" in error["message"]
    assert error["data"] == {"method": "tools/list", "send": "initialize"}
    assert ping["result"] == {}


def test_memoryd_sync_params_are_checked_as_strictly_as_tool_arguments(daemon: Daemon) -> None:
    bad: list[tuple[dict[str, Any], str]] = [
        ({"force": "true"}, "invalid params: force must be a boolean (got a string)"),
        ({"force": 1}, "invalid params: force must be a boolean (got an integer)"),
        ({"reason": 5}, "invalid params: reason must be a string (got an integer)"),
        ({"rebuild": True}, "invalid params: rebuild is not an accepted argument (accepted: force, reason, sessions)"),
        ({"sessions": "a.jsonl"}, "invalid params: sessions must be an array (got a string)"),
        ({"sessions": ["a.jsonl", 7]}, "invalid params: sessions[1] must be a string (got an integer)"),
        ({"sessions": ["x"] * 101}, "invalid params: sessions must hold at most 100 items (got 101)"),
    ]

    async def attempt() -> list[dict[str, Any]]:
        async with raw_client(daemon.socket) as client:
            await client.initialize()
            replies = [await client.request(i, "memoryd/sync", params) for i, (params, _) in enumerate(bad)]
            replies.append(await client.request("ok", "memoryd/sync", {"force": False, "_meta": {"x": 1}}))
            return replies

    *refused, fine = run(attempt)
    for (params, message), reply in zip(bad, refused, strict=True):
        assert reply["error"]["code"] == -32602, (params, reply)
        assert reply["error"]["message"] == message
    assert fine["result"]["full"] is False
    assert "reason=client" not in "".join(line for line in daemon.log_text().splitlines() if "full reindex" in line)


def test_a_client_that_pipelines_and_never_reads_is_dropped_and_memory_stays_bounded(
    make_daemon: DaemonFactory, ws: Path, figures: list[str]
) -> None:
    daemon = make_daemon(CONFIG.format(ws=ws, daemon="max_queued_bytes = 4194304"))
    daemon.start()
    daemon.wait_for_line("sync done")
    before = proc_kib(daemon.pid, "VmRSS")
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}}
    init = (
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
        + '\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    ).encode()
    get = (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
        b'"params":{"name":"memory_get","arguments":{"path":"memory/big.md"}}}\n'
    )
    sent = 0
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(str(daemon.socket))
    try:
        sock.sendall(init)
        for i in range(1, 3001):  # each reply is ~180 KB: 3,000 of them are ~540 MB
            try:
                sock.sendall(get % i)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += 1
        daemon.wait_for_line("client_not_reading_dropped", timeout=60)
        peak = proc_kib(daemon.pid, "VmRSS")
    finally:
        sock.close()
    grew_mib = (peak - before) // 1024
    figures.append(
        f"client pipelining memory_get without reading: dropped after {sent} requests, daemon RSS "
        f"{before // 1024} -> {peak // 1024} MiB (+{grew_mib}); before the fix 92 -> 622 MiB, still 624 after it "
        "left (3,000 requests, measured here)"
    )
    assert grew_mib < 150
    assert query(daemon, "front door") == ["MEMORY.md"]  # everyone else is served as before


def read_refusal(sock: socket.socket, timeout: float = 20.0) -> dict[str, Any] | None:
    sock.settimeout(timeout)
    data = b""
    try:
        while not data.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except TimeoutError:
        return None
    return json.loads(data) if data.strip() else None


def wait_until_served(path: Path, deadline_s: float = 30.0) -> None:
    """Until a new connection is served again: the daemon sees closed connections a moment after the client."""
    deadline = time.monotonic() + deadline_s
    while True:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(path))
            sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            reply = read_refusal(sock, timeout=5.0)
        if reply is not None and "result" in reply:
            return
        assert time.monotonic() < deadline, f"still refused: {reply}"
        time.sleep(0.05)  # a bounded retry of a connection, not synchronisation


def test_connections_past_the_descriptor_budget_are_refused_clearly_and_a_note_written_meanwhile_is_indexed(
    make_daemon: DaemonFactory, ws: Path, figures: list[str]
) -> None:
    limit = 256
    daemon = make_daemon(CONFIG.format(ws=ws, daemon=""), wrapper=("prlimit", f"--nofile={limit}:{limit}", "--"))
    daemon.start()
    daemon.wait_for_line("sync done")
    cap = int(daemon.wait_for_line("accepting", since_start=True).split("max_connections=")[1].split()[0])
    assert cap == limit - 64
    held = []
    try:
        for _ in range(cap + 40):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(daemon.socket))
            held.append(sock)
        refusal = read_refusal(held[-1])
        assert refusal is not None and refusal["error"]["code"] == -32011, refusal
        assert "daemon.max_connections" in refusal["error"]["message"]
        write(ws / "memory" / "meanwhile.md", "A note about the osprey written while every slot was taken.\n")
        daemon.wait_for_line("sync done")  # the watcher and the sync still had descriptors
    finally:
        for sock in held:
            sock.close()
    figures.append(f"nofile {limit}: {cap} connections served, 40 refused with -32011, the note indexed meanwhile")
    wait_until_served(daemon.socket)
    assert query(daemon, "osprey", wait_ms=5000) == ["memory/meanwhile.md"]
    assert "Too many open files" not in daemon.log_text()


def test_after_running_out_of_descriptors_a_note_written_meanwhile_is_indexed(
    make_daemon: DaemonFactory, ws: Path
) -> None:
    """max_connections set above what the limit allows: the daemon really hits EMFILE, and recovers."""
    limit = 128
    daemon = make_daemon(
        CONFIG.format(ws=ws, daemon="max_connections = 1000"), wrapper=("prlimit", f"--nofile={limit}:{limit}", "--")
    )
    daemon.start()
    daemon.wait_for_line("sync done")
    held = []
    try:
        for _ in range(limit + 20):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(daemon.socket))
            held.append(sock)
        daemon.wait_for_line("accept_failed_out_of_descriptors")
        write(ws / "memory" / "meanwhile.md", "A note about the osprey written while no descriptor was free.\n")
        daemon.wait_for_line("retrying")  # the sync could not open the note (or the database): retried
    finally:
        for sock in held:
            sock.close()
    wait_until_served(daemon.socket)
    assert query(daemon, "osprey", wait_ms=5000) == ["memory/meanwhile.md"]
