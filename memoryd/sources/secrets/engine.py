"""The scan: run every detector whose keywords occur, merge what they found, mask the merged spans.

A detector reports spans of the *original* text (never of text another detector already masked), so
the order of detectors does not matter and no detector can be cut short by another's mask. Spans that
overlap or touch are merged into one masked region, reported under the kind of the most specific
detector that found part of it (provider formats before structural rules, structural before entropy).

Keywords are lower-case substrings that every match of a detector contains: a detector runs only when
one of them occurs in the lower-cased text, so ordinary messages cost a handful of substring tests
(the idea of gitleaks' per-rule `keywords`). A detector with no keywords always runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

MASK = "***"
"""What a short secret becomes."""
MASK_MIN_LENGTH = 18
"""From this length on a masked secret keeps its first characters, so a reader can tell keys apart."""
MASK_KEEP = 4
"""How many characters a masked secret keeps at most (its first ones; provider prefixes mostly)."""
PEM_MASK = "…redacted…"
WHOLE_MASK_KINDS = frozenset({"private-key", "seed-phrase"})
"""Kinds masked whole (`PEM_MASK`): their first characters say too much (a key block, a phrase's first word)."""

RUN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.+/=~:$@"
"""What machine-made tokens are written with (and the URLs and key=value runs that carry them)."""
MIN_RUN = 14
"""No token format is shorter than this; shorter runs of RUN_CHARS are never looked at by the
token and entropy rules."""
_RUN_TABLE = bytes(ord("a") if chr(i) in RUN_CHARS else ord(" ") for i in range(256))
_RUN_NEEDLE = b"a" * MIN_RUN


class Text:
    """A text being scanned, with what several detectors need computed once: its lower-cased form
    (for keyword tests) and its runs of token characters (where provider tokens and random strings
    can be, found with C-speed byte operations instead of a regex pass over every character)."""

    __slots__ = ("lowered", "runs", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lowered = text.lower()
        self.runs = _token_runs(text)


def _token_runs(text: str) -> list[tuple[int, int]]:
    raw = text.encode("utf-8", "surrogatepass")
    mapped = raw.translate(_RUN_TABLE)
    same_offsets = len(raw) == len(text)
    runs: list[tuple[int, int]] = []
    position = cursor = 0
    while (start := mapped.find(_RUN_NEEDLE, position)) != -1:
        end = mapped.find(b" ", start + MIN_RUN)
        if end == -1:
            end = len(mapped)
        if same_offsets:
            runs.append((start, end))
        else:
            # A run is ASCII; its first occurrence after the previous run is where it sits in `text`.
            piece = raw[start:end].decode("ascii")
            at = text.find(piece, cursor)
            runs.append((at, at + len(piece)))
            cursor = at + len(piece)
        position = end
    return runs


Hit = tuple[int, int, str]
"""A secret's span in the text, and its kind."""
Find = Callable[[Text], Iterable[Hit]]


@dataclass(frozen=True, slots=True)
class Detector:
    """One family of rules: its keywords and how it finds secrets."""

    keywords: tuple[str, ...]
    find: Find
    rank: int
    """Lower is more specific: it names the region when spans of several detectors merge."""


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret found in a text: its kind and where it sits. Never carries the secret itself."""

    kind: str
    start: int
    end: int


def regex_finder(
    kind: str, pattern: re.Pattern[str], group: int | str = 0, accept: Callable[[str], bool] | None = None
) -> Find:
    """Spans of `group` in every match of `pattern` (over the whole text) whose secret passes `accept`."""

    def find(scan: Text) -> Iterator[Hit]:
        text = scan.text
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if start < end and (accept is None or accept(text[start:end])):
                yield start, end, kind

    return find


class Scanner:
    """Runs a fixed list of detectors; pure and thread-safe (compiled patterns only)."""

    def __init__(self, detectors: Sequence[Detector]) -> None:
        self._always = tuple(d for d in detectors if not d.keywords)
        self._keyed = tuple(d for d in detectors if d.keywords)
        self._keywords = tuple(sorted({k for d in self._keyed for k in d.keywords}))

    def findings(self, text: str) -> list[Finding]:
        """Every secret region of `text`, merged, left to right."""
        if not text:
            return []
        scan = Text(text)
        present = {k for k in self._keywords if k in scan.lowered}
        raw: list[tuple[int, int, int, str]] = []
        for detector in self._always:
            raw.extend((s, e, detector.rank, kind) for s, e, kind in detector.find(scan))
        if present:
            for detector in self._keyed:
                if not present.isdisjoint(detector.keywords):
                    raw.extend((s, e, detector.rank, kind) for s, e, kind in detector.find(scan))
        return _merge(raw)

    def redact(self, text: str) -> str:
        found = self.findings(text)
        if not found:
            return text
        parts: list[str] = []
        position = 0
        for f in found:
            parts.append(text[position : f.start])
            parts.append(PEM_MASK if f.kind in WHOLE_MASK_KINDS else mask_token(text[f.start : f.end]))
            position = f.end
        parts.append(text[position:])
        return "".join(parts)


def _merge(raw: list[tuple[int, int, int, str]]) -> list[Finding]:
    if not raw:
        return []
    raw.sort()
    out: list[Finding] = []
    start, end, rank, kind = raw[0]
    for s, e, r, k in raw[1:]:
        if s <= end:
            end = max(end, e)
            if r < rank:
                rank, kind = r, k
            continue
        out.append(Finding(kind, start, end))
        start, end, rank, kind = s, e, r, k
    out.append(Finding(kind, start, end))
    return out


def mask_token(token: str) -> str:
    """`***` for a short secret, else its first 4 characters and `…` (never more than 4 kept)."""
    if len(token) < MASK_MIN_LENGTH:
        return MASK
    return f"{token[:MASK_KEEP]}…"
