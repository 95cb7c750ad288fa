from __future__ import annotations

import datetime
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.search.decay import (
    DAY_MS,
    apply_decay,
    date_from_path,
    decay_multiplier,
    is_evergreen,
    result_timestamp_ms,
)
from memoryd.search.fuse import Candidate

JAN_1_2024_MS = int(datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC).timestamp() * 1000)
JAN_31_2024_MS = JAN_1_2024_MS + 30 * DAY_MS


def chunk(path: str, source: str = "memory", *, score: float = 1.0, ts_ms: int = 0, start: int = 1) -> Candidate:
    return Candidate(
        id=f"{path}:{start}",
        path=path,
        source=source,
        start_line=start,
        end_line=start + 5,
        snippet="",
        score=score,
        ts_ms=ts_ms,
    )


def no_mtime(path: str) -> int | None:
    raise AssertionError(f"mtime of {path} should not be needed")


@pytest.mark.parametrize(
    ("age", "multiplier"),
    [(0.0, 1.0), (30.0, 0.5), (60.0, 0.25), (15.0, 2**-0.5), (-10.0, 1.0)],
)
def test_the_multiplier_halves_every_half_life(age: float, multiplier: float) -> None:
    assert decay_multiplier(age, 30.0) == pytest.approx(multiplier)


@pytest.mark.parametrize("half_life", [0.0, -5.0, math.nan, math.inf])
def test_an_unusable_half_life_means_no_decay(half_life: float) -> None:
    assert decay_multiplier(100.0, half_life) == 1.0


def test_an_unknown_age_means_no_decay() -> None:
    assert decay_multiplier(math.nan, 30.0) == 1.0


def test_an_ancient_note_fades_but_never_to_zero() -> None:
    assert 0 < decay_multiplier(1e9, 1.0) < 1e-300
    assert 0 < decay_multiplier(math.inf, 1.0) <= decay_multiplier(1e9, 1.0)


@given(
    st.floats(min_value=-1e4, max_value=1e7, allow_nan=False),
    st.floats(min_value=-1e4, max_value=1e7, allow_nan=False),
    st.floats(min_value=1e-3, max_value=1e5),
)
def test_the_multiplier_is_in_zero_one_and_never_grows_with_age(a: float, b: float, half_life: float) -> None:
    younger, older = min(a, b), max(a, b)
    assert 0 < decay_multiplier(older, half_life) <= decay_multiplier(younger, half_life) <= 1


@pytest.mark.parametrize(
    "path",
    [
        "memory/2024-01-05.md",
        "memory/2024-01-05-standup.md",
        "memory/dreaming/2024-01-05.md",
        "notes/2024-01-05 meeting.md",
        "memory/2024/01/05.md",
        "memory/2024/01/05/standup.md",
        "./memory/2024-01-05.md",
        "memory\\2024-01-05.md",
        "sessions/2024-01-05-chat.jsonl",
        "memory/2023-02-30 then 2024-01-05.md",
    ],
)
def test_a_date_in_the_file_name_or_a_dated_folder_run_dates_the_path(path: str) -> None:
    assert date_from_path(path) == datetime.date(2024, 1, 5)


@pytest.mark.parametrize(
    "path",
    [
        "MEMORY.md",
        "memory/projects.md",
        "memory/2024-02-30.md",
        "memory/2024-13-01.md",
        "memory/12024-01-05.md",
        "memory/2024-01-05/notes.md",
        "memory/2024/01/notes.md",
        "",
    ],
)
def test_undated_or_impossible_paths_have_no_date(path: str) -> None:
    assert date_from_path(path) is None


@pytest.mark.parametrize(
    ("path", "source", "evergreen"),
    [
        ("MEMORY.md", "memory", True),
        ("memory.md", "memory", True),
        ("./MEMORY.md", "memory", True),
        ("memory/projects.md", "memory", True),
        ("memory/topics/rust.md", "memory", True),
        ("memory/2024-01-05.md", "memory", False),
        ("memory/2024/01/05.md", "memory", False),
        ("memory/projects.md", "sessions", False),
        ("notes/ideas.md", "memory", False),
    ],
)
def test_evergreen_notes_are_the_root_files_and_undated_memory_files(path: str, source: str, evergreen: bool) -> None:
    assert is_evergreen(path, source) is evergreen


def test_a_dated_path_wins_over_message_time_and_mtime() -> None:
    assert result_timestamp_ms("memory/2024-01-01.md", "memory", 5, 7) == JAN_1_2024_MS


def test_an_evergreen_note_has_no_timestamp_even_with_an_mtime() -> None:
    assert result_timestamp_ms("memory/projects.md", "memory", 5, 7) is None


def test_message_time_wins_over_mtime_and_mtime_is_the_last_resort() -> None:
    assert result_timestamp_ms("sessions/s.jsonl", "sessions", 5, 7) == 5
    assert result_timestamp_ms("sessions/s.jsonl", "sessions", 0, 7) == 7
    assert result_timestamp_ms("sessions/s.jsonl", "sessions", 0, None) is None


def test_decay_scales_scores_by_age_and_keeps_the_input_order() -> None:
    cands = [
        chunk("memory/2024-01-01.md", score=0.8),
        chunk("MEMORY.md", score=0.6),
        chunk("sessions/s.jsonl", "sessions", score=0.4, ts_ms=JAN_31_2024_MS - 60 * DAY_MS),
        chunk("memory/2024-02-15.md", score=0.2),
    ]
    decayed = apply_decay(cands, JAN_31_2024_MS, 30.0, no_mtime)
    assert [c.id for c in decayed] == [c.id for c in cands]
    assert [c.score for c in decayed] == pytest.approx([0.4, 0.6, 0.1, 0.2])


def test_decay_asks_for_an_mtime_once_per_file_and_only_when_needed() -> None:
    asked: list[str] = []

    def mtime(path: str) -> int | None:
        asked.append(path)
        return JAN_1_2024_MS if path == "notes/a.md" else None

    cands = [
        chunk("notes/a.md", start=1),
        chunk("notes/a.md", start=20),
        chunk("notes/b.md"),
        chunk("sessions/s.jsonl", "sessions", ts_ms=JAN_1_2024_MS),
        chunk("memory/topic.md"),
    ]
    decayed = apply_decay(cands, JAN_31_2024_MS, 30.0, mtime)
    assert asked == ["notes/a.md", "notes/b.md"]
    assert [c.score for c in decayed] == pytest.approx([0.5, 0.5, 1.0, 0.5, 1.0])


def test_the_same_path_from_another_source_is_looked_up_separately() -> None:
    asked: list[str] = []

    def mtime(path: str) -> int | None:
        asked.append(path)
        return None

    apply_decay([chunk("x.md", "memory"), chunk("x.md", "sessions")], JAN_31_2024_MS, 30.0, mtime)
    assert asked == ["x.md", "x.md"]
