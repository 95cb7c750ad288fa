"""memory_get rules: only memory files under the roots, no symlinks, clear reasons."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memoryd.errors import AccessDeniedError, NotFoundError
from memoryd.sources.readfile import read_memory_file
from tests.conftest import write


def test_reads_a_slice_of_lines(workspace: Path) -> None:
    sl = read_memory_file("MEMORY.md", workspace, [], from_line=3, lines=1)
    assert sl.text == "- My dog is a golden retriever named Biscuit."
    assert (sl.path, sl.from_line, sl.lines, sl.total_lines) == ("MEMORY.md", 3, 1, 5)


def test_whole_file_when_no_range(workspace: Path) -> None:
    sl = read_memory_file("memory/2026-01-05.md", workspace, [])
    assert sl.text.startswith("# Standup") and sl.from_line == 1 and sl.lines == sl.total_lines


def test_absolute_paths_inside_the_workspace_are_reported_relative(workspace: Path) -> None:
    assert read_memory_file(str(workspace / "MEMORY.md"), workspace, []).path == "MEMORY.md"


@pytest.mark.parametrize(
    "raw",
    ["../outside.md", "/etc/passwd", "memory/../../outside.md", "notes.md", "memory/x.txt", "", "memory/\x00.md"],
)
def test_paths_outside_the_memory_roots_are_refused(workspace: Path, tmp_path: Path, raw: str) -> None:
    write(tmp_path / "outside.md", "secret\n")
    with pytest.raises(AccessDeniedError):
        read_memory_file(raw, workspace, [])


def test_symlink_in_any_component_is_refused(workspace: Path, tmp_path: Path) -> None:
    write(tmp_path / "elsewhere" / "secret.md", "secret\n")
    os.symlink(tmp_path / "elsewhere", workspace / "memory" / "linked")
    os.symlink(tmp_path / "elsewhere" / "secret.md", workspace / "memory" / "file-link.md")
    for raw in ("memory/linked/secret.md", "memory/file-link.md"):
        with pytest.raises(AccessDeniedError, match="symlink"):
            read_memory_file(raw, workspace, [])


def test_extra_directories_and_files_are_allowed(workspace: Path, tmp_path: Path) -> None:
    write(tmp_path / "vault" / "a.md", "vault note\n")
    single = write(tmp_path / "single.md", "single\n")
    extras = [tmp_path / "vault", single]
    assert read_memory_file(str(tmp_path / "vault" / "a.md"), workspace, extras).text == "vault note\n"
    assert read_memory_file(str(single), workspace, extras).text == "single\n"


def test_symlinked_extra_root_is_not_a_root(workspace: Path, tmp_path: Path) -> None:
    write(tmp_path / "real" / "a.md", "x\n")
    os.symlink(tmp_path / "real", tmp_path / "alias")
    with pytest.raises(AccessDeniedError):
        read_memory_file(str(tmp_path / "alias" / "a.md"), workspace, [tmp_path / "alias"])


def test_missing_file_is_not_found(workspace: Path) -> None:
    with pytest.raises(NotFoundError):
        read_memory_file("memory/nope.md", workspace, [])


def test_a_directory_named_md_is_refused(workspace: Path) -> None:
    (workspace / "memory" / "dir.md").mkdir()
    with pytest.raises(AccessDeniedError, match="not a regular file"):
        read_memory_file("memory/dir.md", workspace, [])


@pytest.mark.parametrize("raw", [".memory/x.md", "..memory/x.md", ".MEMORY.md", "memory./x.md", "./.memory/x.md"])
def test_names_that_only_look_like_memory_paths_are_refused(workspace: Path, raw: str) -> None:
    write(workspace / raw, "not a memory file\n")
    with pytest.raises(AccessDeniedError, match="not a memory file"):
        read_memory_file(raw, workspace, [])


def test_a_file_over_the_size_cap_is_refused_before_it_is_read(workspace: Path) -> None:
    giant = workspace / "memory" / "x.md"
    with open(giant, "wb") as fh:
        fh.truncate(2 * 1024**3)
    with pytest.raises(AccessDeniedError, match="over the 10,485,760-byte limit"):
        read_memory_file("memory/x.md", workspace, [], lines=1)


def test_only_the_asked_lines_are_returned_with_the_total(workspace: Path) -> None:
    write(workspace / "memory" / "long.md", "".join(f"line {i}\n" for i in range(1, 50_001)))
    sl = read_memory_file("memory/long.md", workspace, [], from_line=40_000, lines=2)
    assert sl.text == "line 40000\nline 40001" and sl.total_lines == 50_001 and sl.lines == 2


def test_a_hard_link_is_refused_unless_allowed(workspace: Path, tmp_path: Path) -> None:
    write(tmp_path / "outside.md", "outside the roots\n")
    os.link(tmp_path / "outside.md", workspace / "memory" / "hard.md")
    with pytest.raises(AccessDeniedError, match="hard link"):
        read_memory_file("memory/hard.md", workspace, [])
    assert read_memory_file("memory/hard.md", workspace, [], allow_hard_links=True).text == "outside the roots\n"
