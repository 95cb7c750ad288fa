"""One agent's QMD backend against a stand-in `qmd`: isolation, search, its failure modes, status."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from memoryd.config import AgentConfig
from memoryd.qmd.backend import QmdBackend
from memoryd.qmd.errors import QmdCommandError, QmdOutputError, QmdTimeoutError, QmdUnavailableError
from memoryd.qmd.settings import QmdLimitsSettings, QmdSessionSettings, QmdSettings, QmdUpdateSettings
from memoryd.search.request import SearchRequest
from tests.conftest import AgentFactory
from tests.qmd.standin import StandIn, environment_without_qmd

pytestmark = pytest.mark.anyio

HITS = [
    {"collection": "memory-root-main", "path": "MEMORY.md", "docid": "#aa", "score": 0.8,
     "snippet": "@@ -3,1 @@ (2 before, 1 after)\n- My dog is a golden retriever named Biscuit.\n"},
    {"collection": "memory-dir-main", "path": "2026-01-05.md", "docid": "#bb", "score": 0.6,
     "snippet": "@@ -3,1 @@\nDiscussed the PostgreSQL 17 migration and backups.\n"},
    {"collection": "sessions-main", "path": "s1.md", "docid": "#cc", "score": 0.7,
     "snippet": "@@ -3,2 @@\nUser: Please book the flight to Lisbon for March.\nAssistant: Booked.\n"},
]  # fmt: skip


def settings(standin: StandIn, **kw: Any) -> QmdSettings:
    base: dict[str, Any] = {
        "command": str(standin.path),
        "sessions": QmdSessionSettings(enabled=True),
        "update": QmdUpdateSettings(on_boot=False, interval="0"),
    }
    return QmdSettings(**{**base, **kw})


@asynccontextmanager
async def opened(agent: AgentConfig, qmd: QmdSettings, tmp_path: Path) -> AsyncIterator[QmdBackend]:
    backend = QmdBackend(agent, qmd, state_dir=tmp_path / "state", base_env=environment_without_qmd())
    await backend.open()
    async with anyio.create_task_group() as tg:
        await tg.start(backend.run)
        with anyio.fail_after(20):
            yield backend
        tg.cancel_scope.cancel()


async def test_each_agent_gets_its_own_qmd_folders_and_collections(
    standin: StandIn, workspace: Path, make_agent: AgentFactory, tmp_path: Path
) -> None:
    for agent_id in ("main", "work"):
        async with opened(make_agent(workspace, agent_id), settings(standin), tmp_path) as backend:
            assert backend.version == "9.9.9"
    homes = {c["env"]["QMD_CONFIG_DIR"] for c in standin.calls()}
    assert homes == {
        str(tmp_path / "state" / "agents" / "main" / "qmd" / "xdg-config" / "qmd"),
        str(tmp_path / "state" / "agents" / "work" / "qmd" / "xdg-config" / "qmd"),
    }
    work_adds = [c["args"][4] for c in standin.calls("collection add") if "/agents/work/" in c["env"]["QMD_CONFIG_DIR"]]
    assert work_adds == ["memory-root-work", "memory-alt-work", "memory-dir-work", "sessions-work"]
    assert {c["cwd"] for c in standin.calls()} == {str(workspace)}


async def test_a_missing_binary_fails_open_with_a_clear_reason(agent: AgentConfig, tmp_path: Path) -> None:
    qmd = QmdSettings(command="qmd-not-installed-anywhere")
    backend = QmdBackend(agent, qmd, state_dir=tmp_path / "state", base_env=environment_without_qmd())
    with pytest.raises(QmdUnavailableError, match="qmd-not-installed-anywhere"):
        await backend.open()
    assert backend.errors and "cannot run" in backend.errors[-1]


async def test_a_binary_that_never_answers_the_probe_fails_open(
    standin: StandIn, agent: AgentConfig, tmp_path: Path
) -> None:
    standin.fail("--version", hang=True)
    with anyio.fail_after(10), pytest.raises(QmdTimeoutError, match="2000 ms"):
        await QmdBackend(agent, settings(standin), state_dir=tmp_path / "state").open()


async def test_search_maps_hits_per_source_in_one_process_each(
    standin: StandIn, agent: AgentConfig, tmp_path: Path
) -> None:
    standin.set(hits=HITS)
    async with opened(agent, settings(standin), tmp_path) as backend:
        resp = await backend.search(SearchRequest("biscuit lisbon postgres"))
    assert [(r.path, r.start_line, r.end_line, r.source) for r in resp.results] == [
        ("MEMORY.md", 3, 3, "memory"),
        ("sessions/s1.jsonl", 2, 4, "sessions"),  # the export's lines cited as the transcript's JSONL lines
        ("memory/2026-01-05.md", 3, 3, "memory"),
    ]
    assert (resp.mode, resp.provider, resp.model, resp.fallback) == ("keyword", "qmd", "qmd 9.9.9", None)
    searches = standin.calls("search")
    filters = sorted([a for i, a in enumerate(c["args"]) if c["args"][i - 1] == "-c"] for c in searches)
    assert filters == [["memory-root-main", "memory-alt-main", "memory-dir-main"], ["sessions-main"]]
    assert all(c["args"][-2:] == ["--", "biscuit lisbon postgres"] for c in searches)


async def test_the_corpus_limit_and_min_score_narrow_the_search(
    standin: StandIn, agent: AgentConfig, tmp_path: Path
) -> None:
    standin.set(hits=HITS)
    qmd = settings(standin, limits=QmdLimitsSettings(max_results=2))
    async with opened(agent, qmd, tmp_path) as backend:
        memory_only = await backend.search(SearchRequest("x", corpus="memory", max_results=10))
        assert [r.path for r in memory_only.results] == ["MEMORY.md", "memory/2026-01-05.md"]
        assert standin.calls("search")[-1]["args"][3] == "2"  # -n is min(limits.max_results, maxResults)
        strict = await backend.search(SearchRequest("x", corpus="all", min_score=0.65))
        assert [r.path for r in strict.results] == ["MEMORY.md", "sessions/s1.jsonl"]
        assert (await backend.search(SearchRequest("   "))).results == []


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ({"hang": True}, QmdTimeoutError),
        ({"stdout": "Segmentation fault (core dumped)\n{{{"}, QmdOutputError),
        ({"exit": 139, "stderr": "Illegal instruction\n"}, QmdCommandError),
        ({"stdout": "[", "stdout_bytes": 300_000}, QmdOutputError),
    ],
)
async def test_every_search_failure_is_a_qmd_error(
    standin: StandIn, agent: AgentConfig, tmp_path: Path, rule: dict[str, Any], error: type[Exception]
) -> None:
    standin.fail("search", **rule)
    # A hang needs a short deadline; the others must finish before theirs, stand-in start-up included
    # (up to a second on a loaded machine: 300 ms turned them into timeouts).
    qmd = settings(standin, limits=QmdLimitsSettings(timeout_ms=300 if rule.get("hang") else 30_000))
    async with opened(agent, qmd, tmp_path) as backend:
        with pytest.raises(error):
            await backend.search(SearchRequest("biscuit"))


async def test_a_lost_collection_is_recreated_and_the_search_repeated(
    standin: StandIn, agent: AgentConfig, tmp_path: Path
) -> None:
    standin.set(hits=HITS)
    async with opened(agent, settings(standin), tmp_path) as backend:
        await backend.runner.run(["collection", "remove", "sessions-main"], timeout_s=5)
        resp = await backend.search(SearchRequest("lisbon", corpus="sessions"))
    assert [r.path for r in resp.results] == ["sessions/s1.jsonl"]
    assert len(standin.calls("search")) == 2


async def test_rejected_search_flags_retry_with_qmd_query(standin: StandIn, agent: AgentConfig, tmp_path: Path) -> None:
    standin.set(hits=HITS)
    standin.fail("search", exit=2, stderr="error: unknown option '--json'\n")
    async with opened(agent, settings(standin), tmp_path) as backend:
        resp = await backend.search(SearchRequest("biscuit", corpus="memory"))
    assert resp.mode == "hybrid" and next(r.path for r in resp.results) == "MEMORY.md"
    assert standin.calls("query")


async def test_changed_files_trigger_one_debounced_update_and_a_failed_update_fails_the_backend(
    standin: StandIn, agent: AgentConfig, tmp_path: Path
) -> None:
    qmd = settings(standin, update=QmdUpdateSettings(on_boot=False, interval="0", debounce_ms=0))
    async with opened(agent, qmd, tmp_path) as backend:
        updater = backend.updater
        assert updater.pending is None
        for _ in range(5):
            backend.files_changed()
        while updater.state.updates == 0:
            await updater.progress()
        assert len(standin.calls("update")) == 1 and updater.state.last_update_reason == "watch"
        standin.fail("update", exit=1, stderr="disk full\n")
        backend.files_changed()
        await backend.failed.wait()
    assert "disk full" in (backend.failure or "")


async def test_status_and_describe_show_version_collections_updates_and_errors(
    standin: StandIn, agent: AgentConfig, tmp_path: Path
) -> None:
    async with opened(agent, settings(standin), tmp_path) as backend:
        await backend.sync("cli", force=True)
        st = await backend.status()
        doctor = await backend.doctor()
    qmd = st["qmd"]
    assert isinstance(qmd, dict)
    assert (st["backend"], st["provider"], st["files"], st["dirty"]) == ("qmd", "qmd", 0, False)
    assert qmd["version"] == "9.9.9" and qmd["updates"] == 1 and qmd["lastUpdateAt"]
    assert [c["name"] for c in qmd["collections"]] == [
        "memory-root-main",
        "memory-alt-main",
        "memory-dir-main",
        "sessions-main",
    ]
    assert doctor == {"version": "9.9.9", "vectors": 0, "error": None}
