"""One agent's QMD backend: its private QMD index, its collections, its updates, its searches.

Each agent gets its own QMD config and cache folders under `<state>/agents/<id>/qmd/`
(`xdg-config`, `xdg-cache`, index at `xdg-cache/qmd/index.sqlite`), so agents never see each
other's collections; the user's downloaded QMD models are linked in, not copied.

`open()` checks that QMD runs at all and sets up the collections; `run()` is the background work
(update worker, boot update, timers, watcher debounce). Any failure of init, an update or a search
is a `QmdError`; `failed` is set when the backend should no longer be used, and `FallbackSearcher`
takes it from there.
"""

from __future__ import annotations

import collections
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
import anyio.to_thread
import structlog
from anyio.abc import TaskStatus

from memoryd.config import AgentConfig
from memoryd.isotime import iso
from memoryd.qmd.collections import CollectionManager, ManagedCollection, plan_collections
from memoryd.qmd.errors import QmdCommandError, QmdError
from memoryd.qmd.exporter import ExportedSession, SessionExporter
from memoryd.qmd.folders import prepare_dirs
from memoryd.qmd.index_reads import document_counts, lookup, source_counts
from memoryd.qmd.parse import (
    QmdHit,
    is_missing_collection,
    is_unsupported_option,
    parse_vector_count,
    parse_version,
    summarise,
)
from memoryd.qmd.query import group_targets, query_groups
from memoryd.qmd.results import ResultLimits, ResultMapper
from memoryd.qmd.runner import QmdRunner, qmd_environment, split_command
from memoryd.qmd.settings import QmdSettings, SearchMode
from memoryd.qmd.updates import EmbedGate, QmdUpdater, UpdateRun
from memoryd.search.request import SearchRequest, SearchResponse, corpus_sources

log = structlog.get_logger(__name__)

PROBE_TIMEOUT_S = 2.0
"""Spec §4.5: QMD counts as unavailable if `qmd --version` does not answer within 2 s."""
STATUS_TIMEOUT_S = 5.0
SEARCH_WAITS_FOR_UPDATE_S = 0.5
MODE_NAMES: dict[SearchMode, str] = {"search": "keyword", "vsearch": "vector", "query": "hybrid"}
_MULTI_COLLECTION_HELP = re.compile(r"one or more collections|collection\(s\)|multiple -c flags", re.IGNORECASE)
_RECENT_ERRORS = 10


