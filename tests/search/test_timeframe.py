"""Dates named in a query become a time frame, and results from then get a bounded boost."""

from __future__ import annotations

import datetime
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.search.decay import DAY_MS
from memoryd.search.fuse import Candidate
from memoryd.search.pipeline import RankOptions, rank_hybrid, rank_single
from memoryd.search.timeframe import AFTER_DAYS, BEFORE_DAYS, TimeFrame, boost_timeframe, parse_timeframe

D = datetime.date
TODAY = D(2026, 11, 29)  # a Sunday
MID_JANUARY = D(2026, 1, 15)


def ms(day: datetime.date) -> int:
    return int(datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC).timestamp() * 1000)


def span(query: str, today: datetime.date = TODAY) -> tuple[datetime.date, datetime.date] | None:
    frame = parse_timeframe(query, today)
    return None if frame is None else (frame.first, frame.last)


def cand(path: str, *, source: str = "memory", score: float = 0.5, ts_ms: int = 0, cid: str = "") -> Candidate:
    return Candidate(
        id=cid or path,
        path=path,
        source=source,
        start_line=1,
        end_line=3,
        snippet=f"about {path}",
        vector_score=score,
        text_score=score,
        score=score,
        ts_ms=ts_ms,
    )


def no_mtime(path: str) -> int | None:
    raise AssertionError(f"the mtime of {path} is never asked for")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did I write on 2023-05-08?", (D(2023, 5, 8), D(2023, 5, 8))),
        ("notes from 2023/5/8", (D(2023, 5, 8), D(2023, 5, 8))),
        ("What happened on 31 July, 2023?", (D(2023, 7, 31), D(2023, 7, 31))),
        ("the 5th of March 2024", (D(2024, 3, 5), D(2024, 3, 5))),
        ("What happened on July 31st 2023?", (D(2023, 7, 31), D(2023, 7, 31))),
        ("What did we decide in January 2022?", (D(2022, 1, 1), D(2022, 1, 31))),
        ("the budget of 2023-05", (D(2023, 5, 1), D(2023, 5, 31))),
        ("Where did she travel in June?", (D(2026, 6, 1), D(2026, 6, 30))),
        ("What did I read in 2019?", (D(2019, 1, 1), D(2019, 12, 31))),
        ("what did I do today", (TODAY, TODAY)),
        ("what did I do yesterday", (D(2026, 11, 28), D(2026, 11, 28))),
        ("meetings this week", (D(2026, 11, 23), TODAY)),
        ("meetings last week", (TODAY - datetime.timedelta(days=14), TODAY)),
        ("bills this month", (D(2026, 11, 1), TODAY)),
        ("bills last month", (D(2026, 10, 1), D(2026, 10, 31))),
        ("bills over the past month", (D(2026, 10, 1), TODAY)),
        ("trips this year", (D(2026, 1, 1), TODAY)),
        ("trips last year", (D(2025, 1, 1), D(2025, 12, 31))),
        ("trips in the past year", (D(2025, 1, 1), TODAY)),
        ("the call 3 days ago", (D(2026, 11, 25), D(2026, 11, 27))),
        ("the party two weeks ago", (D(2026, 11, 12), D(2026, 11, 18))),
        ("what changed between 2021 and 2023", (D(2021, 1, 1), D(2023, 12, 31))),
        ("March 15 2024, or was it in 2020?", (D(2020, 1, 1), D(2024, 3, 15))),
    ],
)
def test_a_query_naming_a_time_gets_the_days_it_names(
    query: str, expected: tuple[datetime.date, datetime.date]
) -> None:
    assert span(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "What may Caroline do?",
        "Caroline may be moving soon",
        "What is my favourite colour?",
        "notes from 2024-02-30",
        "31 February 2023",
        "June 31",
        "the 2024-13 report",
        "in 2100",
        "",
    ],
)
def test_a_query_naming_no_real_date_has_no_time_frame(query: str) -> None:
    assert parse_timeframe(query, TODAY) is None


def test_an_impossible_date_does_not_fall_back_to_its_year() -> None:
    assert span("what about 2024-02-30 or June 2025") == (D(2025, 6, 1), D(2025, 6, 30))


