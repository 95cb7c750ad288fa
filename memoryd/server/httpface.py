"""The HTTP face's ASGI app: checks every request, then MCP at `/mcp[/<agent>]` or the viewer elsewhere.

In order, for every request: the Host and Origin headers (DNS rebinding: a page on another site cannot
drive this server through the user's browser; 421 / 403), then for MCP the bearer token (401 without a
valid one; 403 for an agent the token is not bound to — the same answer whether that agent exists or
not), then the token's limits (429), and only then the body, bounded by `daemon.max_line_bytes` as on
the socket (413, the SDK's check): a client without a token never gets a byte of its body buffered.
MCP requests go to the SDK's StreamableHTTPSessionManager of (agent, read-only): one per pair, each
serving the Server `memoryd.server.mcp.build_server` builds for the socket, on the same service and
actors. A session belongs to the token that opened it (the SDK answers 404 to any other token).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import anyio
import orjson
import structlog
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import Message, Receive, Scope, Send

from memoryd.errors import MemorydError
from memoryd.server.httplimits import SlowClientError, TokenLimits, deadline_receive
from memoryd.server.mcp import AgentBinding, build_server
from memoryd.server.schemas import ToolSchema
from memoryd.server.service import MemoryService
from memoryd.server.tokens import TokenRecord, TokenStore

log = structlog.get_logger(__name__)

MCP_PATH = "/mcp"
MAX_SESSIONS = 256
"""Open MCP sessions per (agent, read-only); past it the SDK answers 503 to a new one."""
SESSION_IDLE_S = 600.0
"""A session with no request for this long is closed (its id then answers 404)."""
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Origins:
    """The Host and Origin values this server answers (exact, lower-case)."""

    hosts: frozenset[str]
    origins: frozenset[str]

    def problem(self, headers: Headers) -> tuple[int, str] | None:
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            return 421, "this server does not answer for that Host (daemon.http_allowed_hosts)"
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return 403, "requests from that Origin are refused (daemon.http_allowed_origins)"
        return None

    def security(self) -> TransportSecuritySettings:
        """The same lists for the SDK's own check inside the transport."""
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=sorted(self.hosts),
            allowed_origins=sorted(self.origins),
        )


