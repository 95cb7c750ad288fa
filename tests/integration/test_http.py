"""The HTTP face through the real daemon: the SDK's `streamable_http_client` calls every tool with a token,
and every refusal the issue lists (no, wrong, expired or revoked token, another agent, read-only writes,
a foreign Origin or Host, oversized and slow bodies) is answered before anything reaches an agent.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import orjson
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import TextContent

from memoryd.errors import first_error
from tests.conftest import write
from tests.integration.conftest import Http

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@asynccontextmanager
async def mcp_client(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers) as h, Client(streamable_http_client(url, http_client=h)) as c:
        yield c


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_text(result: Any) -> str:
    assert result.is_error
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


async def test_every_tool_through_the_sdk_client_with_a_token(http: Http) -> None:
    token = http.token("alpha")
    with anyio.fail_after(30):
        async with mcp_client(http.url, token) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            found = structured(await client.call_tool("memory_search", {"query": "bees roof", "minScore": 0}))
            got = structured(await client.call_tool("memory_get", {"path": "MEMORY.md", "from": 3, "lines": 1}))
            status = structured(await client.call_tool("status", {}))
            saved = structured(await client.call_tool("memory_write", {"text": "The hive has a blue door."}))
            again = structured(await client.call_tool("memory_search", {"query": "hive blue door", "minScore": 0}))
            outside = await client.call_tool("memory_get", {"path": "../beta/MEMORY.md"})
    assert tools == {"memory_search", "memory_get", "status", "memory_write"}
    assert [r["path"] for r in found["results"]] == ["MEMORY.md"]
    assert got["text"] == "The alpha agent keeps bees on the roof."
    assert status["agent"] == "alpha"
    assert saved["path"].startswith("memory/")
    assert saved["path"] in [r["path"] for r in again["results"]]
    assert outside.is_error


async def test_a_token_for_several_agents_names_one_in_the_url(http: Http) -> None:
    token = http.token("alpha", "beta")
    with anyio.fail_after(30):
        async with mcp_client(f"{http.url}/beta", token) as client:
            found = structured(await client.call_tool("memory_search", {"query": "chili peppers", "minScore": 0}))
            status = structured(await client.call_tool("status", {}))
        async with httpx2.AsyncClient() as h:
            bare = await h.post(http.url, json={}, headers={"Authorization": f"Bearer {token}"})
    assert [r["path"] for r in found["results"]] == ["MEMORY.md"]
    assert status["agent"] == "beta"
    assert bare.status_code == 400 and "/mcp/<agent>" in bare.json()["error"]


async def test_the_sdk_client_is_refused_without_a_token_or_with_another_agents(http: Http) -> None:
    beta_only = http.token("beta")
    with anyio.fail_after(30):
        for url, token in ((http.url, None), (f"{http.url}/alpha", beta_only), (http.url, "mdt_00000000_" + "x" * 43)):
            with pytest.raises(BaseException) as caught:  # the SDK wraps its MCPError in its task group's group
                async with mcp_client(url, token) as client:
                    await client.call_tool("status", {})
            refused = first_error(caught.value)
            assert isinstance(refused, MCPError), repr(refused)
            assert "Server returned an error response" in str(refused)


async def raw_post(http: Http, path: str, token: str | None, **kwargs: Any) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(kwargs.pop("headers", {}))
    body = kwargs.pop("body", orjson.dumps(_initialize()))
    async with httpx2.AsyncClient() as h:
        return await h.post(http.base + path, content=body, headers=headers, **kwargs)


def _initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }


async def test_no_wrong_expired_or_revoked_token_is_401(http: Http) -> None:
    good = http.token("alpha")
    expired = http.token("alpha", expires_s=3600)
    data = orjson.loads(http.store.path.read_bytes())
    for item in data["tokens"]:
        if expired.startswith(f"mdt_{item['id']}_"):
            item["expiresAt"] = 1_000  # long past
    http.store.path.write_bytes(orjson.dumps(data))
    revoked = http.token("alpha")
    with anyio.fail_after(30):
        assert (await raw_post(http, "/mcp", good)).status_code == 200
        assert (await raw_post(http, "/mcp", revoked)).status_code == 200
        done = await anyio.to_thread.run_sync(lambda: http.cli("token", "revoke", revoked.split("_")[1]))
        assert done.returncode == 0, done.stderr
        answers = {
            "none": await raw_post(http, "/mcp", None),
            "wrong": await raw_post(http, "/mcp", good[:-4] + ("BBBB" if good.endswith("AAAA") else "AAAA")),
            "garbage": await raw_post(http, "/mcp", "hello"),
            "expired": await raw_post(http, "/mcp", expired),
            "revoked": await raw_post(http, "/mcp", revoked),
            "basic": await raw_post(http, "/mcp", None, headers={"Authorization": f"Basic {good}"}),
        }
    for name, answer in answers.items():
        assert answer.status_code == 401, (name, answer.text)
        assert answer.headers["www-authenticate"] == "Bearer"
    assert len({a.text for a in answers.values()}) == 1  # nothing says which way a token failed


async def test_another_agent_is_403_whether_it_exists_or_not(http: Http) -> None:
    alpha = http.token("alpha")
    with anyio.fail_after(30):
        beta = await raw_post(http, "/mcp/beta", alpha)
        ghost = await raw_post(http, "/mcp/no-such-agent", alpha)
    assert beta.status_code == ghost.status_code == 403
    assert beta.text == ghost.text
    assert "beta" not in beta.text


async def test_a_session_belongs_to_the_token_that_opened_it(http: Http) -> None:
    first, second = http.token("alpha"), http.token("alpha")
    with anyio.fail_after(30):
        opened = await raw_post(http, "/mcp", first)
        session = opened.headers["mcp-session-id"]
        listed = orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        stolen = await raw_post(
            http, "/mcp", second, body=listed, headers={"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
        )
    assert stolen.status_code == 404


async def test_a_read_only_token_cannot_write(http: Http) -> None:
    token = http.token("alpha", read_only=True)
    with anyio.fail_after(30):
        async with mcp_client(http.url, token) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            refused = await client.call_tool("memory_write", {"text": "Should never be saved."})
            found = structured(await client.call_tool("memory_search", {"query": "bees", "minScore": 0}))
    assert "memory_write" not in tools
    assert "read-only" in error_text(refused)
    assert found["results"]
    assert not list((http.daemon.root / "alpha" / "memory").glob("20*.md"))  # no daily note was started


async def test_a_foreign_origin_or_host_is_refused(http: Http) -> None:
    token = http.token("alpha")
    port = http.base.rsplit(":", 1)[1]
    with anyio.fail_after(30):
        origin = await raw_post(http, "/mcp", token, headers={"Origin": "https://evil.example"})
        host = await raw_post(http, "/mcp", token, headers={"Host": f"evil.example:{port}"})
        own = await raw_post(http, "/mcp", token, headers={"Origin": f"http://localhost:{port}"})
    assert origin.status_code == 403
    assert host.status_code == 421
    assert own.status_code == 200


async def test_an_oversized_body_is_413(http: Http) -> None:
    token = http.token("alpha")
    with anyio.fail_after(30):
        big = await raw_post(http, "/mcp", token, body=b"[" + b" " * 70_000 + b"]")
        anonymous = await raw_post(http, "/mcp", None, body=b"[" + b" " * 70_000 + b"]")
    assert big.status_code == 413
    assert anonymous.status_code == 401  # refused on its headers: no body is read for a client without a token


async def test_a_slow_body_is_408(http: Http) -> None:
    token = http.token("alpha")
    host, port = http.base.removeprefix("http://").rsplit(":", 1)

    def slow() -> bytes:
        with socket.create_connection((host, int(port)), timeout=20) as s:
            head = (
                f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
                "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                "Content-Length: 100\r\n\r\n{"
            )
            s.sendall(head.encode())
            return s.recv(4096)

    answer = await anyio.to_thread.run_sync(slow)
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_a_non_loopback_address_is_refused_without_http_insecure(tmp_path: Path) -> None:
    write(tmp_path / "ws" / "MEMORY.md", "# M\n")
    config = write(tmp_path / "c.toml", f'[defaults]\nprovider = "none"\n[agents.main]\nworkspace = "{tmp_path}/ws"\n')
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    base = [sys.executable, "-m", "memoryd"]
    where = ["--config", str(config), "--state-dir", str(tmp_path / "state")]

    def serve() -> subprocess.CompletedProcess[str]:
        command = [*base, "serve", "--http", "0.0.0.0:0", *where]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=False)

    no_tokens = serve()
    create = [*base, "token", "create", "--agent", "main", *where]
    made = subprocess.run(create, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert made.returncode == 0, made.stderr
    plain = serve()
    assert no_tokens.returncode == 1 and "no tokens exist" in no_tokens.stderr
    assert plain.returncode == 1 and "http_insecure" in plain.stderr


async def test_a_damaged_token_file_lets_nobody_in(http: Http) -> None:
    token = http.token("alpha")
    http.store.path.write_text("{not json")
    with anyio.fail_after(30):
        answer = await raw_post(http, "/mcp", token)
    assert answer.status_code == 503 and "token file" in answer.json()["error"]
    http.daemon.wait_for_line("http_token_file_unreadable", since_start=True)


async def test_a_client_dribbling_its_headers_is_closed(http: Http) -> None:
    host, port = http.base.removeprefix("http://").rsplit(":", 1)

    def dribble() -> bytes:
        with socket.create_connection((host, int(port)), timeout=20) as s:
            s.sendall(f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nX-Slow: ".encode())
            return s.recv(4096)  # b"" once the daemon closes it (a timeout here fails the test)

    assert await anyio.to_thread.run_sync(dribble) == b""
    http.daemon.wait_for_line("http_slow_client_closed", since_start=True)