class QmdBackend:
    """QMD for one agent. `open()`, then `run()` in a task group; `search`/`status` while it runs."""

    def __init__(
        self,
        agent: AgentConfig,
        settings: QmdSettings,
        *,
        state_dir: Path,
        gate: EmbedGate | None = None,
        base_env: Mapping[str, str] | None = None,
    ) -> None:
        self.agent = agent
        self.settings = settings
        self.qmd_dir = state_dir / "agents" / agent.id / "qmd"
        self.xdg_config = self.qmd_dir / "xdg-config"
        self.xdg_cache = self.qmd_dir / "xdg-cache"
        self.index_path = self.xdg_cache / "qmd" / "index.sqlite"
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.gate = gate or EmbedGate(state_dir / "qmd" / "embed.lock")
        self.exporter: SessionExporter | None = None
        export_dir = None
        if settings.sessions.enabled:
            raw = settings.sessions.export_dir.strip()
            export_dir = (agent.workspace / Path(raw).expanduser()) if raw else self.qmd_dir / "sessions"
            rules = agent.settings.files
            self.exporter = SessionExporter(
                agent.sessions_dir,
                export_dir,
                settings.sessions.retention_days,
                roots=agent.session_roots,
                subagents=agent.settings.transcripts.subagents,
                max_bytes=rules.max_transcript_bytes,
                allow_hard_links=rules.allow_hard_links,
            )
        self.collections = plan_collections(
            agent.id, agent.workspace, settings, extra_paths=agent.extra_paths, sessions_export_dir=export_dir
        )
        self.mapper = ResultMapper(
            agent.workspace,
            self.collections,
            exports=self._exports,
            lookup=lambda docid: lookup(self.index_path, docid),
        )
        self.version: str | None = None
        self.multi_collection = False
        self.vectors: int | None = None
        self.failed = anyio.Event()
        self.failure: str | None = None
        self.errors: collections.deque[str] = collections.deque(maxlen=_RECENT_ERRORS)
        self._changed = anyio.Event()
        self._runner: QmdRunner | None = None
        self._manager: CollectionManager | None = None
        self._updater: QmdUpdater | None = None

    # ------------------------------------------------------------------ parts that exist once open

    @property
    def runner(self) -> QmdRunner:
        if self._runner is None:
            raise QmdError("the QMD backend is not open")
        return self._runner

    @property
    def manager(self) -> CollectionManager:
        if self._manager is None:
            raise QmdError("the QMD backend is not open")
        return self._manager

    @property
    def updater(self) -> QmdUpdater:
        if self._updater is None:
            raise QmdError("the QMD backend is not open")
        return self._updater

    def _exports(self) -> Mapping[str, ExportedSession]:
        return self.exporter.exported if self.exporter is not None else {}

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Check QMD runs, prepare the agent's folders and collections, export transcripts; raise QmdError."""
        try:
            await self._open()
        except QmdError as exc:
            self._note(str(exc))
            raise

    async def _make_runner(self) -> QmdRunner:
        """The agent's runner: its folders exist, its environment is private, its cwd is the workspace."""
        if self._runner is not None:
            return self._runner
        command = split_command(self.settings.command)
        try:
            await anyio.to_thread.run_sync(prepare_dirs, self.xdg_config, self.xdg_cache, self.base_env)
        except OSError as exc:
            raise QmdError(f"cannot create the QMD folders under {self.qmd_dir}: {exc.strerror}") from None
        env = qmd_environment(self.base_env, command=command, xdg_config=self.xdg_config, xdg_cache=self.xdg_cache)
        workspace_ok = await anyio.to_thread.run_sync(self.agent.workspace.is_dir)
        self._runner = QmdRunner(command, env=env, cwd=self.agent.workspace if workspace_ok else self.qmd_dir)
        return self._runner

    async def probe(self) -> str | None:
        """`qmd --version` within 2 s: QMD runs at all (else QmdError); its version if it says one."""
        runner = await self._make_runner()
        out = await runner.run(["--version"], timeout_s=PROBE_TIMEOUT_S)
        self.version = parse_version(out.stdout + "\n" + out.stderr) or summarise(out.stdout, 40) or None
        return self.version

    async def _open(self) -> None:
        await self.probe()
        command_timeout_s = self.settings.update.command_timeout_ms / 1000
        self._manager = CollectionManager(self.runner, self.collections, timeout_s=command_timeout_s)
        await self.manager.ensure()
        self.multi_collection = await self._probe_multi_collection()
        self._updater = QmdUpdater(
            self.runner,
            self.settings,
            self.manager,
            gate=self.gate,
            exporter=self.exporter,
            on_failure=self._update_failed,
        )
        await self.updater.export_sessions()  # so session hits can be cited before the first update
        log.info("qmd ready", agent=self.agent.id, version=self.version, collections=len(self.collections))

    async def _probe_multi_collection(self) -> bool:
        """Newer QMD filters by several `-c` at once: one process per source instead of per collection."""
        try:
            out = await self.runner.run(["--help"], timeout_s=min(self.settings.limits.timeout_ms / 1000, 5.0))
        except QmdError:
            return False
        return _MULTI_COLLECTION_HELP.search(out.stdout + out.stderr) is not None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Background work until cancelled: updates, timers, debounced watcher changes."""
        updater = self.updater
        update = self.settings.update
        async with anyio.create_task_group() as tg:
            await tg.start(updater.run)
            if update.on_boot:
                boot = updater.request("boot", force=True)
                if update.wait_for_boot_sync:
                    await boot.done.wait()
            if update.interval_ms > 0:
                tg.start_soon(self._every, update.interval_ms / 1000, "interval")
            embed_ms = update.embed_interval_ms
            if updater.uses_vectors and embed_ms > 0 and (update.interval_ms <= 0 or update.interval_ms > embed_ms):
                tg.start_soon(self._every, embed_ms / 1000, "embed-interval")
            tg.start_soon(self._debounce_changes)
            task_status.started()

    async def _every(self, period_s: float, reason: str) -> None:
        while True:
            await anyio.sleep(period_s)
            self.updater.request(reason)

    async def _debounce_changes(self) -> None:
        debounce_s = self.agent.settings.sync.watch_debounce_ms / 1000
        while True:
            await self._changed.wait()
            while True:  # trailing debounce: wait until changes have been quiet for debounce_s
                event = self._changed = anyio.Event()
                with anyio.move_on_after(debounce_s) as quiet:
                    await event.wait()
                if quiet.cancelled_caught:
                    break
            self.updater.request("watch")

    def _update_failed(self, run: UpdateRun) -> None:
        """A failed update means QMD's answers can no longer be trusted: give up on this backend."""
        self.mark_failed(f"{run.error} ({run.reason} update)")

    def mark_failed(self, reason: str) -> None:
        if not self.failed.is_set():
            self.failure = reason
            self._note(reason)
            self.failed.set()

    def _note(self, error: str) -> None:
        self.errors.append(error)

    # ------------------------------------------------------------------ inputs

    def files_changed(self) -> None:
        """Memory files (or transcripts, when exported) changed: update after the watcher's debounce."""
        if self._updater is not None:
            self._updater.dirty = True
        self._changed.set()

    async def sync(self, reason: str, *, force: bool = False) -> UpdateRun:
        return await self.updater.update(reason, force=force)

    # ------------------------------------------------------------------ search

    def collections_for(self, corpus: str) -> list[ManagedCollection]:
        wanted = corpus_sources(corpus)
        return [c for c in self.collections if c.source in wanted and c.name not in self.manager.problems]

    def freshness(self) -> dict[str, object]:
        updater = self._updater
        if updater is None:
            return {"indexedAt": None, "pending": 0, "dirty": True}
        at = updater.state.last_update_at
        return {
            "indexedAt": iso(int(at * 1000)) if at else None,
            "pending": 1 if updater.pending is not None else 0,
            "dirty": updater.dirty,
        }

    async def search(self, request: SearchRequest) -> SearchResponse:
        """Search the agent's collections through `qmd <mode> --json`; raise QmdError on any failure.

        QMD searches in its own configured mode: `request.mode` is the builtin index's business."""
        q = request.query.strip()
        limits = self.settings.limits
        max_results, min_score = request.max_results, request.min_score
        limit = min(limits.max_results, max_results) if max_results is not None else limits.max_results
        targets = self.collections_for(request.corpus)
        mode: SearchMode = self.settings.search_mode
        results = []
        if q and targets and limit > 0:
            updater = self.updater
            if updater.dirty and self.agent.settings.sync.on_search:
                updater.request("search")
            await self._wait_for_update(request.wait_fresh_ms)
            hits, mode = await self._query(q, limit, targets)
            bounds = ResultLimits(limit, limits.max_snippet_chars, limits.max_injected_chars, min_score or 0.0)
            results = await anyio.to_thread.run_sync(self.mapper.map, hits, bounds)
        return SearchResponse(
            results=results,
            mode=MODE_NAMES[mode],
            provider="qmd",
            model=f"qmd {self.version}" if self.version else "qmd",
            fallback=None,
            freshness=self.freshness(),
        )

    async def _wait_for_update(self, wait_fresh_ms: int | None) -> None:
        """A running update may be about to add what is searched for: wait a little (≤ 500 ms by default)."""
        run = self.updater.pending
        if run is None:
            return
        with anyio.move_on_after(max(SEARCH_WAITS_FOR_UPDATE_S, (wait_fresh_ms or 0) / 1000)):
            await run.done.wait()

    async def _query_groups(
        self, mode: SearchMode, q: str, limit: int, targets: Sequence[ManagedCollection]
    ) -> list[QmdHit]:
        groups = group_targets(targets, multi_collection=self.multi_collection)
        return await query_groups(self.runner, mode, q, limit, groups, timeout_s=self.settings.limits.timeout_ms / 1000)

    async def _query(self, q: str, limit: int, targets: Sequence[ManagedCollection]) -> tuple[list[QmdHit], SearchMode]:
        mode: SearchMode = self.settings.search_mode
        try:
            return await self._query_groups(mode, q, limit, targets), mode
        except QmdCommandError as exc:
            if is_missing_collection(exc.detail):
                log.warning("qmd lost a collection; re-creating and searching again", error=str(exc))
                await self.manager.ensure()
                return await self._query_groups(mode, q, limit, self.collections_for_names(targets)), mode
            if mode != "query" and is_unsupported_option(exc.detail):
                log.warning("qmd rejected the search flags; retrying with qmd query", mode=mode)
                return await self._query_groups("query", q, limit, targets), "query"
            raise

    def collections_for_names(self, targets: Sequence[ManagedCollection]) -> list[ManagedCollection]:
        names = {t.name for t in targets}
        return [c for c in self.collections if c.name in names and c.name not in self.manager.problems]

    # ------------------------------------------------------------------ status

    def describe(self, counts: Mapping[str, int] | None = None) -> dict[str, object]:
        """QMD facts for status and doctor: version, collections, updates, embeddings, recent errors."""
        problems = self._manager.problems if self._manager is not None else {}
        info: dict[str, object] = {
            "command": self.settings.command,
            "version": self.version,
            "searchMode": self.settings.search_mode,
            "indexPath": str(self.index_path),
            "configDir": str(self.xdg_config / "qmd"),
            "cacheDir": str(self.xdg_cache),
            "collections": [
                {
                    "name": c.name,
                    "path": str(c.path),
                    "pattern": c.pattern,
                    "kind": c.kind,
                    "documents": None if counts is None else counts.get(c.name, 0),
                    "error": problems.get(c.name),
                }
                for c in self.collections
            ],
            "sessionsExport": str(self.exporter.export_dir) if self.exporter is not None else None,
            "vectors": self.vectors,
            "failure": self.failure,
            "errors": list(self.errors),
        }
        if self._updater is not None:
            info.update(self._updater.state.to_dict())
        return info

    async def status(self) -> dict[str, object]:
        """The builtin status fields (spec §4.2) as QMD can fill them, plus the `qmd` details."""
        counts, error = await anyio.to_thread.run_sync(document_counts, self.index_path)
        if error is not None:
            self._note(error)
        uses_vectors = self.settings.search_mode != "search"
        return {
            "agent": self.agent.id,
            "backend": "qmd",
            "provider": "qmd",
            "model": "qmd",
            "requestedProvider": "qmd",
            **source_counts(self.collections, counts),
            "dirty": self._updater.dirty if self._updater is not None else True,
            "workspaceDir": str(self.agent.workspace),
            "dbPath": str(self.index_path),
            "searchMode": MODE_NAMES[self.settings.search_mode],
            "vector": {
                "enabled": uses_vectors,
                "available": (self.vectors or 0) > 0 if uses_vectors and self.vectors is not None else None,
            },
            **self.freshness(),
            "qmd": self.describe(counts),
        }

    async def doctor(self) -> dict[str, object]:
        """Ask QMD itself: its version and `qmd status` (vector count); errors are reported, not raised."""
        report: dict[str, object] = {"version": None, "vectors": None, "error": None}
        try:
            report["version"] = await self.probe()
            status = await self.runner.run(["status"], timeout_s=STATUS_TIMEOUT_S)
            self.vectors = parse_vector_count(status.stdout + "\n" + status.stderr)
            report["vectors"] = self.vectors
        except QmdError as exc:
            report["error"] = str(exc)
        return report
