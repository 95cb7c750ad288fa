"""memory_write's file side on a real file system: targets, refusals, editors saving at the worst moment."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memoryd.errors import NotFoundError, WriteRefusedError
from memoryd.sources.write import Written, append_entry, check_entry
from memoryd.sources.write.append import Stage, Target

NOW = datetime(2026, 12, 1, 14, 3, tzinfo=timezone(timedelta(hours=1)))
STAMP = "_2026-12-01 14:03 +01:00_"
DAILY = Path("memory/2026-12-01.md")


def save(ws: Path, text: str, target: Target = "daily", heading: str | None = None, **kw: object) -> Written:
    return append_entry(ws, target, check_entry(text, heading), now=NOW, **kw)  # type: ignore[arg-type]


def lines_of(written: Written) -> list[str]:
    """The lines the reply cites, read back from the file."""
    lines = written.abs_path.read_text().split("\n")
    return lines[written.start_line - 1 : written.end_line]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def test_the_daily_note_and_memory_folder_are_created_with_a_title(ws: Path) -> None:
    first = save(ws, "We chose Postgres.")
    second = save(ws, "Ada prefers tabs.", heading="Preferences")
    assert (first.path, first.citation, first.created_file) == (str(DAILY), f"{DAILY}#L3-L4", True)
    assert (second.created_file, second.created_heading) == (False, True)
    assert (ws / DAILY).read_text() == (
        f"# 2026-12-01\n\n{STAMP}\nWe chose Postgres.\n\n## Preferences\n\n{STAMP}\nAda prefers tabs.\n"
    )
    assert lines_of(second) == [STAMP, "Ada prefers tabs."]


def test_long_term_goes_to_memory_md_or_to_lowercase_memory_md_when_that_is_the_file(ws: Path) -> None:
    created = save(ws, "Biscuit is the dog.", "long-term")
    assert (created.path, (ws / "MEMORY.md").read_text()) == (
        "MEMORY.md",
        f"# Memory\n\n{STAMP}\nBiscuit is the dog.\n",
    )
    other = ws.parent / "other"
    other.mkdir()
    (other / "memory.md").write_text("my notes")
    appended = save(other, "Kept here.", "long-term")
    assert appended.path == "memory.md"
    assert (other / "memory.md").read_text() == f"my notes\n\n{STAMP}\nKept here.\n"
    assert not (other / "MEMORY.md").exists() or os.path.samefile(other / "MEMORY.md", other / "memory.md")


def test_symlinks_fifos_folders_and_a_missing_workspace_are_refused_and_nothing_is_written(ws: Path) -> None:
    outside = ws.parent / "outside.md"
    outside.write_text("not yours\n")
    (ws / "MEMORY.md").symlink_to(outside)
    with pytest.raises(WriteRefusedError, match=r"MEMORY\.md is a symlink"):
        save(ws, "x", "long-term")

    (ws / "memory").symlink_to(ws.parent)
    with pytest.raises(WriteRefusedError, match="memory is a symlink"):
        save(ws, "x")
    (ws / "memory").unlink()

    (ws / "memory").mkdir()
    (ws / DAILY).symlink_to(outside)
    with pytest.raises(WriteRefusedError, match=r"2026-12-01\.md is a symlink"):
        save(ws, "x")
    (ws / DAILY).unlink()

    os.mkfifo(ws / DAILY)
    with pytest.raises(WriteRefusedError, match="is not a regular file"):
        save(ws, "x")
    (ws / DAILY).unlink()

    (ws / DAILY).mkdir()
    with pytest.raises(WriteRefusedError, match="is not a regular file"):
        save(ws, "x")
    assert outside.read_text() == "not yours\n"

    flat = ws.parent / "flat"
    flat.mkdir()
    (flat / "memory").write_text("a file, not a folder")
    with pytest.raises(WriteRefusedError, match="memory exists and is not a directory"):
        save(flat, "x")
    with pytest.raises(NotFoundError, match="does not exist"):
        save(ws.parent / "missing", "x")


def _editor(how: str, when: Stage, *, keep_entry: bool = False) -> Callable[[Stage, Path], None]:
    """An editor that saves once, at stage `when`, by renaming a new file over the note or rewriting it in
    place; its buffer was loaded before memoryd wrote (or, with `keep_entry`, after)."""
    loaded: list[bytes] = []

    def on_stage(stage: Stage, path: Path) -> None:
        if stage == "read" and not loaded:
            loaded.append(path.read_bytes())
        if stage != when or len(loaded) > 1:
            return
        new = (path.read_bytes() if keep_entry else loaded[0]) + b"edited by hand\n"
        loaded.append(new)
        if how == "rename":
            temp = path.with_name(path.name + ".swp")
            temp.write_bytes(new)
            os.replace(temp, path)
        else:
            with path.open("r+b") as fh:
                fh.truncate(0)
                fh.write(new)

    return on_stage


@pytest.mark.parametrize("how", ["rename", "in place"])
@pytest.mark.parametrize("when", ["read", "written"])
def test_an_editor_saving_while_the_entry_is_written_loses_nothing(ws: Path, how: str, when: Stage) -> None:
    (ws / "memory").mkdir()
    (ws / DAILY).write_text("# 2026-12-01\n\nmorning notes\n")
    written = save(ws, "Entry survives.", on_stage=_editor(how, when))
    text = (ws / DAILY).read_text()
    assert text.count("Entry survives.") == 1
    assert "edited by hand" in text and "morning notes" in text
    assert lines_of(written) == [STAMP, "Entry survives."]


def test_an_editor_that_saved_with_the_entry_in_its_buffer_gets_no_second_copy(ws: Path) -> None:
    (ws / "memory").mkdir()
    (ws / DAILY).write_text("# 2026-12-01\n")
    written = save(ws, "Only once.", on_stage=_editor("rename", "written", keep_entry=True))
    text = (ws / DAILY).read_text()
    assert text.count("Only once.") == 1
    assert text.endswith("edited by hand\n")
    assert lines_of(written) == [STAMP, "Only once."]


def test_text_appended_by_someone_else_between_read_and_write_shifts_the_lines_not_the_entry(ws: Path) -> None:
    (ws / "memory").mkdir()
    (ws / DAILY).write_text("# 2026-12-01\n")

    def appender(stage: Stage, path: Path) -> None:
        if stage == "read":
            with path.open("a") as fh:
                fh.write("one\ntwo\n")

    written = save(ws, "Where am I?", on_stage=appender)
    assert lines_of(written) == [STAMP, "Where am I?"]
    assert (ws / DAILY).read_text().startswith("# 2026-12-01\none\ntwo\n")


def test_threads_writing_at_once_each_land_exactly_once_at_the_lines_they_report(ws: Path) -> None:
    results: list[Written] = []
    errors: list[BaseException] = []
    start = threading.Barrier(16)

    def worker(n: int) -> None:
        try:
            start.wait()
            for k in range(5):
                results.append(save(ws, f"entry {n}-{k}\nsecond line {n}-{k}", heading=("A", "B")[k % 2]))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    text = (ws / DAILY).read_text()
    for n in range(16):
        for k in range(5):
            assert text.count(f"entry {n}-{k}\n") == 1
    lines = text.split("\n")
    for w in results:
        cited = lines[w.start_line - 1 : w.end_line]
        assert cited[0] == STAMP and cited[1].startswith("entry ") and cited[2].startswith("second line ")
    assert lines[0] == "# 2026-12-01"
    assert len(results) == 80


def test_a_hard_link_and_a_file_that_would_outgrow_the_read_cap_are_refused(ws: Path) -> None:
    elsewhere = ws.parent / "bashrc"
    elsewhere.write_text("export PATH=/usr/bin\n")
    (ws / "memory").mkdir()
    os.link(elsewhere, ws / DAILY)
    with pytest.raises(WriteRefusedError, match=r"is a hard link \(2 names\)"):
        save(ws, "x")
    assert elsewhere.read_text() == "export PATH=/usr/bin\n"
    assert save(ws, "Allowed when configured.", allow_hard_links=True).start_line == 3
    (ws / "MEMORY.md").write_text("x" * 90)
    with pytest.raises(WriteRefusedError, match=r"over files\.max_markdown_bytes"):
        save(ws, "One entry too many.", "long-term", max_bytes=100)
    assert (ws / "MEMORY.md").read_text() == "x" * 90
