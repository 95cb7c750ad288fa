"""Per-token limits through the HTTP face served in-process (real uvicorn on a loopback port, a fake service):
the rate bucket answers 429 with Retry-After, and a token's requests at once are bounded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import anyio
import httpx2
import orjson
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from memoryd.server.http import HttpSettings, serve_http
from memoryd.server.tokens import TokenStore
from tests.server.fakes import FakeMemoryService

pytestmark = pytest.mark.anyio

INITIALIZE = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
)
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@asynccontextmanager
async def face(tmp_path: Path, service: FakeMemoryService, **settings: object) -> AsyncIterator[str]:
    async with anyio.create_task_group() as tg:
        url = await tg.start(partial(serve_http, service, HttpSettings("127.0.0.1:0", **settings), tmp_path))  # type: ignore[arg-type]
        try:
            yield url
        finally:
            tg.cancel_scope.cancel()


async def post(url: str, token: str) -> httpx2.Response:
    async with httpx2.AsyncClient() as h:
        return await h.post(url, content=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {token}"})


async def test_past_its_rate_a_token_gets_429_and_others_do_not(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    busy, other = (store.create(["alpha"], read_only=True, expires_s=None)[0] for _ in range(2))
    with anyio.fail_after(30):
        async with face(tmp_path, FakeMemoryService(), rate_per_minute=30) as url:  # a burst of 3
            statuses = [(await post(url, busy)).status_code for _ in range(5)]
            refused = await post(url, busy)
            fine = await post(url, other)
    assert statuses[:3] == [200, 200, 200] and 429 in statuses[3:]
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "rate limit" in refused.json()["error"]
    assert fine.status_code == 200


async def test_a_token_has_at_most_its_share_of_requests_running(tmp_path: Path) -> None:
    service = FakeMemoryService()
    token = TokenStore(tmp_path).create(["alpha"], read_only=True, expires_s=None)[0]
    with anyio.fail_after(30):
        async with face(tmp_path, service, max_concurrent=1) as url:
            headers = {"Authorization": f"Bearer {token}"}
            async with (
                httpx2.AsyncClient(headers=headers) as h,
                Client(streamable_http_client(url, http_client=h)) as c,
            ):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(c.call_tool, "memory_search", {"query": "slow"})
                    await service.slow_started.wait()
                    second = await post(url, token)
                    service.release.set()
                after = await c.call_tool("memory_search", {"query": "door"})
    assert second.status_code == 429 and "concurrency" in second.json()["error"]
    assert not after.is_error