@pytest.mark.parametrize(
    ("query", "today", "expected"),
    [
        ("bills last month", MID_JANUARY, (D(2025, 12, 1), D(2025, 12, 31))),
        ("bills over the past month", MID_JANUARY, (D(2025, 12, 1), MID_JANUARY)),
        ("trips last year", MID_JANUARY, (D(2025, 1, 1), D(2025, 12, 31))),
        ("gifts in December", MID_JANUARY, (D(2025, 12, 1), D(2025, 12, 31))),
        ("gifts in January", MID_JANUARY, (D(2026, 1, 1), D(2026, 1, 31))),
        ("the dinner on dec 5", MID_JANUARY, (D(2025, 12, 5), D(2025, 12, 5))),
        ("the dinner on Dec. 5", MID_JANUARY, (D(2025, 12, 5), D(2025, 12, 5))),
        ("the dinner on jan 15", MID_JANUARY, (MID_JANUARY, MID_JANUARY)),
        ("the dinner on jan 16", MID_JANUARY, (D(2025, 1, 16), D(2025, 1, 16))),
        ("meetings this week", D(2026, 11, 23), (D(2026, 11, 23), D(2026, 11, 23))),
        ("the call 3 days ago", D(2026, 1, 2), (D(2025, 12, 29), D(2025, 12, 31))),
        ("the party on Feb 29", TODAY, (D(2024, 2, 29), D(2024, 2, 29))),
        ("the party on 29 February", D(2024, 1, 15), (D(2020, 2, 29), D(2020, 2, 29))),
        ("the party on Feb 29", D(2024, 2, 29), (D(2024, 2, 29), D(2024, 2, 29))),
        ("the party on Feb 29", D(2103, 3, 1), (D(2096, 2, 29), D(2096, 2, 29))),  # 2100 is no leap year
    ],
)
def test_months_and_days_without_a_year_mean_their_latest_occurrence_up_to_today(
    query: str, today: datetime.date, expected: tuple[datetime.date, datetime.date]
) -> None:
    assert span(query, today) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Sept 2025", (D(2025, 9, 1), D(2025, 9, 30))),
        ("sep 2025", (D(2025, 9, 1), D(2025, 9, 30))),
        ("SEPT. 3, 2025", (D(2025, 9, 3), D(2025, 9, 3))),
        ("WHAT HAPPENED IN JANUARY 2022", (D(2022, 1, 1), D(2022, 1, 31))),
        ("Aug 1st, 2024", (D(2024, 8, 1), D(2024, 8, 1))),
        ("1 aug 2024", (D(2024, 8, 1), D(2024, 8, 1))),
        ("May 2023", (D(2023, 5, 1), D(2023, 5, 31))),
        ("the trip in may", (D(2026, 5, 1), D(2026, 5, 31))),
        ("YESTERDAY", (D(2026, 11, 28), D(2026, 11, 28))),
    ],
)
def test_abbreviations_and_upper_case_name_the_same_days(
    query: str, expected: tuple[datetime.date, datetime.date]
) -> None:
    assert span(query) == expected


def test_several_mentions_make_one_frame_spanning_all_and_naming_each() -> None:
    frame = parse_timeframe("between January 2022 and 2023-05-08", TODAY)
    assert frame is not None
    assert (frame.first, frame.last) == (D(2022, 1, 1), D(2023, 5, 8))
    assert set(frame.phrase.split(", ")) == {"january 2022", "2023-05-08"}


def test_the_window_reaches_before_days_before_and_after_days_past_the_frame() -> None:
    frame = TimeFrame(D(2023, 5, 8), D(2023, 5, 10), "test")
    start, end = frame.window_ms()
    assert start == ms(D(2023, 5, 8)) - BEFORE_DAYS * DAY_MS
    assert end == ms(D(2023, 5, 11)) + AFTER_DAYS * DAY_MS


@pytest.mark.parametrize(
    ("day", "boosted"),
    [
        (D(2023, 5, 6), False),
        (D(2023, 5, 7), True),
        (D(2023, 5, 8), True),
        (D(2023, 5, 16), True),
        (D(2023, 5, 17), False),
    ],
)
def test_a_dated_note_is_boosted_exactly_when_its_date_is_in_the_window(day: datetime.date, boosted: bool) -> None:
    # 8 May 2023, widened by one day before and eight after: 7 to 16 May.
    frame = TimeFrame(D(2023, 5, 8), D(2023, 5, 8), "2023-05-08")
    [out] = boost_timeframe([cand(f"memory/{day:%Y-%m-%d}.md", score=0.5)], frame, 0.2)
    assert out.score == (0.5 * 1.2 if boosted else 0.5)


@pytest.mark.parametrize(
    ("result", "boosted"),
    [
        (cand("memory/2023-05-08.md"), True),
        (cand("memory/2023/05/08.md"), True),
        (cand("memory/trip-2023-05-09-notes.md"), True),
        (cand("memory/2023-06-08.md", ts_ms=ms(D(2023, 5, 8))), False),  # the path's date wins
        (cand("sessions/abc.jsonl", source="sessions", ts_ms=ms(D(2023, 5, 8)) + 3_600_000), True),
        (cand("sessions/abc.jsonl", source="sessions", ts_ms=ms(D(2023, 7, 1))), False),
        (cand("sessions/abc.jsonl", source="sessions", ts_ms=0), False),
        (cand("MEMORY.md", ts_ms=ms(D(2023, 5, 8))), False),
        (cand("memory/projects.md", ts_ms=ms(D(2023, 5, 8))), False),
        (cand("notes/ideas.md"), False),
    ],
)
def test_only_a_date_in_the_path_or_a_message_time_can_earn_the_boost(result: Candidate, boosted: bool) -> None:
    frame = TimeFrame(D(2023, 5, 8), D(2023, 5, 8), "2023-05-08")
    [out] = boost_timeframe([result], frame, 0.25)
    assert out.score == (result.score * 1.25 if boosted else result.score)
    assert out.vector_score == result.vector_score and out.text_score == result.text_score


