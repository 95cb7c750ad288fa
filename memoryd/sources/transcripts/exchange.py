"""Transcript chunks cut at exchanges: a user's message and the answer it got stay in one chunk.

An exchange is a run of user messages and the run of other messages after it (a transcript that
opens with the assistant has a first exchange without a question). Whole exchanges are packed into
a chunk while they fit (`tokens`, weighed as `chunk_markdown` weighs them), and the last ones that fit
in `overlap` are carried into the next chunk, so a question is never cut from its answer at a packing
boundary. An exchange too long for one chunk is cut into windows by `chunk_markdown`; a window that
does not hold the start of the question is prefixed with the question's first `QUESTION_CHARS`
characters (bounded, so a short window stays mostly answer) and then cites the question's record as
its first line: the citation covers every record the window's text came from.

Each chunk's text opens with the UTC days its messages were said on, as `8 May 2023 (2023-05-08)`:
the words a person asks with ("in May", "8 May 2023") and the ISO form a note or a question may
use, so the keyword leg can match a date; speakers are already in every line (`User: `,
`Assistant: `). UTC, as the search's timeframe reads a chunk's time. The date line and the question
prefix are counted in the chunk's size, so no chunk exceeds `tokens` unless `tokens` is too small to
hold them beside a window (a few dozen).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from memoryd.sources.chunking import CHARS_PER_TOKEN, MIN_MAX_CHARS, Chunk, chunk_markdown, hash_text, weighted_length
from memoryd.sources.transcripts.model import Transcript

QUESTION_CHARS = 300
"""The most of a question carried into each window of a long answer (weighted characters)."""
USER_LABEL = "User: "
_ELLIPSIS = "\u2026"
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def exchanges(lines: Sequence[str]) -> list[range]:
    """Content-line ranges of the exchanges, in order; together they hold every line exactly once."""
    n = len(lines)
    if not n:
        return []
    users = [line.startswith(USER_LABEL) for line in lines]
    starts = [0, *(i for i in range(1, n) if users[i] and not users[i - 1])]
    return [range(a, b) for a, b in zip(starts, [*starts[1:], n], strict=True)]


def date_line(stamps: Sequence[int]) -> str:
    """The first and last UTC day among `stamps` (0 = unknown), in words and ISO; "" when none is known."""
    known = [s for s in stamps if s > 0]
    if not known:
        return ""
    days = dict.fromkeys(_day(s) for s in (min(known), max(known)))
    return " \u2013 ".join(f"{d.day} {_MONTHS[d.month - 1]} {d.year} ({d.isoformat()})" for d in days)


def _day(ms: int) -> datetime.date:
    return (_EPOCH + datetime.timedelta(milliseconds=ms)).date()


def _cost(text: str) -> int:
    """What a line costs in a chunk: its weighted length and its newline."""
    return weighted_length(text) + 1


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` weighted characters, an ellipsis marking the cut."""
    if weighted_length(text) <= limit:
        return text
    lo, hi = 0, len(text)  # the longest prefix that fits beside the ellipsis
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if weighted_length(text[:mid]) + 1 <= limit:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + _ELLIPSIS


def chunk_exchanges(t: Transcript, lines: Sequence[str], tokens: int, overlap: int) -> list[Chunk]:
    """The transcript's chunks by exchange, cited by JSONL line and dated by their newest message.

    `lines`: the content's lines, one per message (as many as `t.line_map`)."""
    max_chars = max(MIN_MAX_CHARS, tokens * CHARS_PER_TOKEN)
    packer = _Packer(lines, t, max_chars, max(0, overlap * CHARS_PER_TOKEN))
    for ex in exchanges(lines):
        if packer.fits_alone(ex):
            packer.add(ex)
        else:
            packer.flush()
            packer.windows(ex, overlap)
    packer.flush()
    return packer.out


