"""Is this the user's own? Directories, socket files and the process at the other end of a socket.

A socket directory another local user can create first (`/tmp/memoryd-<uid>`) lets that user
answer the victim's queries. So nothing is used unless it is owned by this user and closed to
everyone else, checked with `lstat` (a symlink is refused, never followed), and a client also asks
the kernel who listens on a socket before it sends a byte.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import struct
import sys
from pathlib import Path

from memoryd.errors import NotPrivateError

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

# macOS <sys/un.h>: SOL_LOCAL, LOCAL_PEERCRED and sizeof(struct xucred); Python does not export them.
_SOL_LOCAL = 0
_LOCAL_PEERCRED = 0x001
_XUCRED_SIZE = 76


def owner_problem(path: Path, info: os.stat_result, uid: int, *, what: str) -> str | None:
    """Why `path` (already lstat'ed) is not this user's private directory, or None when it is."""
    if stat.S_ISLNK(info.st_mode):
        return f"the {what} {path} is a symbolic link; memoryd never follows one there"
    if not stat.S_ISDIR(info.st_mode):
        return f"the {what} {path} is not a directory"
    if info.st_uid != uid:
        return f"the {what} {path} belongs to uid {info.st_uid}, not to this user (uid {uid})"
    if info.st_mode & 0o077:
        return (
            f"the {what} {path} is open to others (mode {stat.S_IMODE(info.st_mode):o}); "
            f"make it private: chmod 700 {path}"
        )
    return None


def make_private_dirs(path: Path) -> None:
    """Create `path` and each missing parent 0700, whatever the umask (`Path.mkdir(parents=True)` gives the
    parents the umask's mode: the state directory's `agents/` was 0755). Existing folders are left as they are;
    FileExistsError when `path` is something else (a file), as `mkdir(exist_ok=True)` says it."""
    missing: list[Path] = []
    folder = path
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE_DIR_MODE)
        except FileExistsError:
            continue  # made meanwhile by another process, or a symlink: the caller's checks decide
        os.chmod(folder, PRIVATE_DIR_MODE, follow_symlinks=False)
    if not os.path.isdir(path):
        raise FileExistsError(errno.EEXIST, "exists and is not a folder", str(path))


def check_private_dir(path: Path, *, what: str = "socket directory") -> None:
    """Raise NotPrivateError unless `path` is a real directory owned by this user with mode 0700."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise NotPrivateError(f"cannot check the {what} {path}: {exc.strerror}") from exc
    problem = owner_problem(path, info, os.geteuid(), what=what)
    if problem is not None:
        raise NotPrivateError(problem)


def ensure_private_dir(path: Path, *, what: str, tighten: bool = False) -> bool:
    """Create `path` 0700 (missing parents too), or check that an existing one is this user's and private.

    With `tighten`, an existing directory of this user that is open to others is made 0700 (the
    state directory was created 0755 before); returns True when that happened. Anything else that
    is wrong (a symlink, another owner, open to others without `tighten`) raises NotPrivateError.
    """
    try:
        make_private_dirs(path.parent)
    except OSError as exc:
        raise NotPrivateError(f"cannot create the {what} {path}: {exc.strerror}") from exc
    try:
        path.mkdir(mode=PRIVATE_DIR_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise NotPrivateError(f"cannot create the {what} {path}: {exc.strerror}") from exc
    else:
        os.chmod(path, PRIVATE_DIR_MODE, follow_symlinks=False)  # the umask may have taken bits off
        return False
    info = os.lstat(path)
    uid = os.geteuid()
    if tighten and stat.S_ISDIR(info.st_mode) and info.st_uid == uid and info.st_mode & 0o077:
        try:
            os.chmod(path, PRIVATE_DIR_MODE, follow_symlinks=False)
        except OSError as exc:
            raise NotPrivateError(f"cannot make the {what} {path} private (chmod 700): {exc.strerror}") from exc
        return True
    problem = owner_problem(path, info, uid, what=what)
    if problem is not None:
        raise NotPrivateError(problem)
    return False


def is_users_private_dir(path: Path) -> bool:
    """True when `path` is a real directory owned by this user with mode 0700 (never raises)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return owner_problem(path, info, os.geteuid(), what="directory") is None


def is_users_dir(path: Path) -> bool:
    """True when `path` is a real directory owned by this user, whatever its mode (never raises)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def check_socket_file(path: Path) -> bool:
    """False when nothing is at `path`; True when it is a socket of this user's; else NotPrivateError."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise NotPrivateError(f"cannot check the socket {path}: {exc.strerror}") from exc
    if not stat.S_ISSOCK(info.st_mode):
        raise NotPrivateError(f"{path} is not a socket; refusing to use it")
    uid = os.geteuid()
    if info.st_uid != uid:
        raise NotPrivateError(
            f"the socket {path} belongs to uid {info.st_uid}, not to this user (uid {uid}); "
            "another user may have put it there: refusing to talk to it"
        )
    return True


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (its credentials when it connected or listened), or
    None where the platform cannot tell."""
    uid: int | None = None
    if sys.platform == "linux":
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("iII"))
        _pid, uid, _gid = struct.unpack("iII", raw)
    elif sys.platform == "darwin":
        raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, _XUCRED_SIZE)
        _version, uid = struct.unpack_from("=II", raw)
    return uid


def check_server_peer(sock: socket.socket, path: Path) -> None:
    """Refuse a connected socket whose listening process is not this user's: nothing was sent yet."""
    try:
        peer = peer_uid(sock)
    except OSError as exc:
        raise NotPrivateError(f"cannot tell who listens on {path}: {exc.strerror}") from exc
    uid = os.geteuid()
    if peer is not None and peer != uid:
        raise NotPrivateError(
            f"the process listening on {path} runs as uid {peer}, not as this user (uid {uid}); "
            "refusing to send it anything"
        )
