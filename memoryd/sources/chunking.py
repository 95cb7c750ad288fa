"""Split text into overlapping, line-numbered chunks (spec §3.3) and cap chunk size in bytes (§3.4).

Chunking follows OpenClaw's `chunkMarkdown`: lines split on "\\n", long lines cut into segments by
UTF-16 length, segments packed until their weighted length would pass `maxChars`, then a tail of the
chunk is carried into the next one as overlap. Sizes are weighted: CJK counts 4 per character, the
way OpenClaw estimates tokens, so a chunk of Chinese text holds about as many tokens as one of English.

One deliberate difference: OpenClaw carries whole tail segments until they *reach* the overlap
budget, so a long final segment can be carried whole and the next chunk can grow to about twice
`maxChars`. Here the carried tail is bounded (its cost never exceeds the overlap budget; if the last
segment alone is larger, nothing is carried) and carried segments are dropped from the front when the
next segment would not fit. So no chunk's weighted length ever exceeds `maxChars`.

Python strings index code points while OpenClaw counts UTF-16 units; the cuts here are made in UTF-16
units too, and a character outside the BMP (two units) is never cut in half.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import accumulate, count
from operator import add

CHARS_PER_TOKEN = 4
MIN_MAX_CHARS = 32

# Characters that tokenizers encode at about one token each (OpenClaw's `estimateStringChars`).
_HEAVY_CHARS = re.compile("[\u2e80-\u9fff\ua000-\ua4ff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]")
# Characters outside the BMP that are not heavy: two UTF-16 units, so they weigh 2.
_ASTRAL_LIGHT_CHARS = re.compile("[\U00010000-\U0001ffff\U0002fa20-\U0010ffff]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_FIRST_WEIGHTED_CHAR = "\u2e80"
_FIRST_ASTRAL_CHAR = "\U00010000"


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a source file: its 1-based inclusive line range, text and content hash."""

    start_line: int
    end_line: int
    text: str
    hash: str
    ts_ms: int = 0  # newest message timestamp in the chunk (transcripts); 0 if unknown


def hash_text(text: str) -> str:
    """Lowercase hex SHA-256 of the UTF-8 text, the hash OpenClaw uses everywhere.

    A lone surrogate (possible only in text that came from JSON escapes) is hashed as U+FFFD, the
    way Node encodes it, instead of failing.
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = _LONE_SURROGATE.sub("\ufffd", text).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def weighted_length(text: str) -> int:
    """Length in UTF-16 units where CJK characters (BMP or not) count 4 instead of 1 or 2."""
    if text.isascii() or max(text) < _FIRST_WEIGHTED_CHAR:
        return len(text)
    heavy = len(_HEAVY_CHARS.findall(text))
    astral_light = len(_ASTRAL_LIGHT_CHARS.findall(text))
    return len(text) + 3 * heavy + astral_light


def _utf16_pieces(text: str, width: int) -> list[str]:
    """Cut `text` every `width` UTF-16 units, extending a cut by one unit rather than split a pair."""
    if text.isascii() or max(text) < _FIRST_ASTRAL_CHAR:
        return [text[i : i + width] for i in range(0, len(text), width)]
    data = text.encode("utf-16-le", "surrogatepass")
    units = len(data) // 2
    pieces: list[str] = []
    start = 0
    while start < units:
        end = min(start + width, units)
        if end < units and 0xD8 <= data[2 * end - 1] <= 0xDB:  # high surrogate before the cut
            end += 1
        pieces.append(data[2 * start : 2 * end].decode("utf-16-le", "surrogatepass"))
        start = end
    return pieces


def _line_segments(line: str, max_chars: int, fine_width: int) -> tuple[list[str], list[int]]:
    """Segments of one non-ASCII or long line, with their weighted lengths."""
    texts: list[str] = []
    weights: list[int] = []
    for coarse in _utf16_pieces(line, max_chars):
        weight = weighted_length(coarse)
        if weight <= max_chars:
            texts.append(coarse)
            weights.append(weight)
            continue
        for fine in _utf16_pieces(coarse, fine_width):
            texts.append(fine)
            weights.append(weighted_length(fine))
    return texts, weights


def _segments(content: str, max_chars: int, fine_width: int) -> tuple[list[str], Sequence[int], list[int]]:
    """All segments of `content` in order: texts, 1-based line numbers and weighted lengths."""
    lines = content.split("\n")
    if content.isascii() and max(map(len, lines)) <= max_chars:
        return lines, range(1, len(lines) + 1), list(map(len, lines))
    texts: list[str] = []
    line_nos: list[int] = []
    weights: list[int] = []
    for line_no, line in enumerate(lines, 1):
        if len(line) * CHARS_PER_TOKEN <= max_chars or (line.isascii() and len(line) <= max_chars):
            # Short enough to be one segment whatever its characters weigh.
            texts.append(line)
            line_nos.append(line_no)
            weights.append(weighted_length(line))
            continue
        seg_texts, seg_weights = _line_segments(line, max_chars, fine_width)
        texts.extend(seg_texts)
        line_nos.extend([line_no] * len(seg_texts))
        weights.extend(seg_weights)
    return texts, line_nos, weights


def chunk_markdown(content: str, tokens: int = 400, overlap: int = 80) -> list[Chunk]:
    """Chunks of about `tokens` tokens, consecutive ones sharing up to `overlap` tokens of text.

    Blank chunks are dropped. Each segment costs its weighted length plus one (its newline), so the
    sum of costs in a buffer is the chunk text's weighted length plus one. Packing uses prefix sums
    of those costs, so the work per chunk is a couple of binary searches, not a loop per line.
    """
    max_chars = max(MIN_MAX_CHARS, tokens * CHARS_PER_TOKEN)
    overlap_chars = max(0, overlap * CHARS_PER_TOKEN)
    texts, line_nos, weights = _segments(content, max_chars, max(1, tokens))
    n = len(texts)
    # ends[i] = summed cost of segments [0, i); costs are >= 1 so `ends` strictly increases.
    ends = list(map(add, accumulate(weights, initial=0), count()))
    chunks: list[Chunk] = []
    carried = 0  # first segment of the tail carried over from the previous chunk
    first_new = 0  # first segment not yet in any chunk
    while first_new < n:
        # Drop carried segments from the front until the first new segment fits beside them.
        start = carried
        if ends[first_new + 1] - ends[start] > max_chars:
            start = bisect_left(ends, ends[first_new + 1] - max_chars, start, first_new)
        # Take every following segment that still fits (at least the first new one).
        stop = max(first_new + 1, bisect_right(ends, ends[start] + max_chars, first_new + 1, n + 1) - 1)
        text = "\n".join(texts[start:stop])
        if text and not text.isspace():
            chunks.append(Chunk(line_nos[start], line_nos[stop - 1], text, hash_text(text)))
        # Carry the longest tail whose cost stays within the overlap budget (possibly nothing).
        carried = bisect_left(ends, ends[stop] - overlap_chars, start, stop)
        first_new = stop
    return chunks


def remap_chunk_lines(chunks: Sequence[Chunk], line_map: Sequence[int]) -> list[Chunk]:
    """Chunks with content line numbers replaced by `line_map[line - 1]` (unknown lines unchanged)."""
    size = len(line_map)

    def mapped(line: int) -> int:
        return line_map[line - 1] if 1 <= line <= size else line

    return [replace(c, start_line=mapped(c.start_line), end_line=mapped(c.end_line)) for c in chunks]


def _utf8_cuts(data: bytes, max_bytes: int) -> list[tuple[int, int]]:
    """Byte ranges of at most `max_bytes` each, cut only at code point boundaries."""
    cuts: list[tuple[int, int]] = []
    start = 0
    total = len(data)
    while start < total:
        end = min(start + max_bytes, total)
        while end < total and end > start and (data[end] & 0xC0) == 0x80:  # continuation byte
            end -= 1
        if end == start:  # a code point wider than the limit: keep it whole rather than loop forever
            end = start + 1
            while end < total and (data[end] & 0xC0) == 0x80:
                end += 1
        cuts.append((start, end))
        start = end
    return cuts


def split_for_input_limit(chunks: Sequence[Chunk], max_bytes: int) -> list[Chunk]:
    """Chunks whose UTF-8 size exceeds `max_bytes` split into consecutive pieces within the limit.

    Pieces keep the parent's lines and timestamp and get their own hash. A limit below 4 bytes cannot
    hold every character; a character wider than the limit then becomes a piece of its own.
    """
    out: list[Chunk] = []
    for chunk in chunks:
        data = chunk.text.encode("utf-8", "surrogatepass")
        if len(data) <= max_bytes:
            out.append(chunk)
            continue
        for start, end in _utf8_cuts(data, max(1, max_bytes)):
            piece = data[start:end].decode("utf-8", "surrogatepass")
            out.append(replace(chunk, text=piece, hash=hash_text(piece)))
    return out
