"""Which collections an agent gets, and how QMD's own list is kept equal to them."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.qmd.collections import CollectionManager, ManagedCollection, plan_collections, sanitise_name
from memoryd.qmd.runner import QmdRunner, qmd_environment
from memoryd.qmd.settings import QmdPath, QmdSettings
from tests.qmd.standin import StandIn

WS = Path("/home/u/ws")


def names(collections: tuple[ManagedCollection, ...]) -> list[str]:
    return [c.name for c in collections]


def test_defaults_are_the_root_notes_and_the_memory_folder_scoped_to_the_agent() -> None:
    plan = plan_collections("Main", WS, QmdSettings())
    assert [(c.name, c.path, c.pattern, c.kind) for c in plan] == [
        ("memory-root-main", WS, "MEMORY.md", "memory"),
        ("memory-alt-main", WS, "memory.md", "memory"),
        ("memory-dir-main", WS / "memory", "**/*.md", "memory"),
    ]
    assert plan_collections("main", WS, QmdSettings(include_default_memory=False)) == ()


def test_custom_paths_extra_paths_and_extra_collections_follow_in_order() -> None:
    qmd = QmdSettings(
        paths=(QmdPath(path="notes"), QmdPath(path="~/vault", name="Obsidian Vault!", pattern="*.md")),
        extra_collections=(QmdPath(path="/srv/team-docs", name="team"), QmdPath(path="docs", name="docs")),
    )
    plan = plan_collections("a.b", WS, qmd, extra_paths=(WS / "extra" / "one.md",))
    custom = [(c.name, c.path, c.pattern) for c in plan if c.kind == "custom"]
    assert custom == [
        ("custom-1-a-b", WS / "notes", "**/*.md"),
        ("obsidian-vault-a-b", Path.home() / "vault", "*.md"),
        ("custom-3-a-b", WS / "extra", "one.md"),  # an extra file: its folder, its name as the pattern
        ("team", Path("/srv/team-docs"), "**/*.md"),  # explicit name outside the workspace: shared, kept
        ("docs-a-b", WS / "docs", "**/*.md"),  # inside the workspace: scoped to the agent
    ]


def test_clashing_names_get_numbered_and_sessions_come_last() -> None:
    qmd = QmdSettings(paths=(QmdPath(path="a", name="memory-dir"), QmdPath(path="b", name="memory_dir")))
    plan = plan_collections("main", WS, qmd, sessions_export_dir=WS / ".exports")
    assert names(plan)[2:] == ["memory-dir-main", "memory-dir-main-2", "memory-dir-main-3", "sessions-main"]
    assert plan[-1].kind == "sessions" and plan[-1].source == "sessions"
    assert {c.source for c in plan[:-1]} == {"memory"}


@given(
    agent=st.text(min_size=1, max_size=20),
    wanted=st.lists(st.text(max_size=15), max_size=8),
)
def test_every_name_is_lowercase_letters_digits_and_dashes_and_unique(agent: str, wanted: list[str]) -> None:
    qmd = QmdSettings(paths=tuple(QmdPath(path=f"p{i}", name=n) for i, n in enumerate(wanted)))
    plan = plan_collections(agent, WS, qmd, sessions_export_dir=WS / "s")
    all_names = names(plan)
    assert len(set(all_names)) == len(all_names)
    assert all(re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", n) for n in all_names)


def test_sanitising_never_returns_an_empty_name() -> None:
    assert sanitise_name("日本語") == "collection"
    assert sanitise_name("--A  b--") == "a-b"


# ------------------------------------------------------------------ keeping QMD's list in step


def manager(standin: StandIn, tmp_path: Path, plan: tuple[ManagedCollection, ...]) -> CollectionManager:
    env = qmd_environment(
        dict(os.environ), command=(str(standin.path),), xdg_config=tmp_path / "cfg", xdg_cache=tmp_path / "cache"
    )
    return CollectionManager(QmdRunner((str(standin.path),), env=env, cwd=tmp_path), plan, timeout_s=10)


def listed(tmp_path: Path) -> dict[str, tuple[str, str]]:
    state = json.loads((tmp_path / "cfg" / "qmd" / "standin.json").read_text(encoding="utf-8"))
    return {name: (c["path"], c["pattern"]) for name, c in state.items()}


@pytest.mark.anyio
async def test_ensure_adds_what_is_missing_and_creates_folders_for_globs(standin: StandIn, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    plan = plan_collections("main", ws, QmdSettings())
    await manager(standin, tmp_path, plan).ensure()
    assert listed(tmp_path) == {
        "memory-root-main": (str(ws), "MEMORY.md"),
        "memory-alt-main": (str(ws), "memory.md"),
        "memory-dir-main": (str(ws / "memory"), "**/*.md"),
    }
    assert (ws / "memory").is_dir()


@pytest.mark.anyio
async def test_ensure_rebinds_moved_collections_removes_unknown_ones_and_keeps_good_ones(
    standin: StandIn, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    first = manager(standin, tmp_path, plan_collections("main", tmp_path / "old", QmdSettings()))
    await first.ensure()
    qmd = QmdSettings(include_default_memory=False, paths=(QmdPath(path="notes", name="n"),))
    await manager(standin, tmp_path, plan_collections("main", tmp_path / "old", qmd)).ensure()
    assert listed(tmp_path) == {"n-main": (str(tmp_path / "old" / "notes"), "**/*.md")}
    adds_before = len(standin.calls("collection add"))
    await manager(standin, tmp_path, plan_collections("main", tmp_path / "old", qmd)).ensure()
    assert len(standin.calls("collection add")) == adds_before  # nothing to change, nothing re-created
    await manager(standin, tmp_path, plan_collections("main", ws, qmd)).ensure()
    assert listed(tmp_path) == {"n-main": (str(ws / "notes"), "**/*.md")}


@pytest.mark.anyio
async def test_a_table_listing_without_paths_is_completed_with_collection_show(
    standin: StandIn, tmp_path: Path
) -> None:
    standin.set(list_format="table")
    plan = plan_collections("main", tmp_path, QmdSettings(include_default_memory=False, paths=(QmdPath(path="x"),)))
    await manager(standin, tmp_path, plan).ensure()
    await manager(
        standin,
        tmp_path,
        plan_collections(
            "main", tmp_path / "moved", QmdSettings(include_default_memory=False, paths=(QmdPath(path="x"),))
        ),
    ).ensure()
    assert standin.calls("collection show")
    assert listed(tmp_path) == {"custom-1-main": (str(tmp_path / "moved" / "x"), "**/*.md")}


@pytest.mark.anyio
async def test_an_older_qmd_without_glob_gets_mask(standin: StandIn, tmp_path: Path) -> None:
    standin.set(reject_glob=True)
    plan = plan_collections("main", tmp_path, QmdSettings(include_default_memory=False, paths=(QmdPath(path="a"),)))
    mgr = manager(standin, tmp_path, plan)
    await mgr.ensure()
    assert mgr.pattern_flag == "--mask" and not mgr.problems
    assert "--mask" in standin.calls("collection add")[-1]["args"]


@pytest.mark.anyio
async def test_a_collection_that_cannot_be_added_is_noted_not_fatal(standin: StandIn, tmp_path: Path) -> None:
    plan = plan_collections("main", tmp_path, QmdSettings(include_default_memory=False, paths=(QmdPath(path="a"),)))
    standin.fail("collection add", exit=1, stderr="EACCES: permission denied\n")
    mgr = manager(standin, tmp_path, plan)
    await mgr.ensure()
    assert "permission denied" in mgr.problems["custom-1-main"]
