"""Where memoryd keeps things: XDG on Linux, the usual Library folders on macOS.

Every function reads the environment when called (no import-time state), so tests and
service managers can point memoryd anywhere with environment variables.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

APP = "memoryd"


def _home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def _xdg(var: str, default: Path) -> Path:
    value = os.environ.get(var, "").strip()
    return Path(value) if value and Path(value).is_absolute() else default


def _is_macos() -> bool:
    return sys.platform == "darwin"


def config_file() -> Path:
    """`$MEMORYD_CONFIG`, else `$XDG_CONFIG_HOME/memoryd/config.toml`."""
    explicit = os.environ.get("MEMORYD_CONFIG", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    return _xdg("XDG_CONFIG_HOME", _home() / ".config") / APP / "config.toml"


def state_dir() -> Path:
    """Databases live here: `$MEMORYD_STATE_DIR`, else `$XDG_STATE_HOME/memoryd`."""
    explicit = os.environ.get("MEMORYD_STATE_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    if _is_macos() and "XDG_STATE_HOME" not in os.environ:
        return _home() / "Library" / "Application Support" / APP
    return _xdg("XDG_STATE_HOME", _home() / ".local" / "state") / APP


def cache_dir() -> Path:
    """Downloaded model files: `$XDG_CACHE_HOME/memoryd`."""
    if _is_macos() and "XDG_CACHE_HOME" not in os.environ:
        return _home() / "Library" / "Caches" / APP
    return _xdg("XDG_CACHE_HOME", _home() / ".cache") / APP


def data_dir() -> Path:
    """The default agent's workspace lives under here when none is configured."""
    if _is_macos() and "XDG_DATA_HOME" not in os.environ:
        return _home() / "Library" / "Application Support" / APP
    return _xdg("XDG_DATA_HOME", _home() / ".local" / "share") / APP


SOCKET_NAME = f"{APP}.sock"
MAX_SOCKET_PATH_BYTES = 100
"""Unix socket paths are limited to 104 bytes on macOS (108 on Linux), NUL included."""


def _users_dir(path: Path, *, private: bool, missing: bool = False) -> bool:
    """A real directory (not a symlink) owned by this user, and with `private` also mode 0700;
    `missing` is the answer when nothing is there."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return missing
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        return False
    return not (private and info.st_mode & 0o077)


def runtime_dir(state: Path | None = None) -> Path:
    """The private (0700) directory of the daemon's socket when none is configured: the first of

    1. `$XDG_RUNTIME_DIR/memoryd`, unless that variable names something that is not a directory of
       this user's (`su` keeps the other user's);
    2. `/run/user/<uid>/memoryd`, when `/run/user/<uid>` is this user's and 0700 (logind's runtime
       directory: what `$XDG_RUNTIME_DIR` would have said, for MCP hosts, cron and `sudo -u`);
    3. the state directory itself (`state`, default `state_dir()`), which is private already, when
       the socket path fits the platform's limit;
    4. `/tmp/memoryd-<uid>`, which the daemon and clients use only if it is this user's and 0700.

    Clients do not depend on this alone: a daemon records where it listens in its state directory
    (`memoryd.runtime.claim`), so a client with another environment still finds it.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and Path(runtime).is_absolute() and _users_dir(Path(runtime), private=False, missing=True):
        return Path(runtime) / APP
    logind = Path("/run/user") / str(os.geteuid())
    if _users_dir(logind, private=True):
        return logind / APP
    state = state if state is not None else state_dir()
    if len(os.fsencode(state / SOCKET_NAME)) <= MAX_SOCKET_PATH_BYTES:
        return state
    return Path("/tmp") / f"{APP}-{os.geteuid()}"  # noqa: S108 - used only when it is the user's and 0700


def explicit_socket() -> Path | None:
    """`$MEMORYD_SOCKET`, when set: a socket path the user chose."""
    explicit = os.environ.get("MEMORYD_SOCKET", "").strip()
    return Path(explicit).expanduser() if explicit else None


def socket_path(state: Path | None = None) -> Path:
    """`$MEMORYD_SOCKET`, else `memoryd.sock` in `runtime_dir(state)`."""
    return explicit_socket() or runtime_dir(state) / SOCKET_NAME
