"""The MCP face of memoryd: the four tools plus memoryd's own methods, for one connection's agent.

A low-level `mcp` Server is built per connection, closed over that connection's AgentBinding, so
an agent can only ever be chosen by the connection, never by a tool argument. Tool mistakes a model
can fix (bad arguments, a path outside the roots, a missing file) come back as tool errors
(`isError: true`) with a clear text; anything unexpected is logged and becomes "internal error".
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    NotificationParams,
    PaginatedRequestParams,
    RequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)
from pydantic import Field

import memoryd
from memoryd.errors import MemorydError, ProtocolError, describe, first_error
from memoryd.server.guard import param_guard
from memoryd.server.schemas import ToolSchema, load_method_schemas, validate_arguments
from memoryd.server.service import MemoryService

log = structlog.get_logger(__name__)

BIND_METHOD = "memoryd/bind"
AGENTS_METHOD = "memoryd/agents"
SYNC_METHOD = "memoryd/sync"
TRANSCRIPT_UPDATED_METHOD = "memoryd/transcriptUpdated"
RELOAD_METHOD = "memoryd/reload"
FORGET_METHOD = "memoryd/forget"

MEMORYD_ERROR = -32010
"""JSON-RPC error code of a memoryd failure in memoryd's own requests (implementation-defined band)."""

