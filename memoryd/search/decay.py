"""Temporal decay (spec §3.14), keyed on any date a path carries and on transcript message times.

OpenClaw only dates `memory/YYYY-MM-DD.md`; slugged names, dated files in subfolders and dated folder
trees fell back to "evergreen" or mtime (its issues #52259, #79852, #121103). Here a date anywhere in
the file name, or a `YYYY/MM/DD` folder path, dates the note, and transcript chunks decay by the time
of their messages rather than the file's mtime.
"""

from __future__ import annotations

import datetime
import enum
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memoryd.search.fuse import Candidate

DAY_MS = 86_400_000
_EPOCH = datetime.date(1970, 1, 1)
# The smallest positive normal float: an ancient note fades to almost nothing but never to exactly 0.
_MIN_MULTIPLIER = sys.float_info.min
_EVERGREEN_ROOT_FILES = frozenset({"MEMORY.md", "memory.md"})
_DATE_IN_NAME_RE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_YEAR_RE = re.compile(r"\d{4}")
_MONTH_RE = re.compile(r"\d{2}")
_DAY_RE = re.compile(r"(\d{2})(?!\d)")


class _PathTime(enum.Enum):
    EVERGREEN = "evergreen"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class _Dated:
    ms: int


def decay_multiplier(age_days: float, half_life_days: float) -> float:
    """`exp(-ln2 / halfLife · max(0, age))`, in (0, 1]; a non-positive or non-finite half-life (or an
    unknown age) means no decay."""
    if math.isnan(age_days) or not math.isfinite(half_life_days) or half_life_days <= 0:
        return 1.0
    age = max(0.0, age_days)
    if math.isinf(age):
        return _MIN_MULTIPLIER
    return max(math.exp(-math.log(2) / half_life_days * age), _MIN_MULTIPLIER)


def date_from_path(path: str) -> datetime.date | None:
    """The calendar date a path names: `YYYY-MM-DD` anywhere in the file name, else a
    `YYYY/MM/DD` folder run (`memory/2024/01/05.md`). Impossible dates (2024-02-30) do not count."""
    components = [part for part in _normalize(path).split("/") if part]
    if not components:
        return None
    for match in _DATE_IN_NAME_RE.finditer(components[-1]):
        found = _calendar_date(match.group(1), match.group(2), match.group(3))
        if found is not None:
            return found
    for index in range(len(components) - 3, -1, -1):
        year, month, day_part = components[index : index + 3]
        day = _DAY_RE.match(day_part)
        if _YEAR_RE.fullmatch(year) and _MONTH_RE.fullmatch(month) and day is not None:
            found = _calendar_date(year, month, day.group(1))
            if found is not None:
                return found
    return None


def is_evergreen(path: str, source: str) -> bool:
    """Whether a memory note is timeless knowledge that never decays: `MEMORY.md` / `memory.md`, or an
    undated file under `memory/`."""
    if source != "memory":
        return False
    normalized = _normalize(path)
    if normalized in _EVERGREEN_ROOT_FILES:
        return True
    return normalized.startswith("memory/") and date_from_path(normalized) is None


def result_timestamp_ms(path: str, source: str, ts_ms: int, mtime_ms: int | None) -> int | None:
    """The time a result is about, in epoch ms, or None for no decay.

    In order: a date in the path (00:00 UTC), evergreen notes (None), the chunk's own message time,
    the file's mtime.
    """
    path_time = _path_time(path, source)
    if isinstance(path_time, _Dated):
        return path_time.ms
    if path_time is _PathTime.EVERGREEN:
        return None
    if ts_ms > 0:
        return ts_ms
    return mtime_ms


def apply_decay(
    cands: Sequence[Candidate],
    now_ms: int,
    half_life_days: float,
    mtime_lookup: Callable[[str], int | None],
) -> list[Candidate]:
    """Multiply each score by its decay multiplier, keeping the input order (the caller re-sorts).

    `mtime_lookup(path)` is asked at most once per `source:path`, and only for results that have no
    date in the path and no message time.
    """
    path_times: dict[str, _Dated | _PathTime] = {}
    mtimes: dict[str, int | None] = {}
    decayed: list[Candidate] = []
    for cand in cands:
        key = f"{cand.source}:{cand.path}"
        if key not in path_times:
            path_times[key] = _path_time(cand.path, cand.source)
        path_time = path_times[key]
        timestamp: int | None
        if isinstance(path_time, _Dated):
            timestamp = path_time.ms
        elif path_time is _PathTime.EVERGREEN:
            timestamp = None
        elif cand.ts_ms > 0:
            timestamp = cand.ts_ms
        else:
            if key not in mtimes:
                mtimes[key] = mtime_lookup(cand.path)
            timestamp = mtimes[key]
        if timestamp is None:
            decayed.append(cand)
            continue
        age_days = max(0, now_ms - timestamp) / DAY_MS
        decayed.append(cand.with_score(cand.score * decay_multiplier(age_days, half_life_days)))
    return decayed


def _path_time(path: str, source: str) -> _Dated | _PathTime:
    found = date_from_path(path)
    if found is not None:
        return _Dated((found - _EPOCH).days * DAY_MS)
    if is_evergreen(path, source):
        return _PathTime.EVERGREEN
    return _PathTime.UNKNOWN


def _calendar_date(year: str, month: str, day: str) -> datetime.date | None:
    try:
        return datetime.date(int(year), int(month), int(day))
    except ValueError:
        return None


def _normalize(path: str) -> str:
    normalized = path.replace("\\", "/")
    return normalized.removeprefix("./")
