"""What every transcript adapter produces: the same `Transcript`, whatever tool wrote the file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Role = Literal["user", "assistant"]

OPENCLAW: Final = "openclaw"
CLAUDE_CODE: Final = "claude-code"
CODEX: Final = "codex"
UNKNOWN: Final = "unknown"
"""JSON (or garbage) that no adapter recognises: indexed as empty, counted in status, logged once."""
EMPTY: Final = ""
"""No line but blank ones (a transcript just created): nothing to recognise, nothing to warn about."""
FORMATS: Final = (OPENCLAW, CLAUDE_CODE, CODEX)


@dataclass(frozen=True, slots=True)
class Said:
    """One message an adapter kept, before redaction: who, what (normalised), where, when."""

    line_no: int
    role: Role
    text: str
    ts_ms: int
    slow: bool  # read by the slow JSON parser: may hold lone surrogates


@dataclass(frozen=True, slots=True)
class Transcript:
    """A transcript's indexable text, where each line came from, and when it was said."""

    content: str
    line_map: tuple[int, ...]  # content line i (0-based) -> 1-based JSONL line
    timestamps_ms: tuple[int, ...]  # per content line, 0 if none
    hash: str
    malformed_lines: int  # non-blank lines that were not JSON objects
    dreaming: bool  # written by a dreaming-narrative run (its bootstrap record was seen)
    format: str = EMPTY  # openclaw | claude-code | codex | unknown | "" (nothing but blank lines)
