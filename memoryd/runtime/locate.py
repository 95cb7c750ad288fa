"""Which socket a client talks to, from any environment; and starting a daemon only when none serves.

The socket is, in order: the one the user chose (`--socket`, `$MEMORYD_SOCKET`,
`daemon.socket_path`); else the one recorded by the live daemon holding the state directory (so
an MCP host's minimal environment, cron, `sudo -u` or ssh reach the daemon a shell started);
else the default (`paths.socket_path`). A client that finds a daemon holding the state directory
always talks to it, waiting while it starts; it never works beside it in-process, and never
starts a second one. Every socket is checked before use (`memoryd.runtime.private`).
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memoryd import paths
from memoryd.errors import DaemonError
from memoryd.runtime.private import (
    PRIVATE_FILE_MODE,
    check_private_dir,
    check_server_peer,
    check_socket_file,
    ensure_private_dir,
)
from memoryd.runtime.record import EXIT_ALREADY_RUNNING, DaemonRecord, live_record

HOLDER_WAIT_S = 15.0
"""How long a client waits for a daemon that holds the state directory but does not answer yet."""
START_TIMEOUT_S = 30.0
"""How long `memoryd mcp` waits for the daemon it started to answer."""
_POLL_S = 0.05
_CONNECT_TIMEOUT_S = 2.0
LOG_NAME = "daemon.log"
START_LOCK_NAME = "start.lock"

Source = Literal["explicit", "record", "default"]


@dataclass(frozen=True, slots=True)
class Target:
    """The socket to try, why, and the daemon holding the state directory (if one does)."""

    socket: Path
    source: Source
    holder: int | None
    record: DaemonRecord | None


def target(state_dir: Path, explicit: Path | None) -> Target:
    holder, record = live_record(state_dir)
    if explicit is not None:
        return Target(explicit, "explicit", holder, record)
    if record is not None:
        return Target(record.socket, "record", holder, record)
    return Target(paths.socket_path(state_dir), "default", holder, record)


def answers(path: Path) -> bool:
    """True when a daemon of this user's accepts connections on `path`; False when nothing does.

    Raises NotPrivateError when the directory, the socket file or the listening process is not
    this user's: that is said, never silently skipped (another user may have put it there).
    """
    try:
        os.lstat(path.parent)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise DaemonError(f"cannot check the socket directory {path.parent}: {exc.strerror}") from exc
    check_private_dir(path.parent)
    if not check_socket_file(path):
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(_CONNECT_TIMEOUT_S)
    try:
        try:
            probe.connect(os.fspath(path))
        except TimeoutError:
            return True  # a full accept queue: a live daemon, busy; the real connection will wait its turn
        except OSError:
            return False
        check_server_peer(probe, path)
    finally:
        probe.close()
    return True


def find_daemon(state_dir: Path, explicit: Path | None, *, wait_s: float = HOLDER_WAIT_S) -> Path | None:
    """The socket of the daemon to talk to, or None when no daemon runs for this client.

    A daemon holding the state directory that does not answer (yet) is waited for, up to `wait_s`;
    then DaemonError says which daemon, where it should listen and where its log is.
    """
    deadline = time.monotonic() + wait_s
    while True:
        found = target(state_dir, explicit)
        if answers(found.socket):
            return found.socket
        if found.holder is None:
            return None
        if found.source == "explicit" and found.record is not None and found.record.socket != found.socket:
            raise DaemonError(
                f"nothing answers on {found.socket}, the socket you named; the daemon serving {state_dir} "
                f"(pid {found.record.pid}) listens on {found.record.socket}"
            )
        if time.monotonic() >= deadline:
            raise DaemonError(not_answering(state_dir, found, wait_s))
        time.sleep(_POLL_S)


def not_answering(state_dir: Path, found: Target, waited_s: float) -> str:
    pid = found.record.pid if found.record is not None else found.holder
    who = f"the memoryd daemon (pid {pid})" if pid else "a memoryd daemon"
    return (
        f"{who} holds {state_dir} but does not answer on {found.socket} after {waited_s:.0f} s; "
        f"see its log ({log_hint(state_dir, found.record)})"
    )


def log_hint(state_dir: Path, record: DaemonRecord | None) -> str:
    if record is not None and record.log:
        return record.log
    started_here = state_dir / LOG_NAME
    service = "journalctl --user -u memoryd" if sys.platform == "linux" else "~/Library/Logs/memoryd"
    return f"{started_here} if memoryd mcp started it, else {service}"


def start_daemon(
    serve_args: Sequence[str], state_dir: Path, explicit: Path | None, *, timeout_s: float = START_TIMEOUT_S
) -> Path:
    """The socket of the daemon serving `state_dir`: started in the background (`memoryd serve
    <serve_args>`, logging to `<state>/daemon.log`) only when no daemon holds the state directory.

    Waits for it to answer, at most `timeout_s`; DaemonError points to its log otherwise. Clients
    starting at once (two hosts launching their shims) take turns on `<state>/start.lock`, so the
    second finds the daemon the first started instead of starting one that could never serve.
    """
    found = find_daemon(state_dir, explicit, wait_s=timeout_s)
    if found is not None:
        return found
    ensure_private_dir(state_dir, what="state directory", tighten=True)
    deadline = time.monotonic() + timeout_s
    with _turn_to_start(state_dir, deadline):
        found = find_daemon(state_dir, explicit, wait_s=max(0.0, deadline - time.monotonic()))
        return found if found is not None else _spawn(serve_args, state_dir, explicit, deadline, timeout_s)


@contextmanager
def _turn_to_start(state_dir: Path, deadline: float) -> Iterator[None]:
    """Hold `<state>/start.lock` while starting a daemon: one starter at a time."""
    path = state_dir / START_LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise DaemonError(
                        f"another client is starting the memoryd daemon ({path}) and has not finished"
                    ) from None
                time.sleep(_POLL_S)
        yield
    finally:
        os.close(fd)  # drops the lock


def _spawn(
    serve_args: Sequence[str], state_dir: Path, explicit: Path | None, deadline: float, timeout_s: float
) -> Path:
    log_path = state_dir / LOG_NAME
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    try:
        start = os.lseek(fd, 0, os.SEEK_END)
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "memoryd", "serve", *serve_args],
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            start_new_session=True,  # outlives this shim: one daemon per user, for every later client
        )
    finally:
        os.close(fd)
    while True:
        found_target = target(state_dir, explicit)
        if answers(found_target.socket):
            return found_target.socket
        code = process.poll()
        if code is not None and not (code == EXIT_ALREADY_RUNNING and found_target.holder is not None):
            raise DaemonError(
                f"memoryd serve exited with status {code} before it answered: "
                f"{_last_line(log_path, start) or 'no output'} (see {log_path})"
            )
        if time.monotonic() >= deadline:
            raise DaemonError(
                f"started memoryd serve (pid {process.pid}) but it did not answer on {found_target.socket} "
                f"within {timeout_s:.0f} s; see {log_path}"
            )
        time.sleep(_POLL_S)


def _last_line(log_path: Path, start: int) -> str:
    """The last line the started daemon wrote (its one-line reason when it refuses to start)."""
    try:
        with log_path.open("rb") as f:
            f.seek(start)
            lines = f.read()[-8192:].decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""
