"""`memoryd serve`: the per-user daemon.

Start-up order matters: the state directory is claimed first (a lock held for the daemon's
lifetime: a second daemon names the live one and exits before it touches anything), then the
socket, whose location is then recorded in the state directory for clients of any environment,
then the supervisor starts the agents' actors, then the watcher. SIGTERM/SIGINT shut down
cleanly (in-flight writes finish in their threads and commit or roll back); SIGHUP, `memoryd/reload`
and an edit of the config file reload the configuration and add, remove or restart agents
(`memoryd.reloading`).
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus

from memoryd import heap, paths
from memoryd.config import Config
from memoryd.embeddings.select import ProviderPool
from memoryd.errors import DaemonError, MemorydError, describe, first_error
from memoryd.idletrim import IdleTrim
from memoryd.index.actor import AgentIndex, ProviderFactory
from memoryd.index.discover import transcript_event_path
from memoryd.index.forget import Forget, parse_when
from memoryd.index.supervisor import Supervisor
from memoryd.index.watcher import Watcher
from memoryd.isotime import iso
from memoryd.reloading import Reloader
from memoryd.runtime.claim import StateClaim, claim_state_dir
from memoryd.runtime.private import make_private_dirs
from memoryd.server.http import HttpSettings, serve_http
from memoryd.server.service import Corpus, WriteTarget
from memoryd.server.unix import serve_unix
from memoryd.service.activation import inherited_unix_listener

log = structlog.get_logger(__name__)

RECENT_WRITES = 20
"""memory_writes the viewer lists per agent (kept in memory, since the daemon started)."""
FILES_SHOWN = 5000
"""The viewer lists at most this many of an agent's indexed files."""


class DaemonService:
    """The MemoryService the MCP edge calls, backed by the supervisor's actors."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self.started = time.monotonic()
        self.idle_trim = IdleTrim()
        self.reloader: Reloader | None = None
        self._writes: dict[str, deque[dict[str, object]]] = {}

    async def reload(self, reason: str) -> dict[str, object]:
        if self.reloader is None:
            raise DaemonError("the daemon is still starting; try again")
        return (await self.reloader.reload(reason)).to_dict()

    def agent_ids(self) -> list[str]:
        return self.supervisor.agent_ids()

    async def _actor(self, agent: str) -> AgentIndex:
        self.idle_trim.touch()  # every request goes through here: the heap is trimmed once they stop
        await self.supervisor.ready.wait()
        return self.supervisor.actor(agent)

    async def search(
        self,
        agent: str,
        query: str,
        *,
        max_results: int | None,
        min_score: float | None,
        corpus: Corpus,
        wait_fresh_ms: int | None,
        session_key: str | None = None,
    ) -> dict[str, object]:
        actor = await self._actor(agent)
        resp = await actor.search(
            query,
            max_results=max_results,
            min_score=min_score,
            corpus=corpus,
            wait_fresh_ms=wait_fresh_ms,
            session_key=session_key,
        )
        return resp.to_dict()

    async def get(self, agent: str, path: str, *, from_line: int | None, lines: int | None) -> dict[str, object]:
        actor = await self._actor(agent)
        return (await actor.get(path, from_line=from_line, lines=lines)).to_dict()

    async def status(self, agent: str, *, deep: bool) -> dict[str, object]:
        actor = await self._actor(agent)
        st = await actor.status(deep=deep)
        last = actor.engine.state.last_sync
        st["daemon"] = {
            "uptimeS": round(time.monotonic() - self.started, 3),
            "queueDepth": actor.queue_depth,
            "agents": self.agent_ids(),
            "lastSync": None
            if last is None
            else {
                "reason": last.reason,
                "at": last.to_dict()["at"],
                "durationMs": last.duration_ms,
                "error": last.error,
            },
        }
        return st

    async def list_files(self, agent: str) -> list[dict[str, object]]:
        """The agent's indexed files (the viewer's listing; each is then read through memory_get)."""
        actor = await self._actor(agent)
        readers = actor.engine.database.readers

        def read() -> list[dict[str, object]]:
            with readers.reader() as (conn, _vec):
                rows = conn.execute(
                    "SELECT source, path, size FROM files ORDER BY source, path LIMIT ?", (FILES_SHOWN,)
                )
                return [{"source": source, "path": path, "size": size} for source, path, size in rows]

        return await anyio.to_thread.run_sync(read)

    def write_enabled(self, agent: str) -> bool:
        return self.supervisor.cfg.agent(agent).settings.tools.write

    async def write(self, agent: str, text: str, *, target: WriteTarget, heading: str | None) -> dict[str, object]:
        actor = await self._actor(agent)
        saved = (await actor.write(text, target=target, heading=heading)).to_dict()
        log = self._writes.setdefault(agent, deque(maxlen=RECENT_WRITES))
        log.appendleft(
            {"at": iso(int(time.time() * 1000)), "path": saved.get("path"), "citation": saved.get("citation")}
        )
        return saved

    def recent_writes(self, agent: str) -> list[dict[str, object]]:
        """The agent's latest memory_writes since the daemon started, newest first (the viewer shows them)."""
        return list(self._writes.get(agent, ()))

    async def sync(self, agent: str, *, force: bool, reason: str, sessions: Sequence[str] = ()) -> dict[str, object]:
        actor = await self._actor(agent)
        where = functools.partial(transcript_event_path, actor.agent)
        files = await anyio.to_thread.run_sync(lambda: tuple(map(where, sessions)))  # one thread hop for all
        return (await actor.request_sync(reason, force=force, session_files=files)).to_dict()

    async def forget(
        self, agent: str, *, paths: list[str], all: bool, before: str | None, after: str | None
    ) -> dict[str, object]:
        actor = await self._actor(agent)
        what = Forget(
            tuple(paths),
            all,
            None if before is None else parse_when(before, "before"),
            None if after is None else parse_when(after, "after"),
        )
        return await actor.forget(what)

    async def transcript_updated(self, agent: str, path: str) -> None:
        actor = await self._actor(agent)
        where = await anyio.to_thread.run_sync(transcript_event_path, actor.agent, path)
        actor.transcript_updated(where)


