"""Where memoryd keeps things: XDG on Linux, the usual Library folders on macOS.

Every function reads the environment when called (no import-time state), so tests and
service managers can point memoryd anywhere with environment variables.
"""

from __future__ import annotations

import os
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


def runtime_dir() -> Path:
    """The private (0700) directory of the daemon's socket and lock.

    `$XDG_RUNTIME_DIR/memoryd`, else `/tmp/memoryd-<uid>`: short enough for macOS's ~104-byte
    socket path limit, which `$TMPDIR` there is not.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and Path(runtime).is_absolute():
        return Path(runtime) / APP
    return Path("/tmp") / f"{APP}-{os.getuid()}"  # noqa: S108 - private 0700 dir, checked on creation


def socket_path() -> Path:
    explicit = os.environ.get("MEMORYD_SOCKET", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    return runtime_dir() / f"{APP}.sock"
