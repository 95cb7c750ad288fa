"""Take over the listening socket that systemd opened for the daemon (socket activation).

With `memoryd.socket` enabled, systemd owns the daemon's socket path, so clients can connect
before the daemon runs and while it restarts; it hands the listening socket over as fd 3 and
says so in LISTEN_PID / LISTEN_FDS (the sd_listen_fds protocol, read here without libsystemd).
"""

from __future__ import annotations

import os
import socket

from memoryd.errors import DaemonError

LISTEN_FDS_START = 3
_VARIABLES = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


def inherited_unix_listener() -> socket.socket | None:
    """The listening Unix stream socket systemd passed to this process, or None if it passed none.

    The LISTEN_* variables are removed in every case, so that processes memoryd starts do not take
    them for their own. Raises DaemonError when they are malformed, or when what was passed is not
    exactly one listening Unix stream socket (a misconfigured socket unit).
    """
    pid_text = os.environ.get("LISTEN_PID")
    count_text = os.environ.get("LISTEN_FDS")
    for name in _VARIABLES:
        os.environ.pop(name, None)
    if pid_text is None or count_text is None:
        return None
    try:
        pid, count = int(pid_text), int(count_text)
    except ValueError as exc:
        raise DaemonError(
            f"malformed socket activation variables: LISTEN_PID={pid_text!r} LISTEN_FDS={count_text!r}"
        ) from exc
    if pid != os.getpid() or count == 0:
        return None
    if count != 1:
        raise DaemonError(f"systemd passed {count} sockets; memoryd.socket must declare exactly one ListenStream=")
    return _adopt(LISTEN_FDS_START)


def _adopt(fd: int) -> socket.socket:
    try:
        sock = socket.socket(fileno=fd)
    except OSError as exc:
        raise DaemonError(f"systemd's socket (fd {fd}) is unusable: {exc.strerror or exc}") from exc
    try:
        listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) != 0
    except OSError as exc:
        sock.close()
        raise DaemonError(f"systemd's socket (fd {fd}) is unusable: {exc.strerror or exc}") from exc
    if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM or not listening:
        description = f"family {_name(sock.family)}, type {_name(sock.type)}, listening: {listening}"
        sock.close()
        raise DaemonError(f"systemd's socket (fd {fd}) is not a listening Unix stream socket ({description})")
    sock.set_inheritable(False)
    return sock


def _name(value: int) -> str:
    return str(getattr(value, "name", value))
