"""Message times in epoch milliseconds, read as OpenClaw reads them (spec §3.6 "messageTimestampsMs").

Differences from OpenClaw, on purpose: an ISO date-time without an offset is read as UTC (JavaScript
reads it in the machine's local zone, so the same file would index differently on two machines),
and ISO dates are checked for real calendar days.
"""

from __future__ import annotations

import math
import re

from memoryd.sources.redact import JS_WHITESPACE

_ISO_DATE_TIME = re.compile(
    r"([+-][0-9]{6}|[0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?)?"
    r"(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?)?"
    r"(Z|[+-][0-9]{2}(?::?[0-9]{2})?)?",
    re.IGNORECASE,
)
_SECONDS_BELOW = 1e11  # numeric timestamps below this are seconds, not milliseconds
_MAX_TIME_MS = 8.64e15  # ECMAScript's time value range
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar, for any year."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def parse_iso_timestamp_ms(value: str) -> int:
    """Epoch milliseconds of an ISO-8601 date or date-time (as `Date.parse` reads them), else 0.

    Accepts `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, expanded `±YYYYYY` years, a `T` (or space) time of
    `HH:mm`, `HH:mm:ss` or `HH:mm:ss.fff…`, and `Z`, `±HH:mm`, `±HHmm` or `±HH` offsets. Times not after
    the epoch give 0, the way OpenClaw treats them as unknown.
    """
    match = _ISO_DATE_TIME.fullmatch(value.strip(JS_WHITESPACE))
    if match is None:
        return 0
    year_s, month_s, day_s, hour_s, minute_s, second_s, fraction_s, zone = match.groups()
    if year_s == "-000000":
        return 0
    year = int(year_s)
    month = int(month_s) if month_s else 1
    day = int(day_s) if day_s else 1
    hour = int(hour_s) if hour_s else 0
    minute = int(minute_s) if minute_s else 0
    second = int(second_s) if second_s else 0
    millis = int((fraction_s or "0")[:3].ljust(3, "0"))
    if not 1 <= month <= 12 or not 1 <= day <= _DAYS_IN_MONTH[month - 1]:
        return 0
    if month == 2 and day == 29 and not _is_leap(year):
        return 0
    if minute > 59 or second > 59 or hour > 24 or (hour == 24 and (minute or second or millis)):
        return 0
    offset_minutes = 0
    if zone and zone.upper() != "Z":
        digits = zone[1:].replace(":", "")
        offset_hours, offset_mins = int(digits[:2]), int(digits[2:] or "0")
        if offset_hours > 23 or offset_mins > 59:
            return 0
        offset_minutes = (offset_hours * 60 + offset_mins) * (1 if zone[0] == "+" else -1)
    days = _days_from_civil(year, month, day)
    ms = ((days * 24 + hour) * 60 + minute - offset_minutes) * 60_000 + second * 1000 + millis
    if abs(ms) > _MAX_TIME_MS or ms <= 0:
        return 0
    return ms


def timestamp_ms(value: object) -> int:
    """One timestamp candidate in ms: numbers below 1e11 are seconds, strings are ISO; else 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float):
        ms = value * 1000 if 0 < value < _SECONDS_BELOW else value
        return round(ms) if ms > 0 and math.isfinite(ms) else 0
    if isinstance(value, str):
        return parse_iso_timestamp_ms(value)
    return 0


def first_timestamp_ms(*candidates: object) -> int:
    """The first candidate that is a usable time (ms), else 0."""
    for value in candidates:
        ms = timestamp_ms(value)
        if ms > 0:
            return ms
    return 0
