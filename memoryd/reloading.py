"""Configuration reloads: one path for SIGHUP, `memoryd reload` (`memoryd/reload`) and an edited file.

Every trigger runs `Reloader.reload`, one at a time: the file is read and checked first, and one that
cannot be read or parsed keeps the whole current configuration (the reply and the log say why); an
agent whose new store.path cannot be used keeps its own (`Supervisor.apply`).

The file is watched by polling its `stat` (inode, size, mtime in ns) every `POLL_S`, not by the
sources' watcher: editors save by writing a new file and renaming it over the old one (a new inode
in a folder nobody watches), the config's folder may not exist yet or be one inotify cannot watch,
and one `stat` a second costs nothing. A change reloads once; a half-written file fails to parse,
keeps the old configuration, and the write that completes it is another change that reloads.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskStatus

from memoryd import config as config_mod
from memoryd import paths
from memoryd.config import Config
from memoryd.errors import ConfigError

log = structlog.get_logger(__name__)

POLL_S = 1.0

Signature = tuple[int, int, int, int] | None
"""(device, inode, size, mtime ns) of the config file; None while it does not exist."""


@dataclass(slots=True)
class ReloadReport:
    """What a reload did: the agents added, removed, restarted and kept, or why nothing changed."""

    ok: bool
    reason: str
    config: str
    error: str | None = None
    changes: dict[str, list[str]] = field(default_factory=dict)
    agents: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "reason": self.reason,
            "config": self.config,
            "error": self.error,
            "added": self.changes.get("added", []),
            "removed": self.changes.get("removed", []),
            "restarted": self.changes.get("restarted", []),
            "kept": self.changes.get("kept", []),
            "agents": self.agents,
        }


def signature(path: Path) -> Signature:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class Reloader:
    """Reloads the daemon's configuration from `path` into `apply`; `after` runs after every applied reload."""

    def __init__(
        self,
        cfg: Config,
        config_path: Path | None,
        apply: Callable[[Config], Awaitable[dict[str, list[str]]]],
        after: Callable[[], None],
        agents: Callable[[], list[str]],
    ) -> None:
        self.path = config_path or cfg.source_file or paths.config_file()
        self._explicit = config_path is not None or cfg.source_file is not None
        self._state_dir = cfg.state_dir
        self._apply = apply
        self._after = after
        self._agents = agents
        self._lock = anyio.Lock()
        self._seen: Signature = signature(self.path)

    async def reload(self, reason: str) -> ReloadReport:
        """Read the file and switch to it; never raises (the report says what failed)."""
        async with self._lock:
            self._seen = await anyio.to_thread.run_sync(signature, self.path)
            report = ReloadReport(ok=False, reason=reason, config=str(self.path))
            try:
                new = await anyio.to_thread.run_sync(
                    functools.partial(config_mod.load, self._load_path(), state_dir=self._state_dir)
                )
            except ConfigError as exc:
                report.error = str(exc)
                log.error("config reload failed; keeping the current configuration", reason=reason, error=str(exc))  # noqa: TRY400
                return report
            except Exception as exc:  # a bug in loading: the daemon and its agents go on with what they have
                report.error = f"unexpected error: {exc!r}"
                log.exception("config reload failed unexpectedly; keeping the current configuration", reason=reason)
                return report
            try:
                report.changes = await self._apply(new)
            except Exception as exc:
                report.error = f"applying it failed: {exc!r}"
                log.exception("applying the reloaded configuration failed; agents keep what they run")
                return report
            self._after()
            report.ok = True
            report.agents = self._agents()
            log.info("config reloaded", reason=reason, config=str(self.path), **report.changes)
            return report

    def _load_path(self) -> Path | None:
        """The file to load: a default file that does not exist means all defaults, as at start."""
        return self.path if self._explicit or self.path.exists() else None

    async def watch(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Poll the file's signature; reload when it changes (also when it appears or disappears)."""
        task_status.started()
        while True:
            await anyio.sleep(POLL_S)
            now = await anyio.to_thread.run_sync(signature, self.path)
            if now != self._seen:
                log.info("config file changed", config=str(self.path))
                await self.reload("config file changed")
