"""Fixtures: a fake service and a real daemon socket serving it, torn down after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import anyio
import pytest

from memoryd.server.unix import serve_unix
from tests.server.fakes import FakeMemoryService


@pytest.fixture
def service() -> FakeMemoryService:
    return FakeMemoryService()


@pytest.fixture
def socket_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Short on purpose: Unix socket paths are limited to ~104-108 bytes.
    return tmp_path_factory.mktemp("s") / "run" / "memoryd.sock"


@pytest.fixture
async def daemon(service: FakeMemoryService, socket_path: Path) -> AsyncIterator[Path]:
    async with anyio.create_task_group() as tg:
        await tg.start(partial(serve_unix, service, socket_path))
        yield socket_path
        service.release.set()
        tg.cancel_scope.cancel()