class _Packer:
    """Whole exchanges packed into chunks, and the windows of those too long for one."""

    def __init__(self, lines: Sequence[str], t: Transcript, max_chars: int, overlap_chars: int) -> None:
        self.lines = lines
        self.line_map = t.line_map
        self.stamps = t.timestamps_ms
        self.max_chars = max_chars
        self.overlap_chars = overlap_chars
        self.costs = [_cost(line) for line in lines]
        self.held: list[range] = []  # exchanges of the chunk being packed
        self.fresh = False  # `held` holds an exchange no chunk has yet
        self.out: list[Chunk] = []

    def _size(self, first: int, stop: int) -> int:
        """The cost of lines [first, stop) as a chunk, with its date line."""
        header = date_line(self.stamps[first:stop])
        return (_cost(header) if header else 0) + sum(self.costs[first:stop])

    def fits_alone(self, ex: range) -> bool:
        return self._size(ex.start, ex.stop) <= self.max_chars

    def add(self, ex: range) -> None:
        while self.held and self._size(self.held[0].start, ex.stop) > self.max_chars:
            if self.fresh:
                self.flush()
            else:
                self.held.pop(0)  # a carried exchange that no longer fits beside the new one
        self.held.append(ex)
        self.fresh = True

    def flush(self) -> None:
        """Emit the held exchanges as one chunk (unless all were carried) and keep the tail that fits the overlap."""
        if self.held and self.fresh:
            first, stop = self.held[0].start, self.held[-1].stop
            self._emit(first, stop - 1, self.lines[first:stop])
        carried: list[range] = []
        budget = self.overlap_chars
        for ex in reversed(self.held):
            budget -= sum(self.costs[ex.start : ex.stop])
            if budget < 0:
                break
            carried.insert(0, ex)
        self.held = carried
        self.fresh = False

    def windows(self, ex: range, overlap: int) -> None:
        """An exchange too long for one chunk: windows of its answer, each carrying its question (the start of
        it, when the question is long: the whole question is then cut into windows of its own first)."""
        asked = [i for i in ex if self.lines[i].startswith(USER_LABEL)]
        answer = range(asked[-1] + 1 if asked else ex.start, ex.stop)
        header = date_line(self.stamps[ex.start : ex.stop])  # as long as any part's
        question = ""
        if asked:
            said = USER_LABEL + " ".join(self.lines[i][len(USER_LABEL) :] for i in asked)
            question = clip(said, min(QUESTION_CHARS, self.max_chars // 4))
            if question != said or not answer:
                self._cut(range(ex.start, asked[-1] + 1), overlap, header)
        if answer:
            self._cut(answer, overlap, header, question, ex.start)
        self.held = []
        self.fresh = False

    def _cut(self, span: range, overlap: int, header: str, question: str = "", asked: int = 0) -> None:
        """Lines `span` in windows by `chunk_markdown`, each after `question` (then citing from its line, `asked`),
        sized so that the date line, the question and a window's label fit beside it."""
        reserve = sum(_cost(x) for x in (header, question) if x) + _cost(f"Assistant: {_ELLIPSIS}")
        room = max(MIN_MAX_CHARS, self.max_chars - reserve) // CHARS_PER_TOKEN
        body = "\n".join(self.lines[span.start : span.stop])
        for w in chunk_markdown(body, room, min(overlap, room - 1)):
            first, last = span.start + w.start_line - 1, span.start + w.end_line - 1
            text = w.text
            if not text.startswith((USER_LABEL, "Assistant: ")):  # a window opening inside a message
                text = f"{self.lines[first].split(': ', 1)[0]}: {_ELLIPSIS}{text}"
            if question:
                self._emit(asked, last, [question, text])
            else:
                self._emit(first, last, [text])

    def _emit(self, cited: int, last: int, parts: Sequence[str]) -> None:
        """A chunk citing content lines [cited, last], its text their date line and `parts`, its time their newest."""
        stamps = self.stamps[cited : last + 1]
        header = date_line(stamps)
        text = "\n".join([header, *parts] if header else parts)
        self.out.append(Chunk(self.line_map[cited], self.line_map[last], text, hash_text(text), max(stamps)))