INSTRUCTIONS = (
    "Long-term memory for this agent. Before answering anything about prior work, decisions, dates, "
    "people, preferences or todos, call memory_search; then use memory_get to read the lines you need, "
    "and cite them as Source: <path#line>."
)
WRITE_INSTRUCTIONS = (
    " When the user makes a decision, states a preference or a lasting fact, or asks you to remember "
    "something, save it with memory_write (search first: do not save what is already there; never save secrets)."
)
WRITE_TOOL = "memory_write"
_ANNOTATIONS: dict[str, dict[str, bool]] = {
    WRITE_TOOL: {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": False},
}
"""Tools that are not read-only; every other tool is annotated readOnlyHint."""

McpServer = Server[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class AgentBinding:
    """The agent a connection speaks for; None means "the daemon's only agent", resolved per call.

    `read_only` (an HTTP token without write access) hides memory_write and refuses a call to it.
    """

    agent: str | None = None
    read_only: bool = False

    def resolve(self, service: MemoryService) -> str:
        if self.agent is not None:
            return self.agent
        agents = service.agent_ids()
        if len(agents) == 1:
            return agents[0]
        if not agents:
            raise ProtocolError("this daemon serves no agents; add one to the configuration")
        raise ProtocolError(
            f"this connection is not bound to an agent and the daemon serves several: {', '.join(agents)}; "
            f'send {{"jsonrpc":"2.0","method":"{BIND_METHOD}","params":{{"agent":"<id>"}}}} as the first '
            "message (memoryd mcp --agent <id> does this)"
        )


class BindParams(RequestParams):
    """`memoryd/bind` params (request or notification; the first message of a connection only)."""

    agent: str


class AgentsParams(RequestParams):
    """`memoryd/agents` params: none."""


class SyncParams(RequestParams):
    """`memoryd/sync` params."""

    force: bool = False
    reason: str = "client"
    sessions: list[str] = Field(default_factory=list)


class ReloadParams(RequestParams):
    """`memoryd/reload` params: why (shown in the logs)."""

    reason: str = "client"


class ForgetParams(RequestParams):
    """`memoryd/forget` params: the transcripts to delete for good (by path, all, or by when they ended)."""

    paths: list[str] = Field(default_factory=list)
    all: bool = False
    before: str | None = None
    after: str | None = None


class TranscriptUpdatedParams(NotificationParams):
    """`memoryd/transcriptUpdated` params: the transcript file that grew."""

    path: str


def build_server(service: MemoryService, tools: Sequence[ToolSchema], binding: AgentBinding) -> McpServer:
    """A Server for one connection: tools/list from the protocol files, tools/call via the service."""
    by_name = {tool.name: tool for tool in tools}
    described = [(tool.name, _describe(tool)) for tool in tools]

    def write_listed() -> bool:
        """memory_write is listed unless the agent turned it off (`tools.write = false`) or the binding is
        read-only."""
        if binding.read_only:
            return False
        try:
            return service.write_enabled(binding.resolve(service))
        except MemorydError:
            return True  # no agent to ask (unbound, several agents): a call will say what to do

    async def list_tools(
        ctx: ServerRequestContext[dict[str, Any]], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        writable = write_listed()
        return ListToolsResult(tools=[tool for name, tool in described if name != WRITE_TOOL or writable])

    async def call_tool(ctx: ServerRequestContext[dict[str, Any]], params: CallToolRequestParams) -> CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}; this server has: {', '.join(by_name)}")
        if binding.read_only and tool.name == WRITE_TOOL:
            log.info("tool_refused", tool=tool.name, reason="read-only token")
            return _tool_error("this connection's token is read-only: memory_write is not allowed")
        try:
            arguments = validate_arguments(tool, params.arguments)
            agent = binding.resolve(service)
            payload = await _invoke(service, agent, tool.name, arguments)
        except MemorydError as exc:
            log.info("tool_error", tool=tool.name, error=str(exc), kind=type(exc).__name__)
            return _tool_error(str(exc))
        except Exception as exc:
            inner = first_error(exc)  # a task group's wrapping says nothing: answer with what it wraps
            if isinstance(inner, MemorydError):
                log.info("tool_error", tool=tool.name, error=str(inner), kind=type(inner).__name__)
                return _tool_error(describe(inner))
            log.exception("tool_failed", tool=tool.name, error=describe(exc))
            return _tool_error("internal error")
        text = orjson.dumps(payload, default=str).decode()
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=payload)

    async def sync(ctx: ServerRequestContext[dict[str, Any]], params: SyncParams) -> dict[str, Any]:
        with _as_mcp_error("sync_failed"):
            return await service.sync(
                binding.resolve(service), force=params.force, reason=params.reason, sessions=params.sessions
            )

    async def reload(ctx: ServerRequestContext[dict[str, Any]], params: ReloadParams) -> dict[str, Any]:
        """Daemon-wide, so any connection may ask (bound or not); a broken file is a result, not an error."""
        try:
            return await service.reload(params.reason)
        except MemorydError as exc:
            raise MCPError(MEMORYD_ERROR, str(exc), {"error": type(exc).__name__}) from exc

    async def forget(ctx: ServerRequestContext[dict[str, Any]], params: ForgetParams) -> dict[str, Any]:
        with _as_mcp_error("forget_failed"):
            return await service.forget(
                binding.resolve(service), paths=params.paths, all=params.all, before=params.before, after=params.after
            )

    async def transcript_updated(ctx: ServerRequestContext[dict[str, Any]], params: TranscriptUpdatedParams) -> None:
        try:
            await service.transcript_updated(binding.resolve(service), params.path)
        except MemorydError as exc:
            log.warning("transcript_update_ignored", path=params.path, error=str(exc))
        except Exception:
            log.exception("transcript_update_failed", path=params.path)

    server: McpServer = Server(
        "memoryd",
        version=memoryd.__version__,
        instructions=INSTRUCTIONS + (WRITE_INSTRUCTIONS if WRITE_TOOL in by_name and write_listed() else ""),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )

    async def agents(ctx: ServerRequestContext[dict[str, Any]], params: AgentsParams) -> dict[str, Any]:
        return served_agents(service)

    server.add_request_handler(AGENTS_METHOD, AgentsParams, agents)
    server.add_request_handler(SYNC_METHOD, SyncParams, sync)
    server.add_request_handler(RELOAD_METHOD, ReloadParams, reload)
    server.add_request_handler(FORGET_METHOD, ForgetParams, forget)
    server.add_notification_handler(TRANSCRIPT_UPDATED_METHOD, TranscriptUpdatedParams, transcript_updated)
    server.middleware.append(param_guard(method_schemas()))
    return server


def served_agents(service: MemoryService) -> dict[str, Any]:
    """`memoryd/agents`' result: the agents this daemon serves (a client applies its agent rule to them)."""
    return {"agents": service.agent_ids()}


@functools.cache
def method_schemas() -> dict[str, dict[str, Any]]:
    """memoryd's own methods' params schemas, read once (a small file beside the tool schemas)."""
    return load_method_schemas()


async def _invoke(service: MemoryService, agent: str, name: str, arguments: dict[str, Any]) -> dict[str, object]:
    match name:
        case "memory_search":
            return await service.search(
                agent,
                arguments["query"],
                max_results=arguments.get("maxResults"),
                min_score=None if arguments.get("minScore") is None else float(arguments["minScore"]),
                corpus=arguments["corpus"],
                wait_fresh_ms=arguments.get("waitFresh"),
                session_key=arguments.get("sessionKey"),
            )
        case "memory_get":
            return await service.get(
                agent, arguments["path"], from_line=arguments.get("from"), lines=arguments.get("lines")
            )
        case "status":
            return await service.status(agent, deep=arguments["deep"])
        case "memory_write":
            return await service.write(
                agent, arguments["text"], target=arguments["target"], heading=arguments.get("heading")
            )
    raise ProtocolError(f"unknown tool {name!r}")


def _describe(tool: ToolSchema) -> Tool:
    return Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=ToolAnnotations(
            title=tool.title, open_world_hint=False, **_ANNOTATIONS.get(tool.name, {"read_only_hint": True})
        ),
    )


def _tool_error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


@contextlib.contextmanager
def _as_mcp_error(event: str) -> Iterator[None]:
    """A method's failure as the client receives it: memoryd's own errors (also inside an exception group) as
    MEMORYD_ERROR with their message; anything else logged as `event` and answered "internal error"."""
    try:
        yield
    except MemorydError as exc:
        raise MCPError(MEMORYD_ERROR, str(exc), {"error": type(exc).__name__}) from exc
    except Exception as exc:
        inner = first_error(exc)
        if isinstance(inner, MemorydError):
            raise MCPError(MEMORYD_ERROR, describe(inner), {"error": type(inner).__name__}) from exc
        log.exception(event, error=describe(exc))
        raise MCPError(INTERNAL_ERROR, "internal error") from exc
