"""JSONL lines as records, read the way Node reads them, never raising on bad input.

Invalid UTF-8 is replaced with U+FFFD; JSON that only JavaScript accepts (lone surrogate escapes,
numbers that overflow to Infinity) is still read; blank lines are skipped; every other line that is
not a JSON object is counted as malformed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from memoryd.sources.redact import JS_WHITESPACE


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


@dataclass(slots=True)
class LineCount:
    """What reading the lines found besides records."""

    malformed: int = 0  # non-blank lines that were not JSON objects
    lines: int = 0  # every line, blank ones included (the last line number)


def records(data: bytes, count: LineCount) -> Iterator[tuple[int, dict[str, Any], bool]]:
    """(1-based line number, record, read by the slow parser) for each line that is a JSON object.

    A line read by the slow parser may hold lone surrogates, which adapters replace before use.
    """
    for line_no, raw in enumerate(data.split(b"\n"), 1):
        count.lines = line_no
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
            count.malformed += 1
            continue
        yield line_no, record, slow
