"""Exported transcripts: the builtin index's text, redacted, within the retention, nothing stale left."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memoryd.qmd.exporter import ExportedSession, SessionExporter, export_name, render
from tests.conftest import transcript_line, write

SECRET = "sk-live0123456789abcdefghij"


def transcript(path: Path, *messages: tuple[str, str]) -> Path:
    lines = ['{"type":"session","id":"x"}', *(transcript_line(role, text) for role, text in messages)]
    return write(path, "\n".join(lines) + "\n")


def test_a_transcript_becomes_markdown_with_a_header_and_masked_secrets(tmp_path: Path) -> None:
    transcript(
        tmp_path / "sessions" / "s1.jsonl",
        ("user", f"my key is {SECRET}, book Lisbon"),
        ("assistant", "Booked\n\nLisbon."),
    )
    exporter = SessionExporter(tmp_path / "sessions", tmp_path / "export")
    report = exporter.export()
    text = (tmp_path / "export" / "s1.md").read_text(encoding="utf-8")
    assert text.startswith("# Session s1\n\nUser: my key is sk-l…")
    assert SECRET not in text
    assert text.endswith("Assistant: Booked Lisbon.\n")
    assert report.written == 1
    assert exporter.exported["s1.md"].transcript_path == "sessions/s1.jsonl"


def test_export_lines_map_back_to_jsonl_lines(tmp_path: Path) -> None:
    transcript(tmp_path / "sessions" / "s.jsonl", ("user", "a"), ("assistant", "b"), ("user", "c"))
    exporter = SessionExporter(tmp_path / "sessions", tmp_path / "export")
    exporter.export()
    origin = exporter.exported["s.md"]
    assert origin.line_map == (2, 3, 4)
    assert origin.transcript_lines(3, 4) == (2, 3)  # export lines 3-4 are the first two messages
    assert origin.transcript_lines(1, 5) == (2, 4)  # the header is not a message
    assert origin.transcript_lines(1, 2) is None


@given(start=st.integers(-5, 20), end=st.integers(-5, 20), size=st.integers(0, 10))
def test_mapped_lines_are_always_real_transcript_lines_in_order(start: int, end: int, size: int) -> None:
    origin = ExportedSession("sessions/x.jsonl", tuple(range(2, 2 + size)), 0, "h")
    lines = origin.transcript_lines(start, end)
    if lines is not None:
        assert lines[0] <= lines[1]
        assert lines[0] in origin.line_map and lines[1] in origin.line_map


def test_empty_transcripts_say_so() -> None:
    assert render("s", "  ") == "# Session s\n\n(empty)\n"


def test_archive_names_keep_their_suffix() -> None:
    assert export_name("abc.jsonl") == "abc.md"
    assert export_name("abc.jsonl.deleted.2026-01-05T10-00-00Z") == "abc.jsonl.deleted.2026-01-05T10-00-00Z.md"


def test_old_transcripts_are_not_exported_and_stale_exports_are_removed(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    old = transcript(sessions / "old.jsonl", ("user", "ancient"))
    keep = transcript(sessions / "new.jsonl", ("user", "fresh"))
    gone = transcript(sessions / "gone.jsonl", ("user", "deleted later"))
    ten_days_ago = time.time() - 10 * 86_400
    os.utime(old, (ten_days_ago, ten_days_ago))
    exporter = SessionExporter(sessions, tmp_path / "export", retention_days=7)
    first = exporter.export()
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == ["gone.md", "new.md"]
    assert first.skipped_old == 1
    gone.unlink()
    second = exporter.export()
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == ["new.md"]
    assert (second.removed, second.unchanged, second.written) == (1, 1, 0)
    assert keep.exists()


def test_an_unchanged_transcript_is_not_rewritten_and_a_changed_one_is(tmp_path: Path) -> None:
    path = transcript(tmp_path / "sessions" / "s.jsonl", ("user", "one"))
    exporter = SessionExporter(tmp_path / "sessions", tmp_path / "export")
    exporter.export()
    assert exporter.export().written == 0
    with path.open("a", encoding="utf-8") as fh:
        fh.write(transcript_line("assistant", "two") + "\n")
    os.utime(path, (time.time() + 5, time.time() + 5))
    assert exporter.export().written == 1
    assert "Assistant: two" in (tmp_path / "export" / "s.md").read_text(encoding="utf-8")


def test_a_missing_sessions_folder_exports_nothing_and_clears_old_exports(tmp_path: Path) -> None:
    write(tmp_path / "export" / "leftover.md", "# Session leftover\n")
    report = SessionExporter(tmp_path / "no-sessions", tmp_path / "export").export()
    assert report.removed == 1 and not list((tmp_path / "export").iterdir())
