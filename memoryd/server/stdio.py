"""`memoryd mcp`: MCP over stdin/stdout, forwarded to the daemon (`memoryd.server.bridge`, light on
purpose) or served in-process (`serve_stdio`, `memoryd mcp --standalone`).

While either runs, file descriptor 1 is pointed at stderr and the protocol goes out through a
private duplicate, so a stray write anywhere in the process cannot corrupt the stream.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from memoryd.server.bridge import bridge, run_bridge, stdio_streams
from memoryd.server.connection import serve_connection
from memoryd.server.framing import DEFAULT_MAX_LINE_BYTES
from memoryd.server.schemas import ToolSchema, load_tool_schemas
from memoryd.server.service import MemoryService

__all__ = ["bridge", "run_bridge", "serve_stdio", "stdio_streams"]


async def serve_stdio(
    service: MemoryService,
    agent: str | None,
    *,
    tools: Sequence[ToolSchema] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> None:
    """Serve MCP in-process on this process's stdin/stdout (`memoryd mcp --standalone`)."""
    catalog = tools if tools is not None else await anyio.to_thread.run_sync(load_tool_schemas)
    async with stdio_streams() as (stdin, stdout):
        await serve_connection(service, catalog, stdin, stdout, max_line_bytes=max_line_bytes, agent=agent)