async def _signals(
    tg_cancel: Callable[[], None], reload: Callable[[], Awaitable[object]], *, task_status: TaskStatus[None]
) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        task_status.started()
        async for signum in signals:
            if signum == signal.SIGHUP:
                await reload()
            else:
                log.info("shutting down", signal=signal.Signals(signum).name)
                tg_cancel()
                return


async def serve(
    cfg: Config,
    *,
    config_path: Path | None = None,
    socket_path: Path | None = None,
    provider_factory: ProviderFactory | None = None,
    listener: socket.socket | None = None,
    claim: StateClaim | None = None,
    http: str | None = None,
    task_status: TaskStatus[Path] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Run the daemon until SIGTERM/SIGINT (or cancellation); `listener` is systemd's socket, if any.

    `claim` is the state directory's lock, taken by `run` before anything else; without one it is
    taken here (DaemonRunningError when another daemon holds it) and released on the way out.
    """
    own_claim = claim is None
    held: StateClaim = await anyio.to_thread.run_sync(claim_state_dir, cfg.state_dir) if claim is None else claim
    path = socket_path or cfg.socket
    pool = ProviderPool(cache_dir=paths.cache_dir())
    supervisor = Supervisor(cfg, provider_factory=provider_factory or pool.select, fallback_factory=pool.fallback)
    service = DaemonService(supervisor)
    watcher = Watcher(lambda: list(supervisor.actors.values()))

    reloader = Reloader(cfg, config_path, supervisor.apply, watcher.restart, supervisor.agent_ids)
    service.reloader = reloader

    try:
        async with anyio.create_task_group() as tg:
            await _run_services(
                tg,
                service=service,
                supervisor=supervisor,
                watcher=watcher,
                path=path,
                reloader=reloader,
                max_line_bytes=cfg.daemon.max_line_bytes,
                max_queued_bytes=cfg.daemon.max_queued_bytes,
                max_connections=cfg.daemon.max_connections,
                listener=listener,
                claim=held,
                log_file=cfg.daemon.log_file or None,
                http=http_settings(cfg, http),
            )
            task_status.started(path)
    finally:
        with anyio.CancelScope(shield=True):
            await pool.aclose()
        if own_claim:
            held.release()


async def _run_services(
    tg: TaskGroup,
    *,
    service: DaemonService,
    supervisor: Supervisor,
    watcher: Watcher,
    path: Path,
    reloader: Reloader,
    max_line_bytes: int,
    max_queued_bytes: int,
    max_connections: int,
    listener: socket.socket | None,
    claim: StateClaim,
    log_file: str | None,
    http: HttpSettings | None = None,
) -> None:
    """Start everything in order: socket first (recorded at once, so clients find it), then agents,
    then the watcher."""
    path = await tg.start(
        functools.partial(
            serve_unix,
            max_line_bytes=max_line_bytes,
            max_queued_bytes=max_queued_bytes,
            max_connections=max_connections,
            inherited=listener,
        ),
        service,
        path,
    )
    await anyio.to_thread.run_sync(functools.partial(claim.publish, path, log_file=log_file))
    await tg.start(_signals, tg.cancel_scope.cancel, functools.partial(reloader.reload, "SIGHUP"))
    await tg.start(supervisor.run)
    await tg.start(watcher.run)
    await tg.start(reloader.watch)
    await tg.start(service.idle_trim.run)
    if http is not None:
        await tg.start(functools.partial(serve_http, service, http, supervisor.cfg.state_dir))
    log.info("memoryd ready", socket=str(path), agents=supervisor.agent_ids())


def http_settings(cfg: Config, address: str | None) -> HttpSettings | None:
    """The HTTP face's settings: `--http` wins over `daemon.http`; None when neither names an address."""
    d = cfg.daemon
    chosen = address or d.http
    if not chosen:
        return None
    return HttpSettings(
        address=chosen,
        insecure=d.http_insecure,
        allowed_hosts=d.http_allowed_hosts,
        allowed_origins=d.http_allowed_origins,
        rate_per_minute=d.http_rate_per_minute,
        max_concurrent=d.http_max_concurrent,
        max_running=d.http_max_running,
        timeout_s=d.http_timeout_s,
        max_body_bytes=d.max_line_bytes,
    )


def prepare_workspaces(cfg: Config) -> None:
    """Create the default agents' workspaces (so `make run` on a fresh machine has somewhere to put
    notes) and say where each agent's memory is read from; a configured workspace that does not
    exist is reported, not created."""
    for agent in cfg.agents.values():
        default = paths.data_dir() / "workspaces" / agent.id
        exists = os.path.exists(agent.workspace)  # never raises: an unreadable parent must not stop the daemon
        if not exists and agent.workspace == default:
            make_private_dirs(agent.workspace / "memory")
        if exists or agent.workspace == default:
            log.info(
                "agent",
                agent=agent.id,
                workspace=str(agent.workspace),
                notes="MEMORY.md and memory/**/*.md",
                sessions=[str(root.path) for root in agent.session_roots],
            )
        else:
            log.warning("agent workspace does not exist yet", agent=agent.id, workspace=str(agent.workspace))


def run(
    cfg: Config,
    *,
    config_path: Path | None = None,
    socket_path: Path | None = None,
    claim: StateClaim | None = None,
    http: str | None = None,
) -> int:
    """Blocking entry point for the CLI; adopts the listening socket systemd passed, if it passed one.

    `claim` is the state directory's lock, taken by `memoryd serve` before it imported this module;
    without one it is taken here, and DaemonRunningError raised (before touching anything) when
    another daemon holds the state directory. Released on the way out either way.
    """
    heap.limit_arenas()  # before any thread exists: see memoryd.heap
    claim = claim if claim is not None else claim_state_dir(cfg.state_dir)
    try:
        prepare_workspaces(cfg)
        listener = inherited_unix_listener()
        anyio.run(
            lambda: serve(
                cfg, config_path=config_path, socket_path=socket_path, listener=listener, claim=claim, http=http
            )
        )
    except (MemorydError, BaseExceptionGroup) as exc:
        inner = first_error(exc)
        if not isinstance(inner, MemorydError):
            raise
        log.error("memoryd cannot start", error=describe(inner))  # noqa: TRY400
        return 1
    finally:
        claim.release()
    return 0
