"""The state directory's two files that say which daemon serves it: the lock and the record.

`daemon.lock` is flock'ed by the daemon for its whole life (and holds its pid); `daemon.json` says
where that daemon listens (pid, socket, version, start time, log), written once it listens and
removed on a clean exit. A record is believed only while its daemon holds the lock: a daemon
killed with SIGKILL leaves its record behind, but the kernel drops its lock.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import NotPrivateError

LOCK_NAME = "daemon.lock"
RECORD_NAME = "daemon.json"

EXIT_ALREADY_RUNNING = 3
"""`memoryd serve`'s exit code when another daemon holds the state directory (the systemd unit's
`RestartPreventExitStatus=` names it, so a second daemon is not restarted in a loop)."""


@dataclass(frozen=True, slots=True)
class DaemonRecord:
    """Where a daemon listens, as it wrote it down."""

    pid: int
    socket: Path
    version: str
    started_at: str
    state_dir: Path
    log: str | None = None

    def to_json(self) -> bytes:
        fields = {
            "pid": self.pid,
            "socket": str(self.socket),
            "version": self.version,
            "startedAt": self.started_at,
            "stateDir": str(self.state_dir),
            "log": self.log,
        }
        return (json.dumps(fields, indent=2) + "\n").encode()

    @classmethod
    def from_json(cls, data: bytes) -> DaemonRecord | None:
        """The record in `data`, or None when it is not one (a half-written or foreign file)."""
        try:
            fields = json.loads(data)
            pid, sock = fields["pid"], fields["socket"]
        except (ValueError, TypeError, KeyError):
            return None
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not isinstance(sock, str) or not sock:
            return None
        log = fields.get("log")
        return cls(
            pid=pid,
            socket=Path(sock),
            version=str(fields.get("version", "")),
            started_at=str(fields.get("startedAt", "")),
            state_dir=Path(str(fields.get("stateDir", ""))),
            log=log if isinstance(log, str) and log else None,
        )


def lock_path(state_dir: Path) -> Path:
    return state_dir / LOCK_NAME


def record_path(state_dir: Path) -> Path:
    return state_dir / RECORD_NAME


def held_by(state_dir: Path) -> int | None:
    """The pid of the daemon holding `state_dir`'s lock (0 if it has not written it yet), or None
    when no process holds it. The probe takes a shared lock for an instant; `claim` allows for that."""
    try:
        fd = os.open(lock_path(state_dir), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None  # no lock file (never served), or not ours to read: nobody we could talk to holds it
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return pid_in_lock(fd)
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def pid_in_lock(fd: int) -> int:
    """The pid the lock's holder wrote into it (0 when it has not yet)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0


def read_record(state_dir: Path) -> DaemonRecord | None:
    """The record in `state_dir`, None when there is none; NotPrivateError when it is not this user's."""
    path = record_path(state_dir)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotPrivateError(f"the daemon record {path} is a symbolic link; refusing to read it") from exc
        raise NotPrivateError(f"cannot read the daemon record {path}: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotPrivateError(f"the daemon record {path} is not a regular file; refusing to read it")
        if info.st_uid != os.geteuid():
            raise NotPrivateError(
                f"the daemon record {path} belongs to uid {info.st_uid}, not to this user (uid {os.geteuid()}); "
                "refusing to use it"
            )
        data = os.read(fd, 64 * 1024)
    finally:
        os.close(fd)
    return DaemonRecord.from_json(data)


def live_record(state_dir: Path) -> tuple[int | None, DaemonRecord | None]:
    """(pid holding the state directory or None, that daemon's record or None while it has none)."""
    holder = held_by(state_dir)
    if holder is None:
        return None, None
    record = read_record(state_dir)
    if record is None or (holder and record.pid != holder):
        return holder, None  # a dead daemon's record: the holder has not written its own yet
    return holder or record.pid, record
