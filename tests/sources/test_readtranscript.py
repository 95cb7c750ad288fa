"""`memory_get` of a transcript below the engine: any path string gives an answer or a memoryd error, never a crash."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.config.sessions import SessionRoot
from memoryd.errors import MemorydError
from memoryd.sources.readtranscript import read_transcript
from tests.conftest import transcript_line, write

PIECES = st.sampled_from(["sessions", "codex", "..", ".", "", "a.jsonl", "x", "\x00", "\\", "node_modules", "%2e"])
NAMES = st.sampled_from(["a.jsonl", "b\x00.jsonl", "c.jsonl.deleted.2026-01-05T10-00-00Z", "x.md", "..", "a.jsonl "])


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[SessionRoot, ...]:
    base = tmp_path_factory.mktemp("roots")
    write(base / "sessions" / "a.jsonl", transcript_line("user", "hello") + "\n")
    (base / "codex").mkdir()
    return SessionRoot("sessions", base / "sessions"), SessionRoot("codex", base / "codex", "codex")


@settings(max_examples=300)
@given(
    prefix=st.sampled_from(["sessions", "codex", "other", ""]),
    parts=st.lists(PIECES | st.text(max_size=4), max_size=5),
    name=NAMES | st.text(max_size=8),
    absolute=st.booleans(),
)
def test_any_path_is_answered_or_refused_with_a_memoryd_error(
    roots: tuple[SessionRoot, ...], prefix: str, parts: list[str], name: str, absolute: bool
) -> None:
    raw = "/".join([prefix, *parts, name])
    if absolute:
        raw = f"{roots[0].path.parent}/{raw}"
    try:
        got = read_transcript(raw, roots)
    except MemorydError:
        return
    assert got is None or got.path.split("/")[0] in ("sessions", "codex")


def test_the_cited_lines_read_back(roots: tuple[SessionRoot, ...]) -> None:
    got = read_transcript("sessions/a.jsonl", roots, from_line=1, lines=1)
    assert got is not None and (got.text, got.line_numbers, got.total_lines) == ("User: hello", (1,), 2)
