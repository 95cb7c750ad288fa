"""Discovery: which files are memory, which are transcripts, and what is skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memoryd.sources.discovery import (
    is_memory_path,
    list_all_session_files,
    list_memory_files,
    list_session_files,
    memory_file_at,
)
from memoryd.sources.session_roots import SessionRoot
from tests.conftest import write


def test_memory_files_are_root_notes_memory_tree_and_extras_without_ignored_dirs(
    workspace: Path, tmp_path: Path
) -> None:
    extra = write(tmp_path / "vault" / "ideas.md", "# ideas\n")
    write(tmp_path / "vault" / ".git" / "x.md", "no\n")
    files = list_memory_files(workspace, [tmp_path / "vault"])
    assert [f.path for f in files] == [
        "MEMORY.md",
        "memory/2026-01-05.md",
        "memory/projects/garden.md",
        "../vault/ideas.md",
    ]
    assert files[-1].abs_path == extra
    assert {f.source for f in files} == {"memory"}


def test_symlinks_are_skipped_and_duplicates_by_realpath_dropped(workspace: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "secret.md", "secret\n")
    os.symlink(outside, workspace / "memory" / "link.md")
    os.symlink(tmp_path, workspace / "memory" / "linkdir")
    files = list_memory_files(workspace, [workspace / "memory" / "projects" / "garden.md"])
    paths = [f.path for f in files]
    assert "memory/link.md" not in paths
    assert not any(p.startswith("memory/linkdir") for p in paths)
    assert paths.count("memory/projects/garden.md") == 1


def test_non_markdown_files_are_ignored(workspace: Path) -> None:
    write(workspace / "memory" / "photo.png", "x")
    write(workspace / "memory" / "data.json", "{}")
    assert all(f.path.endswith(".md") for f in list_memory_files(workspace))


def test_session_files_include_archives_but_not_backups(tmp_path: Path) -> None:
    sd = tmp_path / "sessions"
    for name in (
        "a.jsonl",
        "b.jsonl.reset.2026-01-05T10-00-00Z",
        "c.jsonl.deleted.2026-01-05T10-00-00.123Z",
        "d.jsonl.bak.2026-01-05T10-00-00Z",
        "sessions.json",
        "notes.txt",
    ):
        write(sd / name, "")
    assert [f.path for f in list_session_files(SessionRoot("sessions", sd))] == [
        "sessions/a.jsonl",
        "sessions/b.jsonl.reset.2026-01-05T10-00-00Z",
        "sessions/c.jsonl.deleted.2026-01-05T10-00-00.123Z",
    ]
    assert list_session_files(SessionRoot("sessions", tmp_path / "missing")) == []


def test_session_roots_are_walked_recursively_with_the_memory_walks_rules(tmp_path: Path) -> None:
    sd = tmp_path / "sessions"
    write(sd / "top.jsonl", "")
    write(sd / "project-a" / "s1.jsonl", "")
    write(sd / "project-a" / "s1" / "subagents" / "agent-1.jsonl", "")
    write(sd / "2026" / "01" / "05" / "rollout-x.jsonl", "")
    write(sd / "node_modules" / "pkg" / "x.jsonl", "")
    write(sd / ".git" / "y.jsonl", "")
    write(sd / "project-a" / "tool-results" / "r.txt", "")
    write(tmp_path / "elsewhere" / "linked.jsonl", "")
    (sd / "link.jsonl").symlink_to(tmp_path / "elsewhere" / "linked.jsonl")
    (sd / "linked-dir").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert [f.path for f in list_session_files(SessionRoot("sessions", sd))] == [
        "sessions/2026/01/05/rollout-x.jsonl",
        "sessions/project-a/s1/subagents/agent-1.jsonl",
        "sessions/project-a/s1.jsonl",
        "sessions/top.jsonl",
    ]


def test_a_transcript_two_roots_reach_is_listed_once_under_the_first(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    write(outer / "a.jsonl", "")
    write(outer / "inner" / "b.jsonl", "")
    roots = (SessionRoot("sessions", outer), SessionRoot("codex", outer / "inner", "codex"))
    assert [f.path for f in list_all_session_files(roots)] == ["sessions/a.jsonl", "sessions/inner/b.jsonl"]
    roots = (SessionRoot("sessions", outer / "inner"), SessionRoot("codex", outer, "codex"))
    assert [f.path for f in list_all_session_files(roots)] == ["sessions/b.jsonl", "codex/a.jsonl"]


def test_is_memory_path_matches_openclaw() -> None:
    assert is_memory_path("MEMORY.md")
    assert is_memory_path("./memory/x.md")
    assert is_memory_path("memory\\x.md")
    assert is_memory_path("DREAMS.md")
    assert not is_memory_path("notes.md")
    assert not is_memory_path("sessions/a.jsonl")


@pytest.mark.parametrize(
    "rel", [".memory/x.md", "..memory/x.md", ".MEMORY.md", "..MEMORY.md", "memory/../x.md", "memoryx/a.md", "memory"]
)
def test_is_memory_path_tests_components_not_a_prefix(rel: str) -> None:
    assert not is_memory_path(rel)


def test_memory_file_at_names_exactly_the_workspace_files_the_listing_holds(workspace: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "secret.md", "secret\n")
    os.symlink(outside, workspace / "memory" / "link.md")
    os.symlink(workspace / "memory" / "projects", workspace / "memory" / "alias")
    write(workspace / "memory" / "notes.txt", "not markdown\n")
    listed = {f.abs_path: f for f in list_memory_files(workspace)}
    candidates = [p for p in workspace.rglob("*") if not p.is_dir() or p.is_symlink()]
    candidates += [workspace / "memory" / "alias" / "garden.md", workspace / "missing.md", tmp_path / "secret.md"]
    for path in candidates:
        assert memory_file_at(workspace, path) == listed.get(path), path
    assert memory_file_at(workspace, workspace / "memory" / "2026-01-05.md") is not None


def test_an_extra_path_through_a_linked_parent_is_the_same_file_once(workspace: Path, tmp_path: Path) -> None:
    """De-duplication compares real paths: the memory folder reached again through a symlinked parent."""
    os.symlink(workspace, tmp_path / "alias")
    files = list_memory_files(workspace, [tmp_path / "alias" / "memory"])
    paths = [f.path for f in files]
    assert paths == ["MEMORY.md", "memory/2026-01-05.md", "memory/projects/garden.md"]
    outer = tmp_path / "outer"
    write(outer / "a.jsonl", "")
    os.symlink(outer, tmp_path / "outer-link")
    roots = (SessionRoot("sessions", outer), SessionRoot("codex", tmp_path / "outer-link", "codex"))
    assert [f.path for f in list_all_session_files(roots)] == ["sessions/a.jsonl"]


def test_discovery_resolves_each_root_once_not_each_file(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync lists every file each time: a realpath per file cost ~10 system calls each, and every one
    gave up the GIL to busy searches (a one-file change took 3 s to index under 20 searching clients)."""
    for i in range(50):
        write(workspace / "memory" / "many" / f"n{i}.md", f"note {i}\n")
        write(tmp_path / "sessions" / "deep" / f"s{i}.jsonl", "")
    calls: list[str] = []
    real = os.path.realpath

    def counting(path: str | os.PathLike[str], *args: object, **kwargs: object) -> str:
        calls.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os.path, "realpath", counting)
    assert len(list_memory_files(workspace, [tmp_path / "sessions"])) == 53
    assert len(list_all_session_files((SessionRoot("sessions", tmp_path / "sessions"),))) == 50
    assert len(calls) <= 3
