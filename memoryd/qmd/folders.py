"""Each agent's private QMD folders (`xdg-config`, `xdg-cache` under `<state>/agents/<id>/qmd/`), with the
user's downloaded QMD models linked in rather than copied (they are large and shared)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import structlog

from memoryd.runtime.private import make_private_dirs

log = structlog.get_logger(__name__)


def user_models_dir(env: Mapping[str, str]) -> Path:
    """Where QMD keeps the models it downloaded for this user (`$XDG_CACHE_HOME/qmd/models`)."""
    cache = env.get("XDG_CACHE_HOME", "").strip()
    base = Path(cache) if cache and Path(cache).is_absolute() else Path(env.get("HOME") or Path.home()) / ".cache"
    return base / "qmd" / "models"


def prepare_dirs(xdg_config: Path, xdg_cache: Path, env: Mapping[str, str]) -> None:
    """Create the agent's folders and link the shared models in (blocking; OSError when a folder cannot be made)."""
    for folder in (xdg_config / "qmd", xdg_cache / "qmd"):
        make_private_dirs(folder)
    shared, mine = user_models_dir(env), xdg_cache / "qmd" / "models"
    if shared.is_dir() and not mine.exists() and not mine.is_symlink():
        try:
            mine.symlink_to(shared, target_is_directory=True)
        except OSError as exc:
            log.warning("cannot link the shared QMD models", path=str(shared), error=exc.strerror)
