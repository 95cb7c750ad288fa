"""Session transcripts (JSONL) as indexable text with a map back to their lines (spec §3.6).

Only user and assistant text is kept, one content line per message (`User: …` / `Assistant: …`),
whitespace collapsed and secrets masked. `line_map` ties each content line to its JSONL line so
search results cite the transcript itself, and `timestamps_ms` dates each message.

Parsing never fails on bad input: invalid UTF-8 is replaced with U+FFFD (as Node reads it), lines
that are not JSON objects are counted in `malformed_lines` and skipped.

Differences from OpenClaw, on purpose: an ISO date-time without an offset is read as UTC (JavaScript
reads it in the machine's local zone, so the same file would index differently on two machines),
and ISO dates are checked for real calendar days.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import orjson

from memoryd.sources.chunking import Chunk, chunk_markdown, hash_text
from memoryd.sources.redact import JS_WHITESPACE, redact

DREAMING_BOOTSTRAP_TYPE = "openclaw:bootstrap-context:full"
DREAMING_RUN_PREFIX = "dreaming-narrative-"

_ARCHIVE_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}-[0-9]{2}-[0-9]{2}(?:\.[0-9]{3})?Z")
_LEGACY_STORE_BACKUP = re.compile(r"sessions\.json\.bak\.[0-9]+")
# Whitespace runs other than a lone space (those need no rewriting, and are most of them).
_WHITESPACE_RUN = re.compile(f" [{JS_WHITESPACE}]+|[{JS_WHITESPACE.replace(' ', '')}][{JS_WHITESPACE}]*")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ISO_DATE_TIME = re.compile(
    r"([+-][0-9]{6}|[0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?)?"
    r"(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?)?"
    r"(Z|[+-][0-9]{2}(?::?[0-9]{2})?)?",
    re.IGNORECASE,
)
_SECONDS_BELOW = 1e11  # numeric timestamps below this are seconds, not milliseconds
_MAX_TIME_MS = 8.64e15  # ECMAScript's time value range
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


@dataclass(frozen=True, slots=True)
class Transcript:
    """A transcript's indexable text, where each line came from, and when it was said."""

    content: str
    line_map: tuple[int, ...]  # content line i (0-based) -> 1-based JSONL line
    timestamps_ms: tuple[int, ...]  # per content line, 0 if none
    hash: str
    malformed_lines: int  # non-blank lines that were not JSON objects
    dreaming: bool  # written by a dreaming-narrative run (its bootstrap record was seen)


def _has_archive_suffix(name: str, reason: str) -> bool:
    marker = f".{reason}."
    index = name.rfind(marker)
    return index >= 0 and _ARCHIVE_TIMESTAMP.fullmatch(name, index + len(marker)) is not None


def is_transcript_name(name: str) -> bool:
    """True for `*.jsonl` transcripts and their `.reset.<TS>` / `.deleted.<TS>` archives.

    `.bak.<TS>` archives and `sessions.json` (with its `.bak.<n>` backups) are not transcripts.
    """
    if _LEGACY_STORE_BACKUP.fullmatch(name):
        return False
    if name.endswith(".jsonl"):
        return True
    return _has_archive_suffix(name, "reset") or _has_archive_suffix(name, "deleted")


def _normalize(text: str) -> str:
    """Collapse every whitespace run (JavaScript's set) to one space and trim."""
    return _WHITESPACE_RUN.sub(" ", text).strip(JS_WHITESPACE)


def _message_text(content: object) -> str:
    """A string content, or the text blocks of a block list joined by one space; "" if none."""
    if isinstance(content, str):
        return _normalize(content)
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str) and (normalized := _normalize(text)):
                parts.append(normalized)
    return " ".join(parts)


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


def _timestamp_ms(value: object) -> int:
    """One timestamp candidate in ms: numbers below 1e11 are seconds, strings are ISO; else 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float):
        ms = value * 1000 if 0 < value < _SECONDS_BELOW else value
        return round(ms) if ms > 0 and math.isfinite(ms) else 0
    if isinstance(value, str):
        return parse_iso_timestamp_ms(value)
    return 0


def _message_timestamp_ms(record: dict[str, Any], message: dict[str, Any]) -> int:
    for value in (message.get("timestamp"), record.get("timestamp")):
        ms = _timestamp_ms(value)
        if ms > 0:
            return ms
    return 0


def _is_dreaming_bootstrap(record: dict[str, Any]) -> bool:
    data = record.get("data")
    if record.get("customType") != DREAMING_BOOTSTRAP_TYPE or not isinstance(data, dict):
        return False
    run_id = data.get("runId")
    return isinstance(run_id, str) and run_id.startswith(DREAMING_RUN_PREFIX)


class _Unparsable:
    """Marker for a line that is not JSON."""


_BLANK = _Unparsable()
_MALFORMED = _Unparsable()


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _parse_slowly(raw: bytes) -> object:
    """A line orjson refused: blank, or JSON that only JavaScript accepts, or malformed.

    JavaScript's JSON.parse also takes lone surrogate escapes and numbers that overflow to
    Infinity, which orjson rejects; the standard library reads both.
    """
    text = raw.decode("utf-8", "replace")
    if not text.strip(JS_WHITESPACE):
        return _BLANK
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return _MALFORMED


def parse_transcript(data: bytes) -> Transcript:
    """The indexable text of a JSONL transcript; never raises on bad input."""
    lines: list[str] = []
    line_map: list[int] = []
    timestamps: list[int] = []
    malformed = 0
    dreaming = False
    for line_no, raw in enumerate(data.split(b"\n"), 1):
        slow = False
        record: object
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            record = _parse_slowly(raw)
            if record is _BLANK:
                continue
            slow = True
        if not isinstance(record, dict):
            malformed += 1
            continue
        kind = record.get("type")
        if kind != "message":
            if kind == "custom" and not dreaming:
                dreaming = _is_dreaming_bootstrap(record)
            continue
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "user":
            label = "User: "
        elif role == "assistant":
            label = "Assistant: "
        else:
            continue
        text = _message_text(message.get("content"))
        if not text:
            continue
        if slow:
            text = _LONE_SURROGATE.sub("\ufffd", text)
        lines.append(label + redact(text))
        line_map.append(line_no)
        timestamps.append(_message_timestamp_ms(record, message))
    content = "\n".join(lines)
    digest = hash_text(f"{content}\n{','.join(map(str, line_map))}\n{','.join(map(str, timestamps))}")
    return Transcript(content, tuple(line_map), tuple(timestamps), digest, malformed, dreaming)


def chunk_transcript(t: Transcript, tokens: int, overlap: int) -> list[Chunk]:
    """Chunks of the transcript text, dated by their newest message, cited by JSONL line."""
    line_map = t.line_map
    stamps = t.timestamps_ms
    size = len(line_map)
    out: list[Chunk] = []
    for chunk in chunk_markdown(t.content, tokens, overlap):
        start, end = chunk.start_line, chunk.end_line
        out.append(
            Chunk(
                line_map[start - 1] if 1 <= start <= size else start,
                line_map[end - 1] if 1 <= end <= size else end,
                chunk.text,
                chunk.hash,
                max(stamps[start - 1 : end], default=0),
            )
        )
    return out
