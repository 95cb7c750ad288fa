"""The viewer's routes (placeholder until the pages land)."""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from memoryd.server.httpface import json_error
from memoryd.server.httplimits import TokenLimits
from memoryd.server.service import MemoryService
from memoryd.server.tokens import TokenStore


class Viewer:
    def __init__(self, service: MemoryService, store: TokenStore, limits: TokenLimits) -> None:
        self.service = service
        self.store = store
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await json_error(send, 404, "not found")
