"""A server middleware that makes the SDK's terse -32602s say what to do, and checks memoryd's own params.

The MCP SDK answers a request before `initialize`, and any params its models reject, with the same
`-32602 "Invalid request parameters"` and empty `data`: a client cannot tell what it did wrong. This
middleware (one per connection's Server, inside the SDK's chain) turns them into messages that name
the cause, and checks the params of memoryd's own methods with the validator the tools use
(`memoryd.server.validate`), so `memoryd/sync {"force": "true"}` is refused instead of read as true.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import structlog
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import ValidationError

from memoryd.server.validate import InvalidArgumentsError, validate_params

log = structlog.get_logger(__name__)

_SDK_GENERIC = "Invalid request parameters"


def before_initialize(method: str) -> str:
    """What a client that skipped the handshake must send."""
    return (
        f"{method} before initialize: send an initialize request first, then the notifications/initialized "
        "notification (or speak the 2026-07-28 protocol: server/discover, then requests carrying the protocol "
        "envelope in _meta); only ping is answered before that"
    )


def param_guard(methods: Mapping[str, Mapping[str, Any]]) -> ServerMiddleware[Any]:
    """The middleware; `methods` maps each of memoryd's own methods to its params schema."""

    async def guard(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        schema = methods.get(ctx.method)
        if schema is not None:
            try:
                params = validate_params(schema, ctx.params)
            except InvalidArgumentsError as exc:
                if ctx.request_id is None:  # a notification has nobody to answer
                    log.warning("notification_dropped", method=ctx.method, error=str(exc))
                    return None
                raise MCPError(INVALID_PARAMS, str(exc), {"field": exc.field}) from None
            ctx = dataclasses.replace(ctx, params=params)
        try:
            return await call_next(ctx)
        except MCPError as exc:
            error = exc.error
            if error.code == INVALID_PARAMS and error.message == _SDK_GENERIC and not error.data:
                # The only MCPError of that exact shape is the SDK's gate on requests before initialize.
                raise MCPError(
                    INVALID_PARAMS, before_initialize(ctx.method), {"method": ctx.method, "send": "initialize"}
                ) from None
            raise
        except ValidationError as exc:
            raise MCPError(INVALID_PARAMS, f"invalid params for {ctx.method}: {_describe(exc)}") from None

    return guard


def _describe(exc: ValidationError) -> str:
    """The first few of pydantic's complaints as `field: problem`, without the values (they may be long)."""
    parts = []
    for error in exc.errors()[:3]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "params"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)