@pytest.mark.parametrize("boost", [0.0, -0.5])
def test_a_boost_of_zero_or_less_changes_nothing(boost: float) -> None:
    frame = TimeFrame(D(2023, 5, 8), D(2023, 5, 8), "2023-05-08")
    cands = [cand("memory/2023-05-08.md"), cand("MEMORY.md")]
    assert boost_timeframe(cands, frame, boost) == cands


def ranked_paths(frame: TimeFrame | None, *, hybrid: bool) -> list[str]:
    # Equal scores; MEMORY.md sorts first on the tie-break, so the dated note leads only when boosted.
    dated, undated = cand("memory/2023-05-08.md", score=0.6), cand("MEMORY.md", score=0.6)
    opts = RankOptions(max_results=5, min_score=0.1, timeframe=frame, date_boost=0.2)
    if hybrid:
        keyword = [cand("memory/2023-05-08.md", score=0.6), cand("MEMORY.md", score=0.6)]
        ranked = rank_hybrid([dated, undated], keyword, opts, no_mtime)
    else:
        ranked = rank_single([dated, undated], opts, no_mtime)
    return [c.path for c in ranked]


@pytest.mark.parametrize("hybrid", [False, True])
@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("What did I cook on 8 May 2023?", "memory/2023-05-08.md"),
        ("What did I cook in May 2023?", "memory/2023-05-08.md"),
        ("What did I cook in 2023?", "memory/2023-05-08.md"),
        ("What did I cook in June 2024?", "MEMORY.md"),
        ("What did I cook last week?", "MEMORY.md"),
        ("What may I cook?", "MEMORY.md"),
    ],
)
def test_a_dated_note_overtakes_an_equal_undated_one_only_when_the_query_names_its_time(
    query: str, first: str, hybrid: bool
) -> None:
    paths = ranked_paths(parse_timeframe(query, TODAY), hybrid=hybrid)
    assert paths[0] == first
    assert sorted(paths) == ["MEMORY.md", "memory/2023-05-08.md"]


dates = st.dates(min_value=D(1990, 1, 1), max_value=D(2099, 12, 31))


@given(day=dates)
def test_every_spelled_out_date_names_exactly_that_day(day: datetime.date) -> None:
    for text in (f"{day:%Y-%m-%d}", f"{day.day} {day:%B} {day.year}", f"{day:%B} {day.day}, {day.year}"):
        assert span(text) == (day, day), text


fragments = st.sampled_from(
    [
        "in may",
        "may",
        "dec 5",
        "feb 29",
        "2024-02-30",
        "2023-05",
        "31 july, 2023",
        "last month",
        "past year",
        "999 years ago",
        "six weeks ago",
        "today",
        "2099",
        "sept.",
        " ",
        ",",
    ]
)


@given(
    words=st.lists(st.one_of(st.text(), fragments), max_size=8),
    today=st.dates(min_value=D(1990, 1, 1), max_value=D(2099, 12, 31)),
)
def test_parsing_never_fails_and_any_frame_runs_forward(words: list[str], today: datetime.date) -> None:
    frame = parse_timeframe(" ".join(words), today)
    if frame is not None:
        assert frame.first <= frame.last
        start, end = frame.window_ms()
        assert start < end


candidates = st.lists(
    st.builds(
        cand,
        st.one_of(
            st.builds(lambda d: f"memory/{d:%Y-%m-%d}.md", dates),
            st.sampled_from(["MEMORY.md", "memory/projects.md", "sessions/s.jsonl", "notes/x.md"]),
        ),
        source=st.sampled_from(["memory", "sessions"]),
        score=st.floats(0, 1),
        ts_ms=st.one_of(st.just(0), st.builds(ms, dates)),
    ),
    max_size=12,
)


@given(
    cands=candidates,
    first=dates,
    length=st.integers(0, 400),
    boost=st.floats(-1, 2, allow_nan=False),
)
def test_boosting_keeps_every_candidate_in_place_and_only_multiplies_by_one_plus_boost(
    cands: list[Candidate], first: datetime.date, length: int, boost: float
) -> None:
    numbered = [replace(c, id=str(i)) for i, c in enumerate(cands)]
    frame = TimeFrame(first, min(D(2099, 12, 31), first + datetime.timedelta(days=length)), "x")
    out = boost_timeframe(numbered, frame, boost)
    assert [c.id for c in out] == [c.id for c in numbered]
    for before, after in zip(numbered, out, strict=True):
        assert after.score in (before.score, before.score * (1 + boost))
        if boost <= 0:
            assert after == before
        else:
            assert after == replace(before, score=after.score)
