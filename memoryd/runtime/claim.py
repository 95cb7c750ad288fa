"""The daemon's claim on its state directory: one daemon per state directory, found by its record.

`memoryd serve` claims the state directory before it does anything else. A second daemon cannot
take the lock and exits at once, naming the live one (exit code `record.EXIT_ALREADY_RUNNING`, which the
systemd unit's `RestartPreventExitStatus=` keeps from restarting); before this lock it started,
missed the writer lock of every database and restarted its agents forever.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import os
import time
from pathlib import Path

import structlog

from memoryd import __version__
from memoryd.errors import DaemonError, DaemonRunningError
from memoryd.runtime.private import PRIVATE_FILE_MODE, ensure_private_dir
from memoryd.runtime.record import DaemonRecord, lock_path, pid_in_lock, read_record, record_path

log = structlog.get_logger(__name__)

_PROBE_PATIENCE_S = 1.0
"""How long a lock held shared is retried: a client's probe holds it so for an instant."""
_PID_PATIENCE_S = 1.0
"""How long a loser waits for the winner's pid, to name it (the winner writes it right after locking)."""


class StateClaim:
    """This daemon's lock on the state directory (held until `release`), and its record."""

    def __init__(self, state_dir: Path, fd: int, *, tightened: bool) -> None:
        self.state_dir = state_dir
        self.tightened = tightened
        self._fd: int | None = fd
        self._published = False

    def publish(self, socket: Path, *, log_file: str | None = None) -> DaemonRecord:
        """Write down where this daemon listens: 0600, atomically (a reader sees the old file or the new)."""
        started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        record = DaemonRecord(os.getpid(), socket, __version__, started, self.state_dir, log_file or _stderr_file())
        final = record_path(self.state_dir)
        temporary = final.with_name(f".{final.name}.{os.getpid()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(temporary, flags, PRIVATE_FILE_MODE)
            try:
                os.fchmod(fd, PRIVATE_FILE_MODE)
                os.write(fd, record.to_json())
            finally:
                os.close(fd)
            os.replace(temporary, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise DaemonError(f"cannot write the daemon record {final}: {exc.strerror}") from exc
        self._published = True
        return record

    def release(self) -> None:
        """Remove the record (if it is still this daemon's), then let go of the lock."""
        if self._fd is None:
            return
        if self._published:
            with contextlib.suppress(OSError, DaemonError):
                current = read_record(self.state_dir)
                if current is not None and current.pid == os.getpid():
                    os.unlink(record_path(self.state_dir))
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


def claim_state_dir(state_dir: Path, *, patience_s: float = _PROBE_PATIENCE_S) -> StateClaim:
    """Create (0700) or tighten the state directory and lock it for this daemon's lifetime.

    Raises DaemonRunningError naming the live daemon when another holds it, and NotPrivateError
    when the directory is not this user's.
    """
    tightened = ensure_private_dir(state_dir, what="state directory", tighten=True)
    path = lock_path(state_dir)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    except OSError as exc:
        raise DaemonError(f"cannot open the daemon lock {path}: {exc.strerror}") from exc
    deadline = time.monotonic() + patience_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                os.close(fd)
                raise DaemonError(f"cannot lock {path}: {exc.strerror}") from exc
        if _held_exclusively(fd) or time.monotonic() >= deadline:
            message = already_running(state_dir, _holder(fd, state_dir), _written_pid(fd))
            os.close(fd)
            raise DaemonRunningError(message)
        time.sleep(0.02)  # only clients' probes hold it, shared, for an instant
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    if tightened:
        log.warning("state directory was open to others; made it private (0700)", state_dir=str(state_dir))
    return StateClaim(state_dir, fd, tightened=tightened)


def already_running(state_dir: Path, holder: DaemonRecord | None, pid: int) -> str:
    """One line naming the daemon that holds `state_dir`."""
    if holder is not None:
        return (
            f"another memoryd daemon already serves {state_dir}: pid {holder.pid}, socket {holder.socket} "
            f"(since {holder.started_at}); clients reach it from any environment, nothing to start"
        )
    who = f"pid {pid}" if pid else "another process"
    return f"another memoryd daemon ({who}) holds {lock_path(state_dir)} and is still starting; nothing to start"


def _held_exclusively(fd: int) -> bool:
    """Whether a daemon holds the lock (exclusively, from its first instant), not a client's probe
    (`record.held_by` takes it shared): the loser of daemons started at once knows it lost at once,
    without waiting for the winner to write its pid or its record."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def _written_pid(fd: int) -> int:
    """The pid the lock's holder writes just after taking it (0 if it has not yet, after a short wait)."""
    deadline = time.monotonic() + _PID_PATIENCE_S
    while not (pid := pid_in_lock(fd)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return pid


def _holder(fd: int, state_dir: Path) -> DaemonRecord | None:
    """The record of the daemon holding the lock, if it has published one and is alive."""
    try:
        record = read_record(state_dir)
    except DaemonError:
        return None
    pid = pid_in_lock(fd)
    if record is None or (pid and record.pid != pid) or not _alive(record.pid):
        return None
    return record


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stderr_file() -> str | None:
    """Where this process's stderr goes when it is a file (a daemon started by `memoryd mcp` logs to
    `<state>/daemon.log`): named in the record so a client's error can point to the log."""
    try:
        target = os.readlink("/proc/self/fd/2")
    except OSError:
        return None
    return target if target.startswith("/") and os.path.isfile(target) else None
