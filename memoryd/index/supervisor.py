"""The supervisor: one AgentIndex actor per configured agent, restarted with backoff when it crashes.

It owns the actors' task group, routes requests by agent id, and applies a new configuration
(SIGHUP): removed agents are stopped, new ones started, changed ones restarted.
"""

from __future__ import annotations

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus

from memoryd.config import AgentConfig, Config
from memoryd.errors import DaemonError, NotFoundError, describe
from memoryd.index.actor import AgentIndex, FallbackFactory, ProviderFactory
from memoryd.qmd.updates import EmbedGate
from memoryd.store.db import location_problem

log = structlog.get_logger(__name__)

BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 60.0


class Supervisor:
    def __init__(
        self,
        cfg: Config,
        *,
        provider_factory: ProviderFactory | None = None,
        fallback_factory: FallbackFactory | None = None,
    ) -> None:
        self.cfg = cfg
        self._provider_factory = provider_factory
        self._fallback_factory = fallback_factory
        self.actors: dict[str, AgentIndex] = {}
        self.failures: dict[str, str] = {}
        self.refused: dict[str, str] = {}  # agents a reload could not start (their store.path), and why
        self._agents: dict[str, AgentConfig] = {}
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._stopped: dict[str, anyio.Event] = {}
        self._tg: TaskGroup | None = None
        self.ready = anyio.Event()
        self._qmd_gate = EmbedGate(cfg.state_dir / "qmd" / "embed.lock")

    def agent_ids(self) -> list[str]:
        """The agents this daemon serves, in configuration order. While it starts (the socket listens
        before the actors run), every enabled agent: a client binding to one then waits for it, instead
        of being told an agent still starting is unknown."""
        if not self.ready.is_set():
            return [a.id for a in self.cfg.agents.values() if a.settings.enabled]
        return [a for a in self.cfg.agents if a in self._agents]

    def actor(self, agent_id: str) -> AgentIndex:
        actor = self.actors.get(agent_id)
        if actor is not None:
            return actor
        if agent_id in self.failures:
            raise DaemonError(f"agent {agent_id!r} is restarting after an error: {self.failures[agent_id]}")
        if agent_id in self.refused:
            raise DaemonError(f"agent {agent_id!r} is not started: {self.refused[agent_id]}; fix it and reload")
        known = ", ".join(self.agent_ids()) or "(none)"
        raise NotFoundError(f"unknown agent {agent_id!r}; configured agents: {known}")

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            for agent in self.cfg.agents.values():
                if agent.settings.enabled:
                    await self._start(agent)
            self.ready.set()
            task_status.started()
            await anyio.sleep_forever()

    async def _start(self, agent: AgentConfig) -> None:
        assert self._tg is not None
        scope = anyio.CancelScope()
        self._scopes[agent.id] = scope
        self._stopped[agent.id] = stopped = anyio.Event()
        self._agents[agent.id] = agent
        await self._tg.start(self._supervise, agent, scope, stopped)

    async def _supervise(
        self,
        agent: AgentConfig,
        scope: anyio.CancelScope,
        stopped: anyio.Event,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            await self._keep_running(agent, scope, task_status)
        finally:
            stopped.set()

    async def _keep_running(self, agent: AgentConfig, scope: anyio.CancelScope, task_status: TaskStatus[None]) -> None:
        delay = BACKOFF_START_S
        reported = False
        with scope:
            while True:
                actor = AgentIndex(
                    agent,
                    provider_factory=self._provider_factory,
                    fallback_factory=self._fallback_factory,
                    state_dir=self.cfg.state_dir,
                    qmd_gate=self._qmd_gate,
                )
                try:
                    async with anyio.create_task_group() as inner:
                        await inner.start(actor.run)
                        self.actors[agent.id] = actor
                        self.failures.pop(agent.id, None)
                        if not reported:
                            task_status.started()
                            reported = True
                        delay = BACKOFF_START_S
                except Exception as exc:
                    self.actors.pop(agent.id, None)
                    # The actor's task group wraps what failed: keep that error's own words, not the group's.
                    self.failures[agent.id] = reason = describe(exc)
                    log.exception("agent index failed; restarting", agent=agent.id, error=reason, retry_in_s=delay)
                    if not reported:
                        task_status.started()
                        reported = True
                    await anyio.sleep(delay)
                    delay = min(delay * 2, BACKOFF_MAX_S)
                else:
                    return
                finally:
                    if self.actors.get(agent.id) is actor:
                        self.actors.pop(agent.id, None)

    async def apply(self, cfg: Config) -> dict[str, list[str]]:
        """Switch to a new configuration; returns the agents added, removed, restarted and kept.

        An agent whose new database location cannot be used (its folder cannot be created or written)
        is not switched: a changed agent keeps running on its working configuration, an added one is
        not started; both are logged with the reason, and a later reload with a usable path applies.
        """
        old = self._agents
        new = {a.id: a for a in cfg.agents.values() if a.settings.enabled}
        removed = [a for a in old if a not in new]
        added = [a for a in new if a not in old]
        changed = [a for a in new if a in old and new[a] != old[a]]
        kept: list[str] = []
        for agent_id in [a for a in added + changed if a not in old or new[a].db_path != old[a].db_path]:
            problem = await anyio.to_thread.run_sync(location_problem, new[agent_id].db_path)
            if problem is None:
                continue
            if agent_id in changed:
                changed.remove(agent_id)
                kept.append(agent_id)
                log.error(
                    "store.path cannot be used; the agent keeps its working configuration",
                    agent=agent_id,
                    path=str(new[agent_id].db_path),
                    error=problem,
                )
            else:
                added.remove(agent_id)
                self.refused[agent_id] = f"its store.path cannot be used: {problem}"
                log.error("store.path cannot be used; agent not started", agent=agent_id, error=problem)
        for agent_id in added + changed:
            self.refused.pop(agent_id, None)
        for agent_id in removed + changed:
            self._scopes.pop(agent_id).cancel()
            await self._stopped.pop(agent_id).wait()  # the old actor has closed its database
            self._agents.pop(agent_id, None)
            self.actors.pop(agent_id, None)
        self.cfg = cfg
        for agent_id in added + changed:
            await self._start(new[agent_id])
        log.info("configuration applied", added=added, removed=removed, restarted=changed, kept=kept)
        return {"added": added, "removed": removed, "restarted": changed, "kept": kept}