async def respond(
    send: Send, status: int, body: bytes, *, content_type: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                (b"x-content-type-options", b"nosniff"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def json_error(send: Send, status: int, message: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = orjson.dumps({"error": message})
    await respond(send, status, body, content_type="application/json", headers=headers)


class McpFace:
    """Routes authenticated MCP requests to the session manager of their (agent, read-only)."""

    def __init__(
        self,
        service: MemoryService,
        tools: Sequence[ToolSchema],
        security: TransportSecuritySettings,
        *,
        max_body_bytes: int,
    ) -> None:
        self.service = service
        self.tools = tools
        self.security = security
        self.max_body_bytes = max_body_bytes
        self._managers: dict[tuple[str, bool], StreamableHTTPSessionManager] = {}
        self._lock = anyio.Lock()
        self._tg: TaskGroup | None = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the managers' tasks until cancelled."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._tg = None

    async def manager(self, agent: str, read_only: bool) -> StreamableHTTPSessionManager:
        key = (agent, read_only)
        async with self._lock:
            found = self._managers.get(key)
            if found is not None:
                return found
            assert self._tg is not None, "McpFace.run is not running"
            server = build_server(self.service, self.tools, AgentBinding(agent, read_only=read_only))
            made = StreamableHTTPSessionManager(
                server,
                security_settings=self.security,
                max_request_body_size=self.max_body_bytes,
                json_response=True,  # one JSON body per POST: a third less CPU than an SSE stream per answer
                max_sessions=MAX_SESSIONS,
                session_idle_timeout=SESSION_IDLE_S,
            )
            await self._tg.start(_run_manager, made)
            self._managers[key] = made
            return made

    async def handle(self, scope: Scope, receive: Receive, send: Send, token: TokenRecord, agent: str) -> None:
        manager = await self.manager(agent, token.read_only)
        user = AuthenticatedUser(
            AccessToken(token=token.id, client_id=token.id, scopes=["read"] if token.read_only else ["read", "write"])
        )
        scope["user"] = user
        await manager.handle_request(scope, receive, send)


async def _run_manager(manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()


class HttpFace:
    """The whole ASGI app: the checks of the module docstring, then MCP or the viewer."""

    def __init__(
        self,
        mcp: McpFace,
        viewer: ASGIApp,
        store: TokenStore,
        origins: Origins,
        limits: TokenLimits,
        *,
        timeout_s: float,
        max_running: int = 2,
    ) -> None:
        self.mcp = mcp
        self.running = anyio.CapacityLimiter(max_running)
        self.store = store
        self.origins = origins
        self.limits = limits
        self.timeout_s = timeout_s
        self._viewer = viewer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no websockets, no lifespan (uvicorn runs with lifespan off)
        problem = self.origins.problem(Headers(scope=scope))
        if problem is not None:
            log.info("http_refused", path=scope.get("path"), status=problem[0], reason=problem[1])
            await json_error(send, *problem)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self._route(scope, deadline_receive(receive, self.timeout_s), tracked)
        except SlowClientError as exc:
            log.info("http_slow_client", path=scope.get("path"), error=str(exc))
            if not started:
                await json_error(send, 408, str(exc))

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if _traverses(path):
            log.info("http_refused", path=path[:200], status=404, reason="dot segments in the path")
            await json_error(send, 404, "no such page")
            return
        if path.startswith("/.well-known/"):  # no OAuth metadata: tokens come from `memoryd token create`
            await json_error(send, 404, "no such page")
            return
        if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
            await self._mcp(scope, receive, send, path[len(MCP_PATH) :].strip("/"))
        else:
            await self._viewer(scope, receive, send)

    async def _mcp(self, scope: Scope, receive: Receive, send: Send, named: str) -> None:
        try:
            token = self.authenticate(Headers(scope=scope))
        except MemorydError as exc:  # the token file is damaged: nobody gets in until it is fixed
            log.error("http_token_file_unreadable", error=str(exc))  # noqa: TRY400
            await json_error(send, 503, "the daemon cannot read its token file; see its log")
            return
        if token is None:
            await json_error(
                send, 401, "a valid bearer token is required (memoryd token create)", [(b"www-authenticate", b"Bearer")]
            )
            return
        agent = self.agent_for(token, named)
        if isinstance(agent, tuple):
            await json_error(send, *agent)
            return
        counted = scope.get("method") != "GET"  # an open event stream is not a running request
        refused = self.limits.admit(token.id, counted=counted)
        if refused is not None:
            retry = str(self.limits.retry_after(token.id)).encode()
            await json_error(send, 429, refused, [(b"retry-after", retry)])
            return
        try:
            if counted:
                async with self.running:  # every token together: the socket's clients keep the rest
                    await self.mcp.handle(scope, receive, send, token, agent)
            else:
                await self.mcp.handle(scope, receive, send, token, agent)
        finally:
            if counted:
                self.limits.release(token.id)

    def authenticate(self, headers: Headers) -> TokenRecord | None:
        value = headers.get("authorization", "")
        scheme, _, credential = value.partition(" ")
        if scheme.lower() != "bearer" or not credential.strip():
            return None
        return self.store.verify(credential.strip())

    def agent_for(self, token: TokenRecord, named: str) -> str | tuple[int, str]:
        """The agent a request speaks for, or (status, message): never says whether another agent exists."""
        if not named:
            if len(token.agents) == 1:
                return token.agents[0]
            return 400, f"this token serves several agents; use {MCP_PATH}/<agent>: {', '.join(token.agents)}"
        if named not in token.agents or named not in self.mcp.service.agent_ids():
            log.info("http_agent_refused", token=token.id, agent=named[:64])
            return 403, "this token does not grant access to that agent"
        return named


def _traverses(path: str) -> bool:
    """A path with `.` or `..` segments, a backslash or a NUL: never a page here (no client sends one)."""
    return "\\" in path or "\x00" in path or any(part in (".", "..") for part in path.split("/"))
