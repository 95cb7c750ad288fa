"""The snippet a hit serves: the window of its chunk that shows what matched, not the chunk's first lines.

A chunk is ~400 tokens; a snippet is at most 700 UTF-16 units (OpenClaw's cut). OpenClaw serves the
chunk's head, so a line appended to a long MEMORY.md is found but not shown and the model has to call
`memory_get`. Here the window covering the most of the query's words is served: it starts at the line
where the best match begins (or, in a line longer than the budget, at its sentence), led in by the
non-blank line (or sentence) before it, runs forward as far as the budget allows, and when it reaches the
chunk's end takes earlier lines back for context (its `match_at` says where the window proper opens after
them, so the hook's cut drops them first). A chunk that fits the budget, and a hit no query word is found
in (a vector-only match), are served as before.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.config import FtsTokenizer
from memoryd.search.relaxed import plan_query
from memoryd.search.scoring import SNIPPET_MAX_CHARS, truncate_snippet, utf16_len
from memoryd.search.terms import contains, fold, stem

_SENTENCE_END = re.compile(r"[.!?;:](?=\s)\s+")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Window:
    """A snippet and the chunk lines it shows (0-based, inclusive, counted in the chunk's text)."""

    text: str
    first_line: int
    last_line: int
    match_at: int = 0
    """Where the matching window opens in `text` (UTF-16 units, as the budget counts): past the earlier lines
    taken back for context when the window reached the chunk's end, else 0. A reader cutting the snippet
    shorter keeps what follows it."""


@dataclass(frozen=True, slots=True)
class _Piece:
    line: int
    text: str
    matched: frozenset[int]


def query_stems(query: str, tokenizer: FtsTokenizer = "unicode61") -> tuple[str, ...]:
    """The query's content words as the keyword leg's coverage looks for them (folded, lightly stemmed)."""
    return tuple(dict.fromkeys(stem(unit) for unit in plan_query(query, tokenizer).units if unit.strip()))


def best_window(text: str, stems: Sequence[str], max_chars: int = SNIPPET_MAX_CHARS) -> Window:
    """The window of `text` to serve for a query whose words are `stems` (see the module docstring)."""
    if utf16_len(text) <= max_chars or not stems or max_chars <= 0:
        head = truncate_snippet(text, max_chars)
        return Window(head, 0, head.count("\n"))
    pieces = _pieces(text, stems, max_chars)
    span = _best_span(pieces, max_chars)
    if span is None:
        head = truncate_snippet(text, max_chars)
        return Window(head, 0, head.count("\n"))
    match, end = _lead_in(pieces, *span, max_chars)
    start = _fill_back(pieces, match, end, max_chars) if end == len(pieces) - 1 else match
    while end > match and not pieces[end].text.strip():
        end -= 1  # a blank line at either edge shows nothing and would widen the citation
    while start < match and not pieces[start].text.strip():
        start += 1
    joined = _join(pieces[start : end + 1])
    match_at = 0
    if start < match:  # context taken back before the window: where the window opens after it
        match_at = utf16_len(_join(pieces[start:match])) + (pieces[match - 1].line != pieces[match].line)
    return Window(truncate_snippet(joined, max_chars), pieces[start].line, pieces[end].line, match_at)


def _pieces(text: str, stems: Sequence[str], max_chars: int) -> list[_Piece]:
    """Lines, and a line longer than half the budget cut at its sentences (then at spaces), each with the
    query words it holds; joining them back (`_join`) gives the text again."""
    out: list[_Piece] = []
    for number, line in enumerate(text.split("\n")):
        parts = [line] if utf16_len(line) <= max_chars // 2 else _split_long(line, max_chars // 2)
        for part in parts:
            folded = fold(part)
            matched = frozenset(i for i, word_stem in enumerate(stems) if contains(folded, word_stem))
            out.append(_Piece(number, part, matched))
    return out


def _split_long(line: str, size: int) -> list[str]:
    """`line` cut after sentence ends, and pieces still longer than `size` cut at spaces (or hard)."""
    bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(line)), len(line)]
    sentences = [line[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    out: list[str] = []
    for sentence in sentences:
        rest = sentence
        while len(rest) > size:
            cut = max((m.end() for m in _SPACE.finditer(rest, 0, size)), default=0) or size
            out.append(rest[:cut])
            rest = rest[cut:]
        if rest:
            out.append(rest)
    return out or [line]


def _length(pieces: Sequence[_Piece]) -> int:
    return sum(utf16_len(p.text) for p in pieces) + sum(1 for a, b in itertools.pairwise(pieces) if a.line != b.line)


def _best_span(pieces: Sequence[_Piece], max_chars: int) -> tuple[int, int] | None:
    """The window (first and last piece) covering the most query words, opening on a matching piece: more
    words in its opening piece, then earlier, break ties. One pass with a sliding end (pieces fit the budget)."""
    sizes = [utf16_len(p.text) for p in pieces]
    gaps = [1 if a.line != b.line else 0 for a, b in itertools.pairwise(pieces)]
    counts: Counter[int] = Counter()
    best: tuple[int, int, int] | None = None
    span: tuple[int, int] | None = None
    size, end = 0, -1
    for start, piece in enumerate(pieces):
        if end < start:
            size, end = sizes[start], start
            counts = Counter(piece.matched)
        while end + 1 < len(pieces) and size + gaps[end] + sizes[end + 1] <= max_chars:
            size += gaps[end] + sizes[end + 1]
            end += 1
            counts.update(pieces[end].matched)
        if piece.matched:
            key = (sum(1 for n in counts.values() if n > 0), len(piece.matched), -start)
            if best is None or key > best:
                best, span = key, (start, end)
        counts.subtract(piece.matched)
        size -= sizes[start] + (gaps[start] if end > start else 0)
    return span


def _lead_in(pieces: Sequence[_Piece], start: int, end: int, max_chars: int) -> tuple[int, int]:
    """The window opened one non-blank piece earlier (the line, or sentence, before its best one), pieces
    dropped from its end to stay within the budget: a line that answers a question often holds fewer of its
    words than the next (FAQ notes: evidence in the hook's block 0.611 -> 0.695, served R@5 0.924 either way),
    and a transcript's message matched at its first sentence keeps its speaker."""
    lead = start - 1
    while lead >= 0 and not pieces[lead].text.strip():
        lead -= 1
    if lead < 0:
        return start, end
    while end > start and _length(pieces[lead : end + 1]) > max_chars:
        end -= 1
    return lead, end


def _fill_back(pieces: Sequence[_Piece], start: int, end: int, max_chars: int) -> int:
    """Take earlier pieces while the budget allows: a window that ends with the chunk shows what led to it."""
    size = _length(pieces[start : end + 1])
    while start > 0:
        prev = pieces[start - 1]
        grown = size + utf16_len(prev.text) + (1 if prev.line != pieces[start].line else 0)
        if grown > max_chars:
            break
        size, start = grown, start - 1
    return start


def _join(pieces: Sequence[_Piece]) -> str:
    out: list[str] = []
    for i, piece in enumerate(pieces):
        if i and piece.line != pieces[i - 1].line:
            out.append("\n")
        out.append(piece.text)
    return "".join(out)
