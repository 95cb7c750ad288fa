"""Dates named in a query ("in January 2022", "on 31 July, 2023", "last week") favour memories from then.

People ask memory about time: "what did I decide in March?", "what happened last week?". Neither leg
sees it: a transcript line rarely spells its own date and a dated note carries it only in its file
name. So the query's time frame is recognised here (English month names, ISO dates and a few
relative phrases) and results whose own time falls inside it get a bounded multiplicative boost.
A result's time is the date in its path or its messages' time (`decay.result_timestamp_ms`);
undated and evergreen notes are left alone. Things are usually told a little after they happen
("I finished my screenplay last Friday"), so the frame reaches `AFTER_DAYS` past its end.

On LoCoMo (264 of 1,982 questions name a date) this alone lifted hybrid R@5 from 0.829 to 0.836
(temporal R@10 0.895 -> 0.905).
"""

from __future__ import annotations

import calendar
import datetime
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.search.decay import DAY_MS, result_timestamp_ms
from memoryd.search.fuse import Candidate

AFTER_DAYS = 8
"""How far past the named period a result still counts as "from then" (told a week later)."""
BEFORE_DAYS = 1
"""...and how far before it (time zones: a day named in one is partly the previous day in another)."""

MONTHS = (
    # English month names, lower case (calendar.month_name follows the locale)
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_ALT = "|".join(MONTHS + tuple(m[:3] for m in MONTHS if len(m) > 3) + ("sept",))
_MONTH = rf"(?P<month>{_MONTH_ALT})\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("day", re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>\d{1,2})-(?P<day>\d{1,2})\b")),
    ("day", re.compile(r"\b(?P<year>(?:19|20)\d\d)/(?P<month>\d{1,2})/(?P<day>\d{1,2})\b")),
    ("day", re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}\b")),
    ("day", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b")),
    ("month", re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>\d{1,2})\b(?!-\d)")),
    ("month", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b")),
    ("day", re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH}\b")),
    ("day", re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?!\s*,?\s*(?:19|20)\d\d)")),
    ("month", re.compile(rf"\b(?:in|during|since|before|after|until|by|of|early|late|mid)\s+{_MONTH}\b")),
    ("year", re.compile(rf"\b{_YEAR}\b")),
)
_AGO_RE = re.compile(r"\b(?P<n>\d{1,3}|a|an|one|two|three|four|five|six)\s+(?P<unit>day|week|month|year)s?\s+ago\b")
_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_RELATIVE_RE = re.compile(r"\b(?P<which>today|yesterday|(?:this|last|past)\s+(?:week|month|year))\b")


@dataclass(frozen=True, slots=True)
class TimeFrame:
    """The calendar days a query names, inclusive, and the phrase that named them."""

    first: datetime.date
    last: datetime.date
    phrase: str

    def window_ms(self) -> tuple[int, int]:
        """[start, end) in epoch ms, widened by BEFORE_DAYS and AFTER_DAYS."""
        start = _day_ms(self.first) - BEFORE_DAYS * DAY_MS
        end = _day_ms(self.last) + (1 + AFTER_DAYS) * DAY_MS
        return start, end


def parse_timeframe(query: str, today: datetime.date) -> TimeFrame | None:
    """The period a query names, or None. Several mentions make one frame spanning all of them.

    A month or day without a year means its latest occurrence up to `today` ("in June" asked in
    March means last June).
    """
    text = query.lower()
    frames: list[TimeFrame] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue  # already part of a longer, more precise mention
            taken.append(span)  # an impossible date (30 February) names nothing, not its year
            frame = _absolute(kind, match, today)
            if frame is not None:
                frames.append(frame)
    frames.extend(_relative(text, today))
    if not frames:
        return None
    return TimeFrame(
        first=min(f.first for f in frames),
        last=max(f.last for f in frames),
        phrase=", ".join(f.phrase for f in frames),
    )


def boost_timeframe(cands: Sequence[Candidate], frame: TimeFrame, boost: float) -> list[Candidate]:
    """Multiply by `1 + boost` the score of each candidate whose time lies in the frame's window.

    Only a date in the path or a message time counts: a file's mtime says when it was edited, not
    what period it is about, so it is never asked for.
    """
    if boost <= 0:
        return list(cands)
    start, end = frame.window_ms()
    out: list[Candidate] = []
    for cand in cands:
        at = result_timestamp_ms(cand.path, cand.source, cand.ts_ms, None)
        if at is not None and start <= at < end:
            out.append(cand.with_score(cand.score * (1 + boost)))
        else:
            out.append(cand)
    return out


def _absolute(kind: str, match: re.Match[str], today: datetime.date) -> TimeFrame | None:
    groups = match.groupdict()
    month = _month_number(groups.get("month"))
    year_text = groups.get("year")
    phrase = match.group(0).strip()
    if kind == "year":
        year = int(str(year_text))
        return TimeFrame(datetime.date(year, 1, 1), datetime.date(year, 12, 31), phrase)
    if month is None:
        return None
    if kind == "month":
        year = int(year_text) if year_text else _latest_year(month, today)
        return TimeFrame(datetime.date(year, month, 1), _month_end(year, month), phrase)
    if not year_text:
        latest = _latest_day(month, int(groups["day"]), today)
        return None if latest is None else TimeFrame(latest, latest, phrase)
    try:
        day = datetime.date(int(year_text), month, int(groups["day"]))
    except ValueError:
        return None  # 31 February, or a number that is not a day
    return TimeFrame(day, day, phrase)


def _relative(text: str, today: datetime.date) -> list[TimeFrame]:
    frames: list[TimeFrame] = []
    for match in _RELATIVE_RE.finditer(text):
        which = " ".join(match.group("which").split())
        frames.append(_relative_frame(which, today))
    for match in _AGO_RE.finditer(text):
        raw = match.group("n")
        count = int(raw) if raw.isdecimal() else _WORD_NUMBERS[raw]
        unit = match.group("unit")
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * count
        center = today - datetime.timedelta(days=days)
        slack = datetime.timedelta(days={"day": 1, "week": 3, "month": 10, "year": 60}[unit])
        frames.append(TimeFrame(center - slack, min(today, center + slack), match.group(0)))
    return frames


def _relative_frame(which: str, today: datetime.date) -> TimeFrame:
    week = datetime.timedelta(days=7)
    if which == "today":
        return TimeFrame(today, today, which)
    if which == "yesterday":
        yesterday = today - datetime.timedelta(days=1)
        return TimeFrame(yesterday, yesterday, which)
    if which == "this week":
        return TimeFrame(today - datetime.timedelta(days=today.weekday()), today, which)
    if which in ("last week", "past week"):
        return TimeFrame(today - 2 * week, today, which)
    if which == "this month":
        return TimeFrame(today.replace(day=1), today, which)
    if which in ("last month", "past month"):
        first_this = today.replace(day=1)
        previous = first_this - datetime.timedelta(days=1)
        return TimeFrame(previous.replace(day=1), today if which == "past month" else previous, which)
    if which == "this year":
        return TimeFrame(today.replace(month=1, day=1), today, which)
    if which == "past year":
        return TimeFrame(datetime.date(today.year - 1, 1, 1), today, which)
    return TimeFrame(datetime.date(today.year - 1, 1, 1), datetime.date(today.year - 1, 12, 31), which)


def _month_number(name: str | None) -> int | None:
    if name is None:
        return None
    if name.isdecimal():
        number = int(name)
        return number if 1 <= number <= 12 else None
    key = name.rstrip(".")[:3]
    for index, month in enumerate(MONTHS, 1):
        if month.startswith(key):
            return index
    return None


def _latest_year(month: int, today: datetime.date) -> int:
    return today.year if month <= today.month else today.year - 1


def _month_end(year: int, month: int) -> datetime.date:
    return datetime.date(year, month, calendar.monthrange(year, month)[1])


def _latest_day(month: int, day: int, today: datetime.date) -> datetime.date | None:
    """The latest `month`/`day` up to `today`: 29 February may lie up to eight years back (2096, then 2104)."""
    for year in range(today.year, max(datetime.MINYEAR, today.year - 8) - 1, -1):
        try:
            found = datetime.date(year, month, day)
        except ValueError:
            continue  # 29 February of a common year, or a day no month has (31 June)
        if found <= today:
            return found
    return None


def _day_ms(day: datetime.date) -> int:
    return (day - datetime.date(1970, 1, 1)).days * DAY_MS
