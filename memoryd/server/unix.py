"""The daemon's Unix socket: a private directory, one live daemon per socket, same-user peers only.

The socket lives in a 0700 directory and is itself 0600; on top of that every connection's peer
uid is checked (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS), so not even root's processes get
in. A second daemon is kept out twice: an flock on `<socket>.lock`, and a connection attempt
before anything is replaced — only a socket nobody answers on is treated as stale and removed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import stat
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import structlog
from anyio.abc import SocketAttribute, SocketListener, TaskGroup, TaskStatus

from memoryd.errors import DaemonError
from memoryd.runtime.private import ensure_private_dir, peer_uid
from memoryd.server.accept import Handler, accept_forever, connection_limit
from memoryd.server.backpressure import DEFAULT_MAX_QUEUED_BYTES
from memoryd.server.connection import serve_connection
from memoryd.server.framing import DEFAULT_MAX_LINE_BYTES
from memoryd.server.schemas import ToolSchema, load_tool_schemas
from memoryd.server.service import MemoryService
from memoryd.server.sockets import UnixStream, connect_unix

log = structlog.get_logger(__name__)

SOCKET_MODE = 0o600
_PROBE_SECONDS = 2.0


async def serve_unix(
    service: MemoryService,
    path: Path,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES,
    max_connections: int = 0,
    tools: Sequence[ToolSchema] | None = None,
    allowed_uid: int | None = None,
    inherited: socket.socket | None = None,
    task_status: TaskStatus[Path] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP on the socket at `path` until cancelled; reports the path once it accepts connections.

    `allowed_uid` is the uid peers must have (default: this process's). Raises DaemonError when a
    daemon already answers on `path`, or the path cannot be used; a stale socket file is replaced.
    `inherited` is a listening socket systemd opened (socket activation, `memoryd.service.activation`):
    it is served as it is, and its file is systemd's, so it is neither replaced nor removed here.
    `max_connections` (0: from the descriptor limit) and `max_queued_bytes` bound what clients may hold
    (`memoryd.server.accept`, `memoryd.server.backpressure`).
    """
    catalog = tools if tools is not None else await anyio.to_thread.run_sync(load_tool_schemas)
    uid = os.geteuid() if allowed_uid is None else allowed_uid
    handle = partial(
        _handle,
        service=service,
        tools=catalog,
        uid=uid,
        max_line_bytes=max_line_bytes,
        max_queued_bytes=max_queued_bytes,
    )
    accept = partial(accept_forever, max_connections=connection_limit(max_connections))
    if inherited is not None:
        await _serve_inherited(inherited, path, handle, accept, task_status)
        return
    await anyio.to_thread.run_sync(_prepare_directory, path.parent)
    lock = await anyio.to_thread.run_sync(_lock, path)
    try:
        await _remove_stale_socket(path)
        listener = await _listen(path)
        identity = _identity(path)
        try:
            async with listener, anyio.create_task_group() as connections:
                log.info("listening", socket=str(path))
                task_status.started(path)
                await accept(listener.extra(SocketAttribute.raw_socket), connections, handle)  # noqa: S610
        finally:
            if identity is not None and _identity(path) == identity:
                with anyio.CancelScope(shield=True):
                    await anyio.Path(path).unlink(missing_ok=True)
    finally:
        os.close(lock)


async def _serve_inherited(
    sock: socket.socket,
    path: Path,
    handle: Handler,
    accept: Callable[[socket.socket, TaskGroup, Handler], Coroutine[Any, Any, None]],
    task_status: TaskStatus[Path],
) -> None:
    """Serve systemd's listening socket. Its address is what clients use, whatever `path` says."""
    bound = sock.getsockname()
    address = Path(bound) if isinstance(bound, str) and bound else path
    if address != path:
        log.warning("socket_activation_path_differs", configured=str(path), systemd=str(address))
    sock.setblocking(False)
    try:
        async with anyio.create_task_group() as connections:
            log.info("listening", socket=str(address), activation="systemd")
            task_status.started(address)
            await accept(sock, connections, handle)
    finally:
        sock.close()


async def _handle(
    client: socket.socket,
    *,
    service: MemoryService,
    tools: Sequence[ToolSchema],
    uid: int,
    max_line_bytes: int,
    max_queued_bytes: int,
) -> None:
    try:
        peer = peer_uid(client)
        if peer is not None and peer != uid:
            log.warning("peer_refused", peer_uid=peer)
            client.close()
            return
        async with UnixStream(client) as stream:
            await serve_connection(
                service, tools, stream, stream, max_line_bytes=max_line_bytes, max_queued_bytes=max_queued_bytes
            )
    except Exception:
        client.close()
        log.exception("connection_failed")


def _prepare_directory(directory: Path) -> None:
    """Create the socket's directory 0700, or check that an existing one is ours and private (lstat:
    a symlink is refused, never followed)."""
    ensure_private_dir(directory, what="socket directory")


def _lock(path: Path) -> int:
    """Hold `<socket>.lock` for the daemon's lifetime: two daemons starting at once cannot both win."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise DaemonError(f"cannot open {lock_path}: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise DaemonError(f"another memoryd daemon is running (it holds {lock_path})") from exc
        raise DaemonError(f"cannot lock {lock_path}: {exc.strerror}") from exc
    return fd


async def _remove_stale_socket(path: Path) -> None:
    """Refuse if something answers on `path`; remove it if it is a socket nobody answers on."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise DaemonError(f"{path} exists and is not a socket; refusing to replace it")
    try:
        with anyio.fail_after(_PROBE_SECONDS):
            probe = await connect_unix(path)
    except (ConnectionRefusedError, FileNotFoundError):
        log.info("stale_socket_removed", socket=str(path))
        await anyio.Path(path).unlink(missing_ok=True)
        return
    except TimeoutError as exc:
        raise DaemonError(f"something holds {path} but does not answer; refusing to replace it") from exc
    except OSError as exc:
        raise DaemonError(f"cannot check {path}: {exc.strerror}") from exc
    await probe.aclose()
    raise DaemonError(f"a memoryd daemon is already listening on {path}")


async def _listen(path: Path) -> SocketListener:
    try:
        return await anyio.create_unix_listener(path, mode=SOCKET_MODE)
    except OSError as exc:
        raise DaemonError(f"cannot listen on {path}: {exc.strerror or exc}") from exc


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino
