"""`daemon.http`: the Streamable HTTP face (and the viewer) beside the socket, on the same service.

Off unless `daemon.http` (or `memoryd serve --http HOST:PORT`) names an address. On loopback it
serves at once (every request still needs a token). Anywhere else it refuses to start unless
tokens exist and `daemon.http_insecure = true` says plain HTTP there is meant: TLS belongs to a
reverse proxy in front (README: Caddy, nginx), which then talks to a loopback address.
uvicorn serves the app on a socket bound here (port 0 picks a free one; the log names the URL) and
never touches signals: the daemon's own handler stops it with everything else.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import structlog
import uvicorn
from anyio.abc import TaskStatus

from memoryd.errors import ConfigError, DaemonError
from memoryd.server.httpface import HttpFace, McpFace, Origins
from memoryd.server.httplimits import TokenLimits
from memoryd.server.schemas import ToolSchema, load_tool_schemas
from memoryd.server.service import MemoryService
from memoryd.server.tokens import TokenStore
from memoryd.server.viewer.app import Viewer

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """What `serve_http` needs of `[daemon]`."""

    address: str
    insecure: bool = False
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    rate_per_minute: int = 600
    max_concurrent: int = 16
    max_running: int = 2
    timeout_s: float = 30.0
    max_body_bytes: int = 4 * 1024 * 1024


def parse_address(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `[v6]:PORT` or `:PORT` (loopback) as (host, port)."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ConfigError("daemon.http", f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:8765)")
    host = host.removeprefix("[").removesuffix("]") or "127.0.0.1"
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origins_for(host: str, port: int, settings: HttpSettings) -> Origins:
    """The bound address's own names (the loopback names when loopback), and the configured ones."""
    names = ["127.0.0.1", "localhost", "[::1]"] if is_loopback(host) else [f"[{host}]" if ":" in host else host]
    hosts = {f"{name}:{port}" for name in names} | {h.lower() for h in settings.allowed_hosts}
    origins = {f"http://{name}:{port}" for name in names} | {o.lower().rstrip("/") for o in settings.allowed_origins}
    return Origins(frozenset(hosts), frozenset(origins))


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers: the daemon's (SIGTERM, SIGHUP) stay in charge."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def check_exposure(host: str, settings: HttpSettings, store: TokenStore) -> None:
    """Refuse a non-loopback bind without tokens, or without `http_insecure` (plain HTTP on a network)."""
    if is_loopback(host):
        return
    if not store.records():
        raise DaemonError(f"refusing to serve HTTP on {host}: no tokens exist yet (memoryd token create --agent <id>)")
    if not settings.insecure:
        raise DaemonError(
            f"refusing plain HTTP on the non-loopback address {host}: bind 127.0.0.1 behind a TLS reverse "
            "proxy (README: HTTP face), or set daemon.http_insecure = true"
        )


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise DaemonError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


async def _close_slow_headers(server: uvicorn.Server, timeout_s: float) -> None:
    """Close connections that have sent no whole request for `timeout_s`: uvicorn waits for headers forever,
    so a client dribbling them (slowloris) would hold a connection, and enough of them the whole face."""
    waiting: dict[object, float] = {}
    while True:
        await anyio.sleep(min(1.0, timeout_s / 2))  # a watchdog's period, not a wait for an event
        now = anyio.current_time()
        live = set(server.server_state.connections)
        for conn in live:
            cycle = getattr(conn, "cycle", None)
            if cycle is not None and not cycle.response_complete:
                waiting.pop(conn, None)  # a request is being served: the body deadline (408) covers it
                continue
            since = waiting.setdefault(conn, now)
            if now - since >= timeout_s:
                transport = getattr(conn, "transport", None)
                if transport is not None:
                    log.info("http_slow_client_closed", waited_s=round(now - since, 1))
                    transport.close()
                waiting.pop(conn, None)
        for gone in set(waiting) - live:
            waiting.pop(gone, None)


async def serve_http(
    service: MemoryService,
    settings: HttpSettings,
    state_dir: Path,
    *,
    tools: Sequence[ToolSchema] | None = None,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; reports the MCP URL once the socket listens."""
    host, port = parse_address(settings.address)
    store = TokenStore(state_dir)
    check_exposure(host, settings, store)
    catalog = tools if tools is not None else await anyio.to_thread.run_sync(load_tool_schemas)
    sock = _bind(host, port)
    port = sock.getsockname()[1]
    origins = origins_for(host, port, settings)
    mcp = McpFace(service, catalog, origins.security(), max_body_bytes=settings.max_body_bytes)
    limits = TokenLimits(settings.rate_per_minute, settings.max_concurrent)
    viewer = Viewer(service, store, limits, catalog, max_body_bytes=settings.max_body_bytes, state_dir=state_dir)
    app = HttpFace(mcp, viewer, store, origins, limits, timeout_s=settings.timeout_s, max_running=settings.max_running)
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        access_log=False,
        server_header=False,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=2,
        limit_concurrency=512,  # connections and requests at once before uvicorn answers 503 to anyone
        h11_max_incomplete_event_size=64 * 1024,
    )
    server = _QuietServer(config)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/mcp"
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(mcp.run)
            tg.start_soon(_close_slow_headers, server, settings.timeout_s)
            if not is_loopback(host):
                log.warning("http_insecure: plain HTTP on a non-loopback address", url=url)
            log.info("http listening", url=url, viewer=f"http://{shown}:{port}/", tokens=len(store.records()))
            task_status.started(url)
            try:
                await server.serve(sockets=[sock])
            finally:
                server.should_exit = True
                if server.started:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(3):
                        await server.shutdown()
                tg.cancel_scope.cancel()
    finally:
        sock.close()
